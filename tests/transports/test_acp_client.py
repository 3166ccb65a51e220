"""The ACP client endpoint, against scripted agents over real pipes (asyncio and trio)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from subagents.protocol import JsonValue, acp
from subagents.rpc import Peer, Router, RPCError, open_peer
from subagents.transports import ClientSandbox, TurnOverflowError, open_pipe_pair
from subagents.transports.acp_client import (
    AgentConnection,
    AgentStartupError,
    CapabilityError,
    PermissionPolicy,
    ProtocolVersionError,
    allow_policy,
    connect_agent_over,
    reject_policy,
)

pytestmark = pytest.mark.anyio

SESSION = "s-1"


class FakeAgent:
    """A scripted agent: records what it receives, answers as told."""

    def __init__(self, init_result: JsonValue | None = None) -> None:
        self.router = Router()
        self.received: list[tuple[str, JsonValue]] = []
        self.peer: Peer | None = None
        self.cancelled = anyio.Event()
        self.init_result: JsonValue = init_result or {
            "protocolVersion": 1,
            "agentCapabilities": {},
            "agentInfo": {"name": "fake", "version": "0"},
        }
        self.router.on_any_request(self.on_request)
        self.router.on_any_notification(self.on_notification)
        self.prompt_script: Any = None

    async def on_request(self, method: str, params: JsonValue) -> object:
        self.received.append((method, params))
        if method == "initialize":
            return self.init_result
        if method == "session/new":
            return {"sessionId": SESSION}
        if method == "session/prompt":
            return await self.prompt_script(self, params)
        if method in ("authenticate", "session/set_mode"):
            return None  # a "void" result as null: clients must accept it
        raise RPCError.method_not_found(method)

    async def on_notification(self, method: str, params: JsonValue) -> None:
        self.received.append((method, params))
        if method == "session/cancel":
            self.cancelled.set()

    async def update(self, update: JsonValue) -> None:
        assert self.peer is not None
        await self.peer.notify("session/update", {"sessionId": SESSION, "update": update})


async def read_into(got: list[Any], events: AsyncIterator[Any]) -> None:
    """Append each event of ``events`` to ``got`` (what came before an error is kept)."""
    async for event in events:
        got.append(event)


def chunk(text: str) -> JsonValue:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


@asynccontextmanager
async def connected(
    agent: FakeAgent, policy: PermissionPolicy = reject_policy
) -> AsyncGenerator[AgentConnection, None]:
    agent_in, client_out = await open_pipe_pair()
    client_in, agent_out = await open_pipe_pair()
    try:
        async with open_peer(agent_in, agent_out, router=agent.router, name="fake") as peer:
            agent.peer = peer
            async with connect_agent_over(
                client_in, client_out, permission_policy=policy, initialize_timeout=5
            ) as connection:
                yield connection
    finally:
        with anyio.CancelScope(shield=True):
            await agent_in.aclose()
            await client_in.aclose()


async def test_initialize_sends_v1_and_reads_the_agent_s_answer() -> None:
    """ACP initialization: the client sends protocolVersion 1 and its capabilities."""
    agent = FakeAgent()
    async with connected(agent) as connection:
        assert connection.protocol_version == 1
        assert connection.agent_info is not None
        assert connection.agent_info.name == "fake"
    method, params = agent.received[0]
    assert method == "initialize"
    assert isinstance(params, dict)
    assert params["protocolVersion"] == 1
    assert (
        params["clientCapabilities"]
        == {
            "fs": {"readTextFile": False, "writeTextFile": False},
            "terminal": False,
        }
        or params["clientCapabilities"] == {}
    )


async def test_an_agent_answering_an_unsupported_version_is_refused() -> None:
    """Version negotiation: the client refuses a version it does not support, clearly."""
    agent = FakeAgent({"protocolVersion": 99, "agentCapabilities": {}})
    with pytest.raises(ProtocolVersionError, match="protocol version 99; this client supports 1"):
        async with connected(agent):
            pass


async def test_an_agent_refusing_initialize_is_a_startup_error() -> None:
    """A clear error names the cause when initialize fails."""
    agent = FakeAgent()

    async def refuse(method: str, params: JsonValue) -> object:
        raise RPCError(-32603, "no model configured")

    agent.router = Router()
    agent.router.on_any_request(refuse)
    with pytest.raises(AgentStartupError, match="no model configured"):
        async with connected(agent):
            pass


@pytest.mark.parametrize(
    ("call", "needs"),
    [
        (lambda c: c.logout(), "logout"),
        (lambda c: c.load_session("x"), "loadSession"),
        (lambda c: c.resume_session("x"), "resume"),
        (lambda c: c.list_sessions(), "listing"),
        (lambda c: c.close_session("x"), "close"),
        (lambda c: c.delete_session("x"), "delete"),
        (lambda c: c.authenticate("api-key"), "auth method"),
    ],
)
async def test_unadvertised_methods_fail_locally_before_anything_is_sent(
    call: Any, needs: str
) -> None:
    """Capability gating: a clear local error, and nothing goes on the wire."""
    agent = FakeAgent()
    async with connected(agent) as connection:
        with pytest.raises(CapabilityError, match=needs):
            await call(connection)
        session = await connection.new_session("/tmp")
        with pytest.raises(CapabilityError, match="no modes"):
            await session.set_mode("fast")
        with pytest.raises(CapabilityError, match="no config options"):
            await session.set_config_option("model", "x")
    assert [m for m, _ in agent.received] == ["initialize", "session/new"]


async def test_void_results_may_be_null_or_an_empty_object() -> None:
    """Clients must accept both null and {} for "void" methods (acp.md §3.1 notes)."""
    agent = FakeAgent(
        {
            "protocolVersion": 1,
            "agentCapabilities": {},
            "authMethods": [{"id": "api-key", "name": "API key"}],
        }
    )
    async with connected(agent) as connection:
        await connection.authenticate("api-key")  # answered null
    assert ("authenticate", {"methodId": "api-key"}) in agent.received


async def test_a_turn_yields_typed_updates_in_order_then_the_stop_reason() -> None:
    """prompt(): an async iterator of typed session updates, in order, then the stopReason."""
    agent = FakeAgent()

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        for i in range(200):
            await agent.update(chunk(str(i)))
        await agent.update({"sessionUpdate": "plan", "entries": []})
        return {"stopReason": "end_turn"}

    agent.prompt_script = script
    texts: list[str] = []
    kinds: list[str] = []
    async with connected(agent) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            async with session.prompt("go") as turn:
                async for update in turn:
                    kinds.append(update.session_update)
                    if isinstance(update, acp.AgentMessageChunkSessionUpdate):
                        assert isinstance(update.content, acp.TextContentBlock)
                        texts.append(update.content.text)
        assert turn.stop_reason == "end_turn"
    assert texts == [str(i) for i in range(200)]
    assert kinds[-1] == "plan"


async def test_result_drains_updates_nobody_read() -> None:
    """A caller that only wants the outcome never blocks the connection."""
    agent = FakeAgent()

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        for i in range(3000):  # more than the turn's buffer
            await agent.update(chunk(str(i)))
        return {"stopReason": "end_turn"}

    agent.prompt_script = script
    async with connected(agent) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(20):
            result = await session.run("go")
    assert result.stop_reason == "end_turn"


async def test_cancel_answers_a_pending_permission_request_with_cancelled() -> None:
    """ACP prompt-turn §Cancellation: the client MUST answer pending permission requests
    with the cancelled outcome once it sends session/cancel."""
    agent = FakeAgent()
    answers: list[JsonValue] = []
    asked = anyio.Event()

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        assert agent.peer is not None
        permission = {
            "sessionId": SESSION,
            "toolCall": {"toolCallId": "t1", "title": "rm -rf"},
            "options": [
                {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            ],
        }
        answers.append(await agent.peer.request("session/request_permission", permission))
        await agent.cancelled.wait()
        return {"stopReason": "cancelled"}

    async def undecided(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent.prompt_script = script
    async with connected(agent, policy=undecided) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            async with session.prompt("delete everything") as turn:
                await asked.wait()
                await session.cancel()
                result = await turn.result()
    assert result.stop_reason == "cancelled"
    assert answers == [{"outcome": {"outcome": "cancelled"}}]
    assert ("session/cancel", {"sessionId": SESSION}) in agent.received


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (reject_policy, {"outcome": "selected", "optionId": "no"}),
        (allow_policy, {"outcome": "selected", "optionId": "yes"}),
    ],
)
async def test_permission_requests_are_answered_by_the_policy(
    policy: PermissionPolicy, expected: JsonValue
) -> None:
    """Never unanswered: the default policy picks a reject option; allow_policy allows."""
    agent = FakeAgent()
    answers: list[JsonValue] = []

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        assert agent.peer is not None
        permission = {
            "sessionId": SESSION,
            "toolCall": {"toolCallId": "t1"},
            "options": [
                {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            ],
        }
        answers.append(await agent.peer.request("session/request_permission", permission))
        return {"stopReason": "end_turn"}

    agent.prompt_script = script
    async with connected(agent, policy=policy) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            await session.run("x")
    assert answers == [{"outcome": expected}]


async def test_leaving_a_turn_early_cancels_it() -> None:
    """Breaking out of a turn sends session/cancel and waits for the agent's answer."""
    agent = FakeAgent()

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        i = 0
        while not agent.cancelled.is_set():
            await agent.update(chunk(str(i)))
            i += 1
            await anyio.sleep(0.005)
        return {"stopReason": "cancelled"}

    agent.prompt_script = script
    async with connected(agent) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            async with session.prompt("slow") as turn:
                async for _ in turn:
                    break
        assert turn.stop_reason == "cancelled"
        assert session.current_turn is None


