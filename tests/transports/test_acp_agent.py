"""The ACP agent endpoint: negotiation, routing, the initialize gate, cancellation, ordering.

Driven over real OS pipes with raw JSON lines (not a typed client), so every byte the
endpoint writes is seen. Every test runs on asyncio and on trio.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from subagents.protocol import JsonValue, acp
from subagents.rpc import RPCError
from subagents.transports import open_agent_process, open_pipe_pair
from subagents.transports.acp_agent import (
    Agent,
    AgentTurn,
    ClientCapabilityError,
    ClientConnection,
    negotiate_protocol_version,
    serve_agent_over,
)
from tests.agents.acp_wire import (
    Msg,
    call,
    cancel,
    chunk_text,
    initialize,
    new_session,
    notification,
    prompt,
    read_until_answer,
    reply,
    request,
)
from tests.rpc.wire import Wire

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------ test agents


def text_update(text: str) -> acp.AgentMessageChunkSessionUpdate:
    return acp.AgentMessageChunkSessionUpdate(content=acp.TextContentBlock(text=text))


def prompt_text(params: acp.PromptRequest) -> str:
    return "".join(b.text for b in params.prompt if isinstance(b, acp.TextContentBlock))


class MinimalAgent(Agent):
    """The baseline only: session/new and session/prompt (echo)."""

    def __init__(self) -> None:
        self.sessions = 0

    async def new_session(
        self, params: acp.NewSessionRequest, conn: ClientConnection
    ) -> acp.NewSessionResponse:
        self.sessions += 1
        return acp.NewSessionResponse(session_id=f"s{self.sessions}")

    async def prompt(self, params: acp.PromptRequest, turn: AgentTurn) -> acp.StopReason:
        await turn.send_update(text_update(prompt_text(params)))
        return "end_turn"


class ScriptedAgent(MinimalAgent):
    """Behaviour chosen by the prompt text, for the cancellation and client-call tests."""

    def __init__(self) -> None:
        super().__init__()
        self.cancel_hook_calls: list[str] = []

    async def cancel(self, params: acp.CancelNotification, conn: ClientConnection) -> None:
        self.cancel_hook_calls.append(params.session_id)

    async def prompt(self, params: acp.PromptRequest, turn: AgentTurn) -> acp.StopReason:
        text = prompt_text(params)
        if text == "wait":  # until cancelled; then one clean-up update and re-raise
            await turn.send_update(text_update("waiting"))
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                await turn.send_update(text_update("cleaned up"))
                raise
        if text == "raise":  # turns the cancellation into another exception
            await turn.send_update(text_update("waiting"))
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                raise RuntimeError("the model API call was aborted") from None
        if text == "swallow":  # ignores the cancellation and claims a normal end
            await turn.send_update(text_update("waiting"))
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                pass
            return "end_turn"
        if text == "permission":
            tool_call = acp.ToolCallUpdate(tool_call_id="call_1")
            await turn.send_update(
                acp.ToolCallSessionUpdate(tool_call_id="call_1", title="Write", status="pending")
            )
            options = [acp.PermissionOption(option_id="allow", name="Allow", kind="allow_once")]
            try:
                outcome = await turn.request_permission(tool_call, options)
            except anyio.get_cancelled_exc_class():
                await turn.send_update(
                    acp.ToolCallUpdateSessionUpdate(tool_call_id="call_1", status="failed")
                )
                raise
            await turn.send_update(text_update(outcome.outcome.outcome))
            return "end_turn"
        if text == "read":
            try:
                content = await turn.read_text_file("/tmp/x.txt")
            except ClientCapabilityError as exc:
                await turn.send_update(text_update(f"refused locally: {exc}"))
            else:
                await turn.send_update(text_update(f"read: {content}"))
            return "end_turn"
        if text == "terminal":
            async with turn.open_terminal("echo", args=["hi"], cwd="/tmp") as terminal:
                exit_status = await terminal.wait_for_exit()
                output = await terminal.output()
            await turn.send_update(text_update(f"{output.output!r} {exit_status.exit_code}"))
            return "end_turn"
        if text == "elicit":
            form: JsonValue = {
                "mode": "form",
                "message": "Name?",
                "sessionId": turn.session_id,
                "requestedSchema": {"type": "object", "properties": {}},
            }
            params_ = acp.from_wire(acp.CreateElicitationRequest, form)
            try:
                answer = await turn.connection.create_elicitation(params_)
            except ClientCapabilityError as exc:
                await turn.send_update(text_update(f"refused locally: {exc.capability}"))
            else:
                await turn.send_update(text_update(f"action: {answer.action}"))
            return "end_turn"
        if text == "fail":
            raise ValueError("boom")
        if text == "print":
            print("stray print from agent code")
            await turn.send_update(text_update("printed"))
            return "end_turn"
        return await super().prompt(params, turn)


class FullAgent(MinimalAgent):
    """Overrides the optional session methods (and an extension method)."""

    async def load_session(
        self, params: acp.LoadSessionRequest, conn: ClientConnection
    ) -> acp.LoadSessionResponse:
        return acp.LoadSessionResponse()

    async def list_sessions(
        self, params: acp.ListSessionsRequest, conn: ClientConnection
    ) -> acp.ListSessionsResponse:
        return acp.ListSessionsResponse(sessions=[])

    async def close_session(
        self, params: acp.CloseSessionRequest, conn: ClientConnection
    ) -> acp.CloseSessionResponse:
        return acp.CloseSessionResponse()

    async def logout(self, params: acp.LogoutRequest, conn: ClientConnection) -> acp.LogoutResponse:
        return acp.LogoutResponse()

    async def ext_request(self, method: str, params: JsonValue, conn: ClientConnection) -> object:
        if method == "_vendor/echo":
            return {"echo": params}
        raise RPCError.method_not_found(method)


class AnnouncingAgent(MinimalAgent):
    """Sends an update for the new session from inside new_session."""

    async def new_session(
        self, params: acp.NewSessionRequest, conn: ClientConnection
    ) -> acp.NewSessionResponse:
        response = await super().new_session(params, conn)
        commands = acp.AvailableCommandsUpdateSessionUpdate(
            available_commands=[acp.AvailableCommand(name="help", description="Show help")]
        )
        await conn.send_update(response.session_id, commands)
        await conn.send_update(response.session_id, text_update("welcome"))
        return response


# ---------------------------------------------------------------------------------- harness


@asynccontextmanager
async def serving(agent: Agent) -> AsyncGenerator[Wire, None]:
    """The client end of `agent` served over two pipes; closes it (EOF) and waits on exit."""
    agent_in, wire_out = await open_pipe_pair()
    wire_in, agent_out = await open_pipe_pair()
    wire = Wire(wire_in, wire_out)
    served = anyio.Event()

    async def serve() -> None:
        try:
            await serve_agent_over(agent_in, agent_out, agent)
        finally:
            served.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            yield wire
            await wire.close()
            with anyio.fail_after(5):
                await served.wait()
    finally:
        with anyio.CancelScope(shield=True):
            await wire.receive.aclose()
            await wire.send.aclose()
            await agent_in.aclose()


# ---------------------------------------------------------------------- version negotiation


async def test_initialize_answers_the_requested_version_when_it_is_supported() -> None:
    """initialization.mdx: "If the Agent supports the requested version, it MUST respond with
    the same version"; the answer carries agentInfo and the (empty) auth methods."""
    async with serving(MinimalAgent()) as wire:
        result = await initialize(wire)
    assert result["protocolVersion"] == 1
    assert result["agentInfo"] == {"name": "subagents-agent", "version": "0.0.0"}
    assert result["authMethods"] == []


