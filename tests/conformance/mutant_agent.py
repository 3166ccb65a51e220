"""Mutants of the reference agent: the conformance suite's self-test fixtures.

Each mutant is the reference agent (:mod:`subagents.agents.reference`) with ONE deliberate
defect, chosen so that the suite fails exactly the requirement it targets and no other
mandatory one. Run one as ``python tests/conformance/mutant_agent.py NAME``.

Defects live at two levels:

* the agent: a subclass of ``ReferenceAgent`` overriding a method or a scenario;
* the wire: a :class:`Rewriter` wrapped around the byte streams handed to ``serve_agent_over``.
  It sees every message the client sends (before the agent does) and may rewrite, delay or
  add to what the agent writes (a stray line, a wrong id, an answer to a notification, ...).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc

from subagents.agents import reference
from subagents.agents.reference import SCENARIOS, ReferenceAgent
from subagents.protocol import acp
from subagents.rpc import RPCError
from subagents.transports._fd import open_stdio_streams
from subagents.transports.acp_agent import Agent, serve_agent_over

if TYPE_CHECKING:
    from subagents.agents.reference import _Session
    from subagents.protocol.acp import (
        DeleteSessionRequest,
        DeleteSessionResponse,
        InitializeRequest,
        InitializeResponse,
        ListSessionsRequest,
        ListSessionsResponse,
        LoadSessionRequest,
        LoadSessionResponse,
        LogoutRequest,
        LogoutResponse,
        NewSessionRequest,
        NewSessionResponse,
        PromptRequest,
        PromptResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        SessionConfigOption,
        SessionUpdate,
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
        StopReason,
    )
    from subagents.protocol.jsonrpc import JsonValue
    from subagents.transports.acp_agent import AgentTurn, ClientConnection

__all__ = ("MUTANTS", "Mutant", "Rewriter", "main")

Message = dict[str, Any]


# ----------------------------------------------------------------------------- wire level


class Rewriter:
    """Sits between the endpoint and stdio: watches the client, rewrites the agent.

    :meth:`client_message` sees each message the client sends before the agent reads it
    (and returns messages to write at once); :meth:`agent_message` turns each message the
    agent writes into the lines actually written. The base class changes nothing and keeps
    what the defects need to know: each request's method and params, the session each prompt
    is for, and which sessions were cancelled or closed since their last prompt.
    """

    def __init__(self) -> None:
        self.requests: dict[str, tuple[str, Message]] = {}
        """json.dumps(request id) -> (method, params), for the client's requests."""
        self.cancelled: set[str] = set()
        self.closed: set[str] = set()
        self._send: anyio.abc.ByteSendStream | None = None
        self._lock = anyio.Lock()

    # -- what the subclasses override ------------------------------------------------------

    def client_message(self, message: Message) -> list[Message]:
        method = message.get("method")
        params = cast(Message, message.get("params") or {})
        if not isinstance(method, str):
            return []
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if "id" in message:
            self.requests[json.dumps(message["id"])] = (method, params)
            if method == "session/prompt" and isinstance(session_id, str):
                self.cancelled.discard(session_id)
                self.closed.discard(session_id)
            elif method == "session/close" and isinstance(session_id, str):
                self.closed.add(session_id)
        elif method == "session/cancel" and isinstance(session_id, str):
            self.cancelled.add(session_id)
        return []

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        return [line]

    # -- helpers ---------------------------------------------------------------------------

    def request_of(self, message: Message) -> tuple[str, Message]:
        """(method, params) of the request a response answers (``("", {})`` if unknown)."""
        return self.requests.get(json.dumps(message.get("id")), ("", {}))

    @staticmethod
    def encode(message: Any, *, indent: int | None = None) -> bytes:
        separators = None if indent else (",", ":")
        return json.dumps(message, separators=separators, indent=indent).encode() + b"\n"

    # -- the streams -----------------------------------------------------------------------

    def wrap(
        self, receive: anyio.abc.ByteReceiveStream, send: anyio.abc.ByteSendStream
    ) -> tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream]:
        self._send = send
        return _Tap(receive, self), _Filter(send, self)

    async def write(self, data: bytes) -> None:
        assert self._send is not None
        async with self._lock:
            await self._send.send(data)


class _Tap(anyio.abc.ByteReceiveStream):
    """The agent's stdin: passed through unchanged, each complete line shown to the rewriter."""

    def __init__(self, inner: anyio.abc.ByteReceiveStream, rewriter: Rewriter) -> None:
        self._inner = inner
        self._rewriter = rewriter
        self._buffer = bytearray()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._inner.receive(max_bytes)
        self._buffer += data
        while (end := self._buffer.find(b"\n")) >= 0:
            raw = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            try:
                message: Any = json.loads(raw)
            except ValueError:
                continue
            if isinstance(message, dict):
                for extra in self._rewriter.client_message(cast(Message, message)):
                    await self._rewriter.write(Rewriter.encode(extra))
        return data

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Filter(anyio.abc.ByteSendStream):
    """The agent's stdout: each message the endpoint writes goes through the rewriter."""

    def __init__(self, inner: anyio.abc.ByteSendStream, rewriter: Rewriter) -> None:
        self._inner = inner
        self._rewriter = rewriter

    async def send(self, item: bytes) -> None:
        out: list[bytes] = []
        for raw in item.splitlines():
            if not raw.strip():
                continue
            message: Any = json.loads(raw)
            out += await self._rewriter.agent_message(cast(Message, message), raw + b"\n")
        await self._rewriter.write(b"".join(out))

    async def aclose(self) -> None:
        await self._inner.aclose()


def _is_response(message: Message) -> bool:
    return "id" in message and "method" not in message


