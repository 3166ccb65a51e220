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
    ``server.state["disconnected_streams"]`` (see :data:`DISCONNECTED_STREAMS`) counts it.

- Anything else (``GET /v1/models`` included): ``404``, which Codex takes as "use the bundled
  model list". Every request is recorded in :attr:`FakeServer.requests` all the same.

:func:`codex_home` writes the ``config.toml`` that makes Codex use the fake (a ``fake`` model
provider with ``wire_api = "responses"``, its ``base_url`` on this server and its key in the
environment variable :data:`API_KEY_ENV`; no retries; ``sandbox_mode = "danger-full-access"``
because Codex's own sandbox needs bubblewrap; analytics, update checks and the features that
call github.com or chatgpt.com at start-up off) and returns the environment the agent needs:
``CODEX_HOME``, the fake key, ``HOME`` (a directory inside the Codex home, so nothing from the
real home is read) and ``PATH``. No ``authenticate`` call is needed with this provider.

:func:`codex_acp_command` is the argv of the native ``codex-acp`` binary (not the npm launcher,
which does not pass signals on); it does not exit when stdin closes, so it must be stopped
through its process group, which :func:`~subagents.transports.connect_agent` does.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, cast

from ..npm_agents import npm_file
from ._http import FakeHandler, FakeServer, serve

__all__ = (
    "API_KEY",
    "API_KEY_ENV",
    "DEFAULT_DELTAS",
    "DEFAULT_REPLY",
    "DISCONNECTED_STREAMS",
    "MODEL",
    "SLOW_DELTA",
    "SLOW_INTERVAL",
    "SLOW_LIMIT",
    "FakeServer",
    "ResponsesHandler",
    "codex_acp_command",
    "codex_home",
    "last_user_text",
    "serve",
)

DEFAULT_DELTAS: Final = ("Hello", " from", " the", " fake", " model.")
"""The pieces the default reply is streamed in (one ``response.output_text.delta`` each)."""

DEFAULT_REPLY: Final = "".join(DEFAULT_DELTAS)
"""The default reply: ``"Hello from the fake model."``."""

SLOW_DELTA: Final = "tick "
"""What a ``slow`` reply streams, again and again."""

SLOW_INTERVAL: Final = 0.1
"""Seconds between two pieces of a ``slow`` reply."""

SLOW_LIMIT: Final = 60.0
"""Seconds after which a ``slow`` reply ends normally (if nobody cancelled it)."""

DISCONNECTED_STREAMS: Final = "disconnected_streams"
"""Key in :attr:`FakeServer.state`: how many ``slow`` streams stopped because the client left."""

API_KEY_ENV: Final = "FAKE_OPENAI_API_KEY"
"""The environment variable the fake provider's key is read from (``env_key``)."""

API_KEY: Final = "sk-fake-local"
"""The fake key (sent back to the server as ``Authorization: Bearer sk-fake-local``)."""

MODEL: Final = "gpt-5.5"
"""The model slug configured: one Codex knows, so it has no "unknown model" warnings."""

_SLOW_WORD: Final = re.compile(r"\bslow\b", re.IGNORECASE)


def last_user_text(body: Any) -> str:
    """The text of the last user message in a Responses request body (``""`` if none)."""
    if not isinstance(body, dict):
        return ""
    items: Any = cast("dict[str, Any]", body).get("input")
    if isinstance(items, str):
        return items
    if not isinstance(items, list):
        return ""
    for item in reversed(cast("list[Any]", items)):
        if not isinstance(item, dict):
            continue
        message = cast("dict[str, Any]", item)
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


class ResponsesHandler(FakeHandler):
    """Answers ``POST /v1/responses`` with a streamed message; everything else ``404``."""

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
        deltas = self._slow_deltas() if _SLOW_WORD.search(text) else iter(DEFAULT_DELTAS)
        self.send_sse(_events(number, model if isinstance(model, str) else MODEL, deltas))

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


def _events(number: int, model: str, deltas: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """The server-sent events of one response streaming ``deltas`` as one assistant message."""
    response_id = f"resp_fake_{number}"
    item_id = f"msg_fake_{number}"
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    yield "response.created", {"type": "response.created", "response": response}
    item: dict[str, Any] = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    yield (
        "response.output_item.added",
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    )
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
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
    text = "".join(pieces)
    yield "response.output_text.done", {"type": "response.output_text.done", **where, "text": text}
    part = {"type": "output_text", "text": text, "annotations": []}
    yield (
        "response.content_part.done",
        {"type": "response.content_part.done", **where, "part": part},
    )
    item = {**item, "status": "completed", "content": [part]}
    yield (
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": item},
    )
    output_tokens = max(1, len(pieces))
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + output_tokens,
    }
    completed = {**response, "status": "completed", "output": [item], "usage": usage}
    yield "response.completed", {"type": "response.completed", "response": completed}


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def codex_home(directory: Path, server: FakeServer) -> dict[str, str]:
    """Write a Codex ``config.toml`` using ``server`` into ``directory``; return the agent's env.

    The environment: ``CODEX_HOME`` (``directory``), :data:`API_KEY_ENV` (the fake key),
    ``HOME`` (``directory/home``, created: nothing is read from the real home) and ``PATH``
    (the parent's). Give it to the agent as ``env=`` without ``inherit_env``, so no real
    ``OPENAI_API_KEY``, ``CODEX_API_KEY`` or ``OPENAI_BASE_URL`` leaks in.
    """
    directory = directory.resolve()
    home = directory / "home"
    home.mkdir(parents=True, exist_ok=True)
    config = f"""\
# Written by subagents.testing.fake_models.openai_responses: Codex on a fake, offline.
model = {_toml_string(MODEL)}
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
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
