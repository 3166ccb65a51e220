"""The agent's side of one ACP connection: what the client offered, and the agent's calls to
it (:class:`ClientConnection`, :class:`AgentTurn`, :class:`TerminalHandle`); re-exported by
:mod:`subagents.transports.acp_agent`."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final, cast, final

import anyio

from ..protocol import acp
from ..protocol.jsonrpc import JsonValue
from ..rpc import Peer

if TYPE_CHECKING:
    from ..protocol.acp import (
        ClientCapabilities,
        CreateElicitationRequest,
        CreateElicitationResponse,
        Implementation,
        PermissionOption,
        RequestPermissionResponse,
        SessionUpdate,
        TerminalOutputResponse,
        ToolCallUpdate,
        WaitForTerminalExitResponse,
    )
    from .acp_agent import Agent

__all__ = (
    "AGENT_PROTOCOL_VERSIONS",
    "CLEANUP_WRITE_TIMEOUT",
    "UPDATE",
    "AgentTurn",
    "ClientCapabilityError",
    "ClientConnection",
    "ClientLink",
    "TerminalHandle",
    "TurnControl",
    "negotiate_protocol_version",
)

logger = logging.getLogger("subagents.acp.agent")

AGENT_PROTOCOL_VERSIONS: Final[tuple[int, ...]] = (1,)
"""The ACP protocol versions this endpoint speaks (it implements v1 semantics only)."""

UPDATE: Final = "session/update"
CLEANUP_WRITE_TIMEOUT: Final = 5.0
"""How long an update sent by a cancelled turn (cleanup) may wait for the pipe."""


def negotiate_protocol_version(
    requested: int, supported: Sequence[int] = AGENT_PROTOCOL_VERSIONS
) -> int:
    """The version to answer ``initialize`` with (initialization.mdx, version negotiation).

    "If the Agent supports the requested version, it MUST respond with the same version.
    Otherwise, the Agent MUST respond with the latest version it supports."
    """
    if requested in supported:
        return requested
    return max(supported)


class ClientCapabilityError(RuntimeError):
    """The client did not advertise the capability a call needs; nothing was sent.

    The spec forbids calling a client method the client has not offered (for example
    file-system.mdx: "If ``readTextFile`` ... is ``false`` or not present, the Agent MUST NOT
    attempt to call the corresponding filesystem method").
    """

    def __init__(self, method: str, capability: str) -> None:
        super().__init__(
            f"the client did not advertise {capability}, so {method!r} may not be called"
        )
        self.method = method
        self.capability = capability


@final
class ClientLink:
    """What the serving side shares with a :class:`ClientConnection`: the peer (once it exists)
    and the state that orders a new session's updates after its ``session/new`` answer."""

    __slots__ = ("creating", "held", "peer", "peer_ready", "published")

    def __init__(self) -> None:
        self.peer: Peer | None = None
        self.peer_ready = anyio.Event()
        self.creating = 0
        """``session/new`` requests being handled."""
        self.published: set[str] = set()
        """Sessions the client knows (their updates go out at once)."""
        self.held: dict[str, list[JsonValue]] = {}
        """Updates held until their session's ``session/new`` answer is written."""

    async def get_peer(self) -> Peer:
        peer = self.peer
        if peer is None:
            await self.peer_ready.wait()
            peer = self.peer
            assert peer is not None
        return peer


@final
class TurnControl:
    """A prompt turn's cancellation, driven by the serving side, read by its :class:`AgentTurn`."""

    __slots__ = ("cancel_requested", "cancelled", "done", "scope")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.cancel_requested = False
        self.cancelled = anyio.Event()
        self.done = anyio.Event()

    def mark_cancelled(self) -> None:
        self.cancel_requested = True
        self.cancelled.set()

    def request_cancel(self) -> None:
        self.mark_cancelled()
        self.scope.cancel()


@final
class TerminalHandle:
    """A terminal created on the client (``terminal/*``); release it when done.

    The spec says the agent MUST call ``terminal/release`` when it no longer needs the
    terminal; :meth:`ClientConnection.open_terminal` does that on exit.
    """

    def __init__(self, conn: ClientConnection, session_id: str, terminal_id: str) -> None:
        self.connection = conn
        self.session_id = session_id
        self.terminal_id = terminal_id
        self.released = False

    def _params(self) -> dict[str, JsonValue]:
        return {"sessionId": self.session_id, "terminalId": self.terminal_id}

    async def output(self) -> TerminalOutputResponse:
        """The output so far (``terminal/output``)."""
        result = await self.connection.request("terminal/output", self._params())
        return acp.from_wire(acp.TerminalOutputResponse, result)

    async def wait_for_exit(self) -> WaitForTerminalExitResponse:
        """Wait until the command exits (``terminal/wait_for_exit``)."""
        result = await self.connection.request("terminal/wait_for_exit", self._params())
        return acp.from_wire(acp.WaitForTerminalExitResponse, result)

    async def kill(self) -> None:
        """Kill the command; the terminal stays valid (``terminal/kill``)."""
        await self.connection.request("terminal/kill", self._params())

    async def release(self) -> None:
        """Release the terminal (``terminal/release``); idempotent."""
        if not self.released:
            self.released = True
            await self.connection.request("terminal/release", self._params())


def _absolute(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise ValueError(f"ACP paths must be absolute: {text!r}")
    return text


@final
class ClientConnection:
    """The agent's side of one connection: what the client advertised, and calls to it.

    Made by the endpoint and passed to every :class:`Agent` method. Calls that need a client
    capability raise :class:`ClientCapabilityError` (without sending anything) when the client
    did not advertise it; errors the client answers with raise
    :class:`~subagents.rpc.RPCError`; a closed connection raises
    :class:`~subagents.rpc.ConnectionClosedError`.
    """

    def __init__(self, agent: Agent, link: ClientLink | None = None) -> None:
        self.agent = agent
        self.protocol_version: int = max(AGENT_PROTOCOL_VERSIONS)
        """The negotiated protocol version (set by ``initialize``)."""
        self.client_capabilities: ClientCapabilities | None = None
        """What the client advertised in ``initialize`` (``None`` before it)."""
        self.client_info: Implementation | None = None
        """``clientInfo`` from ``initialize``, when the client sent it."""
        self.initialized = False
        self._link = link if link is not None else ClientLink()

    # ------------------------------------------------------------------ client capabilities

    def _caps(self) -> ClientCapabilities:
        caps = self.client_capabilities
        return caps if caps is not None else acp.ClientCapabilities()

    @property
    def can_read_text_file(self) -> bool:
        """Whether the client offers ``fs/read_text_file``."""
        return self._caps().fs.read_text_file

    @property
    def can_write_text_file(self) -> bool:
        """Whether the client offers ``fs/write_text_file``."""
        return self._caps().fs.write_text_file

    @property
    def can_use_terminal(self) -> bool:
        """Whether the client offers the ``terminal/*`` methods."""
        return self._caps().terminal

    # ------------------------------------------------------------------ sending

    async def _get_peer(self) -> Peer:
        return await self._link.get_peer()

    async def request(self, method: str, params: JsonValue = None) -> JsonValue:
        """Send any request to the client (for ``_`` extension methods) and return its result."""
        peer = await self._get_peer()
        return await peer.request(method, params)

    async def notify(self, method: str, params: JsonValue = None) -> None:
        """Send any notification to the client (for ``_`` extension methods)."""
        peer = await self._get_peer()
        await peer.notify(method, params)

    async def send_update(self, session_id: str, update: SessionUpdate) -> None:
        """Send a ``session/update`` notification.

        Updates for a session whose ``session/new`` response has not been written yet are held
        and written right after it.
        """
        params = acp.to_wire(acp.SessionNotification(session_id=session_id, update=update))
        link = self._link
        if session_id not in link.published and (link.creating > 0 or session_id in link.held):
            link.held.setdefault(session_id, []).append(params)
            return
        peer = await self._get_peer()
        await peer.notify(UPDATE, params)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: Sequence[PermissionOption],
    ) -> RequestPermissionResponse:
        """Ask the user for permission (``session/request_permission``; baseline, no gate)."""
        params = acp.RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=list(options)
        )
        result = await self.request("session/request_permission", acp.to_wire(params))
        return acp.from_wire(acp.RequestPermissionResponse, result)

    async def read_text_file(
        self,
        session_id: str,
        path: str | os.PathLike[str],
        *,
        line: int | None = None,
        limit: int | None = None,
    ) -> str:
        """Read a text file through the client (``fs/read_text_file``; ``line`` is 1-based)."""
        if not self.can_read_text_file:
            raise ClientCapabilityError("fs/read_text_file", "fs.readTextFile")
        params: dict[str, JsonValue] = {"sessionId": session_id, "path": _absolute(path)}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        result = await self.request("fs/read_text_file", params)
        return acp.from_wire(acp.ReadTextFileResponse, result).content

    async def write_text_file(
        self, session_id: str, path: str | os.PathLike[str], content: str
    ) -> None:
        """Write a text file through the client (``fs/write_text_file``)."""
        if not self.can_write_text_file:
            raise ClientCapabilityError("fs/write_text_file", "fs.writeTextFile")
        params: dict[str, JsonValue] = {
            "sessionId": session_id,
            "path": _absolute(path),
            "content": content,
        }
        await self.request("fs/write_text_file", params)

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """Start a command in a client terminal (``terminal/create``); release it when done."""
        if not self.can_use_terminal:
            raise ClientCapabilityError("terminal/create", "terminal")
        params: dict[str, JsonValue] = {"sessionId": session_id, "command": command}
        if args:
            params["args"] = list(args)
        if env:
            params["env"] = [{"name": k, "value": v} for k, v in env.items()]
        if cwd is not None:
            params["cwd"] = _absolute(cwd)
        if output_byte_limit is not None:
            params["outputByteLimit"] = output_byte_limit
        result = await self.request("terminal/create", params)
        terminal_id = acp.from_wire(acp.CreateTerminalResponse, result).terminal_id
        return TerminalHandle(self, session_id, terminal_id)

    @asynccontextmanager
    async def open_terminal(
        self,
        session_id: str,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        output_byte_limit: int | None = None,
    ) -> AsyncGenerator[TerminalHandle, None]:
        """:meth:`create_terminal`, released on exit (shielded, bounded), even when cancelled."""
        terminal = await self.create_terminal(
            session_id,
            command,
            args=args,
            env=env,
            cwd=cwd,
            output_byte_limit=output_byte_limit,
        )
        try:
            yield terminal
        finally:
            with anyio.move_on_after(CLEANUP_WRITE_TIMEOUT, shield=True):
                try:
                    await terminal.release()
                except Exception:
                    logger.warning("terminal/release failed", exc_info=True)

    async def create_elicitation(
        self, params: CreateElicitationRequest
    ) -> CreateElicitationResponse:
        """Ask the user for input (``elicitation/create``), in a mode the client advertised."""
        elicitation = self._caps().elicitation
        mode = getattr(params, "mode", None)
        if elicitation is None:
            raise ClientCapabilityError("elicitation/create", "elicitation")
        if mode == "form" and elicitation.form is None:
            raise ClientCapabilityError("elicitation/create", "elicitation.form")
        if mode == "url" and elicitation.url is None:
            raise ClientCapabilityError("elicitation/create", "elicitation.url")
        result = await self.request("elicitation/create", acp.to_wire(params))
        return cast(
            "CreateElicitationResponse", acp.from_wire(acp.CreateElicitationResponse, result)
        )