def _update_kind(message: Message) -> str | None:
    if message.get("method") != "session/update":
        return None
    update = cast(Message, message.get("params") or {}).get("update")
    return cast(Message, update).get("sessionUpdate") if isinstance(update, dict) else None


class _StrayLogLine(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        if _is_response(message) and self.request_of(message)[0] == "initialize":
            return [line, b"reference agent: initialized, waiting for a session\n"]
        return [line]


class _Latin1Line(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        if _is_response(message) and self.request_of(message)[0] == "initialize":
            log = {"jsonrpc": "2.0", "method": "_reference/log", "params": {"text": "café"}}
            return [line, json.dumps(log, ensure_ascii=False).encode("latin-1") + b"\n"]
        return [line]


class _PrettyCommands(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        if _update_kind(message) == "available_commands_update":
            return [self.encode(message, indent=2)]
        return [line]


class _RenumberStringIds(Rewriter):
    def __init__(self) -> None:
        super().__init__()
        self._next = 1_000_000

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        if _is_response(message) and isinstance(message["id"], str):
            self._next += 1
            return [self.encode({**message, "id": self._next})]
        return [line]


class _PromptErrorWithResult(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        error = message.get("error")
        if (
            isinstance(error, dict)
            and cast(Message, error).get("code") == -32602
            and self.request_of(message)[0] == "session/prompt"
        ):
            return [self.encode({**message, "result": None})]
        return [line]


class _AnswerNotifications(Rewriter):
    def client_message(self, message: Message) -> list[Message]:
        extra = super().client_message(message)
        if "method" in message and "id" not in message:
            extra.append({"jsonrpc": "2.0", "id": None, "result": None})
        return extra


class _UnknownMethodInternalError(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        error = message.get("error")
        if isinstance(error, dict) and cast(Message, error).get("code") == -32601:
            wrong = {**cast(Message, error), "code": -32603, "message": "Internal error"}
            return [self.encode({**message, "error": wrong})]
        return [line]


class _CustomMethodsSucceed(Rewriter):
    """Answers unknown _-prefixed requests with an empty result instead of -32601."""

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        method, _ = self.request_of(message)
        if method.startswith("_") and "error" in message:
            return [self.encode({"jsonrpc": "2.0", "id": message.get("id"), "result": {}})]
        return [line]


class _LoadAnswersNull(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        method, _ = self.request_of(message)
        if method == "session/load" and "result" in message:
            return [self.encode({**message, "result": None})]
        return [line]


class _InvalidUpdateOnCancel(Rewriter):
    """Before answering a cancelled prompt, sends a tool_call_update whose status is not one
    the schema knows: only a run-wide schema judgement sees it (the basic exchange has no
    cancel, the cancel checks look at stop reasons and timing)."""

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        method, params = self.request_of(message)
        session_id = params.get("sessionId")
        if method == "session/prompt" and session_id in self.cancelled and "result" in message:
            bad = {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": session_id,
                    "update": {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": "call_cancelled",
                        "status": "aborted",
                    },
                },
            }
            return [self.encode(bad), line]
        return [line]


class _InitVersion(Rewriter):
    """Rewrites ``protocolVersion`` of the initialize result: ``answer(requested)`` or kept."""

    def __init__(self, answer: Callable[[Any], Any]) -> None:
        super().__init__()
        self._answer = answer

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        method, params = self.request_of(message)
        result = message.get("result")
        if method != "initialize" or not isinstance(result, dict):
            return [line]
        version = self._answer(params.get("protocolVersion"))
        if version is None:
            return [line]
        return [self.encode({**message, "result": {**result, "protocolVersion": version}})]


class _ContentWithoutType(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        if _update_kind(message) == "agent_message_chunk":
            update = cast(Message, message["params"]["update"])
            content = {k: v for k, v in cast(Message, update["content"]).items() if k != "type"}
            params = {**message["params"], "update": {**update, "content": content}}
            return [self.encode({**message, "params": params})]
        return [line]


class _ExtraResultField(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        result = message.get("result")
        if self.request_of(message)[0] == "session/new" and isinstance(result, dict):
            debug = {"debugInfo": {"createdBy": "reference agent mutant"}}
            return [self.encode({**message, "result": {**result, **debug}})]
        return [line]


class _InterruptedTurnEnds(Rewriter):
    """A prompt interrupted by ``how`` (session/cancel or session/close) is answered
    ``end_turn``, a moment later (the turn "finished its step")."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self._how = how

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        method, params = self.request_of(message)
        result = message.get("result")
        interrupted = self.cancelled if self._how == "session/cancel" else self.closed
        if (
            method == "session/prompt"
            and params.get("sessionId") in interrupted
            and isinstance(result, dict)
            and cast(Message, result).get("stopReason") == "cancelled"
        ):
            return [self.encode({**message, "result": {**result, "stopReason": "end_turn"}})]
        return [line]


class _ClosedTurnUnanswered(Rewriter):
    """A prompt interrupted by session/close is never answered (the close is): the client of
    a closed session waits forever."""

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        method, params = self.request_of(message)
        if method == "session/prompt" and params.get("sessionId") in self.closed:
            return []
        return [line]


class _UpdateBeforeSessionNew(Rewriter):
    """Writes an available_commands_update for a new session just before the session/new
    response that creates it (the endpoint holds updates until the response is written)."""

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        result = message.get("result")
        if self.request_of(message)[0] == "session/new" and isinstance(result, dict):
            session_id = cast(Message, result).get("sessionId")
            early = {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": session_id,
                    "update": {
                        "sessionUpdate": "available_commands_update",
                        "availableCommands": [],
                    },
                },
            }
            return [self.encode(early), line]
        return [line]


class _ServesBeforeInitialize(Rewriter):
    """Answers session/new sent before initialize with a session (the endpoint refuses it with
    -32600; the rewriter turns that error into a result)."""

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        error = message.get("error")
        if (
            self.request_of(message)[0] == "session/new"
            and isinstance(error, dict)
            and cast(Message, error).get("code") == -32600
        ):
            served = {"sessionId": "served-before-initialize"}
            return [self.encode({"jsonrpc": "2.0", "id": message.get("id"), "result": served})]
        return [line]


class _NestedExtraField(Rewriter):
    """Adds an undefined field inside agentInfo of the initialize result (a nested object:
    the top level stays clean)."""

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        result = message.get("result")
        if self.request_of(message)[0] == "initialize" and isinstance(result, dict):
            result = cast(Message, result)
            info = cast(Message, result.get("agentInfo") or {})
            changed = {**result, "agentInfo": {**info, "buildHash": "0123abcd"}}
            return [self.encode({**message, "result": changed})]
        return [line]


class _UpdateAfterCancel(Rewriter):
    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        method, params = self.request_of(message)
        session_id = params.get("sessionId")
        if method == "session/prompt" and session_id in self.cancelled:
            late = {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": session_id,
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "one last tick"},
                    },
                },
            }
            return [line, self.encode(late)]
        return [line]


def _is_cancelled_answer(rewriter: Rewriter, message: Message) -> str | None:
    """The session of a prompt answered ``cancelled`` after a session/cancel, if it is one."""
    method, params = rewriter.request_of(message)
    session_id = params.get("sessionId")
    result = message.get("result")
    if (
        method == "session/prompt"
        and isinstance(session_id, str)
        and session_id in rewriter.cancelled
        and isinstance(result, dict)
        and cast(Message, result).get("stopReason") == "cancelled"
    ):
        return session_id
    return None


def _late_update(session_id: str, update: Message) -> bytes:
    params = {"sessionId": session_id, "update": update}
    return Rewriter.encode({"jsonrpc": "2.0", "method": "session/update", "params": params})


class _SometimesLateAfterCancel(Rewriter):
    """A race that shows up one time in three: every third cancelled prompt of the process
    gets one more message chunk after its ``cancelled`` answer."""

    def __init__(self) -> None:
        super().__init__()
        self._answered = 0

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        session_id = _is_cancelled_answer(self, message)
        if session_id is None:
            return [line]
        self._answered += 1
        if self._answered % 3:
            return [line]
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "."}}
        return [line, _late_update(session_id, chunk)]


class _UsageAfterCancel(Rewriter):
    """Reports the context window's usage after answering a cancelled prompt."""

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        session_id = _is_cancelled_answer(self, message)
        if session_id is None:
            return [line]
        usage = {"sessionUpdate": "usage_update", "used": 1200, "size": 200000}
        return [line, _late_update(session_id, usage)]


class _CancelledLeftovers(Rewriter):
    """The turn after a cancelled one is answered with what the cancelled turn said: its
    first message chunk carries the cancelled turn's text instead of its own."""

    def __init__(self) -> None:
        super().__init__()
        self._said: dict[str, list[str]] = {}
        self._leftover: dict[str, str] = {}

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        params = cast(Message, message.get("params") or {})
        session_id = params.get("sessionId")
        if _update_kind(message) == "agent_message_chunk" and isinstance(session_id, str):
            update = cast(Message, params["update"])
            leftover = self._leftover.pop(session_id, None)
            if leftover is not None:
                content = {"type": "text", "text": leftover}
                return [_late_update(session_id, {**update, "content": content})]
            self._said.setdefault(session_id, []).append(
                str(cast(Message, update.get("content") or {}).get("text", ""))
            )
        elif _is_response(message) and self.request_of(message)[0] == "session/prompt":
            prompted = self.request_of(message)[1].get("sessionId")
            said = self._said.pop(str(prompted), [])
            if _is_cancelled_answer(self, message):
                self._leftover[str(prompted)] = "".join(said)
        return [line]


class _CancelOutlivesTurn(Rewriter):
    """The prompt after a cancelled turn is answered ``cancelled`` too (the cancel flag is
    never reset)."""

    def __init__(self) -> None:
        super().__init__()
        self._stale: set[str] = set()

    async def agent_message(self, message: Message, line: bytes) -> list[bytes]:
        method, params = self.request_of(message)
        result = message.get("result")
        if method != "session/prompt" or not isinstance(result, dict):
            return [line]
        session_id = str(params.get("sessionId"))
        if _is_cancelled_answer(self, message):
            self._stale.add(session_id)
        elif session_id in self._stale:
            self._stale.discard(session_id)
            wrong = {**cast(Message, result), "stopReason": "cancelled"}
            return [self.encode({**message, "result": wrong})]
        return [line]


# ---------------------------------------------------------------------------- agent level


def _keyword(text: str) -> str:
    words = text.split()
    return words[0].lower() if words else ""


def _chunk(text: str) -> SessionUpdate:
    return acp.AgentMessageChunkSessionUpdate(content=acp.TextContentBlock(text=text))


class _Mutant(ReferenceAgent):  # pyright: ignore[reportGeneralTypeIssues]
    """The reference agent, subclassed for the mutants (it is ``@final`` for everyone else)."""


class _NoAgentInfo(_Mutant):
    async def initialize(
        self, params: InitializeRequest, conn: ClientConnection
    ) -> InitializeResponse:
        response = await super().initialize(params, conn)
        return acp.InitializeResponse(
            protocol_version=response.protocol_version,
            agent_capabilities=response.agent_capabilities,
            auth_methods=response.auth_methods,
        )


class _DuplicateAuthIds(_Mutant):
    async def initialize(
        self, params: InitializeRequest, conn: ClientConnection
    ) -> InitializeResponse:
        response = await super().initialize(params, conn)
        response.auth_methods = [
            acp.AuthMethodAgent(id="token", name="Token"),
            acp.AuthMethodAgent(id="token", name="Token from the environment"),
        ]
        return response


class _FixedSessionId(_Mutant):
    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        self._check_cwd(params.cwd)
        mcp = await reference._connect_mcp(params.mcp_servers)
        session = reference._Session("reference-session", params.cwd, mcp=mcp)
        self.sessions[session.session_id] = session
        commands = [
            acp.AvailableCommand(name=name, description=description)
            for name, description in SCENARIOS.items()
        ]
        await conn.send_update(
            session.session_id,
            acp.AvailableCommandsUpdateSessionUpdate(available_commands=commands),
        )
        return acp.NewSessionResponse(
            session_id=session.session_id,
            modes=session.modes(),
            config_options=session.config_options(),
        )


class _RefusesMcp(_Mutant):
    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        if params.mcp_servers:
            raise RPCError.invalid_params({"mcpServers": "MCP servers are not supported"})
        return await super().new_session(params, conn)


class _IgnoresStdioMcp(_Mutant):
    """Accepts stdio MCP servers in session/new but never starts them (it logs so)."""

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        kept: list[acp.McpServer] = []
        for server in params.mcp_servers:
            if isinstance(server, acp.McpServerStdio):
                sys.stderr.write(f"rejecting non-http/sse MCP server {server.name!r}\n")
            else:
                kept.append(server)
        return await super().new_session(params.model_copy(update={"mcp_servers": kept}), conn)


class _FirstMcpServerOnly(_Mutant):
    """Connects to the first MCP server of session/new and ignores the others."""

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        first = params.mcp_servers[:1]
        return await super().new_session(params.model_copy(update={"mcp_servers": first}), conn)


class _DropsMcpEnv(_Mutant):
    """Starts stdio MCP servers without the env entries session/new gives them."""

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        servers = [
            server.model_copy(update={"env": []})
            if isinstance(server, acp.McpServerStdio)
            else server
            for server in params.mcp_servers
        ]
        return await super().new_session(params.model_copy(update={"mcp_servers": servers}), conn)


class _ForgetsSessionsOnExit(_Mutant):
    """Advertises loadSession but keeps sessions in memory only: a new process cannot load
    (or resume) them."""

    def __init__(self) -> None:
        super().__init__()
        self.session_dir = None


class _UnknownCurrentMode(_Mutant):
    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        response = await super().new_session(params, conn)
        assert response.modes is not None
        response.modes.current_mode_id = "default"
        return response


def _style_option() -> SessionConfigOption:
    return acp.SelectSessionConfigOption(
        id="style",
        name="Style",
        current_value="plain",
        options=[
            acp.SessionConfigSelectOption(value="plain", name="Plain"),
            acp.SessionConfigSelectOption(value="markdown", name="Markdown"),
        ],
    )


class _PartialConfigAnswer(_Mutant):
    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        response = await super().new_session(params, conn)
        response.config_options = [*(response.config_options or []), _style_option()]
        return response

    async def set_session_config_option(
        self, params: SetSessionConfigOptionRequest, conn: ClientConnection
    ) -> SetSessionConfigOptionResponse:
        # The reference answers its one option (verbosity): not the style option added above.
        return await super().set_session_config_option(params, conn)


def _toggle_option() -> SessionConfigOption:
    return acp.BooleanSessionConfigOption(
        id="autoApprove", name="Auto-approve", current_value=False
    )


class _BooleanOption(_Mutant):
    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        response = await super().new_session(params, conn)
        response.config_options = [*(response.config_options or []), _toggle_option()]
        return response

    async def set_session_config_option(
        self, params: SetSessionConfigOptionRequest, conn: ClientConnection
    ) -> SetSessionConfigOptionResponse:
        response = await super().set_session_config_option(params, conn)
        response.config_options = [*response.config_options, _toggle_option()]
        return response


class _LoadWithoutReplay(_Mutant):
    async def load_session(
        self, params: LoadSessionRequest, conn: ClientConnection
    ) -> LoadSessionResponse:
        self._check_cwd(params.cwd)
        session = self._session(params.session_id)
        return acp.LoadSessionResponse(
            modes=session.modes(), config_options=session.config_options()
        )


class _ResumeReplays(_Mutant):
    async def resume_session(
        self, params: ResumeSessionRequest, conn: ClientConnection
    ) -> ResumeSessionResponse:
        session = self._session(params.session_id)
        for role, text in session.history:
            block = acp.TextContentBlock(text=text)
            update: SessionUpdate = (
                acp.UserMessageChunkSessionUpdate(content=block)
                if role == "user"
                else acp.AgentMessageChunkSessionUpdate(content=block)
            )
            await conn.send_update(session.session_id, update)
        return await super().resume_session(params, conn)


class _ListIgnoresCwd(_Mutant):
    async def list_sessions(
        self, params: ListSessionsRequest, conn: ClientConnection
    ) -> ListSessionsResponse:
        return await super().list_sessions(params.model_copy(update={"cwd": None}), conn)


class _DeleteKeepsSession(_Mutant):
    async def delete_session(
        self, params: DeleteSessionRequest, conn: ClientConnection
    ) -> DeleteSessionResponse:
        return acp.DeleteSessionResponse()  # forgets to forget the session


class _MultiLineErrors(_Mutant):
    def _session(self, session_id: str) -> _Session:
        try:
            return super()._session(session_id)
        except RPCError as exc:
            raise RPCError(
                exc.code,
                f"Resource not found\n  session: {session_id}\n  known: {len(self.sessions)}",
            ) from exc


class _RefusesImages(_Mutant):
    async def prompt(self, params: PromptRequest, turn: AgentTurn) -> PromptResponse | StopReason:
        if any(block.type == "image" for block in params.prompt):
            raise RPCError.invalid_params({"prompt": "image content is not supported"})
        return await super().prompt(params, turn)


class _RefusesMeta(_Mutant):
    async def prompt(self, params: PromptRequest, turn: AgentTurn) -> PromptResponse | StopReason:
        if params.meta is not None:
            raise RPCError.invalid_params({"_meta": "unexpected field"})
        return await super().prompt(params, turn)


class _RelativeLocation(_Mutant):
    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        if _keyword(text) not in SCENARIOS:  # echo turns look at a file, named relatively
            await turn.send_update(
                acp.ToolCallSessionUpdate(
                    tool_call_id=self.next_tool_call_id(),
                    title="Look at the notes",
                    kind="read",
                    status="completed",
                    locations=[acp.ToolCallLocation(path="notes/reference.txt")],
                )
            )
        return await super()._prompt(session, text, turn)


class _WrongSessionUpdates(_Mutant):
    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        if _keyword(text) not in SCENARIOS:  # echo turns think aloud under a per-turn id
            thought = acp.TextContentBlock(text="Echoing.")
            await turn.connection.send_update(
                f"{session.session_id}-turn", acp.AgentThoughtChunkSessionUpdate(content=thought)
            )
        return await super()._prompt(session, text, turn)


class _UnofferedFs(_Mutant):
    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        conn = turn.connection
        if _keyword(text) != "fs" or conn.can_read_text_file:
            return await super()._prompt(session, text, turn)
        path = os.path.join(session.cwd, "reference-agent.txt")
        try:  # the raw request: the endpoint's own capability check is bypassed
            await conn.request("fs/read_text_file", {"sessionId": session.session_id, "path": path})
        except RPCError as exc:
            await turn.send_update(_chunk(f"Reading {path} failed: {exc.message}"))
        return "end_turn"


class _UnofferedTerminal(_Mutant):
    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        conn = turn.connection
        if _keyword(text) != "terminal" or conn.can_use_terminal:
            return await super()._prompt(session, text, turn)
        params: JsonValue = {
            "sessionId": session.session_id,
            "command": "echo",
            "args": ["hello from the reference agent"],
            "cwd": session.cwd,
        }
        try:
            await conn.request("terminal/create", params)
        except RPCError as exc:
            await turn.send_update(_chunk(f"No terminal: {exc.message}"))
        return "end_turn"


class _UnofferedElicitation(_Mutant):
    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        conn = turn.connection
        if _keyword(text) != "elicit":
            return await super()._prompt(session, text, turn)
        params: JsonValue = {  # whether the client offers elicitation or not
            "sessionId": session.session_id,
            "mode": "form",
            "message": "Paste the content of reference-agent.txt",
            "requestedSchema": {"type": "object", "properties": {"content": {"type": "string"}}},
        }
        try:
            await conn.request("elicitation/create", params)
        except RPCError as exc:
            await turn.send_update(_chunk(f"No answer: {exc.message}"))
        return "end_turn"


class _KeepsTerminal(_Mutant):
    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        if _keyword(text) != "terminal" or not turn.connection.can_use_terminal:
            return await super()._prompt(session, text, turn)
        terminal = await turn.create_terminal(
            "echo", args=["hello from the reference agent"], cwd=session.cwd
        )
        exit_status = await terminal.wait_for_exit()
        output = await terminal.output()  # ... and never terminal/release
        await turn.send_update(
            _chunk(f"The terminal printed {output.output!r} (exit code {exit_status.exit_code}).")
        )
        return "end_turn"


class _PartialPlans(_Mutant):
    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        if _keyword(text) != "plan":
            return await super()._prompt(session, text, turn)
        for step in ("Read the prompt", "Think about it", "Answer"):  # only the entry that moved
            entry = acp.PlanEntry(content=step, priority="medium", status="in_progress")
            await turn.send_update(acp.PlanSessionUpdate(entries=[entry]))
        await turn.send_update(_chunk("The plan is complete."))
        return "end_turn"


class _RejectionIsAnError(_Mutant):
    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        if _keyword(text) != "tool":
            return await super()._prompt(session, text, turn)
        tool_call_id = self.next_tool_call_id()
        await turn.send_update(
            acp.ToolCallSessionUpdate(
                tool_call_id=tool_call_id, title="Run the reference tool", status="pending"
            )
        )
        options = [
            acp.PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
            acp.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        answer = await turn.request_permission(
            acp.ToolCallUpdate(tool_call_id=tool_call_id), options
        )
        outcome = answer.outcome
        if isinstance(outcome, acp.CancelledRequestPermissionOutcome):
            return "cancelled"
        if outcome.option_id != "allow":
            raise RPCError.internal_error({"reason": "the user rejected the tool call"})
        update = acp.ToolCallUpdateSessionUpdate(tool_call_id=tool_call_id, status="completed")
        await turn.send_update(update)
        await turn.send_update(_chunk("The tool ran."))
        return "end_turn"


class _TerminalAuthMethod(_Mutant):
    async def initialize(
        self, params: InitializeRequest, conn: ClientConnection
    ) -> InitializeResponse:
        response = await super().initialize(params, conn)
        response.auth_methods = [acp.TerminalAuthMethod(id="login", name="Log in in a terminal")]
        return response


class _LogoutFails(_Mutant):
    async def logout(self, params: LogoutRequest, conn: ClientConnection) -> LogoutResponse:
        raise RPCError.internal_error({"reason": "no credentials store"})


class _RefusesAdditionalDirectories(_Mutant):
    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        if params.additional_directories:
            raise RPCError.invalid_params({"additionalDirectories": "not supported"})
        return await super().new_session(params, conn)


class _RefusesRemoteMcp(_Mutant):
    """Advertises HTTP and SSE MCP servers (as the reference does) but refuses ``kind``."""

    kind = "http"

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        if any(getattr(server, "type", "stdio") == self.kind for server in params.mcp_servers):
            raise RPCError.invalid_params({"mcpServers": f"{self.kind} servers are not supported"})
        return await super().new_session(params, conn)


class _RefusesSseMcp(_RefusesRemoteMcp):
    kind = "sse"


class _AbandonsMcpServers(_Mutant):
    """Starts each stdio MCP server a second time, detached (its own session) and never
    stopped: a server that outlives its stdin survives the agent."""

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        import subprocess

        for server in params.mcp_servers:
            if isinstance(server, acp.McpServerStdio):
                _ABANDONED.append(
                    subprocess.Popen(  # noqa: ASYNC220 - the defect: started, never awaited
                        [server.command, *server.args],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        start_new_session=True,
                        # With the entry's env, as it should (one defect only: ACP-MCP-005).
                        env={**os.environ, **{item.name: item.value for item in server.env}},
                    )
                )
        return await super().new_session(params, conn)


_ABANDONED: list[Any] = []


class _LoadsUnknownSessions(_Mutant):
    async def load_session(
        self, params: LoadSessionRequest, conn: ClientConnection
    ) -> LoadSessionResponse:
        if params.session_id not in self.sessions:
            return acp.LoadSessionResponse()
        return await super().load_session(params, conn)


class _SilentExtensions(_Mutant):
    async def ext_request(self, method: str, params: JsonValue, conn: ClientConnection) -> object:
        await anyio.sleep_forever()  # never answered


# -------------------------------------------------------------------------- process level


_STRAGGLERS: list[Any] = []


def _start_straggler() -> None:
    """A helper process in the agent's process group that outlives the agent (not 8 s)."""
    import subprocess

    devnull = subprocess.DEVNULL
    _STRAGGLERS.append(
        subprocess.Popen(["sleep", "8"], stdin=devnull, stdout=devnull, stderr=devnull)
    )


def _linger() -> None:
    """Keep running after stdin EOF (a non-daemon worker, say) — but not forever."""
    time.sleep(7)


# ---------------------------------------------------------------------------------- table


@dataclass(frozen=True)
class Mutant:
    """One defect of the reference agent, and how the suite should report it."""

    target: str
    """The requirement id whose check must fail."""
    defect: str
    """What is wrong, in one line."""
    expect: str
    """A substring of the target check's failure message."""
    agent: Callable[[], Agent] = ReferenceAgent
    wire: Callable[[], Rewriter] | None = None
    before: Callable[[], None] | None = None
    """Run before serving (process-level defects)."""
    after: Callable[[], None] | None = None
    """Run after stdin ended and the endpoint returned."""
    options: tuple[str, ...] = ()
    """Extra ``subagents conformance`` options its run needs (to open the target's gate)."""


MUTANTS: dict[str, Mutant] = {
    "stray-log-line": Mutant(
        "ACP-TRANSPORT-001",
        "writes a plain-text log line to stdout after the initialize answer",
        "not JSON-RPC messages",
        wire=_StrayLogLine,
    ),
    "latin1-line": Mutant(
        "ACP-TRANSPORT-002",
        "writes a log notification encoded in Latin-1 (not UTF-8) to stdout",
        "not valid UTF-8",
        wire=_Latin1Line,
    ),
    "pretty-printed-update": Mutant(
        "ACP-TRANSPORT-003",
        "pretty-prints (indents) its available_commands_update notifications",
        "spread over several lines",
        wire=_PrettyCommands,
    ),
    "string-id-renumbered": Mutant(
        "ACP-JSONRPC-001",
        "answers requests with string ids using its own integer id",
        "was answered with id 1000001",
        wire=_RenumberStringIds,
    ),
    "error-with-result": Mutant(
        "ACP-JSONRPC-002",
        'invalid-params errors to session/prompt carry "result": null as well as "error"',
        'exactly one of "result" and "error"',
        wire=_PromptErrorWithResult,
    ),
    "answers-notifications": Mutant(
        "ACP-JSONRPC-003",
        'answers every notification with {"id": null, "result": null}',
        "answered notification",
        wire=_AnswerNotifications,
    ),
    "unknown-method-internal-error": Mutant(
        "ACP-JSONRPC-004",
        "reports an unknown method as -32603 (internal error), not -32601",
        "not -32601",
        wire=_UnknownMethodInternalError,
    ),
    "float-protocol-version": Mutant(
        "ACP-INIT-001",
        "writes the negotiated protocolVersion 1 as the JSON number 1.0",
        "1.0",
        wire=lambda: _InitVersion(lambda requested: 1.0 if requested == 1 else None),
    ),
    "answers-version-2": Mutant(
        "ACP-INIT-002",
        "answers protocol version 2 when the client asks for 1",
        "the agent answered 2",
        wire=lambda: _InitVersion(lambda requested: 2 if requested == 1 else None),
    ),
    "echoes-version": Mutant(
        "ACP-INIT-003",
        "echoes whatever protocol version the client requests",
        "echoed the unsupported protocol version 65535",
        wire=lambda: _InitVersion(lambda requested: requested),
    ),
    "no-agent-info": Mutant(
        "ACP-INIT-004",
        "leaves agentInfo out of the initialize result",
        "no agentInfo",
        agent=_NoAgentInfo,
    ),
    "content-without-type": Mutant(
        "ACP-SCHEMA-001",
        'agent_message_chunk content blocks lack their "type"',
        "schema violations",
        wire=_ContentWithoutType,
    ),
    "extra-result-field": Mutant(
        "ACP-SCHEMA-002",
        "the session/new result carries an undefined debugInfo field",
        "debugInfo",
        wire=_ExtraResultField,
    ),
    "fixed-session-id": Mutant(
        "ACP-SESSION-002",
        "every session/new returns the same session id",
        "both returned the session id 'reference-session'",
        agent=_FixedSessionId,
    ),
    "relative-location": Mutant(
        "ACP-PATHS-001",
        "echo turns report a tool call whose location is a relative path",
        "notes/reference.txt",
        agent=_RelativeLocation,
    ),
    "refuses-mcp": Mutant(
        "ACP-MCP-001",
        "session/new with any MCP server is an invalid-params error",
        "with a stdio MCP server failed",
        agent=_RefusesMcp,
    ),
    "ignores-stdio-mcp": Mutant(
        "ACP-MCP-001",
        "accepts a stdio MCP server in session/new but never starts it (logs 'rejecting ...')",
        "but never started it",
        agent=_IgnoresStdioMcp,
    ),
    "first-mcp-server-only": Mutant(
        "ACP-MCP-002",
        "connects to the first MCP server given in session/new and ignores the others",
        "but never sent conformance-probe-b an MCP initialize",
        agent=_FirstMcpServerOnly,
    ),
    "drops-mcp-env": Mutant(
        "ACP-MCP-005",
        "starts stdio MCP servers without the env entries given in session/new",
        "was started without the env entry SUBAGENTS_CONFORMANCE_PROBE_TOKEN",
        agent=_DropsMcpEnv,
    ),
    "update-before-session-new": Mutant(
        "ACP-SESSION-003",
        "sends an available_commands_update for a new session before the session/new response",
        "arrived before the session/new response that creates it",
        wire=_UpdateBeforeSessionNew,
    ),
    "serves-before-initialize": Mutant(
        "ACP-INIT-005",
        "answers session/new sent before initialize with a session",
        "sent before initialize was served",
        wire=_ServesBeforeInitialize,
    ),
    "nested-extra-field": Mutant(
        "ACP-SCHEMA-002",
        "the initialize result's agentInfo carries an undefined buildHash field",
        "initialize result/agentInfo: fields not in Implementation: buildHash",
        wire=_NestedExtraField,
    ),
    "forgets-sessions-on-exit": Mutant(
        "ACP-LOAD-001",
        "advertises loadSession but keeps sessions in memory only (a new process cannot load them)",
        "in a new agent process, after the one that made it (with a prompt turn) exited, failed",
        agent=_ForgetsSessionsOnExit,
    ),
    "load-without-replay": Mutant(
        "ACP-LOAD-002",
        "session/load answers without replaying the conversation",
        "did not replay the user's earlier prompt",
        agent=_LoadWithoutReplay,
    ),
    "resume-replays": Mutant(
        "ACP-RESUME-002",
        "session/resume replays the conversation like session/load",
        "session/resume replayed",
        agent=_ResumeReplays,
    ),
    "list-ignores-cwd": Mutant(
        "ACP-LIST-002",
        "session/list ignores its cwd filter",
        "not []",
        agent=_ListIgnoresCwd,
    ),
    "delete-keeps-session": Mutant(
        "ACP-DELETE-001",
        "session/delete answers success but keeps the session (still listed)",
        "still listed after session/delete",
        agent=_DeleteKeepsSession,
    ),
    "close-ends-turn": Mutant(
        "ACP-CLOSE-002",
        "a prompt interrupted by session/close is answered end_turn (session/cancel is right)",
        "when session/close was sent, yet it was answered",
        wire=lambda: _InterruptedTurnEnds("session/close"),
    ),
    "close-drops-turn": Mutant(
        "ACP-CLOSE-002",
        "a prompt interrupted by session/close is never answered (the close is)",
        "still unanswered 5 s after session/close was answered",
        wire=_ClosedTurnUnanswered,
    ),
    "wrong-session-updates": Mutant(
        "ACP-PROMPT-002",
        "echo turns send a thought chunk under a per-turn id, not the session id",
        "-turn', not the prompted",
        agent=_WrongSessionUpdates,
    ),
    "refuses-images": Mutant(
        "ACP-PROMPTCAP-001",
        "advertises image prompts but refuses a prompt with an image block",
        "a prompt with an image block was refused",
        agent=_RefusesImages,
    ),
    "refuses-meta": Mutant(
        "ACP-META-001",
        "refuses a session/prompt that carries _meta",
        "a prompt carrying _meta was refused",
        agent=_RefusesMeta,
    ),
    "cancel-ends-turn": Mutant(
        "ACP-CANCEL-001",
        "a prompt interrupted by session/cancel is answered end_turn (session/close is right)",
        "when session/cancel was sent, yet it was answered",
        wire=lambda: _InterruptedTurnEnds("session/cancel"),
    ),
    "update-after-cancel": Mutant(
        "ACP-CANCEL-002",
        "sends one more message chunk after answering a cancelled prompt",
        "arrived after the prompt's response",
        wire=_UpdateAfterCancel,
    ),
    "sometimes-late-after-cancel": Mutant(
        "ACP-CANCEL-002",
        "every third cancelled prompt gets one more message chunk after its answer (a race)",
        "arrived after the prompt's response in 2 of 6 round(s) (3, 6)",
        wire=_SometimesLateAfterCancel,
    ),
    "usage-after-cancel": Mutant(
        "ACP-CANCEL-002",
        "sends a usage_update after answering a cancelled prompt",
        "usage_update",
        wire=_UsageAfterCancel,
    ),
    "cancel-outlives-turn": Mutant(
        "ACP-CANCEL-003",
        "the prompt after a cancelled turn is answered cancelled too",
        'never cancelled, was answered stopReason "cancelled"',
        wire=_CancelOutlivesTurn,
    ),
    "cancelled-leftovers": Mutant(
        "ACP-CANCEL-004",
        "the turn after a cancelled one is answered with the cancelled turn's text",
        "carries the cancelled turn's content",
        wire=_CancelledLeftovers,
    ),
    "unoffered-fs": Mutant(
        "ACP-CLIENTCAP-001",
        "the fs scenario calls fs/read_text_file although the client offers no file system",
        "called fs/read_text_file",
        agent=_UnofferedFs,
    ),
    "unoffered-terminal": Mutant(
        "ACP-CLIENTCAP-002",
        "the terminal scenario calls terminal/create although the client offers no terminal",
        "called terminal/create",
        agent=_UnofferedTerminal,
    ),
    "unoffered-elicitation": Mutant(
        "ACP-CLIENTCAP-003",
        "the elicit scenario sends elicitation/create although the client offers none",
        "called elicitation/create",
        agent=_UnofferedElicitation,
    ),
    "keeps-terminal": Mutant(
        "ACP-TERMINAL-001",
        "the terminal scenario never calls terminal/release",
        "never released with terminal/release",
        agent=_KeepsTerminal,
    ),
    "partial-plans": Mutant(
        "ACP-PLAN-001",
        "plan updates carry only the entry that changed",
        "plan update 2 of the turn drops",
        agent=_PartialPlans,
    ),
    "rejection-is-an-error": Mutant(
        "ACP-PERMISSION-001",
        "a rejected permission ends the turn with a JSON-RPC error",
        "after a rejected permission the prompt failed",
        agent=_RejectionIsAnError,
    ),
    "unknown-current-mode": Mutant(
        "ACP-MODES-001",
        "session/new's currentModeId is not among its availableModes",
        "currentModeId 'default' is not one of the available modes",
        agent=_UnknownCurrentMode,
    ),
    "partial-config-answer": Mutant(
        "ACP-CONFIG-002",
        "session/set_config_option answers only the option set, not all of them",
        "left out option(s) style",
        agent=_PartialConfigAnswer,
    ),
    "boolean-option": Mutant(
        "ACP-CONFIG-003",
        "session/new offers a boolean config option the client did not ask for",
        "autoApprove have type boolean",
        agent=_BooleanOption,
    ),
    "silent-extensions": Mutant(
        "ACP-EXT-001",
        "_-prefixed requests are never answered",
        "_conformance/ping: no answer",
        agent=_SilentExtensions,
    ),
    "custom-methods-succeed": Mutant(
        "ACP-JSONRPC-004",
        "answers unknown _-prefixed requests with an empty result, not -32601",
        "_conformance/no-such-method was answered with result",
        wire=_CustomMethodsSucceed,
    ),
    "invalid-update-on-cancel": Mutant(
        "ACP-SCHEMA-001",
        "sends a tool_call_update with an unknown status before answering a cancelled prompt",
        "schema violation in the exchanges of other checks",
        wire=_InvalidUpdateOnCancel,
    ),
    "load-answers-null": Mutant(
        "ACP-LOAD-003",
        "answers session/load with a null result",
        "not an object",
        wire=_LoadAnswersNull,
    ),
    "abandons-mcp-servers": Mutant(
        "ACP-SHUTDOWN-003",
        "starts each stdio MCP server detached and never stops it",
        "were still running 5 s after the agent exited",
        agent=_AbandonsMcpServers,
    ),
    "loads-unknown-sessions": Mutant(
        "ACP-LOAD-004",
        "session/load of a session id it never issued succeeds",
        "never existed succeeded",
        agent=_LoadsUnknownSessions,
    ),
    "refuses-additional-directories": Mutant(
        "ACP-ADDDIRS-001",
        "advertises additionalDirectories but refuses session/new when they are given",
        "session/new failed",
        agent=_RefusesAdditionalDirectories,
    ),
    "refuses-http-mcp": Mutant(
        "ACP-MCP-003",
        "advertises HTTP MCP servers but refuses session/new with one",
        "with an http MCP server failed",
        agent=_RefusesRemoteMcp,
    ),
    "refuses-sse-mcp": Mutant(
        "ACP-MCP-004",
        "advertises SSE MCP servers but refuses session/new with one",
        "with an sse MCP server failed",
        agent=_RefusesSseMcp,
    ),
    "terminal-auth-method": Mutant(
        "ACP-AUTH-002",
        "advertises a terminal auth method to a client that did not enable terminal auth",
        "of type terminal advertised",
        agent=_TerminalAuthMethod,
    ),
    "logout-fails": Mutant(
        "ACP-AUTH-004",
        "advertises logout but answers it with an internal error",
        "logout failed",
        agent=_LogoutFails,
        options=("--allow-logout",),
    ),
    "duplicate-auth-ids": Mutant(
        "ACP-AUTH-001",
        "advertises two auth methods with the same id",
        "repeat the id(s) token",
        agent=_DuplicateAuthIds,
    ),
    "multi-line-errors": Mutant(
        "ACP-ERROR-001",
        "unknown-session errors have a multi-line message",
        "an error message spans several lines",
        agent=_MultiLineErrors,
    ),
    "ignores-eof": Mutant(
        "ACP-SHUTDOWN-001",
        "keeps running 7 s after stdin is closed",
        "still running 5 s after its stdin was closed",
        after=_linger,
    ),
    "leaves-straggler": Mutant(
        "ACP-SHUTDOWN-002",
        "leaves a helper process (sleep 8) of its process group running after it exits",
        "of its group were still running",
        before=_start_straggler,
    ),
}
"""Mutant name -> defect."""


async def _serve(mutant: Mutant) -> None:
    agent = mutant.agent()
    async with open_stdio_streams() as (receive, send):
        if mutant.wire is not None:
            receive, send = mutant.wire().wrap(receive, send)
        await serve_agent_over(receive, send, agent)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in MUTANTS:
        sys.stderr.write(f"usage: mutant_agent.py NAME (one of {', '.join(MUTANTS)})\n")
        return 2
    mutant = MUTANTS[argv[1]]
    if mutant.before is not None:
        mutant.before()
    anyio.run(_serve, mutant)
    if mutant.after is not None:
        mutant.after()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