@pytest.mark.parametrize("requested", [65535, 2, 0])
async def test_initialize_never_echoes_an_unsupported_version(requested: int) -> None:
    """initialization.mdx: "Otherwise, the Agent MUST respond with the latest version it
    supports" (acp-tck ACP-INIT-003; the official Python SDK's example echoes it)."""
    async with serving(MinimalAgent()) as wire:
        answer = await call(wire, 0, "initialize", {"protocolVersion": requested})
    assert answer["result"]["protocolVersion"] == 1


def test_negotiation_picks_the_latest_supported_version() -> None:
    """initialization.mdx version negotiation, as a pure function."""
    assert negotiate_protocol_version(1) == 1
    assert negotiate_protocol_version(7, (1, 2, 3)) == 3
    assert negotiate_protocol_version(2, (1, 2, 3)) == 2


async def test_initialize_with_a_custom_agent_version_is_still_negotiated() -> None:
    """The endpoint, not the agent's code, decides the answered protocol version."""

    class Liar(MinimalAgent):
        async def initialize(
            self, params: acp.InitializeRequest, conn: ClientConnection
        ) -> acp.InitializeResponse:
            return acp.InitializeResponse(protocol_version=params.protocol_version)

    async with serving(Liar()) as wire:
        answer = await call(wire, 0, "initialize", {"protocolVersion": 99})
    assert answer["result"] == {"protocolVersion": 1}


