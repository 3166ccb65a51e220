"""A scripted fake ``codex app-server`` (stdio, JSONL, JSON-RPC without ``"jsonrpc"``).

Stdlib only; run as ``python fake_codex_app_server.py [options]``. It speaks the shapes the
real 0.171.0 binary was observed to send (notifications carry ``emittedAtMs``; server request
ids start at 0 in their own id space). What a turn does depends on words in its prompt:

- default: ``turn/start`` answer, ``thread/status/changed`` active, ``turn/started``, the
  user message item, an agent message streamed in three deltas, token usage, idle,
  ``turn/completed`` whose items hold the final message;
- ``early``: ``turn/started`` and the first delta come **before** the ``turn/start`` answer;
- ``phases``: a ``commentary`` message then a ``final_answer`` one; ``turn/completed`` has no
  items (the final text must come from the phase);
- ``stall``: one delta, then nothing until ``turn/interrupt`` (answered ``{}``, then idle and
  ``turn/completed`` interrupted); a second interrupt gets "no active turn to interrupt";
- ``late``: the ``turn/start`` answer, then nothing until the next message; a ``turn/interrupt``
  arriving then is refused "no active turn to interrupt" and the turn starts right after it
  (``turn/started``, one delta, then as ``stall``): the real binary's race between its answer
  and the turn's start;
- ``approve``: a command item and an ``item/commandExecution/requestApproval``; the decision
  is the final message (``decision: <d>``);
- ``patch``: the same with ``item/fileChange/requestApproval``;
- ``ask``: an ``item/tool/requestUserInput`` request (which a client must answer, with an
  error); the answer's error message is the final message;
- ``fail``: systemError status, an ``error`` notification, ``turn/completed`` failed;
- ``think``: a plan update (``turn/plan/updated``), a reasoning item streamed as summary and
  raw-text deltas then completed, a second reasoning item completed without deltas, a plan
  item streamed as ``item/plan/delta``, a second plan update, then the default message;
- ``interleave``: two agent messages whose deltas alternate (a ``commentary`` one and a
  ``final_answer`` one, the final answer completed first); ``turn/completed`` has no items;
- ``lost``: a complete turn whose ``turn/completed`` never comes (the thread goes idle);
  ``thread/read`` reports it completed;
- ``hang``: one delta, then nothing (no idle, no completion); ``thread/read`` reports it
  in progress;
- ``crash``: one delta, then a message on stderr and exit status 3.

Options: ``--exit-before-initialize`` (print a config error on stderr, exit 1),
``--overload N`` (answer the first N requests ``-32001``), ``--record PATH`` (append every
message received to PATH, one JSON object per line).

In-process (tests over memory streams): ``Fake(overload, None, write)`` sends each line
through ``write``; :meth:`Fake.feed` takes each line received; :attr:`Fake.received` lists
every message received. ``crash`` then calls ``hang_up`` (when set) instead of exiting.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

Json = Any

VERSION = "0.171.0"


class Fake:
    def __init__(
        self, overload: int, record: str | None, write: Callable[[str], object] | None = None
    ) -> None:
        self.overload = overload
        self.record = record
        self.write = write
        self.hang_up: Callable[[], object] | None = None
        self.received: list[dict[str, Json]] = []
        self.counter = 0
        self.server_request_id = 0
        self.threads: dict[str, list[dict[str, Json]]] = {}  # thread id -> turns
        self.active: dict[str, str] = {}  # thread id -> stalled/hung turn id
        self.late: dict[str, tuple[str, dict[str, str], dict[str, Json]]] = {}  # not started
        self.waiting: dict[int, Callable[[dict[str, Json]], None]] = {}

    # -- output

    def send(self, message: dict[str, Json]) -> None:
        if self.write is not None:
            self.write(json.dumps(message) + "\n")
            return
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def notify(self, method: str, params: dict[str, Json]) -> None:
        self.send({"method": method, "params": params, "emittedAtMs": int(time.time() * 1000)})

    def answer(self, request_id: Json, result: Json) -> None:
        self.send({"id": request_id, "result": result})

    def error(self, request_id: Json, code: int, message: str) -> None:
        self.send({"id": request_id, "error": {"code": code, "message": message}})

    def ask(self, method: str, params: dict[str, Json], then: Callable[[dict[str, Json]], None]):
        request_id = self.server_request_id
        self.server_request_id += 1
        self.waiting[request_id] = then
        self.send({"id": request_id, "method": method, "params": params})

    def new_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    # -- shapes

    def thread(self, thread_id: str, *, turns: bool = False, **extra: Json) -> dict[str, Json]:
        return {
            "id": thread_id,
            "cliVersion": VERSION,
            "createdAt": 1,
            "updatedAt": 1,
            "cwd": "/tmp",
            "ephemeral": False,
            "modelProvider": "fake",
            "preview": "",
            "projectId": None,
            "sessionId": thread_id,
            "source": "appServer",
            "status": {"type": "idle"},
            "turns": list(self.threads.get(thread_id, [])) if turns else [],
            "path": None,
            **extra,
        }

    def thread_response(self, thread: dict[str, Json]) -> dict[str, Json]:
        return {
            "thread": thread,
            "model": "gpt-5.5",
            "modelProvider": "fake",
            "cwd": "/tmp",
            "approvalPolicy": "never",
            "approvalsReviewer": "user",
            "sandbox": {"type": "readOnly"},
        }

    @staticmethod
    def turn(turn_id: str, status: str, items: list[Json] | None = None, **extra: Json):
        return {"id": turn_id, "status": status, "items": items or [], "error": None, **extra}

    @staticmethod
    def message(item_id: str, text: str, phase: str | None = None) -> dict[str, Json]:
        return {"type": "agentMessage", "id": item_id, "text": text, "phase": phase}

    # -- requests

    def feed(self, line: str | bytes) -> None:
        """Take one line received."""
        line = line.strip()
        if not line:
            return
        try:
            message = json.loads(line)
        except ValueError:
            return  # like the real server: a non-JSON line is ignored
        if isinstance(message, dict):
            self.handle(message)

    def handle(self, message: dict[str, Json]) -> None:
        self.received.append(message)
        if self.record:
            with open(self.record, "a", encoding="utf-8") as out:
                out.write(json.dumps(message) + "\n")
        if "method" not in message:  # an answer to one of our requests
            then = self.waiting.pop(message.get("id", -1), None)
            if then is not None:
                then(message)
            return
        if "id" not in message:
            return  # a notification (initialized, $/cancel_request)
        request_id, method = message["id"], message["method"]
        params: dict[str, Json] = message.get("params") or {}
        if self.overload > 0:
            self.overload -= 1
            self.error(request_id, -32001, "Server overloaded; retry later.")
            return
        handler = getattr(self, "on_" + method.replace("/", "_"), None)
        if handler is None:
            self.error(request_id, -32600, f"Invalid request: unknown variant {method}")
            return
        handler(request_id, params)

    def on_initialize(self, request_id: Json, params: dict[str, Json]) -> None:
        name = params["clientInfo"]["name"]
        version = params["clientInfo"]["version"]
        self.answer(
            request_id,
            {
                "userAgent": f"{name}/{VERSION} (Fake 1.0; x86_64) fake ({name}; {version})",
                "codexHome": "/tmp/fake-codex-home",
                "platformFamily": "unix",
                "platformOs": "linux",
            },
        )
        self.notify("configWarning", {"summary": "fake warning", "details": None})

    def on_thread_start(self, request_id: Json, params: dict[str, Json]) -> None:
        thread_id = self.new_id("thr")
        self.threads[thread_id] = []
        thread = self.thread(thread_id)
        self.answer(request_id, self.thread_response(thread))
        self.notify("thread/started", {"thread": thread})

    def on_thread_resume(self, request_id: Json, params: dict[str, Json]) -> None:
        thread_id = params["threadId"]
        if thread_id not in self.threads:
            self.error(request_id, -32600, f"thread not found: {thread_id}")
            return
        self.answer(request_id, self.thread_response(self.thread(thread_id, turns=True)))

    def on_thread_fork(self, request_id: Json, params: dict[str, Json]) -> None:
        source = params["threadId"]
        if params.get("ephemeral") and not params.get("excludeTurns"):
            self.error(
                request_id, -32600, "ephemeral paginated thread/fork requires excludeTurns: true"
            )
            return
        thread_id = self.new_id("thr")
        self.threads[thread_id] = list(self.threads.get(source, []))
        thread = self.thread(
            thread_id, forkedFromId=source, ephemeral=bool(params.get("ephemeral"))
        )
        self.answer(request_id, self.thread_response(thread))
        self.notify("thread/started", {"thread": thread})

    def on_thread_read(self, request_id: Json, params: dict[str, Json]) -> None:
        thread_id = params["threadId"]
        if thread_id not in self.threads:
            self.error(request_id, -32600, f"thread not found: {thread_id}")
            return
        turns = bool(params.get("includeTurns"))
        self.answer(request_id, {"thread": self.thread(thread_id, turns=turns)})

    def on_turn_interrupt(self, request_id: Json, params: dict[str, Json]) -> None:
        thread_id, turn_id = params["threadId"], params["turnId"]
        late = self.late.pop(thread_id, None)
        if late is not None:
            self.error(request_id, -32600, "no active turn to interrupt")
            late_id, where, started = late
            self.notify(
                "thread/status/changed",
                {"threadId": thread_id, "status": {"type": "active", "activeFlags": []}},
            )
            self.notify("turn/started", {"threadId": thread_id, "turn": started})
            self.start_message(where, "msg-late")
            self.delta(where, "msg-late", "Started late")
            self.active[thread_id] = late_id
            return
        if self.active.get(thread_id) != turn_id:
            self.error(request_id, -32600, "no active turn to interrupt")
            return
        del self.active[thread_id]
        self.answer(request_id, {})
        self.idle(thread_id)
        self.finish(thread_id, self.turn(turn_id, "interrupted", itemsView="notLoaded"))

    def on_turn_start(self, request_id: Json, params: dict[str, Json]) -> None:
        thread_id = params["threadId"]
        if thread_id not in self.threads:
            self.error(request_id, -32600, f"thread not found: {thread_id}")
            return
        text = " ".join(
            part.get("text", "") for part in params.get("input", []) if isinstance(part, dict)
        )
        turn_id = self.new_id("turn")
        where = {"threadId": thread_id, "turnId": turn_id}
        started = self.turn(turn_id, "inProgress", itemsView="notLoaded")
        if "early" in text:
            self.notify("turn/started", {"threadId": thread_id, "turn": started})
            self.start_message(where, "msg-early")
            self.delta(where, "msg-early", "Early ")
            self.answer(request_id, {"turn": started})
            self.delta(where, "msg-early", "bird.")
            self.end_message(where, self.message("msg-early", "Early bird."))
            self.complete(where, [self.message("msg-early", "Early bird.")])
            return
        self.answer(request_id, {"turn": started})
        if "late" in text:
            self.late[thread_id] = (turn_id, where, started)
            return
        self.notify(
            "thread/status/changed",
            {"threadId": thread_id, "status": {"type": "active", "activeFlags": []}},
        )
        self.notify("turn/started", {"threadId": thread_id, "turn": started})
        user = {"type": "userMessage", "id": f"user-{turn_id}", "content": params["input"]}
        self.notify("item/started", {**where, "item": user, "startedAtMs": 1})
        self.notify("item/completed", {**where, "item": user, "completedAtMs": 1})
        if "stall" in text:
            self.start_message(where, "msg-stall")
            self.delta(where, "msg-stall", "Thinking very slowly")
            self.active[thread_id] = turn_id
        elif "hang" in text:
            self.start_message(where, "msg-hang")
            self.delta(where, "msg-hang", "Hanging")
            self.active[thread_id] = turn_id
            self.threads[thread_id].append(self.turn(turn_id, "inProgress"))
        elif "crash" in text:
            self.start_message(where, "msg-crash")
            self.delta(where, "msg-crash", "About to crash")
            if self.hang_up is not None:
                self.hang_up()
                return
            sys.stderr.write("fake codex: panicked at 'crash on purpose'\n")
            sys.stderr.flush()
            sys.exit(3)
        elif "fail" in text:
            error = {
                "message": "We're currently experiencing high demand.",
                "codexErrorInfo": "internalServerError",
                "additionalDetails": None,
            }
            self.notify(
                "thread/status/changed", {"threadId": thread_id, "status": {"type": "systemError"}}
            )
            self.notify("error", {**where, "error": error, "willRetry": False})
            self.finish(thread_id, self.turn(turn_id, "failed", error=error))
        elif "phases" in text:
            commentary = self.message("msg-c", "Let me look.", "commentary")
            final = self.message("msg-f", "The answer is 42.", "final_answer")
            for item in (commentary, final):
                self.start_message(where, item["id"])
                self.delta(where, item["id"], item["text"])
                self.end_message(where, item)
            self.idle(thread_id)
            self.finish(thread_id, self.turn(turn_id, "completed", itemsView="notLoaded"))
        elif "think" in text:
            self.think(where)
        elif "interleave" in text:
            self.interleave(where)
        elif "lost" in text:
            final = self.message("msg-lost", "Lost but found.")
            self.start_message(where, "msg-lost")
            self.end_message(where, final)
            self.idle(thread_id)
            self.threads[thread_id].append(self.turn(turn_id, "completed", [user, final]))
        elif "approve" in text or "patch" in text:
            self.approval(where, "patch" in text)
        elif "ask" in text:
            self.ask(
                "item/tool/requestUserInput",
                {**where, "itemId": "ask-1", "questions": []},
                lambda answer: self.complete(
                    where, [self.message("msg-ask", str(answer.get("error", {}).get("message")))]
                ),
            )
        else:
            self.start_message(where, "msg-1")
            for piece in ("Hello", " from the", " fake app-server."):
                self.delta(where, "msg-1", piece)
            self.end_message(where, self.message("msg-1", "Hello from the fake app-server."))
            self.complete(where, [self.message("msg-1", "Hello from the fake app-server.")])

    # -- pieces of a turn

    def start_message(self, where: dict[str, str], item_id: str) -> None:
        self.notify("item/started", {**where, "item": self.message(item_id, ""), "startedAtMs": 1})

    def delta(self, where: dict[str, str], item_id: str, text: str) -> None:
        self.notify("item/agentMessage/delta", {**where, "itemId": item_id, "delta": text})

    def end_message(self, where: dict[str, str], item: dict[str, Json]) -> None:
        self.notify("item/completed", {**where, "item": item, "completedAtMs": 2})

    def think(self, where: dict[str, str]) -> None:
        steps = [
            {"step": "Read the question", "status": "completed"},
            {"step": "Answer it", "status": "inProgress"},
        ]
        self.notify("turn/plan/updated", {**where, "explanation": "Two steps.", "plan": steps})
        streamed = {"type": "reasoning", "id": "rs-1", "summary": [], "content": []}
        self.notify("item/started", {**where, "item": streamed, "startedAtMs": 1})
        for piece in ("Weighing ", "the options."):
            self.notify(
                "item/reasoning/summaryTextDelta",
                {**where, "itemId": "rs-1", "delta": piece, "summaryIndex": 0},
            )
        self.notify(
            "item/reasoning/textDelta",
            {**where, "itemId": "rs-1", "delta": "raw chain", "contentIndex": 0},
        )
        done = {**streamed, "summary": ["Weighing the options."], "content": ["raw chain"]}
        self.notify("item/completed", {**where, "item": done, "completedAtMs": 2})
        quiet = {"type": "reasoning", "id": "rs-2", "summary": ["Decided quietly."], "content": []}
        self.notify("item/started", {**where, "item": {**quiet, "summary": []}, "startedAtMs": 3})
        self.notify("item/completed", {**where, "item": quiet, "completedAtMs": 4})
        plan = {"type": "plan", "id": "plan-1", "text": ""}
        self.notify("item/started", {**where, "item": plan, "startedAtMs": 5})
        self.notify("item/plan/delta", {**where, "itemId": "plan-1", "delta": "1. Answer it"})
        plan_done = {**plan, "text": "1. Answer it"}
        self.notify("item/completed", {**where, "item": plan_done, "completedAtMs": 6})
        steps = [{**step, "status": "completed"} for step in steps]
        self.notify("turn/plan/updated", {**where, "explanation": None, "plan": steps})
        self.start_message(where, "msg-1")
        for piece in ("Hello", " from the", " fake app-server."):
            self.delta(where, "msg-1", piece)
        self.end_message(where, self.message("msg-1", "Hello from the fake app-server."))
        self.complete(where, [])

    def interleave(self, where: dict[str, str]) -> None:
        self.start_message(where, "msg-a")
        self.start_message(where, "msg-b")
        pieces = [("msg-a", "Looking "), ("msg-b", "The answer "), ("msg-a", "around.")]
        pieces.append(("msg-b", "is 7."))
        for item_id, piece in pieces:
            self.delta(where, item_id, piece)
        self.end_message(where, self.message("msg-b", "The answer is 7.", "final_answer"))
        self.end_message(where, self.message("msg-a", "Looking around.", "commentary"))
        self.complete(where, [])

    def idle(self, thread_id: str) -> None:
        self.notify("thread/status/changed", {"threadId": thread_id, "status": {"type": "idle"}})

    def finish(self, thread_id: str, turn: dict[str, Json]) -> None:
        turns = self.threads[thread_id]
        turns[:] = [t for t in turns if t["id"] != turn["id"]] + [turn]
        self.notify("turn/completed", {"threadId": thread_id, "turn": turn})

    def complete(self, where: dict[str, str], items: list[Json]) -> None:
        breakdown = {
            "totalTokens": 15,
            "inputTokens": 10,
            "cachedInputTokens": 0,
            "outputTokens": 5,
            "reasoningOutputTokens": 0,
        }
        self.notify(
            "thread/tokenUsage/updated",
            {
                **where,
                "tokenUsage": {"total": breakdown, "last": breakdown, "modelContextWindow": 1000},
            },
        )
        thread_id = where["threadId"]
        self.idle(thread_id)
        self.finish(thread_id, self.turn(where["turnId"], "completed", items, itemsView="summary"))

    def approval(self, where: dict[str, str], patch: bool) -> None:
        item_id = "call-1"
        if patch:
            item: dict[str, Json] = {
                "type": "fileChange",
                "id": item_id,
                "changes": [{"path": "/tmp/a.txt", "kind": {"type": "add"}, "diff": "+a\n"}],
                "status": "inProgress",
            }
            method = "item/fileChange/requestApproval"
            params: dict[str, Json] = {**where, "itemId": item_id, "startedAtMs": 1}
        else:
            item = {
                "type": "commandExecution",
                "id": item_id,
                "command": "/bin/bash -lc 'echo hi'",
                "commandActions": [],
                "cwd": "/tmp",
                "status": "inProgress",
            }
            method = "item/commandExecution/requestApproval"
            params = {
                **where,
                "itemId": item_id,
                "startedAtMs": 1,
                "command": item["command"],
                "cwd": "/tmp",
                "reason": "wants to run outside the sandbox",
                "availableDecisions": ["accept", "cancel"],
            }
        self.notify("item/started", {**where, "item": item, "startedAtMs": 1})

        def then(answer: dict[str, Json]) -> None:
            decision = answer.get("result", {}).get("decision")
            self.notify("serverRequest/resolved", {"threadId": where["threadId"], "requestId": 0})
            status = "completed" if decision == "accept" else "declined"
            done = {**item, "status": status}
            if not patch:
                done.update(
                    exitCode=0 if status == "completed" else None,
                    aggregatedOutput="hi\n" if status == "completed" else None,
                )
            self.notify("item/completed", {**where, "item": done, "completedAtMs": 2})
            text = f"decision: {decision}"
            self.end_message(where, self.message("msg-d", text))
            self.complete(where, [self.message("msg-d", text)])

        self.ask(method, params, then)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit-before-initialize", action="store_true")
    parser.add_argument("--overload", type=int, default=0)
    parser.add_argument("--record")
    args = parser.parse_args()
    if args.exit_before_initialize:
        sys.stderr.write(
            'Error: approval_policy = "untrusted" is no longer supported; remove this setting\n'
        )
        sys.stderr.flush()
        sys.exit(1)
    fake = Fake(args.overload, args.record)
    for line in sys.stdin:
        fake.feed(line)


if __name__ == "__main__":
    main()
