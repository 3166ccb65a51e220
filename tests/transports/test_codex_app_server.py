"""The Codex app-server client against a scripted fake app-server.

The fake (``fake_codex_app_server.py``) speaks the shapes observed on the real 0.171.0 binary
(research note codex.md §2); what a turn does is picked by words in its prompt. Tests of the
protocol behaviour run it in-process over memory streams (:func:`connect_codex_over`); those
about the child process (its exit, its stderr) run it as a real child. Requirement names
refer to the transport brief (issue 6, part 1).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from subagents.protocol import codex
from subagents.rpc import ConnectionClosedError
from subagents.transports import TurnOverflowError
from subagents.transports.codex_app_server import (
    CodexAgentMessageDelta,
    CodexApprovalRequest,
    CodexConnection,
    CodexDecision,
    CodexError,
    CodexEvent,
    CodexItemCompleted,
    CodexItemStarted,
    CodexOtherEvent,
    CodexPlanDelta,
    CodexPlanUpdated,
    CodexReasoningDelta,
    CodexStartupError,
    CodexTokenUsage,
    CodexTurn,
    CodexTurnError,
    accept_policy,
    connect_codex,
    connect_codex_over,
)

from .fake_codex_app_server import Fake

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).with_name("fake_codex_app_server.py")


def fake(*args: str) -> list[str]:
    return [sys.executable, str(FAKE), *args]


def received(record: Path) -> list[dict[str, object]]:
    """Every message the fake (a child process) received, in order."""
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def named(messages: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("method") == method]


class _ByteSend(anyio.abc.ByteSendStream):
    """A memory object stream of bytes as a byte send stream."""

    def __init__(self, stream: MemoryObjectSendStream[bytes]) -> None:
        self._stream = stream

    async def send(self, item: bytes) -> None:
        await self._stream.send(item)

    async def send_eof(self) -> None:
        await self._stream.aclose()

    async def aclose(self) -> None:
        await self._stream.aclose()


async def _serve(fake_server: Fake, inbox: MemoryObjectReceiveStream[bytes]) -> None:
    """Feed the in-process fake the client's lines, until the client closes its end."""
    pending = b""
    async with inbox:
        async for chunk in inbox:
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                fake_server.feed(line)


@asynccontextmanager
async def connected(
    server: Fake | None = None, **options: Any
) -> AsyncGenerator[tuple[CodexConnection, Fake]]:
    """A client connected over memory streams to the fake (``server``), run in this process."""
    fake_server = Fake(0, None) if server is None else server
    to_client, from_server = anyio.create_memory_object_stream[bytes](math.inf)
    to_server, from_client = anyio.create_memory_object_stream[bytes](math.inf)
    fake_server.write = lambda line: to_client.send_nowait(line.encode())
    fake_server.hang_up = to_client.close
    raised: BaseException | None = None
    async with anyio.create_task_group() as tg, to_client, from_server:
        tg.start_soon(_serve, fake_server, from_client)
        try:
            async with connect_codex_over(
                BufferedByteReceiveStream(from_server), _ByteSend(to_server), **options
            ) as conn:
                yield conn, fake_server
        except BaseException as exc:  # re-raised as itself, not in an ExceptionGroup
            raised = exc
    if raised is not None:
        raise raised


# ---------------------------------------------------------------- the child process


async def test_initialize_sends_client_info_then_initialized_and_parses_the_version(
    tmp_path: Path,
) -> None:
    """connect_codex: JSONL without "jsonrpc", initialize {clientInfo, capabilities
    {experimentalApi: false}} then the initialized notification; user_agent, version,
    codex_home, process."""
    record = tmp_path / "record.jsonl"
    with anyio.fail_after(10):
        async with connect_codex(fake("--record", str(record)), client_version="9.9") as conn:
            assert conn.user_agent.startswith("subagents/0.171.0 ")
            assert conn.version == "0.171.0"
            assert conn.codex_home == "/tmp/fake-codex-home"
            assert conn.process is not None
            process = conn.process
    assert process.exit is not None
    assert process.exit.returncode == 0  # closing stdin was enough
    first, second = received(record)[:2]
    assert first == {
        "id": 0,
        "method": "initialize",
        "params": {
            "clientInfo": {"name": "subagents", "version": "9.9"},
            "capabilities": {"experimentalApi": False},
        },
    }
    assert second == {"method": "initialized"}


