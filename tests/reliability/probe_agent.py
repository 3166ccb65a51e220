"""A probing ACP agent for the security pass (issue 10): it asks its client for whatever the
test tells it to, and records what it was given.

    python tests/reliability/probe_agent.py RECORD_DIR

Standard library only. At start it writes its whole environment to ``RECORD_DIR/env.json``;
every line it reads from stdin is appended to ``RECORD_DIR/received.jsonl`` (so a test can
check that a secret never reached it). It answers ``initialize`` (protocol 1, no
capabilities) and ``session/new``. A ``session/prompt`` whose text is a JSON list of
``[method, params]`` pairs makes it send each as a request to the client, in order, waiting
for each answer: ``params`` get the session's ``sessionId``, and any string value
``"$TERMINAL"`` becomes the id of the last terminal created. Each answer (the whole JSON-RPC
response object) comes back as one ``agent_message_chunk`` holding its JSON; then the turn
ends ``end_turn``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

RECORD = Path(sys.argv[1])
OUT = sys.stdout.buffer
LOCK = threading.Lock()
answers: dict[int, dict[str, Any]] = {}
answered = threading.Condition()


def write_frame(message: dict[str, Any]) -> None:
    with LOCK:
        OUT.write(json.dumps(message).encode() + b"\n")
        OUT.flush()


def answer(request_id: Any, result: Any) -> None:
    write_frame({"jsonrpc": "2.0", "id": request_id, "result": result})


def say(session_id: str, text: str) -> None:
    write_frame(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": session_id,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                },
            },
        }
    )


def substitute(value: Any, terminal: str) -> Any:
    if value == "$TERMINAL":
        return terminal
    if isinstance(value, dict):
        return {k: substitute(v, terminal) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, terminal) for v in value]
    return value


def probe(request_id: Any, session_id: str, text: str) -> None:
    steps = json.loads(text)
    terminal = ""
    for index, (method, params) in enumerate(steps):
        call_id = 1000 + index
        params = substitute(params, terminal)
        params["sessionId"] = session_id
        write_frame({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
        with answered:
            if not answered.wait_for(lambda call_id=call_id: call_id in answers, timeout=30):
                say(session_id, json.dumps({"id": call_id, "error": {"message": "no answer"}}))
                continue
            response = answers.pop(call_id)
        result = response.get("result")
        if method == "terminal/create" and isinstance(result, dict):
            terminal = str(result.get("terminalId", ""))
        say(session_id, json.dumps(response))
    answer(request_id, {"stopReason": "end_turn"})


def main() -> None:
    RECORD.mkdir(parents=True, exist_ok=True)
    (RECORD / "env.json").write_text(json.dumps(dict(os.environ)), encoding="utf-8")
    log = (RECORD / "received.jsonl").open("ab")
    sessions = 0
    for raw in sys.stdin.buffer:
        log.write(raw)
        log.flush()
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params") or {}
        if method is None:
            with answered:
                answers[request_id] = message
                answered.notify_all()
        elif method == "initialize":
            answer(
                request_id,
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {},
                    "authMethods": [],
                    "agentInfo": {"name": "probe-agent", "version": "0"},
                },
            )
        elif method == "session/new":
            sessions += 1
            answer(request_id, {"sessionId": f"probe-{sessions}"})
        elif method == "session/prompt":
            text = "".join(
                block.get("text", "")
                for block in params.get("prompt", [])
                if isinstance(block, dict)
            )
            threading.Thread(
                target=probe, args=(request_id, params.get("sessionId", ""), text), daemon=True
            ).start()
        elif request_id is not None:
            write_frame(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )


if __name__ == "__main__":
    main()
