"""A fake OpenAI **Responses API** on 127.0.0.1, so Codex-based agents run offline.

The real ACP agent ``@zed-industries/codex-acp`` (a Rust binary that links Codex core) talks to
an OpenAI-style Responses API. Pointed at this server through a custom model provider it needs
no OpenAI account, no key and no network::

    with serve(ResponsesHandler) as server:
        env = codex_home(tmp_path / "codex", server)
        async with connect_agent(codex_acp_command(), env=env) as agent:
            session = await agent.new_session(cwd=tmp_path)
            print(await session.run("Say hello."))  # streams DEFAULT_REPLY, then end_turn

What the server answers:

- ``POST /v1/responses``: a streamed (server-sent events) assistant message, the events Codex
  needs in order: ``response.created``, ``response.output_item.added``,
  ``response.content_part.added``, one ``response.output_text.delta`` per piece of text,
  ``response.output_text.done``, ``response.content_part.done``,
  ``response.output_item.done`` (the whole message: Codex builds the final text from it) and
  ``response.completed`` (with token usage). The reply depends on the text of the **last user
  message** of the request's ``input``:

  - by default, :data:`DEFAULT_REPLY` in the pieces :data:`DEFAULT_DELTAS`, at once;
  - when the text contains the word ``slow`` (any case): :data:`SLOW_DELTA` every
    :data:`SLOW_INTERVAL` seconds for at most :data:`SLOW_LIMIT` seconds, so a client can cancel
    the turn mid-stream. When the client goes away the stream stops quietly, and
    ``server.state["disconnected_streams"]`` (see :data:`DISCONNECTED_STREAMS`) counts it;
  - the word ``command`` (:data:`COMMAND_WORD`): a ``function_call`` to Codex's
    ``exec_command`` tool with the arguments :data:`COMMAND_ARGUMENTS` (run :data:`COMMAND`,
    which writes :data:`COMMAND_OUTPUT` to :data:`COMMAND_MARKER_FILE` in the turn's cwd,
    with ``sandbox_permissions: "require_escalated"`` and a :data:`COMMAND_JUSTIFICATION`, so
    that under ``approval_policy = "on-request"`` and a sandbox Codex asks the client first).
    The follow-up request, which carries the ``function_call_output`` after that user message,
    gets a final message: :data:`COMMAND_RAN_REPLY` when the output holds
    :data:`COMMAND_OUTPUT`, :data:`COMMAND_DECLINED_REPLY` when Codex reports the command
    rejected, otherwise :data:`COMMAND_FAILED_PREFIX` followed by the output;
  - the word ``fail`` (:data:`FAIL_WORD`): HTTP :data:`FAIL_STATUS` (``503``) with
    :data:`FAIL_MESSAGE` in an OpenAI-style error body. With no retries configured Codex fails
    the turn at once and keeps the message: ``turn.error.message`` is ``"unexpected status 503
    Service Unavailable: <FAIL_MESSAGE>, url: …"``. A status right after the word picks
    another one: ``fail 500`` answers ``500``, for which Codex 0.171.0 drops the body and
    reports its own "We're currently experiencing high demand…" (``codexErrorInfo``
    ``"internalServerError"``);
  - the word ``phases`` (:data:`PHASES_WORD`): two messages in one response,
    :data:`COMMENTARY_REPLY` with ``"phase": "commentary"`` then :data:`FINAL_ANSWER_REPLY`
    with ``"phase": "final_answer"``.

  The words are checked in the order ``fail``, ``command``, ``phases``, ``slow``.

- Anything else (``GET /v1/models`` included): ``404``, which Codex takes as "use the bundled
  model list". Every request is recorded in :attr:`FakeServer.requests` all the same.

:func:`codex_home` writes the ``config.toml`` that makes Codex use the fake (a ``fake`` model
provider with ``wire_api = "responses"``, its ``base_url`` on this server and its key in the
environment variable :data:`API_KEY_ENV`; no retries; ``approval_policy`` and ``sandbox_mode``
as asked, by default ``"never"`` and ``"danger-full-access"`` (Codex's own sandbox needs
bubblewrap, bundled with the npm package); analytics, update checks and the features that
call github.com or chatgpt.com at start-up off) and returns the environment the agent needs:
``CODEX_HOME``, the fake key, ``HOME`` (a directory inside the Codex home, so nothing from the
real home is read) and ``PATH``. No ``authenticate`` call is needed with this provider.

:func:`codex_acp_command` is the argv of the native ``codex-acp`` binary (not the npm launcher,
which does not pass signals on); it does not exit when stdin closes, so it must be stopped
through its process group, which :func:`~subagents.transports.connect_agent` does.
:func:`codex_command` is the argv of the native ``codex app-server`` from ``@openai/codex``
(JSON lines on stdio; it exits when stdin closes); in a test,
:func:`subagents.testing.fake_models.openai_responses.require_codex_command` gives it or stops
the test.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import time
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any, Final, cast

from ..npm_agents import npm_file
from ._http import FakeHandler, FakeServer, serve

__all__ = (
    "API_KEY",
    "API_KEY_ENV",
    "COMMAND",
    "COMMAND_ARGUMENTS",
    "COMMAND_DECLINED_REPLY",
    "COMMAND_FAILED_PREFIX",
    "COMMAND_JUSTIFICATION",
    "COMMAND_MARKER_FILE",
    "COMMAND_OUTPUT",
    "COMMAND_RAN_REPLY",
    "COMMAND_WORD",
    "COMMENTARY_REPLY",
    "DEFAULT_DELTAS",
    "DEFAULT_REPLY",
    "DISCONNECTED_STREAMS",
    "FAIL_MESSAGE",
    "FAIL_STATUS",
    "FAIL_WORD",
    "FINAL_ANSWER_REPLY",
    "MODEL",
    "PHASES_WORD",
    "SLOW_DELTA",
    "SLOW_INTERVAL",
    "SLOW_LIMIT",
    "SLOW_WORD",
    "FakeServer",
    "ResponseEvents",
    "ResponsesHandler",
    "codex_acp_command",
    "codex_command",
    "codex_home",
    "last_user_text",
    "serve",
    "tool_outputs_after_last_user_message",
)

DEFAULT_DELTAS: Final = ("Hello", " from", " the", " fake", " model.")
"""The pieces the default reply is streamed in (one ``response.output_text.delta`` each)."""

DEFAULT_REPLY: Final = "".join(DEFAULT_DELTAS)
"""The default reply: ``"Hello from the fake model."``."""

SLOW_WORD: Final = "slow"
"""The word that asks for a slow reply."""

SLOW_DELTA: Final = "tick "
"""What a ``slow`` reply streams, again and again."""

SLOW_INTERVAL: Final = 0.1
"""Seconds between two pieces of a ``slow`` reply."""

SLOW_LIMIT: Final = 60.0
"""Seconds after which a ``slow`` reply ends normally (if nobody cancelled it)."""

DISCONNECTED_STREAMS: Final = "disconnected_streams"
"""Key in :attr:`FakeServer.state`: how many ``slow`` streams stopped because the client left."""

COMMAND_WORD: Final = "command"
"""The word that makes the model ask to run :data:`COMMAND`."""

COMMAND_MARKER_FILE: Final = "marker.txt"
"""The file :data:`COMMAND` writes, relative to the turn's cwd."""