async def test_a_codex_that_exits_before_initialize_raises_a_startup_error_with_its_stderr() -> (
    None
):
    """connect_codex: exit before answering initialize -> CodexStartupError naming the exit
    status and the stderr tail (what a bad config.toml does)."""
    with anyio.fail_after(10), pytest.raises(CodexStartupError) as info:
        async with connect_codex(fake("--exit-before-initialize")):
            pytest.fail("connected to a server that exited")
    message = str(info.value)
    assert "exited with status 1" in message
    assert "is no longer supported" in message


async def test_a_crash_mid_turn_fails_the_turn_naming_the_exit_status_and_stderr_tail() -> None:
    """Connection loss: running turns and pending calls fail at once with the exit status
    and the stderr tail."""
    with anyio.fail_after(10):
        async with connect_codex(fake()) as conn:
            thread = await conn.start_thread()
            async with thread.turn("crash") as turn:
                deltas = [e.delta async for e in turn if isinstance(e, CodexAgentMessageDelta)]
                with pytest.raises(ConnectionClosedError) as info:
                    await turn.result()
            with pytest.raises(ConnectionClosedError):
                await conn.start_thread()
    assert deltas == ["About to crash"]
    assert "exited with status 3" in str(info.value)
    assert "crash on purpose" in str(info.value)


async def test_leaving_a_turn_by_cancellation_does_not_wait_for_answers_nobody_reads() -> None:
    """Cancelling a scope that holds the connection and a running turn: the turn's exit is
    bounded (CANCELLED_EXIT_TIMEOUT per step when the block is left by cancellation: the
    connection's reader may be cancelled too) and the turn still gets a result."""
    turns: list[CodexTurn] = []
    with anyio.fail_after(8):
        with anyio.CancelScope() as scope:
            async with connect_codex(fake()) as conn:
                thread = await conn.start_thread()
                async with thread.turn("stall") as turn:
                    turns.append(turn)
                    async for event in turn:
                        if isinstance(event, CodexAgentMessageDelta):
                            scope.cancel()
                            await anyio.sleep_forever()  # the cancellation lands here
        assert scope.cancelled_caught
    [turn] = turns
    assert turn.done
    assert (await turn.result()).status == "interrupted"


# ---------------------------------------------------------------- the protocol, over memory streams


async def test_the_client_speaks_jsonl_without_a_version_member_over_any_stream_pair() -> None:
    """connect_codex_over: the same client over a byte-stream pair; initialize, then
    initialized, then the connection works with no process behind it."""
    with anyio.fail_after(10):
        async with connected(client_version="9.9") as (conn, server):
            assert conn.process is None
            assert conn.version == "0.171.0"
            result = await (await conn.start_thread()).run("Say hello.")
            unrouted = list(conn.unrouted)
    assert unrouted == [("configWarning", {"summary": "fake warning", "details": None})]
    assert result.final_text == "Hello from the fake app-server."
    assert server.received[:2] == [
        {
            "id": 0,
            "method": "initialize",
            "params": {
                "clientInfo": {"name": "subagents", "version": "9.9"},
                "capabilities": {"experimentalApi": False},
            },
        },
        {"method": "initialized"},
    ]