async def test_more_updates_than_max_events_unread_fail_the_turn_loud_and_cancel_it() -> None:
    """Issue 18 / one turn API: past max_events unread updates the turn fails with
    TurnOverflowError (after the updates before it, naming the limit and what was read) and
    is cancelled on the agent's side; the connection's reader never waits for the turn's
    reader, and the connection runs the next turn."""
    agent = FakeAgent()
    prompts = 0

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        nonlocal prompts
        prompts += 1
        if prompts > 1:
            return {"stopReason": "end_turn"}
        for i in range(10):
            await agent.update(chunk(str(i)))
        await agent.cancelled.wait()
        return {"stopReason": "cancelled"}

    agent.prompt_script = script
    got: list[acp.SessionUpdate] = []
    async with connected(agent) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            async with session.prompt("flood", max_events=4) as turn:
                await agent.cancelled.wait()  # nothing was read: the cancel came from the push
                with pytest.raises(TurnOverflowError) as info:
                    await read_into(got, turn)
                with pytest.raises(TurnOverflowError):
                    await turn.result()
            assert turn.stop_reason == "cancelled"  # the agent's side stopped
            assert (await session.run("next")).stop_reason == "end_turn"
    assert len(got) == 4
    assert (info.value.limit, info.value.read) == (4, 0)
    assert "max_events=4" in str(info.value)