COMMAND_OUTPUT: Final = "approved-command-ran"
"""What :data:`COMMAND` writes to :data:`COMMAND_MARKER_FILE` (and prints)."""

COMMAND: Final = f"echo {COMMAND_OUTPUT} > {COMMAND_MARKER_FILE}; cat {COMMAND_MARKER_FILE}"
"""The shell command the ``command`` scenario asks to run."""

COMMAND_JUSTIFICATION: Final = "The fake model wants to write a marker file outside the sandbox."
"""The ``justification`` of the call (Codex shows it as the approval request's ``reason``)."""

COMMAND_ARGUMENTS: Final[dict[str, Any]] = {
    "cmd": COMMAND,
    "sandbox_permissions": "require_escalated",
    "justification": COMMAND_JUSTIFICATION,
    "yield_time_ms": 5000,
}
"""The ``exec_command`` arguments (sent JSON-encoded, as the Responses API does)."""

COMMAND_RAN_REPLY: Final = f"command ran: {COMMAND_OUTPUT}"
"""The final reply when the tool output shows the command ran."""

COMMAND_DECLINED_REPLY: Final = "command was declined"
"""The final reply when Codex reports the command rejected (the user declined it)."""

COMMAND_FAILED_PREFIX: Final = "command failed: "
"""The final reply otherwise: this prefix, then the tool output as Codex gave it."""