async def test_a_server_that_closes_the_stream_mid_turn_fails_the_turn() -> None:
    """Connection loss without a process: the running turn and later calls fail with
    ConnectionClosedError as soon as the stream ends."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("crash") as turn:
                deltas = [e.delta async for e in turn if isinstance(e, CodexAgentMessageDelta)]
                with pytest.raises(ConnectionClosedError) as info:
                    await turn.result()
            with pytest.raises(ConnectionClosedError):
                await conn.start_thread()
    assert deltas == ["About to crash"]
    assert str(info.value) == "codex app-server 'codex' closed the connection"


async def test_a_turn_streams_typed_events_in_order_and_ends_with_its_final_text() -> None:
    """CodexTurn: typed events in order (deltas, typed items, usage), ending at
    turn/completed; result() gives status, final text, items and usage."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("Say hello.") as turn:
                events = [event async for event in turn]
            result = await turn.result()
    assert turn.id == "turn-2"
    deltas = [e.delta for e in events if isinstance(e, CodexAgentMessageDelta)]
    assert deltas == ["Hello", " from the", " fake app-server."]
    started = [e.item for e in events if isinstance(e, CodexItemStarted)]
    assert [type(item) for item in started] == [codex.UserMessageItem, codex.AgentMessageItem]
    completed = [e.item for e in events if isinstance(e, CodexItemCompleted)]
    assert isinstance(completed[-1], codex.AgentMessageItem)
    assert any(isinstance(e, CodexTokenUsage) for e in events)
    assert any(isinstance(e, CodexOtherEvent) and e.method == "turn/started" for e in events)
    assert result.status == "completed"
    assert result.final_text == "Hello from the fake app-server."
    assert result.error is None
    assert result.items == completed
    assert result.usage is not None
    assert result.usage.total.total_tokens == 15


def outline(event: CodexEvent) -> tuple[object, ...] | None:
    """The typed item/plan events of a turn as plain tuples (None for the rest)."""
    if isinstance(event, CodexReasoningDelta):
        return ("reasoning", event.item_id, event.kind, event.index, event.delta)
    if isinstance(event, CodexPlanUpdated):
        return ("plan", event.explanation, [(s.step, s.status) for s in event.steps])
    if isinstance(event, CodexPlanDelta):
        return ("plan delta", event.item_id, event.delta)
    if isinstance(event, CodexAgentMessageDelta):
        return ("text", event.item_id, event.delta)
    if isinstance(event, CodexItemStarted | CodexItemCompleted):
        kind = "started" if isinstance(event, CodexItemStarted) else "completed"
        return (kind, event.item.type, event.item.id)
    return None


