"""The chaos agent (issue 10): a minimal ACP agent whose faults are chosen per run.

    python tests/reliability/chaos_agent.py FAULT [ARG]

Standard library only (it starts in a few milliseconds). Without a fault it is a small
conforming agent: ``initialize``, ``session/new`` and ``session/prompt`` (``UPDATES``
message chunks ``"chunk i"``, then ``end_turn``), ``session/cancel`` honoured. ``FAULT``:

``none``             behave (the control run).
``split``            write every outgoing frame one byte at a time (flushing each byte).
``garbage``          before each frame, a line that is not JSON and one that is not UTF-8.
``huge-line``        after 2 chunks, one ``session/update`` line of ARG MiB (default 100).
``crash-after``      exit 3 after ARG updates (default 3), mid-prompt, saying so on stderr.
``hang``             never answer ``session/prompt``, cancelled or not (updates stop after 2).
``hang-init``        never answer ``initialize``.
``ignore-cancel``    keep streaming after ``session/cancel``, never answer ``cancelled``.
``stderr-flood``     write ARG MB (default 100) to stderr during the prompt, then answer.
``exit-during-init`` exit 4 as soon as ``initialize`` arrives, without answering it.
``no-eof-exit``      ignore stdin EOF (and SIGTERM is honoured: the ladder must stop it).
``grandchild``       start a grandchild that ignores SIGTERM (it writes its pid to ARG).
``wrong-ids``        answer ``session/prompt`` (cancelled or not) with an id that was never sent.
``duplicate``        answer ``session/prompt`` twice (the same id).
``answer-notify``    answer the ``session/cancel`` notification (which has no id); chunks come
                     500 ms apart, so a cancel lands mid-turn.
``storm``            send ARG requests (default 2000) ``fs/read_text_file`` during the prompt
                     and end the turn when all are answered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

UPDATES = 5
FAULT = sys.argv[1] if len(sys.argv) > 1 else "none"
ARG = sys.argv[2] if len(sys.argv) > 2 else None
OUT = sys.stdout.buffer
LOCK = threading.RLock()
"""Held while a frame is written (re-entrant: a fault may write several frames at once)."""
cancelled: set[str] = set()


def write_frame(message: dict[str, Any]) -> None:
    data = json.dumps(message).encode() + b"\n"
    with LOCK:
        if FAULT == "garbage":
            OUT.write(b"this is not json\n")
            OUT.write(b"\xff\xfe not utf-8 \xc3\x28\n")
        if FAULT == "split":
            for index in range(len(data)):
                OUT.write(data[index : index + 1])
                OUT.flush()
        else:
            OUT.write(data)
        OUT.flush()


def answer(request_id: Any, result: Any) -> None:
    write_frame({"jsonrpc": "2.0", "id": request_id, "result": result})


def chunk(session_id: str, text: str) -> None:
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


def prompt(request_id: Any, session_id: str) -> None:
    if FAULT == "storm":
        storm(request_id, session_id)
        return
    if FAULT == "stderr-flood":
        block = b"e" * (1 << 20) + b"\n"
        for _ in range(int(ARG or 100)):
            sys.stderr.buffer.write(block)
        sys.stderr.buffer.flush()
    for index in range(1, UPDATES + 1):
        if session_id in cancelled and FAULT not in ("ignore-cancel", "hang", "wrong-ids"):
            answer(request_id, {"stopReason": "cancelled"})
            return
        if FAULT == "crash-after" and index > int(ARG or 3):
            sys.stderr.write("chaos agent: crashing on purpose after updates\n")
            sys.stderr.flush()
            os._exit(3)
        if FAULT == "huge-line" and index == 3:
            size = int(ARG or 100) << 20
            chunk(session_id, "x" * size)
        if FAULT == "hang" and index > 2:
            return
        chunk(session_id, f"chunk {index}")
        time.sleep({"ignore-cancel": 0.2, "answer-notify": 0.5}.get(FAULT, 0.02))
    if FAULT == "ignore-cancel":
        while True:  # streams forever, never answers
            chunk(session_id, "still going")
            time.sleep(0.2)
    if FAULT == "wrong-ids":
        answer(987654321, {"stopReason": "end_turn"})
        return
    if FAULT == "duplicate":
        # Both answers under one hold of the lock: the main thread answering the client's next
        # request (sent on the first answer) must not write between them.
        with LOCK:
            answer(request_id, {"stopReason": "end_turn"})
            answer(request_id, {"stopReason": "end_turn"})
        return
    answer(request_id, {"stopReason": "end_turn"})


pending_storm: dict[int, None] = {}
storm_done = threading.Event()


def storm(request_id: Any, session_id: str) -> None:
    count = int(ARG or 2000)
    for index in range(count):
        pending_storm[10_000 + index] = None
    for index in range(count):
        write_frame(
            {
                "jsonrpc": "2.0",
                "id": 10_000 + index,
                "method": "fs/read_text_file",
                "params": {"sessionId": session_id, "path": "/nonexistent/storm.txt"},
            }
        )
    storm_done.wait(60)
    chunk(session_id, f"storm of {count} requests answered")
    answer(request_id, {"stopReason": "end_turn"})


def start_grandchild(pid_file: str) -> None:
    code = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"open({pid_file!r} + '.tmp', 'w').write(str(os.getpid()))\n"
        f"os.rename({pid_file!r} + '.tmp', {pid_file!r})\n"
        "time.sleep(120)\n"
    )
    subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
    # Serve only once the grandchild ignores SIGTERM and its pid is on disk: on a loaded
    # machine the turn could otherwise end, and the disposal run, before it got that far.
    deadline = time.monotonic() + 30
    while not os.path.exists(pid_file) and time.monotonic() < deadline:
        time.sleep(0.01)


def main() -> None:
    if FAULT == "no-eof-exit":
        signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    if FAULT == "grandchild" and ARG:
        start_grandchild(ARG)
    sessions = 0
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params") or {}
        if method is None:  # a response (to the storm)
            pending_storm.pop(request_id, None)
            if FAULT == "storm" and not pending_storm:
                storm_done.set()
            continue
        if method == "initialize":
            if FAULT == "exit-during-init":
                sys.stderr.write("chaos agent: exiting during initialize\n")
                sys.stderr.flush()
                os._exit(4)
            if FAULT == "hang-init":
                continue
            answer(
                request_id,
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {},
                    "authMethods": [],
                    "agentInfo": {"name": "chaos-agent", "version": FAULT},
                },
            )
        elif method == "session/new":
            sessions += 1
            answer(request_id, {"sessionId": f"chaos-{sessions}"})
        elif method == "session/prompt":
            threading.Thread(
                target=prompt, args=(request_id, params.get("sessionId", "")), daemon=True
            ).start()
        elif method == "session/cancel":
            cancelled.add(params.get("sessionId", ""))
            if FAULT == "answer-notify":
                answer(None, {"cancelled": True})
        elif request_id is not None:
            write_frame(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
    if FAULT == "no-eof-exit":
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