FAIL_WORD: Final = "fail"
"""The word that makes the server answer an HTTP error (:data:`FAIL_STATUS` unless a status
follows the word, as in ``fail 500``)."""

FAIL_STATUS: Final = 503
"""The status of a ``fail`` answer: one Codex reports with the body's message kept (for
``500`` it reports a message of its own instead)."""

FAIL_MESSAGE: Final = "The fake model failed on purpose."
"""The error message in the body of a ``fail`` answer."""

PHASES_WORD: Final = "phases"
"""The word that asks for a commentary message, then a final answer."""

COMMENTARY_REPLY: Final = "Let me think about that first."
"""The ``phases`` scenario's first message, with ``"phase": "commentary"``."""

FINAL_ANSWER_REPLY: Final = "This is the final answer."
"""The ``phases`` scenario's second message, with ``"phase": "final_answer"``."""

API_KEY_ENV: Final = "FAKE_OPENAI_API_KEY"
"""The environment variable the fake provider's key is read from (``env_key``)."""

API_KEY: Final = "sk-fake-local"
"""The fake key (sent back to the server as ``Authorization: Bearer sk-fake-local``)."""

MODEL: Final = "gpt-5.5"
"""The model slug configured: one Codex knows, so it has no "unknown model" warnings."""

_REJECTED: Final = re.compile(r"\brejected\b", re.IGNORECASE)

Event = tuple[str, Any]
"""One server-sent event: its name and its JSON data."""


def _word(word: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)


_WORDS: Final = {word: _word(word) for word in (COMMAND_WORD, PHASES_WORD, SLOW_WORD)}

_FAIL: Final = re.compile(rf"\b{FAIL_WORD}\b(?:\s+([1-5][0-9][0-9])\b)?", re.IGNORECASE)


def _input_items(body: Any) -> list[dict[str, Any]]:
    """The object items of a Responses request body's ``input`` list."""
    if not isinstance(body, dict):
        return []
    items: Any = cast("dict[str, Any]", body).get("input")
    if not isinstance(items, list):
        return []
    return [
        cast("dict[str, Any]", item) for item in cast("list[Any]", items) if isinstance(item, dict)
    ]


def last_user_text(body: Any) -> str:
    """The text of the last user message in a Responses request body (``""`` if none)."""
    if isinstance(body, dict):
        whole: Any = cast("dict[str, Any]", body).get("input")
        if isinstance(whole, str):
            return whole
    for message in reversed(_input_items(body)):
        if message.get("role") != "user":
            continue
        content: Any = message.get("content")
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            return ""
        texts: list[str] = []
        for part in cast("list[Any]", content):
            if isinstance(part, dict):
                texts.append(str(cast("dict[str, Any]", part).get("text", "")))
        return "".join(texts)
    return ""


def tool_outputs_after_last_user_message(body: Any) -> list[str]:
    """The ``function_call_output`` texts after the last user message, in order.

    Empty for a fresh turn; one per tool call for the follow-up request Codex makes after it
    ran (or did not run) the calls. A list-valued output is joined from its parts' texts.
    """
    outputs: list[str] = []
    for item in reversed(_input_items(body)):
        if item.get("role") == "user":
            break
        if item.get("type") != "function_call_output":
            continue
        output: Any = item.get("output")
        if isinstance(output, list):
            texts: list[str] = []
            for part in cast("list[Any]", output):
                if isinstance(part, dict):
                    texts.append(str(cast("dict[str, Any]", part).get("text", "")))
            output = "".join(texts)
        outputs.append(output if isinstance(output, str) else json.dumps(output))
    outputs.reverse()
    return outputs


