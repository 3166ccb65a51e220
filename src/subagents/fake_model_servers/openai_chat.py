"""A fake OpenAI-style **Chat Completions API** on 127.0.0.1, for the in-process agent loop's
:class:`~subagents.harness.llm.openai_chat.OpenAIChatAdapter` over real HTTP::

    with serve(ChatCompletionsHandler) as server:
        adapter = OpenAIChatAdapter("fake-model", api_key=API_KEY, base_url=server.base_url + "/v1")

What it answers (every request is recorded in :attr:`FakeServer.requests`):

- ``POST .../chat/completions``: ``chat.completion.chunk`` server-sent events ending with
  ``data: [DONE]`` when the body says ``"stream": true`` (a last chunk with the ``usage``
  when ``stream_options.include_usage`` is set), else one ``chat.completion`` object. The
  reply follows the rules of the fake Messages API
  (:mod:`~subagents.fake_model_servers.anthropic_messages`), on the same constants:

  - a request whose messages after the last ``user`` message include a ``tool`` message:
    :data:`TOOL_RESULT_PREFIX` + that (last) result's content, ``finish_reason: "stop"``;
  - a last user message starting with :data:`DELEGATE_PREFIX` when the request offers the
    function :data:`DELEGATE_TOOL`: one ``tool_calls`` entry of that function with
    ``{"description": DELEGATE_DESCRIPTION, "prompt": <the rest, stripped>}`` (the arguments
    JSON streamed in two pieces), ``finish_reason: "tool_calls"``;
  - a last user message containing the word :data:`SLOW_WORD` (``slow``), in a request that
    offers tools (an agent's turn, not a side request such as a title): a text delta every
    :data:`SLOW_INTERVAL` seconds for up to :data:`SLOW_LIMIT` seconds, ending when the client
    goes away, so a client can cancel the turn mid-stream (when streaming; else the reply);
  - anything else: :data:`DEFAULT_REPLY`, streamed in a few deltas.

- Anything else: an OpenAI-style ``404`` error.

:func:`qwen_acp_command` / :func:`qwen_env` run the real ACP agent ``qwen --acp`` from
``@qwen-code/qwen-code`` on this fake, and :func:`opencode_acp_command` /
:func:`opencode_env` run ``opencode acp`` from ``opencode-ai`` (both pinned in
``requirements/npm``, installed by ``scripts/setup``), offline, with a private ``HOME``.
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

from ..npm_agents import npm_file
from ._http import FakeHandler, FakeServer, RecordedRequest
from .anthropic_messages import (
    DEFAULT_REPLY,
    DELEGATE_DESCRIPTION,
    DELEGATE_PREFIX,
    DELEGATE_TOOL,
    TOOL_RESULT_PREFIX,
    delegated_prompt,
)

__all__ = (
    "API_KEY",
    "DEFAULT_REPLY",
    "DELEGATE_DESCRIPTION",
    "DELEGATE_PREFIX",
    "DELEGATE_TOOL",
    "MODEL",
    "SLOW_INTERVAL",
    "SLOW_LIMIT",
    "SLOW_WORD",
    "TOOL_RESULT_PREFIX",
    "ChatCompletionsHandler",
    "chat_requests",
    "last_user_text",
    "opencode_acp_command",
    "opencode_env",
    "qwen_acp_command",
    "qwen_env",
    "tool_results_after_last_user_message",
)

API_KEY: Final = "sk-fake-chat"
"""A key for the fake (any key, or none, is accepted)."""

MODEL: Final = "fake-model"
"""The model name the agents are configured with (the fake answers any)."""

SLOW_WORD: Final = "slow"
"""A last user message with this word gets the slow stream (see the module documentation)."""

SLOW_INTERVAL: Final = 0.1
"""Seconds between the slow stream's deltas."""

SLOW_LIMIT: Final = 60.0
"""The slow stream ends after this many seconds (so it stops by itself)."""

_SLOW: Final = re.compile(rf"\b{SLOW_WORD}\b", re.IGNORECASE)
_DELTA_SIZE: Final = 6


def _messages(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        return []
    messages = cast(dict[str, Any], body).get("messages")
    if not isinstance(messages, list):
        return []
    return [cast(dict[str, Any], m) for m in cast(list[Any], messages) if isinstance(m, dict)]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(cast(dict[str, Any], part).get("text", ""))
            for part in cast(list[Any], content)
            if isinstance(part, dict)
        )
    return ""


def last_user_text(body: Any) -> str:
    """The text of the last ``user`` message of a Chat Completions body (``""`` if none)."""
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def tool_results_after_last_user_message(body: Any) -> list[str]:
    """The contents of the ``tool`` messages after the last ``user`` message, in order."""
    results: list[str] = []
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool":
            results.append(_content_text(message.get("content")))
    results.reverse()
    return results