# -------------------------------------------------------------------------- capabilities


async def test_default_capabilities_advertise_nothing_beyond_the_baseline() -> None:
    """Honest capabilities: an agent with only new_session/prompt advertises loadSession false
    and no session capabilities (clients MUST NOT call what is not advertised)."""
    async with serving(MinimalAgent()) as wire:
        result = await initialize(wire)
    assert result["agentCapabilities"] == {"loadSession": False}


async def test_default_capabilities_advertise_exactly_the_overridden_methods() -> None:
    """loadSession, sessionCapabilities.list/close and auth.logout follow the overrides."""
    async with serving(FullAgent()) as wire:
        result = await initialize(wire)
    assert result["agentCapabilities"] == {
        "loadSession": True,
        "sessionCapabilities": {"list": {}, "close": {}},
        "auth": {"logout": {}},
    }


# ------------------------------------------------------------------------------- routing


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("authenticate", {"methodId": "x"}),
        ("logout", {}),
        ("session/load", {"sessionId": "s1", "cwd": "/tmp", "mcpServers": []}),
        ("session/resume", {"sessionId": "s1", "cwd": "/tmp"}),
        ("session/list", {}),
        ("session/close", {"sessionId": "s1"}),
        ("session/delete", {"sessionId": "s1"}),
        ("session/set_mode", {"sessionId": "s1", "modeId": "m"}),
        ("session/set_config_option", {"sessionId": "s1", "configId": "c", "value": "v"}),
        ("_vendor/ext", {"x": 1}),
        ("no/such_method", {}),
        ("session/fork", {"sessionId": "s1", "cwd": "/tmp"}),
    ],
)
async def test_a_method_the_agent_does_not_implement_is_method_not_found(
    method: str, params: JsonValue
) -> None:
    """Never a silent success for an unimplemented method (the official SDK answers `{}` or
    `null`); extensibility.mdx: unknown `_` requests get "Method not found"."""
    async with serving(MinimalAgent()) as wire:
        await initialize(wire)
        answer = await call(wire, 1, method, params)
    assert answer["error"]["code"] == -32601
    assert answer["error"]["data"] == {"method": method}


async def test_extension_requests_reach_ext_request_when_it_is_overridden() -> None:
    """extensibility.mdx: custom requests MUST be answered with the provided id."""
    async with serving(FullAgent()) as wire:
        await initialize(wire)
        known = await call(wire, 1, "_vendor/echo", {"x": 1})
        unknown = await call(wire, 2, "_vendor/other", {})
    assert known["result"] == {"echo": {"x": 1}}
    assert unknown["error"]["code"] == -32601


async def test_unknown_notifications_are_ignored_without_an_answer() -> None:
    """extensibility.mdx: "implementations SHOULD ignore unrecognized notifications";
    overview.mdx: notifications never receive responses."""
    async with serving(MinimalAgent()) as wire:
        await initialize(wire)
        await wire.write_json(notification("_vendor/notify", {"x": 1}))
        await wire.write_json(notification("no/such_notification", {}))
        await wire.write_json(notification("session/cancel", {"sessionId": "idle"}))
        session_id = await new_session(wire)
    assert session_id == "s1"


