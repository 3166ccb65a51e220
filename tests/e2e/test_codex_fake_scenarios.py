"""The fake OpenAI Responses API drives the real ``codex app-server`` (npm ``@openai/codex``
0.171.0) through every scenario issue 6 needs, offline, on asyncio and on trio.

A deliberately minimal raw driver, local to this file: JSON lines on the app-server's stdio
(no ``"jsonrpc"`` member), ``initialize`` with ``clientInfo`` then ``initialized``,
``thread/start``, ``turn/start``, then every message until ``turn/completed``, answering the
server's requests on the way. Every wait is bounded. The model is
:mod:`subagents.testing.fake_models.openai_responses` on 127.0.0.1; the scenario is chosen by
the prompt's words (``command``, ``fail``, ``phases``; anything else gets the default reply).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from subagents.testing.fake_models.openai_responses import (
    COMMAND,
    COMMAND_DECLINED_REPLY,
    COMMAND_JUSTIFICATION,
    COMMAND_MARKER_FILE,
    COMMAND_OUTPUT,
    COMMAND_RAN_REPLY,
    COMMENTARY_REPLY,
    DEFAULT_REPLY,
    FAIL_MESSAGE,
    FINAL_ANSWER_REPLY,
    FakeServer,
    ResponsesHandler,
    codex_home,
    require_codex_command,
    serve,
)
from subagents.transports.process import AgentProcess, open_agent_process

pytestmark = pytest.mark.anyio

# Start-up takes 0.2-0.6 s and a turn 0.3-1.3 s here when idle; the machine may be busy.
BOUND_SECONDS = 60.0

Message = dict[str, Any]
Answer = Callable[[Message], Any]
"""Gives the ``result`` for a server request (the whole request message in)."""


@dataclass
class Turn:
    """What one turn produced: every notification and server request, in order."""

    messages: list[Message] = field(default_factory=list[Message])

    @property
    def completed(self) -> Message:
        """The ``turn`` of ``turn/completed``."""
        return cast(Message, self.messages[-1]["params"]["turn"])

    def requests(self, method: str) -> list[Message]:
        """The server requests of ``method``."""
        return [m for m in self.messages if m.get("method") == method and "id" in m]

    def completed_items(self, kind: str) -> list[Message]:
        """The items of ``item/completed`` notifications of type ``kind``."""
        items = [m["params"]["item"] for m in self.messages if m.get("method") == "item/completed"]
        return [cast(Message, item) for item in items if item.get("type") == kind]


class AppServer:
    """A raw JSON-lines client of ``codex app-server`` (just enough for these tests)."""

    def __init__(self, process: AgentProcess) -> None:
        self._process = process
        self._lines = BufferedByteReceiveStream(process.stdout)
        self._next_id = 0

    async def send(self, message: Message) -> None:
        await self._process.stdin.send(json.dumps(message).encode() + b"\n")

    async def receive(self) -> Message:
        try:
            line = await self._lines.receive_until(b"\n", 16 * 1024 * 1024)
        except (anyio.EndOfStream, anyio.IncompleteRead) as exc:
            tail = self._process.stderr_tail()[-2000:]
            raise AssertionError(f"codex app-server closed stdout; stderr: {tail}") from exc
        return cast(Message, json.loads(line))

    async def request(self, method: str, params: Message) -> Any:
        """Send a request; return its ``result`` (notifications before it are dropped)."""
        request_id = self._next_id
        self._next_id += 1
        await self.send({"id": request_id, "method": method, "params": params})
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]

    async def run_turn(self, thread_id: str, text: str, answer: Answer | None = None) -> Turn:
        """Start a turn with ``text``; collect everything until ``turn/completed``."""
        turn = Turn()
        await self.send(
            {
                "id": self._next_id,
                "method": "turn/start",
                "params": {"threadId": thread_id, "input": [{"type": "text", "text": text}]},
            }
        )
        self._next_id += 1
        while True:
            message = await self.receive()
            if "method" not in message:
                assert "error" not in message, message
                continue  # the turn/start response
            turn.messages.append(message)
            if "id" in message:  # a server request: answer every one
                assert answer is not None, f"unexpected server request {message}"
                await self.send({"id": message["id"], "result": answer(message)})
            elif message["method"] == "turn/completed":
                return turn


@asynccontextmanager
async def app_server(env: dict[str, str], cwd: Path) -> AsyncIterator[tuple[AppServer, str]]:
    """The real app-server, initialized, with one thread in ``cwd``: ``(client, thread id)``."""
    command = require_codex_command()
    async with open_agent_process(command, env=env, cwd=cwd, start_timeout=30) as process:
        client = AppServer(process)
        info = {"name": "subagents_e2e", "title": "subagents e2e", "version": "0.0.1"}
        result = await client.request("initialize", {"clientInfo": info})
        assert "/0.171.0 " in result["userAgent"]
        await client.send({"method": "initialized"})
        started = await client.request("thread/start", {"cwd": str(cwd)})
        yield client, started["thread"]["id"]


@pytest.fixture
def fake_openai() -> Iterator[FakeServer]:
    """A fake Responses API on 127.0.0.1 for the test's duration."""
    with serve(ResponsesHandler) as server:
        yield server


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The thread's working directory (absolute)."""
    path = tmp_path / "work"
    path.mkdir()
    return path.resolve()


