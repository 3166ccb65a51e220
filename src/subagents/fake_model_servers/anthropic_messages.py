"""A fake Anthropic **Messages API** on 127.0.0.1, for running Claude Code agents offline.

The real ACP agent ``@agentclientprotocol/claude-agent-acp`` (pinned in
``requirements/npm``, installed by ``scripts/setup`` under
:func:`~subagents.npm_agents.npm_prefix`) is a Node program that starts the Claude Code
CLI, which talks to the Messages API. Pointed at this fake, the whole stack runs with no key
and no network::

    with serve(AnthropicMessagesHandler) as server:
        env = claude_env(tmp_path, server)
        async with connect_agent(claude_agent_acp_command(), env=env) as agent: ...

**What the fake answers** (every request is recorded in :attr:`FakeServer.requests`):

- ``POST /v1/messages`` (the CLI adds ``?beta=true``): streaming server-sent events
  (``message_start``, ``ping``, ``content_block_start``, ``content_block_delta`` with
  ``text_delta``, ``content_block_stop``, ``message_delta`` with the stop reason and usage,
  ``message_stop``) when the body says ``"stream": true``, else one JSON message. The reply is
  chosen by the text of the **last user message**:

  - by default :data:`DEFAULT_REPLY`, streamed in a few deltas;
  - if that text contains the word :data:`SLOW_WORD` (``slow``), a text delta every
    :data:`SLOW_INTERVAL` seconds for up to :data:`SLOW_LIMIT` seconds, stopping quietly when
    the client goes away: a client can cancel the turn mid-stream;
  - the word :data:`TOOL_WORD` (``tool``): a ``tool_use`` of ``Bash`` running
    :data:`TOOL_COMMAND` (it creates :data:`TOOL_MARKER_FILE` in the working directory, so
    the CLI asks for permission before it runs); the request that carries its
    ``tool_result`` is answered :data:`TOOL_RESULT_PREFIX` + the result's text (the command's
    output when it ran, the refusal when it was denied);
  - the word :data:`FAIL_WORD` (``fail``): an HTTP 529 ``overloaded_error`` whose message is
    :data:`FAIL_MESSAGE`, with ``x-should-retry: false`` (the CLI gives up at once);
  - the word :data:`BIG_WORD` (``big``): :func:`big_reply` (:data:`BIG_REPLY_SIZE`
    characters) in 64 KiB deltas;
  - text starting with :data:`DELEGATE_PREFIX` (``delegate:``), when the request offers a
    tool named :data:`DELEGATE_TOOL` (``subagent``): a ``tool_use`` of that tool with
    ``{"description": DELEGATE_DESCRIPTION, "prompt": <the rest of the text, stripped>}``
    (checked before the other words, which then belong to the delegated prompt: nest
    ``delegate: delegate: ...`` for a grandchild); its ``tool_result`` is answered as above.

  A request without ``tools`` is taken for a side request the CLI makes for itself (titles,
  summaries): it gets :data:`DEFAULT_REPLY`, never the slow stream. (None was seen in one
  ACP turn with CLI 2.1.332: just one streamed request with 12 tools, about 0.2 s.)
- ``POST /v1/messages/count_tokens``: ``{"input_tokens": N}`` (a rough count).
- Anything else: ``HEAD`` gets an empty ``200`` (the SDK-bundled CLI 2.1.185 probes
  ``HEAD /``), other paths a ``404`` Anthropic-style error with ``x-should-retry: false``
  so the CLI does not retry.

**The environment** (:func:`claude_env`; pass it as ``env=`` to
:func:`~subagents.transports.connect_agent`, no ``inherit_env`` needed):

- ``ANTHROPIC_BASE_URL`` (the fake) and ``ANTHROPIC_API_KEY=fake``: any key is accepted;
- ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``: the one that keeps the CLI off the network
  (no DNS for ``api.anthropic.com``, no ``/api/hello`` probe); ``DISABLE_TELEMETRY``,
  ``DISABLE_AUTOUPDATER``, ``DISABLE_ERROR_REPORTING`` as harmless extras;
- a private ``HOME`` and ``CLAUDE_CONFIG_DIR`` under the given directory: settings, session
  transcripts and credentials of the machine are never read or written;
- ``IS_SANDBOX=1`` when running as root: the adapter always passes
  ``--allow-dangerously-skip-permissions`` when ``IS_SANDBOX`` is non-empty (or when not
  root), and the CLI refuses that flag as root unless ``IS_SANDBOX`` is exactly ``1``, so
  ``session/new`` would fail with ``-32603`` (a machine with ``IS_SANDBOX=yes`` hits this);
- ``PATH`` starting with the directory of ``node`` (the adapter is a Node script);
- ``CLAUDE_CODE_EXECUTABLE``: the pinned Claude Code CLI (``node_modules/.bin/claude``) when
  installed; otherwise the adapter runs the CLI bundled with its Agent SDK.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, cast
from urllib.parse import urlsplit

from ..npm_agents import npm_file
from ._http import (
    FakeHandler,
    FakeServer,
    RecordedRequest,
    counting_deltas,
    text_chunks,
)

__all__ = (
    "BIG_REPLY_SIZE",
    "BIG_WORD",
    "DEFAULT_REPLY",
    "DELEGATE_DESCRIPTION",
    "DELEGATE_PREFIX",
    "DELEGATE_TOOL",
    "FAIL_MESSAGE",
    "FAIL_WORD",
    "FAKE_API_KEY",
    "SLOW_INTERVAL",
    "SLOW_LIMIT",
    "SLOW_WORD",
    "TOOL_COMMAND",
    "TOOL_MARKER_FILE",
    "TOOL_OUTPUT",
    "TOOL_RESULT_PREFIX",
    "TOOL_WORD",
    "AnthropicMessagesHandler",
    "big_reply",
    "claude_agent_acp_command",
    "claude_cli_path",
    "claude_env",
    "delegated_prompt",
    "last_user_text",
    "message_requests",
    "open_streams",
    "tool_result_text",
    "wait_streams_closed",
)

DEFAULT_REPLY: Final = "Hello from the fake model."
"""The reply to any ordinary prompt (streamed in a few deltas)."""

SLOW_WORD: Final = "slow"
"""A last user message containing this word gets the slow, cancellable stream."""

SLOW_INTERVAL: Final = 0.1
"""Seconds between two text deltas of the slow stream."""

SLOW_LIMIT: Final = 60.0
"""The slow stream ends (``end_turn``) after this many seconds at most."""

TOOL_WORD: Final = "tool"
"""A last user message containing this word gets a ``Bash`` tool call."""

TOOL_MARKER_FILE: Final = "subagents_tool_marker.txt"
"""The file the tool call's command creates (in the CLI's working directory)."""

TOOL_OUTPUT: Final = "fake-tool-ran"
"""What the tool call's command prints."""