async def test_implemented_methods_are_answered_with_wire_form_results() -> None:
    """Results are dumped with wire names and without unset fields."""
    async with serving(FullAgent()) as wire:
        await initialize(wire)
        listed = await call(wire, 1, "session/list", {})
        closed = await call(wire, 2, "session/close", {"sessionId": "s1"})
        logged_out = await call(wire, 3, "logout", {})
    assert listed["result"] == {"sessions": []}
    assert closed["result"] == {}
    assert logged_out["result"] == {}


async def test_invalid_params_are_answered_with_invalid_params() -> None:
    """Params are validated into the generated models: `mcpServers` is required."""
    async with serving(MinimalAgent()) as wire:
        await initialize(wire)
        answer = await call(wire, 1, "session/new", {"cwd": "/tmp"})
        wrong_type = await call(wire, 2, "session/prompt", {"sessionId": 5, "prompt": []})
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"]["errors"][0]["loc"] == ["mcpServers"]
    assert wrong_type["error"]["code"] == -32602


async def test_a_failing_agent_method_is_an_internal_error_and_the_connection_goes_on() -> None:
    """An exception in agent code (not a cancellation) becomes -32603; nothing crashes."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "fail"))
        _, answer = await read_until_answer(wire, 2)
        again = await call(wire, 3, "session/new", {"cwd": "/tmp", "mcpServers": []})
    assert answer["error"]["code"] == -32603
    assert "boom" in answer["error"]["data"]["error"]
    assert again["result"] == {"sessionId": "s2"}


# ------------------------------------------------------------------------ initialize gate


@pytest.mark.parametrize("method", ["session/new", "session/prompt", "no/such_method"])
async def test_requests_before_initialize_are_refused_with_invalid_request(method: str) -> None:
    """initialization.mdx: clients MUST initialize first; like the TS SDK, the agent refuses
    anything else with -32600 and a message naming the method."""
    async with serving(MinimalAgent()) as wire:
        refused = await call(wire, 7, method, {"cwd": "/tmp", "mcpServers": []})
        await initialize(wire)
        session_id = await new_session(wire)
    assert refused["error"]["code"] == -32600
    assert "must be initialized" in refused["error"]["message"]
    assert method in refused["error"]["message"]
    assert session_id == "s1"


# -------------------------------------------------------------------------- prompt turns


async def test_a_prompt_streams_its_updates_then_answers_end_turn() -> None:
    """prompt-turn.mdx: updates for the prompted session, then the StopReason."""
    async with serving(MinimalAgent()) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "hello"))
        updates, answer = await read_until_answer(wire, 2)
    assert [chunk_text(u) for u in updates] == ["hello"]
    assert updates[0]["params"]["sessionId"] == session_id
    assert answer["result"] == {"stopReason": "end_turn"}


async def test_a_cancelled_turn_flushes_its_updates_then_answers_cancelled() -> None:
    """prompt-turn.mdx §Cancellation: updates sent after session/cancel go out before the
    response, and the response is stopReason "cancelled"."""
    agent = ScriptedAgent()
    async with serving(agent) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "wait"))
        assert chunk_text(await wire.read()) == "waiting"
        await wire.write_json(cancel(session_id))
        updates, answer = await read_until_answer(wire, 2)
    assert [chunk_text(u) for u in updates] == ["cleaned up"]
    assert answer["result"] == {"stopReason": "cancelled"}
    assert agent.cancel_hook_calls == [session_id]


@pytest.mark.parametrize("behaviour", ["raise", "swallow"])
async def test_a_cancelled_turn_answers_cancelled_whatever_the_agent_code_does(
    behaviour: str,
) -> None:
    """StopReason schema: cancelled "MUST be returned when the client sends a session/cancel
    notification, even if the cancellation causes exceptions in underlying operations";
    never a JSON-RPC error, never end_turn."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, behaviour))
        assert chunk_text(await wire.read()) == "waiting"
        await wire.write_json(cancel(session_id))
        _, answer = await read_until_answer(wire, 2)
    assert answer == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}}