def chat_requests(server: FakeServer) -> list[RecordedRequest]:
    """The ``POST .../chat/completions`` requests the fake received so far."""
    with server.lock:
        requests = list(server.requests)
    return [
        r
        for r in requests
        if r.method == "POST" and urlsplit(r.path).path.rstrip("/").endswith("/chat/completions")
    ]


def _function_names(tools: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(tools, list):
        for tool in cast(list[Any], tools):
            function = (
                cast(dict[str, Any], tool).get("function") if isinstance(tool, dict) else None
            )
            if isinstance(function, dict):
                names.add(str(cast(dict[str, Any], function).get("name")))
    return names


class ChatCompletionsHandler(FakeHandler):
    """The fake Chat Completions API: see the module documentation for what it answers."""

    def handle_post(self, body: Any) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if not path.endswith("/chat/completions") or not isinstance(body, dict):
            error = {"message": f"no route for POST {self.path}", "type": "invalid_request_error"}
            self.send_json(404, {"error": error})
            return
        body = cast(dict[str, Any], body)
        model = str(body.get("model") or "fake-model")
        results = tool_results_after_last_user_message(body)
        delegated = delegated_prompt(last_user_text(body), _function_names(body.get("tools")))
        text = ""
        call: dict[str, Any] | None = None
        slow = False
        if results:
            text = TOOL_RESULT_PREFIX + results[-1]
        elif delegated is not None:
            arguments = json.dumps({"description": DELEGATE_DESCRIPTION, "prompt": delegated})
            call = {"id": f"call_fake_{uuid.uuid4().hex[:20]}", "arguments": arguments}
        elif body.get("tools") and _SLOW.search(last_user_text(body)):
            slow = bool(body.get("stream"))
            text = DEFAULT_REPLY
        else:
            text = DEFAULT_REPLY
        finish = "tool_calls" if call is not None else "stop"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if call is not None:
                message["tool_calls"] = [_complete_call(call)]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self.send_json(200, {**_envelope(model, "chat.completion"), "choices": [choice]})
            return
        options = body.get("stream_options")
        usage = isinstance(options, dict) and bool(
            cast(dict[str, Any], options).get("include_usage")
        )
        chunks = _slow_chunks(model) if slow else _chunks(model, text, call, finish, usage)
        self.send_sse((None, data) for data in chunks)


def _complete_call(call: dict[str, Any]) -> dict[str, Any]:
    function = {"name": DELEGATE_TOOL, "arguments": call["arguments"]}
    return {"id": call["id"], "type": "function", "function": function}


def _envelope(model: str, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{uuid.uuid4().hex[:20]}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
    }


def _chunk(
    envelope: dict[str, Any], delta: dict[str, Any], finish_reason: str | None = None
) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {**envelope, "choices": [choice]}


def _slow_chunks(model: str) -> Iterator[Any]:
    """A delta every :data:`SLOW_INTERVAL` s for :data:`SLOW_LIMIT` s (``send_sse`` stops
    when the client has gone: the write fails)."""
    envelope = _envelope(model, "chat.completion.chunk")
    yield _chunk(envelope, {"role": "assistant", "content": ""})
    deadline = time.monotonic() + SLOW_LIMIT
    count = 0
    while time.monotonic() < deadline:
        count += 1
        yield _chunk(envelope, {"content": f"{count} "})
        time.sleep(SLOW_INTERVAL)
    yield _chunk(envelope, {}, "stop")
    yield "[DONE]"


def _chunks(
    model: str, text: str, call: dict[str, Any] | None, finish: str, usage: bool
) -> Iterator[Any]:
    envelope = _envelope(model, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return _chunk(envelope, delta, finish_reason)

    yield chunk({"role": "assistant", "content": ""})
    pieces = 0
    for start in range(0, len(text), _DELTA_SIZE):
        pieces += 1
        yield chunk({"content": text[start : start + _DELTA_SIZE]})
    if call is not None:
        arguments: str = call["arguments"]
        half = len(arguments) // 2
        opening = {"name": DELEGATE_TOOL, "arguments": arguments[:half]}
        first = {"index": 0, "id": call["id"], "type": "function", "function": opening}
        yield chunk({"tool_calls": [first]})
        yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]})
        pieces += 2
    yield chunk({}, finish)
    if usage:
        counts = {"prompt_tokens": 10, "completion_tokens": pieces, "total_tokens": 10 + pieces}
        yield {**envelope, "choices": [], "usage": counts}
    yield "[DONE]"


# -- running the real agents -------------------------------------------------------------------


def _node_path() -> str:
    """The parent's ``PATH``, with the directory of ``node`` first (for the Node agents)."""
    path = os.environ.get("PATH", os.defpath)
    node = shutil.which("node")
    if node is not None:
        path = os.pathsep.join([str(Path(node).parent), path])
    return path


