"""A fake Anthropic **Messages API** on 127.0.0.1, for running Claude Code agents offline.

The real ACP agent ``@agentclientprotocol/claude-agent-acp`` (pinned in
``requirements/npm``, installed by ``scripts/setup`` under
:func:`~subagents.testing.npm_agents.npm_prefix`) is a Node program that starts the Claude Code
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
    the client goes away: a client can cancel the turn mid-stream.

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
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import urlsplit

from subagents.testing.fake_models._http import FakeHandler, FakeServer, RecordedRequest
from subagents.testing.npm_agents import npm_file

__all__ = (
    "DEFAULT_REPLY",
    "FAKE_API_KEY",
    "SLOW_INTERVAL",
    "SLOW_LIMIT",
    "SLOW_WORD",
    "AnthropicMessagesHandler",
    "claude_agent_acp_command",
    "claude_cli_path",
    "claude_env",
    "last_user_text",
    "message_requests",
    "open_streams",
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

FAKE_API_KEY: Final = "fake"

_SLOW = re.compile(rf"\b{SLOW_WORD}\b", re.IGNORECASE)
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


def last_user_text(body: Any) -> str:
    """The text of the last ``user`` message of a Messages API request body (``""`` if none)."""
    if not isinstance(body, dict):
        return ""
    messages = cast(dict[str, Any], body).get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(cast(list[Any], messages)):
        if isinstance(message, dict) and cast(dict[str, Any], message).get("role") == "user":
            return _text_of(cast(dict[str, Any], message).get("content"))
    return ""


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
        slow = bool(_SLOW.search(text)) and not _is_side_request(body)
        if not body.get("stream"):
            self.send_json(200, _message(model, [{"type": "text", "text": DEFAULT_REPLY}]))
            return
        deltas = _slow_deltas() if slow else _chunks(DEFAULT_REPLY)
        self._count_stream(+1)
        try:
            self.send_sse(_stream(model, deltas))
        finally:
            self._count_stream(-1)

    def _count_stream(self, step: int) -> None:
        with self.fake.lock:
            self.fake.state[_OPEN_STREAMS] = self.fake.state.get(_OPEN_STREAMS, 0) + step


def _message(model: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _chunks(text: str) -> Iterator[str]:
    for start in range(0, len(text), _DELTA_SIZE):
        yield text[start : start + _DELTA_SIZE]


def _slow_deltas() -> Iterator[str]:
    deadline = time.monotonic() + SLOW_LIMIT
    count = 0
    while time.monotonic() < deadline:
        count += 1
        yield f"{count} "
        time.sleep(SLOW_INTERVAL)


def _stream(model: str, deltas: Iterator[str]) -> Iterator[tuple[str | None, Any]]:
    start = _message(model, [])
    start["stop_reason"] = None
    start["usage"] = {"input_tokens": 10, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    yield (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        },
    )
    count = 0
    for text in deltas:
        count += 1
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        )
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
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