async def test_a_cancel_sent_together_with_its_prompt_is_not_lost() -> None:
    """A cancel arriving while the turn is still being set up must not be dropped (a known bug
    class: goose PR #9804); both lines arrive in one write. Repeated, as it is a race."""
    answers: list[Msg] = []
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire)
        for n in range(10):
            session_id = await new_session(wire, 100 + n)
            lines = [prompt(n, session_id, "wait"), cancel(session_id)]
            await wire.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
            answers.append((await read_until_answer(wire, n))[1])
    assert [a["result"] for a in answers] == [{"stopReason": "cancelled"}] * 10


async def test_a_cancel_for_another_session_leaves_the_turn_running() -> None:
    """session/cancel is per session."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire)
        first = await new_session(wire, 1)
        second = await new_session(wire, 2)
        await wire.write_json(prompt(3, first, "wait"))
        assert chunk_text(await wire.read()) == "waiting"
        await wire.write_json(cancel(second))
        await wire.write_json(prompt(4, second, "hi"))
        updates, answer = await read_until_answer(wire, 4)
        assert [chunk_text(u) for u in updates] == ["hi"]
        await wire.write_json(cancel(first))
        _, first_answer = await read_until_answer(wire, 3)
    assert answer["result"] == {"stopReason": "end_turn"}
    assert first_answer["result"] == {"stopReason": "cancelled"}


async def test_cancel_during_a_permission_request_cancels_it_and_answers_cancelled() -> None:
    """The cancellation cascade (cancellation.mdx): the agent sends $/cancel_request for its
    pending session/request_permission, reports the tool call failed, answers cancelled; the
    client's late "cancelled" outcome is accepted silently."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "permission"))
        tool_call = await wire.read()
        assert tool_call["params"]["update"]["sessionUpdate"] == "tool_call"
        asked = await wire.read()
        assert asked["method"] == "session/request_permission"
        assert asked["params"]["toolCall"] == {"toolCallId": "call_1"}
        await wire.write_json(cancel(session_id))
        courtesy = await wire.read()
        outcome: JsonValue = {"outcome": {"outcome": "cancelled"}}
        await wire.write_json(reply(asked["id"], outcome))
        updates, answer = await read_until_answer(wire, 2)
        after = await call(wire, 3, "session/new", {"cwd": "/tmp", "mcpServers": []})
    assert courtesy == notification("$/cancel_request", {"requestId": asked["id"]})
    assert [u["params"]["update"] for u in updates] == [
        {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "failed"}
    ]
    assert answer["result"] == {"stopReason": "cancelled"}
    assert "result" in after


async def test_a_permission_round_trip_returns_the_clients_outcome() -> None:
    """session/request_permission: the agent gets the selected option."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "permission"))
        await wire.read()
        asked = await wire.read()
        outcome: JsonValue = {"outcome": {"outcome": "selected", "optionId": "allow"}}
        await wire.write_json(reply(asked["id"], outcome))
        updates, answer = await read_until_answer(wire, 2)
    assert [chunk_text(u) for u in updates] == ["selected"]
    assert answer["result"] == {"stopReason": "end_turn"}


async def test_a_request_cancelled_with_cancel_request_is_answered_request_cancelled() -> None:
    """cancellation.mdx: the receiver MUST still answer, normally or with -32800."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "raise"))
        assert chunk_text(await wire.read()) == "waiting"
        await wire.write_json(notification("$/cancel_request", {"requestId": 2}))
        _, answer = await read_until_answer(wire, 2)
    assert answer["error"]["code"] == -32800