async def test_cancel_ends_the_turn_and_is_a_no_op_once_it_ended() -> None:
    """Issue 18 / one turn API: turn.cancel() (session/cancel) ends the turn cancelled;
    result_nowait() raises WouldBlock before the end; a cancel after the end sends nothing."""
    agent = FakeAgent()

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        await agent.update(chunk("working"))
        await agent.cancelled.wait()
        return {"stopReason": "cancelled"}

    agent.prompt_script = script
    async with connected(agent) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            async with session.prompt("slow") as turn:
                with pytest.raises(anyio.WouldBlock):
                    turn.result_nowait()
                async for _ in turn:
                    await turn.cancel()
                result = await turn.result()
                assert turn.done
                await turn.cancel()
            assert turn.result_nowait() is result
    assert result.stop_reason == "cancelled"
    assert [m for m, _ in agent.received].count("session/cancel") == 1


async def test_fs_and_terminal_are_off_by_default() -> None:
    """Capabilities advertised false; the agent's fs/terminal requests get -32601."""
    agent = FakeAgent()
    errors: list[int] = []

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        assert agent.peer is not None
        for method in ("fs/read_text_file", "terminal/create"):
            try:
                await agent.peer.request(method, {"sessionId": SESSION, "path": "/etc/passwd"})
            except RPCError as exc:
                errors.append(exc.code)
        return {"stopReason": "end_turn"}

    agent.prompt_script = script
    async with connected(agent) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            await session.run("x")
    init = agent.received[0][1]
    assert isinstance(init, dict)
    caps = init["clientCapabilities"]
    assert isinstance(caps, dict)
    assert caps.get("terminal", False) is False
    assert errors == [-32601, -32601]