async def test_reasoning_and_plan_notifications_are_typed_events_in_order() -> None:
    """Issue 6: "typed events from item/* notifications (... reasoning ...)": the reasoning
    summary and raw-text deltas become CodexReasoningDelta (item id, part, index),
    turn/plan/updated CodexPlanUpdated (typed steps), item/plan/delta CodexPlanDelta, in
    arrival order with their item ids, none left raw; the final text is unaffected."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("think first") as turn:
                events = [event async for event in turn]
            result = await turn.result()
    first_steps = [("Read the question", "completed"), ("Answer it", "inProgress")]
    last_steps = [("Read the question", "completed"), ("Answer it", "completed")]
    outlined = [o for o in map(outline, events) if o is not None]
    assert outlined == [
        ("started", "userMessage", f"user-{turn.id}"),
        ("completed", "userMessage", f"user-{turn.id}"),
        ("plan", "Two steps.", first_steps),
        ("started", "reasoning", "rs-1"),
        ("reasoning", "rs-1", "summary", 0, "Weighing "),
        ("reasoning", "rs-1", "summary", 0, "the options."),
        ("reasoning", "rs-1", "text", 0, "raw chain"),
        ("completed", "reasoning", "rs-1"),
        ("started", "reasoning", "rs-2"),
        ("completed", "reasoning", "rs-2"),
        ("started", "plan", "plan-1"),
        ("plan delta", "plan-1", "1. Answer it"),
        ("completed", "plan", "plan-1"),
        ("plan", None, last_steps),
        ("started", "agentMessage", "msg-1"),
        ("text", "msg-1", "Hello"),
        ("text", "msg-1", " from the"),
        ("text", "msg-1", " fake app-server."),
        ("completed", "agentMessage", "msg-1"),
    ]
    raw = {e.method for e in events if isinstance(e, CodexOtherEvent)}
    assert not raw & {
        "item/reasoning/summaryTextDelta",
        "item/reasoning/textDelta",
        "turn/plan/updated",
        "item/plan/delta",
    }
    reasoning = [i for i in result.items if isinstance(i, codex.ReasoningItem)]
    assert [(r.id, r.summary, r.content) for r in reasoning] == [
        ("rs-1", ["Weighing the options."], ["raw chain"]),
        ("rs-2", ["Decided quietly."], []),
    ]
    assert result.status == "completed"
    assert result.final_text == "Hello from the fake app-server."


async def test_interleaved_agent_message_deltas_are_grouped_by_item_id() -> None:
    """Issue 6: "agent message deltas grouped by item id": two messages whose deltas alternate
    keep apart (each delta names its item; turn.messages joins them per item, in the order
    the messages began); the final text is the final-answer message, though it completed
    before the commentary."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("interleave") as turn:
                events = [event async for event in turn]
            result = await turn.result()
    deltas = [(e.item_id, e.delta) for e in events if isinstance(e, CodexAgentMessageDelta)]
    assert deltas == [
        ("msg-a", "Looking "),
        ("msg-b", "The answer "),
        ("msg-a", "around."),
        ("msg-b", "is 7."),
    ]
    grouped: dict[str, str] = {}
    for item_id, delta in deltas:
        grouped[item_id] = grouped.get(item_id, "") + delta
    assert grouped == {"msg-a": "Looking around.", "msg-b": "The answer is 7."}
    assert list(turn.messages.items()) == list(grouped.items())
    assert result.status == "completed"
    assert result.final_text == "The answer is 7."


async def test_notifications_sent_before_the_turn_start_answer_reach_the_turn() -> None:
    """Ordering: turn/started (and a delta) before the turn/start reply are buffered for the
    turn, not lost."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("early please") as turn:
                events = [event async for event in turn]
            result = await turn.result()
    assert [e.delta for e in events if isinstance(e, CodexAgentMessageDelta)] == [
        "Early ",
        "bird.",
    ]
    assert isinstance(events[0], CodexOtherEvent)
    assert events[0].method == "turn/started"
    assert result.final_text == "Early bird."


async def test_the_final_text_is_the_final_answer_message_when_the_turn_lists_no_items() -> None:
    """Final text as codex.md recommends: no turn.items -> the last final_answer message, not
    the later-or-earlier commentary."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            result = await thread.run("phases")
    assert result.status == "completed"
    assert result.final_text == "The answer is 42."
    phases = [item.phase for item in result.items if isinstance(item, codex.AgentMessageItem)]
    assert phases == ["commentary", "final_answer"]