async def test_session_close_cancels_the_running_turn_before_answering() -> None:
    """session-close: "The Agent MUST cancel any ongoing work for that session as if
    session/cancel had been called"."""

    class Closable(ScriptedAgent):
        async def close_session(
            self, params: acp.CloseSessionRequest, conn: ClientConnection
        ) -> acp.CloseSessionResponse:
            return acp.CloseSessionResponse()

    async with serving(Closable()) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "wait"))
        assert chunk_text(await wire.read()) == "waiting"
        await wire.write_json(request(3, "session/close", {"sessionId": session_id}))
        updates, turn_answer = await read_until_answer(wire, 2)
        close_answer = await wire.read()
    assert [chunk_text(u) for u in updates] == ["cleaned up"]
    assert turn_answer["result"] == {"stopReason": "cancelled"}
    assert close_answer == {"jsonrpc": "2.0", "id": 3, "result": {}}


# ------------------------------------------------------------------------------ ordering


async def test_the_session_new_response_goes_out_before_the_sessions_updates() -> None:
    """transports/ordering: clients (JetBrains) reject updates for a session they do not know
    yet; updates sent from new_session are held until its response is written."""
    async with serving(AnnouncingAgent()) as wire:
        await initialize(wire)
        await wire.write_json(request(1, "session/new", {"cwd": "/tmp", "mcpServers": []}))
        first = await wire.read()
        second = await wire.read()
        third = await wire.read()
        session_id = await new_session(wire, 2)
    assert first == {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}
    assert second["params"]["update"]["sessionUpdate"] == "available_commands_update"
    assert second["params"]["sessionId"] == "s1"
    assert chunk_text(third) == "welcome"
    assert session_id == "s2"


async def test_updates_held_by_a_failed_session_new_follow_its_error() -> None:
    """A session/new that fails after sending updates: the error is answered first, then what
    was held (nothing is lost, and nothing precedes the answer)."""

    class Failing(AnnouncingAgent):
        async def new_session(
            self, params: acp.NewSessionRequest, conn: ClientConnection
        ) -> acp.NewSessionResponse:
            await conn.send_update("doomed", text_update("before the failure"))
            raise RPCError.auth_required()

    async with serving(Failing()) as wire:
        await initialize(wire)
        await wire.write_json(request(1, "session/new", {"cwd": "/tmp", "mcpServers": []}))
        first = await wire.read()
        second = await wire.read()
    assert first["error"]["code"] == -32000
    assert second["params"]["sessionId"] == "doomed"
    assert chunk_text(second) == "before the failure"


# ------------------------------------------------------------------------ client methods


async def test_a_client_method_that_was_not_advertised_is_refused_locally() -> None:
    """file-system.mdx: if readTextFile is false or absent the Agent MUST NOT call it; the
    call raises ClientCapabilityError and nothing goes on the wire."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "read"))
        updates, answer = await read_until_answer(wire, 2)
    assert [chunk_text(u) for u in updates] == [
        "refused locally: the client did not advertise fs.readTextFile, "
        "so 'fs/read_text_file' may not be called"
    ]
    assert answer["result"] == {"stopReason": "end_turn"}


@pytest.mark.parametrize(
    ("capabilities", "refused"),
    [({}, "elicitation"), ({"elicitation": {"url": {}}}, "elicitation.form")],
)
async def test_elicitation_in_a_mode_the_client_did_not_advertise_is_refused_locally(
    capabilities: JsonValue, refused: str
) -> None:
    """elicitation.mdx: "Agents MUST NOT request a mode the Client has not advertised"."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire, capabilities)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "elicit"))
        updates, _ = await read_until_answer(wire, 2)
    assert [chunk_text(u) for u in updates] == [f"refused locally: {refused}"]


async def test_elicitation_in_an_advertised_mode_reaches_the_client() -> None:
    """elicitation/create with the client's elicitation.form."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire, {"elicitation": {"form": {}}})
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "elicit"))
        asked = await wire.read()
        await wire.write_json(reply(asked["id"], {"action": "decline"}))
        updates, _ = await read_until_answer(wire, 2)
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["mode"] == "form"
    assert [chunk_text(u) for u in updates] == ["action: decline"]


async def test_an_advertised_client_method_is_called_on_the_wire() -> None:
    """fs/read_text_file with the client's fs.readTextFile capability."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire, {"fs": {"readTextFile": True}})
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "read"))
        asked = await wire.read()
        await wire.write_json(reply(asked["id"], {"content": "x"}))
        updates, _ = await read_until_answer(wire, 2)
    assert asked["method"] == "fs/read_text_file"
    assert asked["params"] == {"sessionId": session_id, "path": "/tmp/x.txt"}
    assert [chunk_text(u) for u in updates] == ["read: x"]