@final
class AgentTurn:
    """One prompt turn of one session: its updates, its calls to the client, its cancellation.

    The client-call methods are those of :class:`ClientConnection`, bound to this session.
    """

    def __init__(
        self, conn: ClientConnection, session_id: str, control: TurnControl | None = None
    ) -> None:
        self.connection = conn
        self.session_id = session_id
        self._control = control if control is not None else TurnControl()

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled this turn (or the connection is closing)."""
        return self._control.cancel_requested

    async def wait_cancelled(self) -> None:
        """Wait until the turn is cancelled."""
        await self._control.cancelled.wait()

    async def send_update(self, update: SessionUpdate) -> None:
        """Send a ``session/update`` for this session.

        Works in clean-up code of a cancelled turn too: the write is shielded from the
        cancellation (bounded), so the update goes out before the turn's answer.
        """
        if self._control.cancel_requested:
            with anyio.move_on_after(CLEANUP_WRITE_TIMEOUT, shield=True):
                await self.connection.send_update(self.session_id, update)
        else:
            await self.connection.send_update(self.session_id, update)

    async def request_permission(
        self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> RequestPermissionResponse:
        """Ask the user for permission for ``tool_call`` (``session/request_permission``)."""
        return await self.connection.request_permission(self.session_id, tool_call, options)

    async def read_text_file(
        self, path: str | os.PathLike[str], *, line: int | None = None, limit: int | None = None
    ) -> str:
        """``fs/read_text_file`` (needs the client's ``fs.readTextFile``)."""
        return await self.connection.read_text_file(self.session_id, path, line=line, limit=limit)

    async def write_text_file(self, path: str | os.PathLike[str], content: str) -> None:
        """``fs/write_text_file`` (needs the client's ``fs.writeTextFile``)."""
        await self.connection.write_text_file(self.session_id, path, content)

    async def create_terminal(
        self,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """``terminal/create`` (needs the client's ``terminal``); release the handle when done."""
        return await self.connection.create_terminal(
            self.session_id,
            command,
            args=args,
            env=env,
            cwd=cwd,
            output_byte_limit=output_byte_limit,
        )

    @asynccontextmanager
    async def open_terminal(
        self,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        output_byte_limit: int | None = None,
    ) -> AsyncGenerator[TerminalHandle, None]:
        """``async with turn.open_terminal(...) as terminal``: released on exit."""
        async with self.connection.open_terminal(
            self.session_id,
            command,
            args=args,
            env=env,
            cwd=cwd,
            output_byte_limit=output_byte_limit,
        ) as terminal:
            yield terminal