async def test_interrupt_ends_the_turn_interrupted_and_a_second_interrupt_is_harmless() -> None:
    """turn.cancel(): turn/interrupt, the turn ends interrupted; "no active turn to
    interrupt" counts as success."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("stall") as turn:
                async for event in turn:
                    if isinstance(event, CodexAgentMessageDelta):
                        await turn.cancel()
                result = await turn.result()
                assert turn.id is not None
                # The turn is over: a stale interrupt is answered "no active turn to
                # interrupt", which counts as success.
                await turn._send_interrupt()  # pyright: ignore[reportPrivateUsage]
            again = await thread.run("Say hello.")
    assert result.status == "interrupted"
    assert result.final_text is None
    assert again.status == "completed"


async def read_into(got: list[Any], events: AsyncIterator[Any]) -> None:
    """Append each event of ``events`` to ``got`` (what came before an error is kept)."""
    async for event in events:
        got.append(event)


class _InterruptSeen(Fake):
    """The in-process fake, telling when a turn/interrupt arrives."""

    def __init__(self) -> None:
        super().__init__(0, None)
        self.interrupted = anyio.Event()

    def on_turn_interrupt(self, request_id: Any, params: dict[str, Any]) -> None:
        super().on_turn_interrupt(request_id, params)
        self.interrupted.set()


async def test_cancel_ends_the_turn_interrupted_and_is_a_no_op_once_it_ended() -> None:
    """Issue 18 / one turn API: turn.cancel() (turn/interrupt) ends the turn interrupted;
    result_nowait() raises WouldBlock before the end; a cancel after the end sends nothing."""
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread()
            async with thread.turn("stall") as turn:
                with pytest.raises(anyio.WouldBlock):
                    turn.result_nowait()
                async for event in turn:
                    if isinstance(event, CodexAgentMessageDelta):
                        await turn.cancel()
                result = await turn.result()
                assert turn.done
                await turn.cancel()
            assert turn.result_nowait() is result
    assert result.status == "interrupted"
    assert len(named(server.received, "turn/interrupt")) == 1


async def test_interrupt_is_a_deprecated_alias_of_cancel() -> None:
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("stall") as turn:
                async for event in turn:
                    if isinstance(event, CodexAgentMessageDelta):
                        with pytest.warns(DeprecationWarning, match=r"use cancel\(\)"):
                            await turn.interrupt()
                result = await turn.result()
    assert result.status == "interrupted"


async def test_more_events_than_max_events_unread_fail_the_turn_loud_and_interrupt_it() -> None:
    """Issue 18 / one turn API: past max_events unread events the turn fails with
    TurnOverflowError (after the events before it) and is interrupted on codex's side; the
    connection's notification task never waits for the turn's reader, and the connection
    runs the next turn."""
    server = _InterruptSeen()
    got: list[CodexEvent] = []
    with anyio.fail_after(10):
        async with connected(server) as (conn, _):
            thread = await conn.start_thread()
            async with thread.turn("stall", max_events=2) as turn:
                await server.interrupted.wait()  # nothing was read: the push interrupted it
                with pytest.raises(TurnOverflowError) as info:
                    await read_into(got, turn)
                with pytest.raises(TurnOverflowError):
                    await turn.result()
            assert turn.done
            assert (await thread.run("Say hello.")).status == "completed"
    assert len(got) == 2
    assert (info.value.limit, info.value.read) == (2, 0)
    assert len(named(server.received, "turn/interrupt")) == 1


async def test_an_interrupt_refused_before_the_turn_started_is_sent_again() -> None:
    """An interrupt that reaches codex after its turn/start answer but before the turn really
    started is refused "no active turn to interrupt"; the client sends it again once the turn
    has started instead of taking the turn for ended (it would run on unseen)."""
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread()
            async with thread.turn("late") as turn:
                await turn.cancel()
                result = await turn.result()
    assert result.status == "interrupted"
    assert len(named(server.received, "turn/interrupt")) == 2


async def test_leaving_the_turn_block_early_interrupts_the_turn() -> None:
    """Like PromptTurn: leaving `async with` before the end interrupts the turn (bounded)."""
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread()
            async with thread.turn("stall") as turn:
                async for event in turn:
                    if isinstance(event, CodexAgentMessageDelta):
                        break
            result = await turn.result()
    assert result.status == "interrupted"
    [interrupt] = named(server.received, "turn/interrupt")
    assert interrupt["params"] == {"threadId": thread.id, "turnId": turn.id}


async def test_command_approvals_are_declined_by_default() -> None:
    """Approvals: item/commandExecution/requestApproval goes to the policy; the default
    declines; the answer is {"decision": "decline"}."""
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread()
            result = await thread.run("approve this")
    assert result.final_text == "decision: decline"
    command = [i for i in result.items if isinstance(i, codex.CommandExecutionItem)]
    assert command[0].status == "declined"
    answers = [m for m in server.received if "result" in m]
    assert answers == [{"id": 0, "result": {"decision": "decline"}}]


async def test_an_approval_is_decided_after_the_item_it_is_about_was_read() -> None:
    """Issue 18 (one turn API): item/started comes before the approval request; the policy
    runs once the turn's reader has read that item, so whoever shows both shows them in
    order (as for ACP permission requests)."""
    read: list[str | None] = []
    seen_by_policy: list[list[str | None]] = []

    async def policy(request: CodexApprovalRequest) -> CodexDecision:
        seen_by_policy.append(list(read))
        return "decline"

    with anyio.fail_after(10):
        async with connected(approval_policy=policy) as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("approve this") as turn:
                for _ in range(20):  # a reader that lags behind: others run first
                    await anyio.lowlevel.checkpoint()
                async for event in turn:
                    if isinstance(event, CodexItemStarted):
                        read.append(event.item.id)
                    for _ in range(20):
                        await anyio.lowlevel.checkpoint()
                await turn.result()
    assert len(seen_by_policy) == 1
    assert "call-1" in seen_by_policy[0]


async def test_a_policy_sees_the_request_and_its_decision_is_sent() -> None:
    """Approvals: the policy gets a typed CodexApprovalRequest; accept_policy accepts commands
    and file changes."""
    seen: list[CodexApprovalRequest] = []

    async def policy(request: CodexApprovalRequest) -> CodexDecision:
        seen.append(request)
        return await accept_policy(request)

    with anyio.fail_after(10):
        async with connected(approval_policy=policy) as (conn, _server):
            thread = await conn.start_thread()
            command = await thread.run("approve this")
            patch = await thread.run("patch that")
    assert command.final_text == "decision: accept"
    assert patch.final_text == "decision: accept"
    ran = [i for i in command.items if isinstance(i, codex.CommandExecutionItem)][-1]
    assert (ran.status, ran.exit_code, ran.aggregated_output) == ("completed", 0, "hi\n")
    assert [r.kind for r in seen] == ["commandExecution", "fileChange"]
    assert seen[0].command == "/bin/bash -lc 'echo hi'"
    assert seen[0].reason == "wants to run outside the sandbox"
    assert seen[0].thread_id == thread.id
    assert seen[1].item_id == "call-1"
    patched = [i for i in patch.items if isinstance(i, codex.FileChangeItem)][-1]
    assert patched.changes[0].path == "/tmp/a.txt"


async def test_a_policy_that_raises_or_answers_nonsense_declines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Approvals: if the policy raises, answer decline and log; never leave it unanswered."""

    async def broken(request: CodexApprovalRequest) -> CodexDecision:
        raise RuntimeError("policy bug")

    with anyio.fail_after(10):
        async with connected(approval_policy=broken) as (conn, _server):
            thread = await conn.start_thread()
            result = await thread.run("approve this")
    assert result.final_text == "decision: decline"
    assert "approval policy failed" in caplog.text