TOOL_COMMAND: Final = f"touch {TOOL_MARKER_FILE} && echo {TOOL_OUTPUT}"
"""The tool call's command: it writes a file, so the CLI asks before running it."""

TOOL_RESULT_PREFIX: Final = "TOOL_RESULT_SEEN: "
"""The reply to a request carrying a tool result starts with this, then the result's text."""

FAIL_WORD: Final = "fail"
"""A last user message containing this word gets an HTTP 529 overloaded error."""

FAIL_MESSAGE: Final = "Overloaded (fake)"
"""The message of that error."""

BIG_WORD: Final = "big"
"""A last user message containing this word gets :func:`big_reply`."""

BIG_REPLY_SIZE: Final = 2_000_000
"""Characters in :func:`big_reply` (2 MB: above the official SDK's 1 MiB line limit)."""

DELEGATE_PREFIX: Final = "delegate:"
"""A last user message starting with this gets a call of :data:`DELEGATE_TOOL` (if offered)."""

DELEGATE_TOOL: Final = "subagent"
"""The tool a delegation calls (the name :class:`~subagents.harness.subagent_tool.SubagentTool`
has by default)."""

DELEGATE_DESCRIPTION: Final = "delegated task"
"""The ``description`` argument of a delegation call."""

FAKE_API_KEY: Final = "fake"

_SLOW = re.compile(rf"\b{SLOW_WORD}\b", re.IGNORECASE)
_TOOL = re.compile(rf"\b{TOOL_WORD}\b", re.IGNORECASE)
_FAIL = re.compile(rf"\b{FAIL_WORD}\b", re.IGNORECASE)
_BIG = re.compile(rf"\b{BIG_WORD}\b", re.IGNORECASE)
_BIG_DELTA: Final = 64 * 1024
_DELTA_SIZE: Final = 6
_OPEN_STREAMS: Final = "open_streams"