async def test_open_terminal_releases_the_terminal_it_created() -> None:
    """terminals.mdx: "The Agent MUST release the terminal using terminal/release"."""
    async with serving(ScriptedAgent()) as wire:
        await initialize(wire, {"terminal": True})
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "terminal"))
        answers: dict[str, JsonValue] = {
            "terminal/create": {"terminalId": "t1"},
            "terminal/wait_for_exit": {"exitCode": 0},
            "terminal/output": {"output": "hi\n", "truncated": False},
            "terminal/release": None,
        }
        calls: list[Msg] = []
        for _ in answers:
            asked = await wire.read()
            calls.append(asked)
            result = answers[asked["method"]]
            await wire.write_json(reply(asked["id"], result))
        updates, _ = await read_until_answer(wire, 2)
    assert [c["method"] for c in calls] == list(answers)
    assert calls[0]["params"] == {
        "sessionId": session_id,
        "command": "echo",
        "args": ["hi"],
        "cwd": "/tmp",
    }
    assert calls[3]["params"] == {"sessionId": session_id, "terminalId": "t1"}
    assert [chunk_text(u) for u in updates] == ["'hi\\n' 0"]


# ------------------------------------------------------------------------------ shutdown


@pytest.mark.parametrize("scenario", ["wait", "permission"])
async def test_end_of_input_answers_the_running_turn_and_stops_serving(scenario: str) -> None:
    """transports.mdx shutdown: the client closes stdin; the agent answers what it can and
    exits (agents that do not exit leave orphans: claude-agent-acp #325). The turn is
    answered cancelled, also when it was waiting for the client (a permission request)."""
    agent_in, wire_out = await open_pipe_pair()
    wire_in, agent_out = await open_pipe_pair()
    wire = Wire(wire_in, wire_out)
    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve_agent_over, agent_in, agent_out, ScriptedAgent())
                await initialize(wire)
                session_id = await new_session(wire)
                await wire.write_json(prompt(2, session_id, scenario))
                await wire.read()  # "waiting", or the tool call
                if scenario == "permission":
                    assert (await wire.read())["method"] == "session/request_permission"
                await wire.close()
                _, answer = await read_until_answer(wire, 2)
                assert answer["result"] == {"stopReason": "cancelled"}
                with pytest.raises(anyio.EndOfStream):
                    await wire.receive.receive()
    finally:
        with anyio.CancelScope(shield=True):
            await wire.receive.aclose()
            await agent_in.aclose()


async def test_print_in_agent_code_does_not_corrupt_stdout() -> None:
    """transports.mdx: "The agent MUST NOT write anything to its stdout that is not a valid
    ACP message"; run_agent points fd 1 at stderr while it serves."""
    code = textwrap.dedent(
        """
        from subagents.transports.acp_agent import run_agent
        from tests.transports.test_acp_agent import ScriptedAgent
        run_agent(ScriptedAgent())
        print("after serving")
        """
    )
    root = str(ROOT)
    command = [sys.executable, "-c", code]
    async with open_agent_process(command, cwd=root, env={"PYTHONPATH": root}) as child:
        wire = Wire(child.stdout, child.stdin)
        await initialize(wire)
        session_id = await new_session(wire)
        await wire.write_json(prompt(2, session_id, "print"))
        updates, answer = await read_until_answer(wire, 2)
        await child.stdin.aclose()
        with anyio.fail_after(10):
            rest = b""
            while True:
                try:
                    rest += await child.stdout.receive()
                except anyio.EndOfStream:
                    break
            exit_ = await child.wait()
    assert [chunk_text(u) for u in updates] == ["printed"]
    assert answer["result"] == {"stopReason": "end_turn"}
    assert rest == b"after serving\n"
    assert "stray print from agent code" in exit_.stderr_tail
    assert exit_.returncode == 0
