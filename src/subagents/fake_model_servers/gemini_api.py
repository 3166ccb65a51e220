"""A fake **Gemini API** (``generativelanguage``, ``v1beta``) on 127.0.0.1, for running the
real ACP agent ``gemini --acp`` from ``@google/gemini-cli`` offline::

    with serve(GeminiHandler) as server:
        env = gemini_env(tmp_path, server)
        async with connect_agent(gemini_acp_command(), env=env) as agent: ...

What it answers (every request is recorded in :attr:`FakeServer.requests`):

- ``POST /v1beta/models/<model>:streamGenerateContent`` (the CLI adds ``?alt=sse``):
  server-sent ``GenerateContentResponse`` chunks, the last one with ``finishReason: "STOP"``
  and the ``usageMetadata``. The reply is chosen by the text of the **last user turn** (the
  last ``contents`` entry with role ``user`` that has a ``text`` part):

  - by default :data:`DEFAULT_REPLY`, in a few chunks;
  - if that text contains the word :data:`SLOW_WORD` (``slow``) and the request offers
    ``tools`` (the agent's own turn, not a side request): a text chunk every
    :data:`SLOW_INTERVAL` seconds for up to :data:`SLOW_LIMIT` seconds, ending when the client
    goes away, so a client can cancel the turn mid-stream.

- ``POST /v1beta/models/<model>:generateContent``: one ``GenerateContentResponse`` with
  :data:`DEFAULT_REPLY`; when the request asks for JSON (``responseMimeType`` is
  ``application/json``: the CLI's side questions, such as its model router) the text is
  :data:`JSON_REPLY`, which such a caller cannot use and falls back from.
- ``POST /v1beta/models/<model>:countTokens``: ``{"totalTokens": N}`` (a rough count).
- Anything else: a Google-style ``404`` error.

:func:`gemini_acp_command` is the argv of the pinned CLI in ACP mode (``node .../gemini.js
--acp``) and :func:`gemini_env` its offline environment: ``GOOGLE_GEMINI_BASE_URL`` (the
fake) with ``GEMINI_API_KEY`` (any key), :data:`MODEL` chosen explicitly (``GEMINI_MODEL``), a
private ``HOME`` whose ``.gemini/settings.json`` turns off usage statistics, telemetry and
update checks, and ``TMPDIR`` under it (the CLI writes error reports to the temp directory).
``GEMINI_CLI_TRUST_WORKSPACE=true`` trusts the session directories (the CLI's documented switch
for automated use, as ``--skip-trust``): in an untrusted folder, which every fresh directory
is, the CLI 0.61.0 silently ignores the MCP servers of ``session/new`` and refuses
``session/set_mode`` to its own ``autoEdit`` / ``yolo`` modes with ``-32603``.
``GEMINI_CLI_NO_RELAUNCH=true``: the CLI runs in the process started, instead of loading its
bundle, spawning a second ``node`` with a larger heap that loads the bundle again, and relaying
its exit status (its documented switch); that halves each start's CPU time (about 2.0 ->
1.2 s here), and the agent's ACP traffic is the same (the conformance baseline is unchanged).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import urlsplit

from ..npm_agents import npm_file
from ._http import FakeHandler, FakeServer, RecordedRequest, counting_deltas, text_chunks

__all__ = (
    "API_KEY",
    "DEFAULT_REPLY",
    "JSON_REPLY",
    "MODEL",
    "SLOW_INTERVAL",
    "SLOW_LIMIT",
    "SLOW_WORD",
    "GeminiHandler",
    "gemini_acp_command",
    "gemini_env",
    "generate_requests",
    "last_user_text",
)

API_KEY: Final = "fake-gemini-key"
"""A key for the fake (any key is accepted)."""

MODEL: Final = "gemini-2.5-flash"
"""The model the agent is told to use (the fake answers any)."""

DEFAULT_REPLY: Final = "Hello from the fake model."

JSON_REPLY: Final = "{}"
"""The text of a reply to a request that asks for JSON."""

SLOW_WORD: Final = "slow"
SLOW_INTERVAL: Final = 0.1
"""Seconds between the slow stream's chunks."""
SLOW_LIMIT: Final = 60.0
"""The slow stream ends after this many seconds (so it stops by itself)."""

_SLOW: Final = re.compile(rf"\b{SLOW_WORD}\b", re.IGNORECASE)
_DELTA_SIZE: Final = 6
_ROUTE: Final = re.compile(r"^/v1beta/models/([^/:]+):([A-Za-z]+)$")