async def test_a_policy_that_never_decides_is_given_up_on_and_the_request_declined(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Approvals: a policy call is bounded (approval_timeout); past it the server is answered
    decline and a warning names the request, so the turn goes on instead of hanging."""
    calls: list[CodexApprovalRequest] = []

    async def stuck(request: CodexApprovalRequest) -> CodexDecision:
        calls.append(request)
        await anyio.sleep_forever()
        return "accept"

    with anyio.fail_after(10):
        async with connected(approval_policy=stuck, approval_timeout=0.05) as (conn, server):
            thread = await conn.start_thread()
            result = await thread.run("approve this")
    assert len(calls) == 1
    assert result.status == "completed"
    assert result.final_text == "decision: decline"
    answers = [m for m in server.received if "result" in m]
    assert answers == [{"id": 0, "result": {"decision": "decline"}}]
    assert "did not decide item/commandExecution/requestApproval" in caplog.text
    assert calls[0].item_id in caplog.text


async def test_a_non_positive_approval_bound_is_refused_before_anything_is_spawned() -> None:
    """Approvals: an approval_timeout of 0 (no time to decide) is a ValueError naming it."""
    with anyio.fail_after(10), pytest.raises(ValueError, match="approval_timeout"):
        async with connect_codex(fake(), approval_timeout=0):
            pytest.fail("connected with a zero approval bound")


async def test_other_server_requests_are_answered_with_an_error() -> None:
    """Server requests other than the two approvals get a JSON-RPC error, never silence."""
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread()
            result = await thread.run("ask me")
    assert result.status == "completed"
    assert result.final_text is not None
    assert "item/tool/requestUserInput" in result.final_text
    [answer] = [m for m in server.received if "error" in m]
    assert answer["id"] == 0


async def test_a_failed_turn_reports_the_error_notification_and_the_turn_error() -> None:
    """CodexTurnError(message, will_retry, codex_error_info) from `error`; result failed with
    the turn's error message."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("fail now") as turn:
                errors = [e async for e in turn if isinstance(e, CodexTurnError)]
            result = await turn.result()
    assert errors == [
        CodexTurnError("We're currently experiencing high demand.", False, "internalServerError")
    ]
    assert result.status == "failed"
    assert result.error == "We're currently experiencing high demand."
    assert result.final_text is None


async def test_overloaded_requests_are_retried_with_backoff() -> None:
    """-32001 on a request: retried with bounded exponential backoff."""
    with anyio.fail_after(10):
        async with connected(Fake(3, None)) as (conn, server):
            assert conn.version == "0.171.0"
    assert len(named(server.received, "initialize")) == 4


async def test_overload_beyond_the_retry_budget_raises() -> None:
    """-32001 more often than the retry budget: the error is raised (here as the start-up
    error, caused by a CodexError with code -32001)."""
    with anyio.fail_after(10), pytest.raises(CodexStartupError) as info:
        async with connected(Fake(50, None)):
            pytest.fail("connected through an overloaded server")
    assert str(info.value).startswith("codex app-server refused initialize: ")
    cause = info.value.__cause__
    assert isinstance(cause, CodexError)
    assert cause.code == -32001


async def test_a_server_silent_at_initialize_is_a_startup_error_naming_the_bound() -> None:
    """connect_codex_over: no initialize answer within startup_timeout -> CodexStartupError
    naming the bound (a child's stderr tail is added when there is a child)."""

    class Silent(Fake):
        def on_initialize(self, request_id: object, params: dict[str, Any]) -> None:
            pass

    with anyio.fail_after(10), pytest.raises(CodexStartupError) as info:
        async with connected(Silent(0, None), startup_timeout=0.2):
            pytest.fail("connected to a silent server")
    assert str(info.value) == "codex app-server 'codex' did not answer initialize within 0.2 s"


async def test_error_answers_raise_codex_error_with_code_and_message() -> None:
    """Errors: a typed CodexError carrying the JSON-RPC code and message."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            with pytest.raises(CodexError) as info:
                await conn.resume_thread("thr-missing")
    assert info.value.code == -32600
    assert info.value.message == "thread not found: thr-missing"
    assert info.value.method == "thread/resume"


async def test_thread_options_are_sent_only_when_given(tmp_path: Path) -> None:
    """start_thread/resume_thread: kebab-case sandbox, camelCase names, unset options left out."""
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread(
                cwd=tmp_path,
                sandbox="workspace-write",
                approval_policy="never",
                developer_instructions="Be brief.",
                config={"model_reasoning_effort": "low"},
                ephemeral=True,
            )
            resumed = await conn.resume_thread(thread.id, model="gpt-5.5")
    assert resumed.id == thread.id
    [start] = named(server.received, "thread/start")
    [resume] = named(server.received, "thread/resume")
    assert start["params"] == {
        "cwd": str(tmp_path),
        "sandbox": "workspace-write",
        "approvalPolicy": "never",
        "developerInstructions": "Be brief.",
        "config": {"model_reasoning_effort": "low"},
        "ephemeral": True,
    }
    assert resume["params"] == {"threadId": thread.id, "model": "gpt-5.5"}


async def test_an_ephemeral_fork_asks_to_exclude_turns_and_read_thread_returns_turns() -> None:
    """fork_thread(ephemeral=True) adds excludeTurns (0.171.0 refuses it otherwise);
    read_thread returns the thread with its turns."""
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread()
            await thread.run("Say hello.")
            fork = await conn.fork_thread(thread.id, ephemeral=True)
            plain = await conn.fork_thread(thread.id)
            read = await conn.read_thread(thread.id)
    assert fork.info.forked_from_id == thread.id
    assert plain.id != fork.id
    forks = [m["params"] for m in named(server.received, "thread/fork")]
    assert forks == [
        {"threadId": thread.id, "ephemeral": True, "excludeTurns": True},
        {"threadId": thread.id},
    ]
    assert [turn.status for turn in read.turns] == ["completed"]


async def test_a_turn_whose_completion_is_lost_is_reconciled_when_the_thread_goes_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Known upstream bug: idle without turn/completed -> thread/read gives the final status."""
    monkeypatch.setattr("subagents.transports._codex_turn.IDLE_GRACE", 0.2)
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            result = await thread.run("lost")
    assert result.status == "completed"
    assert result.final_text == "Lost but found."


async def test_a_turn_past_its_deadline_fails_naming_the_deadline() -> None:
    """Turn deadline: no turn/completed in time and thread/read shows no final status ->
    failed with an error naming the deadline; the turn is interrupted."""
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread()
            result = await thread.run("hang", deadline=0.3)
            after = await thread.run("Say hello.")
    assert result.status == "failed"
    assert result.error is not None
    assert "deadline" in result.error
    assert "'inProgress'" in result.error
    assert len(named(server.received, "thread/read")) == 1
    assert len(named(server.received, "turn/interrupt")) == 1
    assert after.status == "completed"


async def test_a_second_turn_on_a_busy_thread_is_refused() -> None:
    """One turn at a time per thread: a second one raises before anything is sent."""
    with anyio.fail_after(10):
        async with connected() as (conn, _server):
            thread = await conn.start_thread()
            async with thread.turn("stall") as turn:
                with pytest.raises(RuntimeError, match="already has a turn"):
                    async with thread.turn("Say hello."):
                        pass
                await turn.cancel()
            assert (await turn.result()).status == "interrupted"


async def test_typed_input_and_an_output_schema_are_sent_as_given() -> None:
    """thread.turn(input: Sequence[UserInput], output_schema=...)."""
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    inputs: Sequence[codex.UserInput] = [
        codex.TextUserInput(text="Say hello."),
        codex.LocalImageUserInput(path="/tmp/x.png"),
    ]
    with anyio.fail_after(10):
        async with connected() as (conn, server):
            thread = await conn.start_thread()
            await thread.run(inputs, output_schema=schema)
    [start] = named(server.received, "turn/start")
    assert start["params"] == {
        "threadId": thread.id,
        "input": [
            {"type": "text", "text": "Say hello.", "text_elements": []},
            {"type": "localImage", "path": "/tmp/x.png"},
        ],
        "outputSchema": schema,
    }


async def test_the_unprefixed_names_of_earlier_releases_still_import() -> None:
    """Issue 18 (dialect-prefixed public names): the old names are aliases of the new ones
    for one release."""
    from subagents.transports import codex_app_server as old

    assert old.TurnResult is old.CodexTurnResult
    assert old.ApprovalRequest is CodexApprovalRequest
    assert old.AgentMessageDelta is CodexAgentMessageDelta
    assert old.TurnError is CodexTurnError
    assert old.OtherEvent is CodexOtherEvent