def qwen_acp_command() -> list[str] | None:
    """The argv of ``qwen --acp`` from ``@qwen-code/qwen-code`` (run by ``node``, told to use
    its OpenAI-compatible provider), ``None`` if it or node is missing."""
    script = npm_file("@qwen-code/qwen-code/cli.js")
    node = shutil.which("node")
    if script is None or node is None:
        return None
    return [node, str(script.resolve()), "--acp", "--auth-type", "openai"]


_QWEN_SETTINGS: Final[dict[str, Any]] = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "disableAutoUpdate": True, "disableUpdateNag": True},
}


def qwen_env(directory: Path, server: FakeServer) -> dict[str, str]:
    """The offline environment of :func:`qwen_acp_command` on the fake ``server``.

    ``OPENAI_BASE_URL`` (the fake's ``/v1``), ``OPENAI_API_KEY`` (:data:`API_KEY`),
    ``OPENAI_MODEL`` (:data:`MODEL`); a private ``HOME`` under ``directory`` whose
    ``.qwen/settings.json`` turns off usage statistics, telemetry and update checks; ``TMPDIR``
    under it; ``PATH`` with ``node``. Nothing of the machine's own Qwen or OpenAI set-up leaks
    in when given as the whole environment. ``QWEN_CODE_NO_RELAUNCH=true``: the CLI runs in
    the process started, instead of loading its bundle, spawning a second ``node`` (with a
    larger heap) that loads it again, and relaying its exit status; that halves each start's
    CPU time (about 2.0 -> 1.1 s here), and the agent's ACP traffic is the same (the
    conformance baseline is unchanged).
    """
    home = directory.resolve() / "home"
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(_QWEN_SETTINGS), encoding="utf-8")
    (home / "tmp").mkdir(exist_ok=True)
    return {
        "OPENAI_BASE_URL": server.base_url + "/v1",
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_MODEL": MODEL,
        "QWEN_CODE_NO_RELAUNCH": "true",
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "PATH": _node_path(),
    }


def opencode_acp_command() -> list[str] | None:
    """The argv of ``opencode acp``: the native binary that ``opencode-ai``'s install script
    picked for this machine (``bin/opencode.exe``), else the one of the platform package;
    ``None`` if not installed."""
    binary = npm_file("opencode-ai/bin/opencode.exe") or npm_file("opencode-linux-x64/bin/opencode")
    return None if binary is None else [str(binary), "acp"]


def opencode_env(directory: Path, server: FakeServer) -> dict[str, str]:
    """The offline environment of :func:`opencode_acp_command` on the fake ``server``.

    The whole configuration is in ``OPENCODE_CONFIG_CONTENT``: one provider ``fake``
    (``@ai-sdk/openai-compatible``, bundled in the binary) whose ``baseURL`` is the fake's
    ``/v1``, with the one model :data:`MODEL`, the only provider enabled; no auto-update, no
    sharing. The ``OPENCODE_DISABLE_*`` switches keep it from fetching the models.dev
    catalogue, LSP servers and default plugins. At start-up opencode installs
    ``@opencode-ai/plugin`` into each config directory in the background (seen with strace:
    a lookup of registry.npmjs.org), whatever the configuration says; ``npm_config_registry``
    points that at the fake, which answers ``404``, so it fails at once and offline (opencode
    logs a warning and goes on). ``HOME``, ``TMPDIR`` and the XDG directories are private,
    under ``directory``; ``PATH`` is the parent's. ``OPENCODE_MODELS_PATH`` names an empty
    models catalogue (``{}``, written under ``directory``): the one enabled provider is fully
    described by the configuration, and without it every start would load the catalogue
    bundled in the binary, about 1 s of CPU of the ~3 s a start costs here (same answers to
    ``initialize``, ``session/new`` and a prompt; the conformance baseline is unchanged).
    """
    home = directory.resolve() / "home"
    home.mkdir(parents=True, exist_ok=True)
    models = directory.resolve() / "opencode-models.json"
    models.write_text("{}", encoding="utf-8")
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake Chat Completions API",
        "options": {"baseURL": server.base_url + "/v1", "apiKey": API_KEY},
        "models": {MODEL: {"name": "Fake model"}},
    }
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"fake/{MODEL}",
        "small_model": f"fake/{MODEL}",
        "enabled_providers": ["fake"],
        "provider": {"fake": provider},
    }
    env = {
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_MODELS_PATH": str(models),
        "npm_config_registry": server.base_url + "/npm-registry-is-offline/",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(home / "tmp"),
        "PATH": os.environ.get("PATH", os.defpath),
    }
    (home / "tmp").mkdir(exist_ok=True)
    return env
