"""A scripted stand-in for the ``claude`` CLI in stream-json mode (stdlib only).

It speaks the shapes recorded on the real CLI 2.1.332 (research note claude.md §2.5, §2.6,
§4): the ``initialize`` control request, user lines, ``system/init``, ``stream_event``
deltas, ``assistant``/``user`` lines, ``result``, and the control requests it sends
(``can_use_tool``, ``hook_callback``, ``control_cancel_request``). What a turn does is picked
by a marker in the prompt:

- (none): three text deltas, the assistant message and a ``success`` result, text ``REPLY``;
- ``[[stall]]``: one delta, then waits for ``interrupt``; then an aborted assistant message,
  ``[Request interrupted by user]`` and an ``error_during_execution`` result;
- ``[[tool]]``: a Bash ``tool_use`` and a ``can_use_tool`` request; the result text says
  what the host answered (``TOOL_RESULT_SEEN: fake-tool-ran`` or ``TOOL_DENIED: <message>``);
- ``[[tool-cancel]]``: a ``can_use_tool`` request, then ``control_cancel_request`` for it;
- ``[[hook]]``: a ``hook_callback`` for ``hook_0``; the result text is the answer's JSON;
- ``[[control:NAME]]``: a control request of subtype NAME; the result text is the answer;
- ``[[error]]``: a synthetic API-error assistant message and an ``is_error`` result (then
  exit 1 on stdin EOF, as the real CLI);
- ``[[big:N]]``: an assistant message and result whose text is N ``x``;
- ``[[noise]]``: a non-JSON stdout line, an unknown message type and an unknown system
  subtype, then a normal turn;
- ``[[crash]]``: one delta, "fake crash" on stderr, exit 2.

Environment: ``FAKE_CLAUDE_RECORD`` (a file: the argv and environment, then every stdin
message, one JSON per line), ``FAKE_CLAUDE_MODE`` (``exit-before-init``: stderr and exit 3;
``ignore-eof``: stays alive after stdin EOF until signalled).
A non-JSON stdin line is fatal, as on the real CLI (stderr and exit 1).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from typing import Any

REPLY = "FAKE-REPLY: pong"
SESSION = str(uuid.uuid4())
_out_lock = threading.Lock()
_record_lock = threading.Lock()
_responses: dict[str, dict[str, Any]] = {}
_response_arrived = threading.Condition()
_interrupted = threading.Event()
_state = {"last_error": False, "turns": 0}


def record(entry: Any) -> None:
    path = os.environ.get("FAKE_CLAUDE_RECORD")
    if path:
        with _record_lock, open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def emit(message: dict[str, Any]) -> None:
    with _out_lock:
        sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def emit_raw(line: str) -> None:
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def delta(text: str) -> dict[str, Any]:
    return {
        "type": "stream_event",
        "event": {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text},
        },
        "session_id": SESSION,
        "parent_tool_use_id": None,
    }


def assistant(content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {"role": "assistant", "model": "fake", "content": content},
        "parent_tool_use_id": None,
        "session_id": SESSION,
        **extra,
    }


def user(content: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
        "session_id": SESSION,
    }


def result(
    text: str | None, subtype: str = "success", is_error: bool = False, **extra: Any
) -> None:
    _state["last_error"] = is_error
    emit(
        {
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "result": text,
            "num_turns": 1,
            "duration_ms": 5,
            "session_id": SESSION,
            "total_cost_usd": 0.000144,
            "usage": {"input_tokens": 11, "output_tokens": 5},
            "stop_reason": None if is_error else "end_turn",
            "terminal_reason": extra.pop("terminal_reason", "completed"),
            **extra,
        }
    )


def ask(request: dict[str, Any], *, cancel: bool = False) -> dict[str, Any] | None:
    """Send a control request to the host; its response (``None`` when cancelled)."""
    request_id = str(uuid.uuid4())
    emit({"type": "control_request", "request_id": request_id, "request": request})
    if cancel:
        time.sleep(0.2)
        emit({"type": "control_cancel_request", "request_id": request_id})
        time.sleep(0.3)  # an answer arriving now would be recorded
        return None
    with _response_arrived:
        _response_arrived.wait_for(lambda: request_id in _responses, timeout=20)
        return _responses.pop(request_id, None)


def run_turn(prompt: str) -> None:
    _interrupted.clear()
    _state["turns"] += 1
    emit(
        {
            "type": "system",
            "subtype": "init",
            "session_id": SESSION,
            "cwd": os.getcwd(),
            "model": "claude-fake-model",
            "tools": ["Bash", "Read"],
            "permissionMode": "default",
            "claude_code_version": "2.1.332-fake",
        }
    )
    if "[[noise]]" in prompt:
        emit_raw("[debug] this line is not JSON")
        emit({"type": "mystery_event", "payload": 1, "session_id": SESSION})
        emit({"type": "system", "subtype": "brand_new", "session_id": SESSION})
    if "[[crash]]" in prompt:
        emit(delta("FAKE-R"))
        sys.stderr.write("fake crash\n")
        sys.stderr.flush()
        os._exit(2)
    if "[[stall]]" in prompt:
        emit(delta("FAKE-R"))
        _interrupted.wait(30)
        emit(assistant([{"type": "text", "text": "FAKE-R"}], aborted=True))
        emit(user([{"type": "text", "text": "[Request interrupted by user]"}]))
        result(
            None,
            "error_during_execution",
            True,
            terminal_reason="aborted_streaming",
            errors=["interrupted"],
        )
        return
    if "[[tool]]" in prompt or "[[tool-cancel]]" in prompt:
        tool_input = {"command": "touch fake_marker.txt", "description": "Touch a marker"}
        emit(
            assistant(
                [{"type": "tool_use", "id": "toolu_fake_1", "name": "Bash", "input": tool_input}]
            )
        )
        request = {
            "subtype": "can_use_tool",
            "tool_name": "Bash",
            "display_name": "Bash",
            "input": tool_input,
            "description": "Touch a marker",
            "permission_suggestions": [],
            "tool_use_id": "toolu_fake_1",
        }
        if "[[tool-cancel]]" in prompt:
            ask(request, cancel=True)
            result("CANCEL_SENT")
            return
        answer = ask(request) or {}
        body = answer.get("response") or {}
        if answer.get("subtype") == "success" and body.get("behavior") == "allow":
            ran = f"fake-tool-ran {json.dumps(body.get('updatedInput'))}"
            emit(user([{"type": "tool_result", "tool_use_id": "toolu_fake_1", "content": ran}]))
            text = f"TOOL_RESULT_SEEN: {ran}"
        else:
            message = body.get("message", "no answer")
            emit(
                user(
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_fake_1",
                            "content": message,
                            "is_error": True,
                        }
                    ]
                )
            )
            text = f"TOOL_DENIED: {message}"
        emit(assistant([{"type": "text", "text": text}]))
        result(text)
        return
    if "[[hook]]" in prompt:
        answer = ask(
            {
                "subtype": "hook_callback",
                "callback_id": "hook_0",
                "input": {"hook_event_name": "PreToolUse", "tool_name": "Bash"},
                "tool_use_id": "toolu_fake_2",
            }
        )
        result(json.dumps(answer, sort_keys=True))
        return
    match = re.search(r"\[\[control:(\w+)\]\]", prompt)
    if match:
        answer = ask({"subtype": match.group(1)})
        result(json.dumps(answer, sort_keys=True))
        return
    if "[[error]]" in prompt:
        text = "API Error: 529 Overloaded (fake)"
        emit(
            assistant(
                [{"type": "text", "text": text}],
                error="server_error",
                is_api_error_message=True,
                api_error_status=529,
            )
        )
        result(text, "success", True, terminal_reason="api_error", api_error_status=529)
        return
    match = re.search(r"\[\[big:(\d+)\]\]", prompt)
    if match:
        text = "x" * int(match.group(1))
        emit(assistant([{"type": "text", "text": text}]))
        result(text)
        return
    for piece in ("FAKE-", "REPLY: ", "pong"):
        emit(delta(piece))
    emit(assistant([{"type": "text", "text": REPLY}]))
    result(REPLY)


def main() -> None:
    record({"argv": sys.argv[1:], "env": dict(os.environ)})
    mode = os.environ.get("FAKE_CLAUDE_MODE", "")
    if mode == "exit-before-init":
        sys.stderr.write("fake claude: cannot start (invalid API key)\n")
        sys.stderr.flush()
        sys.exit(3)
    turn: threading.Thread | None = None
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            sys.stderr.write(
                f"Error parsing streaming input line (type=unknown, {len(line)} chars)\n"
            )
            sys.exit(1)
        record(message)
        kind = message.get("type")
        if kind == "control_request":
            request = message.get("request", {})
            subtype = request.get("subtype")
            if subtype == "initialize":
                body: dict[str, Any] = {
                    "commands": [],
                    "pid": os.getpid(),
                    "claude_code_version": "2.1.332-fake",
                    "session_state": "idle",
                }
            elif subtype == "interrupt":
                _interrupted.set()
                body = {"still_queued": []}
            else:
                emit(
                    {
                        "type": "control_response",
                        "response": {
                            "subtype": "error",
                            "request_id": message.get("request_id"),
                            "error": f"Unsupported control request subtype: {subtype}",
                            "error_code": "unsupported_request",
                        },
                    }
                )
                continue
            emit(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": message.get("request_id"),
                        "response": body,
                    },
                }
            )
        elif kind == "control_response":
            response = message.get("response", {})
            with _response_arrived:
                _responses[response.get("request_id")] = response
                _response_arrived.notify_all()
        elif kind == "user":
            if turn is not None:
                turn.join()
            content = message.get("message", {}).get("content")
            prompt = content if isinstance(content, str) else json.dumps(content)
            turn = threading.Thread(target=run_turn, args=(prompt,), daemon=True)
            turn.start()
    # stdin EOF does not cancel: the running turn finishes first (as on the real CLI).
    if turn is not None:
        turn.join()
    record({"eof": True})
    if mode == "ignore-eof":
        signal.signal(signal.SIGTERM, lambda *_: (record({"sigterm": True}), os._exit(143)))
        while True:
            signal.pause()
    sys.exit(1 if _state["last_error"] else 0)


if __name__ == "__main__":
    main()