async def test_an_opt_in_sandbox_serves_fs_inside_its_root_only(tmp_path: Path) -> None:
    """fs/* is served when the client opts in, confined to the sandbox root."""
    (tmp_path / "notes.txt").write_text("inside\n")
    agent = FakeAgent()
    results: list[object] = []

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        assert agent.peer is not None
        for path in (str(tmp_path / "notes.txt"), "/etc/passwd"):
            try:
                results.append(
                    await agent.peer.request(
                        "fs/read_text_file", {"sessionId": SESSION, "path": path}
                    )
                )
            except RPCError as exc:
                results.append(exc.code)
        return {"stopReason": "end_turn"}

    agent.prompt_script = script
    agent_in, client_out = await open_pipe_pair()
    client_in, agent_out = await open_pipe_pair()
    try:
        async with open_peer(agent_in, agent_out, router=agent.router, name="fake") as peer:
            agent.peer = peer
            async with connect_agent_over(
                client_in, client_out, extension=ClientSandbox(tmp_path, terminals=False)
            ) as connection:
                session = await connection.new_session(tmp_path)
                with anyio.fail_after(10):
                    await session.run("read")
    finally:
        with anyio.CancelScope(shield=True):
            await agent_in.aclose()
            await client_in.aclose()
    init = agent.received[0][1]
    assert isinstance(init, dict)
    assert init["clientCapabilities"] == {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": False,
    }
    assert results == [{"content": "inside\n"}, -32602]


class _EagerAgent(FakeAgent):
    """Sends an ``available_commands_update`` for the new session as it creates it (as
    claude-agent-acp does right after its answer), and one for an id it never hands out."""

    async def on_request(self, method: str, params: JsonValue) -> object:
        if method == "session/new":
            await self.update(
                {"sessionUpdate": "available_commands_update", "availableCommands": []}
            )
            assert self.peer is not None
            for n in range(20):
                await self.peer.notify(
                    "session/update",
                    {"sessionId": f"never-{n}", "update": chunk("stray")},
                )
        return await super().on_request(method, params)


async def test_an_update_for_a_session_not_known_yet_is_kept_for_it() -> None:
    """ACP session setup: an update for the session that ``session/new`` is creating can be
    handled before the caller has the answer (trio runs the two in either order); it lands in
    the session's ``idle_updates`` instead of being dropped. Updates for ids no session ever
    claims are kept for at most 16 ids (then dropped, logged), never without bound."""
    agent = _EagerAgent()
    async with connected(agent) as connection:
        session = await connection.new_session(cwd="/tmp")
        kinds = [type(update).__name__ for update in session.idle_updates]
        assert kinds == ["AvailableCommandsUpdateSessionUpdate"]
        # 16 ids at most: the session's own (claimed since) and 15 of the 20 strays.
        assert sorted(connection.unclaimed) == sorted(f"never-{n}" for n in range(15))