def decide(decision: str) -> Answer:
    """Answer command approval requests with ``decision`` (and nothing else)."""

    def answer(request: Message) -> Any:
        assert request["method"] == "item/commandExecution/requestApproval", request
        return {"decision": decision}

    return answer


async def test_a_plain_prompt_completes_with_the_fake_models_default_reply(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Issue 6: with no scenario word the turn completes and its final agent message (also in
    ``turn.items``) is the fake's :data:`DEFAULT_REPLY`."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND_SECONDS):
        async with app_server(env, workdir) as (client, thread_id):
            turn = await client.run_turn(thread_id, "Say hello.")
    assert turn.completed["status"] == "completed"
    assert [item["text"] for item in turn.completed_items("agentMessage")] == [DEFAULT_REPLY]
    assert [item["text"] for item in turn.completed["items"]] == [DEFAULT_REPLY]


@pytest.mark.parametrize(
    ("decision", "ran", "reply"),
    [("accept", True, COMMAND_RAN_REPLY), ("decline", False, COMMAND_DECLINED_REPLY)],
    ids=["accept", "decline"],
)
async def test_an_escalated_command_waits_for_approval_and_runs_only_when_accepted(
    tmp_path: Path,
    fake_openai: FakeServer,
    workdir: Path,
    decision: str,
    ran: bool,
    reply: str,
) -> None:
    """Issue 6: under ``approval_policy="on-request"`` and a read-only sandbox, the fake's
    escalated ``exec_command`` makes Codex send one ``item/commandExecution/requestApproval``
    (with the command, cwd and justification); ``accept`` runs it (the marker file exists and
    the final text says it ran), ``decline`` does not (no marker, the final text says so)."""
    env = codex_home(
        tmp_path / "codex", fake_openai, approval_policy="on-request", sandbox_mode="read-only"
    )
    with anyio.fail_after(BOUND_SECONDS):
        async with app_server(env, workdir) as (client, thread_id):
            turn = await client.run_turn(thread_id, "Run the command.", decide(decision))
    (request,) = turn.requests("item/commandExecution/requestApproval")
    params = request["params"]
    assert params["threadId"] == thread_id
    assert params["turnId"] == turn.completed["id"]
    assert params["reason"] == COMMAND_JUSTIFICATION
    assert COMMAND in params["command"]
    assert params["cwd"] == str(workdir)
    (execution,) = turn.completed_items("commandExecution")
    assert execution["id"] == params["itemId"]
    assert execution["status"] == ("completed" if ran else "declined")
    assert (workdir / COMMAND_MARKER_FILE).exists() is ran
    if ran:
        marker = (workdir / COMMAND_MARKER_FILE).read_text(encoding="utf-8")
        assert marker == COMMAND_OUTPUT + "\n"
    assert turn.completed["status"] == "completed"
    assert [item["text"] for item in turn.completed["items"]] == [reply]
    assert len(fake_openai.requests) == 2  # the call, then the follow-up with its output


async def test_an_upstream_error_fails_the_turn_with_the_upstream_message(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Issue 6: the fake's HTTP error (``fail``, a 503 with no retries configured) fails the
    turn at once: ``turn/completed`` has status ``failed`` and ``turn.error.message`` keeps
    the upstream :data:`FAIL_MESSAGE`."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND_SECONDS):
        async with app_server(env, workdir) as (client, thread_id):
            turn = await client.run_turn(thread_id, "Please fail.")
    assert turn.completed["status"] == "failed"
    assert FAIL_MESSAGE in turn.completed["error"]["message"]
    assert len(fake_openai.requests) == 1


async def test_an_http_500_fails_the_turn_with_codexs_own_message(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Issue 6: for an HTTP 500 (``fail 500``) Codex 0.171.0 fails the turn too, but reports
    ``codexErrorInfo`` ``internalServerError`` with a message of its own, not the body's."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND_SECONDS):
        async with app_server(env, workdir) as (client, thread_id):
            turn = await client.run_turn(thread_id, "Please fail 500.")
    assert turn.completed["status"] == "failed"
    assert turn.completed["error"]["codexErrorInfo"] == "internalServerError"
    assert FAIL_MESSAGE not in turn.completed["error"]["message"]


async def test_a_commentary_message_precedes_the_final_answer_message(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Issue 6: ``phases`` yields two agent messages, ``commentary`` then ``final_answer``,
    with the fake's texts; ``turn.items`` holds only the final answer."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND_SECONDS):
        async with app_server(env, workdir) as (client, thread_id):
            turn = await client.run_turn(thread_id, "Show your phases.")
    assert turn.completed["status"] == "completed"
    messages = [(item["phase"], item["text"]) for item in turn.completed_items("agentMessage")]
    assert messages == [("commentary", COMMENTARY_REPLY), ("final_answer", FINAL_ANSWER_REPLY)]
    (final,) = turn.completed["items"]
    assert (final["phase"], final["text"]) == ("final_answer", FINAL_ANSWER_REPLY)