def _command_reply(output: str) -> str:
    if COMMAND_OUTPUT in output:
        return COMMAND_RAN_REPLY
    if _REJECTED.search(output):
        return COMMAND_DECLINED_REPLY
    return COMMAND_FAILED_PREFIX + output


class ResponsesHandler(FakeHandler):
    """Answers ``POST /v1/responses`` from the scripted scenarios; everything else ``404``."""

    def handle_post(self, body: Any) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if not path.endswith("/responses"):
            super().handle_post(body)
            return
        with self.fake.lock:
            number = int(self.fake.state.get("responses", 0)) + 1
            self.fake.state["responses"] = number
        text = last_user_text(body)
        model: Any = cast("dict[str, Any]", body).get("model") if isinstance(body, dict) else None
        response = ResponseEvents(number, model if isinstance(model, str) else MODEL)
        if failure := _FAIL.search(text):
            status = int(failure.group(1) or FAIL_STATUS)
            error = {"message": FAIL_MESSAGE, "type": "server_error", "param": None, "code": None}
            self.send_json(status, {"error": error})
        elif _WORDS[COMMAND_WORD].search(text):
            outputs = tool_outputs_after_last_user_message(body)
            if outputs:
                self.send_sse(response.events(response.message((_command_reply(outputs[-1]),))))
            else:
                self.send_sse(
                    response.events(response.function_call("exec_command", COMMAND_ARGUMENTS))
                )
        elif _WORDS[PHASES_WORD].search(text):
            commentary = response.message((COMMENTARY_REPLY,), phase="commentary")
            final = response.message((FINAL_ANSWER_REPLY,), phase="final_answer")
            self.send_sse(response.events(commentary, final))
        elif _WORDS[SLOW_WORD].search(text):
            self.send_sse(response.events(response.message(self._slow_deltas())))
        else:
            self.send_sse(response.events(response.message(DEFAULT_DELTAS)))

    def _slow_deltas(self) -> Iterator[str]:
        deadline = time.monotonic() + SLOW_LIMIT
        while time.monotonic() < deadline:
            yield SLOW_DELTA
            if self._client_left(SLOW_INTERVAL):
                with self.fake.lock:
                    left = int(self.fake.state.get(DISCONNECTED_STREAMS, 0))
                    self.fake.state[DISCONNECTED_STREAMS] = left + 1
                return

    def _client_left(self, wait: float) -> bool:
        """Wait ``wait`` seconds; ``True`` as soon as the client closed its end."""
        conn: socket.socket = self.connection
        deadline = time.monotonic() + wait
        while (remaining := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([conn], [], [], remaining)
            if not readable:
                return False
            try:
                peeked = conn.recv(1, socket.MSG_PEEK)
            except OSError:
                return True
            if not peeked:
                return True
            time.sleep(max(0.0, deadline - time.monotonic()))  # data we do not read: just wait
        return False


OutputItem = Generator[Event, None, dict[str, Any]]
"""The events of one output item; returns the finished item (for ``response.completed``)."""


class ResponseEvents:
    """The server-sent events of one streamed response (number ``number`` of the server)."""

    def __init__(self, number: int, model: str) -> None:
        self.number = number
        self.model = model
        self._items = 0
        self._output_tokens = 0

    def _next_index(self) -> int:
        index = self._items
        self._items += 1
        return index

    def events(self, *items: OutputItem) -> Iterator[Event]:
        """``response.created``, each item's events, then ``response.completed``."""
        response: dict[str, Any] = {
            "id": f"resp_fake_{self.number}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "model": self.model,
            "output": [],
        }
        yield "response.created", {"type": "response.created", "response": response}
        output: list[dict[str, Any]] = []
        for item in items:
            output.append((yield from item))
        output_tokens = max(1, self._output_tokens)
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 10 + output_tokens,
        }
        completed = {**response, "status": "completed", "output": output, "usage": usage}
        yield "response.completed", {"type": "response.completed", "response": completed}

    def message(self, deltas: Iterable[str], *, phase: str | None = None) -> OutputItem:
        """An assistant message streaming ``deltas`` (with ``phase`` when given)."""
        index = self._next_index()
        item_id = f"msg_fake_{self.number}" + (f"_{index}" if index else "")
        item: dict[str, Any] = {
            "type": "message",
            "id": item_id,
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        if phase is not None:
            item["phase"] = phase
        yield (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": index, "item": item},
        )
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
        yield (
            "response.content_part.added",
            {"type": "response.content_part.added", **where, "part": part},
        )
        pieces: list[str] = []
        for delta in deltas:
            pieces.append(delta)
            yield (
                "response.output_text.delta",
                {"type": "response.output_text.delta", **where, "delta": delta},
            )
        self._output_tokens += len(pieces)
        text = "".join(pieces)
        yield (
            "response.output_text.done",
            {"type": "response.output_text.done", **where, "text": text},
        )
        part = {"type": "output_text", "text": text, "annotations": []}
        yield (
            "response.content_part.done",
            {"type": "response.content_part.done", **where, "part": part},
        )
        item = {**item, "status": "completed", "content": [part]}
        yield (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": index, "item": item},
        )
        return item

    def function_call(self, name: str, arguments: dict[str, Any]) -> OutputItem:
        """A ``function_call`` of tool ``name`` (its arguments JSON-encoded, in one delta)."""
        index = self._next_index()
        encoded = json.dumps(arguments)
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_fake_{self.number}_{index}",
            "call_id": f"call_fake_{self.number}_{index}",
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        yield (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": index, "item": item},
        )
        where = {"item_id": item["id"], "output_index": index}
        yield (
            "response.function_call_arguments.delta",
            {"type": "response.function_call_arguments.delta", **where, "delta": encoded},
        )
        yield (
            "response.function_call_arguments.done",
            {"type": "response.function_call_arguments.done", **where, "arguments": encoded},
        )
        self._output_tokens += 1
        item = {**item, "arguments": encoded, "status": "completed"}
        yield (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": index, "item": item},
        )
        return item


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def codex_home(
    directory: Path,
    server: FakeServer,
    *,
    approval_policy: str = "never",
    sandbox_mode: str = "danger-full-access",
) -> dict[str, str]:
    """Write a Codex ``config.toml`` using ``server`` into ``directory``; return the agent's env.

    ``approval_policy`` (``"never"``, ``"on-request"``; ``"untrusted"`` makes Codex 0.171.0
    refuse to start) and ``sandbox_mode`` (``"read-only"``, ``"workspace-write"``,
    ``"danger-full-access"``) go to the top-level keys of the same names.

    The environment: ``CODEX_HOME`` (``directory``), :data:`API_KEY_ENV` (the fake key),
    ``HOME`` (``directory/home``, created: nothing is read from the real home) and ``PATH``
    (the parent's). Give it to the agent as ``env=`` without ``inherit_env``, so no real
    ``OPENAI_API_KEY``, ``CODEX_API_KEY`` or ``OPENAI_BASE_URL`` leaks in.
    """
    directory = directory.resolve()
    home = directory / "home"
    home.mkdir(parents=True, exist_ok=True)
    config = f"""\
# Written by subagents.fake_model_servers.openai_responses: Codex on a fake, offline.
model = {_toml_string(MODEL)}
model_provider = "fake"
approval_policy = {_toml_string(approval_policy)}
sandbox_mode = {_toml_string(sandbox_mode)}
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake Responses API"
base_url = {_toml_string(server.base_url + "/v1")}
wire_api = "responses"
env_key = {_toml_string(API_KEY_ENV)}
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 300000

[analytics]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
"""
    (directory / "config.toml").write_text(config, encoding="utf-8")
    return {
        "CODEX_HOME": str(directory),
        API_KEY_ENV: API_KEY,
        "HOME": str(home),
        "PATH": os.environ.get("PATH", os.defpath),
    }


def codex_acp_command() -> list[str] | None:
    """The argv of the native ``codex-acp`` binary from npm, or ``None`` if not installed."""
    binary = npm_file("@zed-industries/codex-acp-linux-x64/bin/codex-acp")
    return None if binary is None else [str(binary)]


def codex_command() -> list[str] | None:
    """The argv of ``codex app-server`` on stdio (the native binary from ``@openai/codex``),
    or ``None`` if not installed."""
    binary = npm_file("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
    return None if binary is None else [str(binary), "app-server", "--listen", "stdio://"]