def _contents(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        return []
    contents = cast(dict[str, Any], body).get("contents")
    if not isinstance(contents, list):
        return []
    return [cast(dict[str, Any], c) for c in cast(list[Any], contents) if isinstance(c, dict)]


def _texts(content: dict[str, Any]) -> list[str]:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return []
    texts: list[str] = []
    for part in cast(list[Any], parts):
        if isinstance(part, dict) and isinstance(
            text := cast(dict[str, Any], part).get("text"), str
        ):
            texts.append(text)
    return texts


def last_user_text(body: Any) -> str:
    """The text of the last ``user`` turn that has text (``""`` if none)."""
    for content in reversed(_contents(body)):
        if content.get("role", "user") == "user" and (texts := _texts(content)):
            return "".join(texts)
    return ""


def generate_requests(server: FakeServer) -> list[RecordedRequest]:
    """The ``generateContent`` / ``streamGenerateContent`` requests the fake received."""
    with server.lock:
        requests = list(server.requests)
    return [r for r in requests if r.method == "POST" and "GenerateContent" in r.path]


def _wants_json(body: dict[str, Any]) -> bool:
    config = body.get("generationConfig")
    if not isinstance(config, dict):
        return False
    return cast(dict[str, Any], config).get("responseMimeType") == "application/json"


def _response(model: str, text: str, finish: str | None, tokens: int) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"text": text}]},
        "index": 0,
    }
    if finish is not None:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 10, "candidatesTokenCount": tokens, "totalTokenCount": 10 + tokens}
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": f"fake-{uuid.uuid4().hex[:20]}",
    }


def _stream(model: str, pieces: Iterator[str]) -> Iterator[tuple[str | None, Any]]:
    count = 0
    for piece in pieces:
        count += 1
        yield None, _response(model, piece, None, count)
    yield None, _response(model, "", "STOP", count)


class GeminiHandler(FakeHandler):
    """The fake Gemini API: see the module documentation for what it answers."""

    def handle_post(self, body: Any) -> None:
        route = _ROUTE.match(urlsplit(self.path).path.rstrip("/"))
        if route is None or not isinstance(body, dict):
            self._error(404, f"no route for POST {self.path}")
            return
        body = cast(dict[str, Any], body)
        model, method = route.group(1), route.group(2)
        if method == "countTokens":
            self.send_json(200, {"totalTokens": max(1, len(json.dumps(body)) // 4)})
        elif method == "generateContent":
            text = JSON_REPLY if _wants_json(body) else DEFAULT_REPLY
            self.send_json(200, _response(model, text, "STOP", 1))
        elif method == "streamGenerateContent":
            if body.get("tools") and _SLOW.search(last_user_text(body)):
                self.send_sse(_stream(model, counting_deltas(SLOW_LIMIT, SLOW_INTERVAL)))
            else:
                self.send_sse(_stream(model, text_chunks(DEFAULT_REPLY, _DELTA_SIZE)))
        else:
            self._error(404, f"no method {method!r} in {self.path}")

    def handle_get(self) -> None:
        self._error(404, f"no route for GET {self.path}")

    def _error(self, status: int, message: str) -> None:
        self.send_json(
            status, {"error": {"code": status, "message": message, "status": "NOT_FOUND"}}
        )


# -- running the real agent ------------------------------------------------------------------

_SETTINGS: Final[dict[str, Any]] = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def gemini_acp_command() -> list[str] | None:
    """The argv of ``gemini --acp`` (the pinned CLI run by ``node``), ``None`` if it or node
    is missing."""
    script = npm_file("@google/gemini-cli/bundle/gemini.js")
    node = shutil.which("node")
    if script is None or node is None:
        return None
    return [node, str(script.resolve()), "--acp"]


def gemini_env(directory: Path, server: FakeServer) -> dict[str, str]:
    """The offline environment of :func:`gemini_acp_command` on the fake ``server``: a private
    ``HOME`` (and ``TMPDIR``) made under ``directory``; see the module documentation."""
    home = directory.resolve() / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(_SETTINGS), encoding="utf-8")
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    node = shutil.which("node")
    if node is not None:
        path = os.pathsep.join([str(Path(node).parent), path])
    return {
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
        "GEMINI_API_KEY": API_KEY,
        "GEMINI_MODEL": MODEL,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "PATH": path,
    }