def _text_of(content: Any) -> str:
    """The newest user-written text block of a message's content (system reminders left out).

    After an interrupted turn the CLI merges the interrupted prompt, an "[Request interrupted
    by user]" marker and the next prompt into one user message: only the last block is what
    the user just said.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for block in cast(list[Any], content):
        if not isinstance(block, dict):
            continue
        block = cast(dict[str, Any], block)
        text = block.get("text")
        if (
            block.get("type") == "text"
            and isinstance(text, str)
            and not text.lstrip().startswith("<system-reminder>")
        ):
            texts.append(text)
    return texts[-1] if texts else ""


def big_reply() -> str:
    """The 2 MB reply (:data:`BIG_REPLY_SIZE` characters, a repeating numbered pattern)."""
    line = "".join(f"{i:04d} subagents big reply line.\n" for i in range(1000))
    return (line * (BIG_REPLY_SIZE // len(line) + 1))[:BIG_REPLY_SIZE]


def _last_user_message(body: Any) -> dict[str, Any] | None:
    if not isinstance(body, dict):
        return None
    messages = cast(dict[str, Any], body).get("messages")
    if not isinstance(messages, list):
        return None
    for message in reversed(cast(list[Any], messages)):
        if isinstance(message, dict) and cast(dict[str, Any], message).get("role") == "user":
            return cast(dict[str, Any], message)
    return None


def tool_result_text(body: Any) -> str | None:
    """The text of the ``tool_result`` in the last user message, ``None`` if it has none."""
    message = _last_user_message(body)
    content = message.get("content") if message else None
    if not isinstance(content, list):
        return None
    for block in cast(list[Any], content):
        if isinstance(block, dict) and cast(dict[str, Any], block).get("type") == "tool_result":
            inner = cast(dict[str, Any], block).get("content")
            if isinstance(inner, str):
                return inner
            if isinstance(inner, list):
                return "".join(
                    str(cast(dict[str, Any], part).get("text", ""))
                    for part in cast(list[Any], inner)
                    if isinstance(part, dict)
                )
            return ""
    return None


def last_user_text(body: Any) -> str:
    """The text of the last ``user`` message of a Messages API request body (``""`` if none)."""
    message = _last_user_message(body)
    return _text_of(message.get("content")) if message else ""


def message_requests(server: FakeServer) -> list[RecordedRequest]:
    """The ``POST /v1/messages`` requests the fake received so far (side requests included)."""
    with server.lock:
        requests = list(server.requests)
    return [r for r in requests if r.method == "POST" and urlsplit(r.path).path == "/v1/messages"]


def open_streams(server: FakeServer) -> int:
    """How many streamed answers are being sent right now (``0`` once a cancelled stream
    noticed its client went away)."""
    with server.lock:
        return int(server.state.get(_OPEN_STREAMS, 0))


def wait_streams_closed(server: FakeServer, timeout: float) -> bool:
    """Block (a thread) until no stream is open, at most ``timeout`` seconds; whether it was
    reached. From async code: ``await anyio.to_thread.run_sync(wait_streams_closed, s, 10)``."""
    deadline = time.monotonic() + timeout
    while open_streams(server):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def delegated_prompt(text: str, offered: set[str]) -> str | None:
    """The prompt to delegate when ``text`` starts with :data:`DELEGATE_PREFIX` and the tool
    names ``offered`` include :data:`DELEGATE_TOOL`; ``None`` otherwise."""
    stripped = text.strip()
    if DELEGATE_TOOL not in offered or not stripped.lower().startswith(DELEGATE_PREFIX):
        return None
    return stripped[len(DELEGATE_PREFIX) :].strip()


def _tool_names(tools: Any) -> set[str]:
    if not isinstance(tools, list):
        return set()
    return {
        str(cast(dict[str, Any], tool).get("name"))
        for tool in cast(list[Any], tools)
        if isinstance(tool, dict)
    }


def _is_side_request(body: dict[str, Any]) -> bool:
    """A request the CLI makes for itself (title, summaries): it offers no tools."""
    return not body.get("tools")


class AnthropicMessagesHandler(FakeHandler):
    """The fake Messages API: see the module documentation for what it answers."""

    def handle_post(self, body: Any) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/v1/messages" and isinstance(body, dict):
            self._messages(cast(dict[str, Any], body))
        elif path == "/v1/messages/count_tokens":
            self.send_json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
        else:
            self._error(404, "not_found_error", f"no route for POST {self.path}")

    def handle_get(self) -> None:
        self._error(404, "not_found_error", f"no route for GET {self.path}")

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    # -- answers -------------------------------------------------------------------------

    def _error(self, status: int, kind: str, message: str) -> None:
        self.send_json(
            status,
            {"type": "error", "error": {"type": kind, "message": message}},
            headers={"x-should-retry": "false"},
        )

    def _messages(self, body: dict[str, Any]) -> None:
        model = str(body.get("model") or "fake-model")
        text = last_user_text(body)
        side = _is_side_request(body)
        result = tool_result_text(body)
        delegated = delegated_prompt(text, _tool_names(body.get("tools")))
        if not side and result is None and delegated is None and _FAIL.search(text):
            self._error(529, "overloaded_error", FAIL_MESSAGE)
            return
        blocks: list[_Block]
        if side:
            blocks = [_text_block(_chunks(DEFAULT_REPLY))]
        elif result is not None:
            blocks = [_text_block(_chunks(TOOL_RESULT_PREFIX + result))]
        elif delegated is not None:
            arguments = {"description": DELEGATE_DESCRIPTION, "prompt": delegated}
            blocks = [_tool_block(DELEGATE_TOOL, arguments)]
        elif _TOOL.search(text):
            blocks = [_tool_block("Bash", {"command": TOOL_COMMAND, "description": "Mark"})]
        elif _SLOW.search(text):
            blocks = [_text_block(counting_deltas(SLOW_LIMIT, SLOW_INTERVAL))]
        elif _BIG.search(text):
            blocks = [_text_block(_chunks(big_reply(), _BIG_DELTA))]
        else:
            blocks = [_text_block(_chunks(DEFAULT_REPLY))]
        if not body.get("stream"):
            content = [_complete(block) for block in blocks]
            self.send_json(200, _message(model, content, _stop_reason(blocks)))
            return
        self._count_stream(+1)
        try:
            self.send_sse(_stream(model, blocks))
        finally:
            self._count_stream(-1)

    def _count_stream(self, step: int) -> None:
        with self.fake.lock:
            self.fake.state[_OPEN_STREAMS] = self.fake.state.get(_OPEN_STREAMS, 0) + step


@dataclass
class _Block:
    """One content block of a reply: text (streamed as ``deltas``) or a tool call."""

    kind: Literal["text", "tool_use"]
    deltas: Iterator[str]
    name: str = ""
    tool_input: dict[str, Any] | None = None


def _text_block(deltas: Iterator[str]) -> _Block:
    return _Block("text", deltas)


def _tool_block(name: str, tool_input: dict[str, Any]) -> _Block:
    return _Block("tool_use", iter([json.dumps(tool_input)]), name, tool_input)


def _stop_reason(blocks: list[_Block]) -> str:
    return "tool_use" if any(b.kind == "tool_use" for b in blocks) else "end_turn"


def _tool_id() -> str:
    return f"toolu_fake_{uuid.uuid4().hex[:20]}"


def _complete(block: _Block) -> dict[str, Any]:
    if block.kind == "tool_use":
        return {"type": "tool_use", "id": _tool_id(), "name": block.name, "input": block.tool_input}
    return {"type": "text", "text": "".join(block.deltas)}


def _message(
    model: str, content: list[dict[str, Any]], stop_reason: str | None = "end_turn"
) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _chunks(text: str, size: int = _DELTA_SIZE) -> Iterator[str]:
    return text_chunks(text, size)


def _stream(model: str, blocks: list[_Block]) -> Iterator[tuple[str | None, Any]]:
    start = _message(model, [], None)
    start["usage"] = {"input_tokens": 10, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    count = 0
    for index, block in enumerate(blocks):
        if block.kind == "tool_use":
            opening: dict[str, Any] = {
                "type": "tool_use",
                "id": _tool_id(),
                "name": block.name,
                "input": {},
            }
        else:
            opening = {"type": "text", "text": ""}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
        for text in block.deltas:
            count += 1
            delta = (
                {"type": "input_json_delta", "partial_json": text}
                if block.kind == "tool_use"
                else {"type": "text_delta", "text": text}
            )
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(blocks), "stop_sequence": None},
            "usage": {"output_tokens": count},
        },
    )
    yield "message_stop", {"type": "message_stop"}


# -- running the real agent ------------------------------------------------------------------


def claude_cli_path() -> Path | None:
    """The pinned Claude Code CLI (``node_modules/.bin/claude``), ``None`` if not installed."""
    return npm_file(".bin/claude")


def claude_agent_acp_command() -> list[str] | None:
    """The argv of ``claude-agent-acp`` (run by ``node``), ``None`` if it or node is missing."""
    script = npm_file(".bin/claude-agent-acp")
    node = shutil.which("node")
    if script is None or node is None:
        return None
    return [node, str(script.resolve())]


def claude_env(directory: Path, server: FakeServer, *, pinned_cli: bool = True) -> dict[str, str]:
    """The environment for ``claude-agent-acp`` (or ``claude``) on the fake ``server``.

    ``HOME`` and ``CLAUDE_CONFIG_DIR`` are made under ``directory`` (absolute). With
    ``pinned_cli`` (the default) the adapter runs the pinned Claude Code CLI when installed,
    else the CLI bundled with its Agent SDK. See the module documentation for each variable.
    """
    home = directory.resolve() / "home"
    config = home / ".claude"
    config.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    node = shutil.which("node")
    if node is not None:
        path = os.pathsep.join([str(Path(node).parent), path])
    env = {
        "ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config),
        "PATH": path,
    }
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    cli = claude_cli_path() if pinned_cli else None
    if cli is not None:
        env["CLAUDE_CODE_EXECUTABLE"] = str(cli.resolve())
    return env
