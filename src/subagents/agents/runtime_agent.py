"""The in-process runtime as an ACP agent (``subagents serve``).

Each ACP session is a root session of an :class:`~subagents.harness.runtime.AgentRuntime`;
its agents delegate to in-process children through the ``subagent`` tool (spawn by default,
or fork). A prompt is one turn of the agent loop:

- the prompt's blocks become the user message (text as is; other blocks described, never
  decoded: ``[resource_link NAME URI]``, an embedded resource's text, ``[image MIME]``);
- streamed model text -> ``agent_message_chunk``; each tool call -> ``tool_call``
  (``in_progress``, its arguments as ``rawInput``), its result -> ``tool_call_update``
  (``completed`` or ``failed``, with the result text, an excerpt);
- a delegation's child streams into its tool call: while the child runs, the text it has
  streamed so far is the delegation's ``tool_call_update`` content (``in_progress``; the
  last :data:`CHILD_TEXT_LIMIT` characters). Bounded: a slow client gets fewer, larger
  updates (at most one of each delegation waits to be sent, carrying the text as it stands
  when it goes), and the child never waits for the client;
- ``session/cancel`` fires the turn's signal: the model call or tool stops and the answer is
  ``stopReason: "cancelled"``, after every update of the turn was sent;
- the turn's end: ``end_turn``; the step limit: ``max_turn_requests``; a model failure: a
  JSON-RPC error (``-32603``) carrying the adapter's message.

Sessions: ``session/load`` (replays the conversation's user and agent text, then answers)
and ``session/resume`` work for every session of the runtime's store: with a sessions
directory, across processes. ``session/close`` cancels a running turn.

MCP servers (stdio, http and sse are advertised): the servers given in ``session/new``,
``session/load`` or ``session/resume`` are connected before the answer (concurrently, each
bounded by :data:`MCP_CONNECT_TIMEOUT`) and stay connected while the session is open; each of
their tools becomes a tool of the session's agent, ``mcp__<server>__<tool>``
(:mod:`subagents.harness.mcp_tools`). A server that cannot be reached is left out (the reason
goes to stderr and the log), never failing the request. A new setup of the same session
replaces its servers; ``session/close`` and the end of the connection disconnect them.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, final

import anyio
import anyio.abc

from subagents import __version__
from subagents.agents._content import describe_block
from subagents.harness.loop import TurnOutcome
from subagents.harness.mcp_tools import McpServerTool
from subagents.harness.runtime import Agent as RuntimeAgentSession
from subagents.harness.runtime import AgentRuntime
from subagents.harness.tools import ToolError
from subagents.protocol import JsonValue, acp
from subagents.protocol.jsonrpc import ErrorCode
from subagents.providers.contract import CancelSignal, ProgressEvent
from subagents.providers.fork import ForkProvider
from subagents.providers.service import SubagentService
from subagents.providers.spawn import SpawnProvider
from subagents.rpc import RPCError
from subagents.transports.acp_agent import Agent, AgentTurn, ClientConnection, serve_agent

if TYPE_CHECKING:
    from subagents.protocol.acp import (
        CloseSessionRequest,
        CloseSessionResponse,
        LoadSessionRequest,
        LoadSessionResponse,
        McpServer,
        NewSessionRequest,
        NewSessionResponse,
        PromptRequest,
        PromptResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        SessionUpdate,
        StopReason,
    )

__all__ = (
    "CHILD_TEXT_LIMIT",
    "MCP_CONNECT_TIMEOUT",
    "RuntimeAgent",
    "open_runtime_agent",
    "serve_runtime",
)

logger = logging.getLogger(__name__)

_STEP_LIMIT_PREFIX: Final = "the step limit"
MCP_CONNECT_TIMEOUT: Final = 10.0
"""Seconds an MCP server may take to start and to answer each handshake request."""
CHILD_TEXT_LIMIT: Final = 8000
"""Characters of a child's streamed text its delegation's ``tool_call_update`` carries (the
latest ones; earlier text is replaced by ``…``)."""


@dataclass
class _McpServers:
    """The MCP servers of one session: held open by one task until ``close`` is set."""

    close: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    tools: list[str] = field(default_factory=list[str])


def _update(event: ProgressEvent) -> SessionUpdate | None:
    """The ACP update of one of the turn's own progress events (usage and other: none)."""
    match event.kind:
        case "text":
            return acp.AgentMessageChunkSessionUpdate(content=acp.TextContentBlock(text=event.text))
        case "thought":
            return acp.AgentThoughtChunkSessionUpdate(content=acp.TextContentBlock(text=event.text))
        case "tool_call":
            return acp.ToolCallSessionUpdate(
                tool_call_id=event.id,
                title=event.title,
                kind=event.tool_kind,
                status=event.status,
                raw_input=event.input,
            )
        case "tool_result":
            return acp.ToolCallUpdateSessionUpdate(
                tool_call_id=event.id, status=event.status, content=_text_content(event.output)
            )
        case "plan":
            entries = [
                acp.PlanEntry(content=entry.content, priority="medium", status=entry.status)
                for entry in event.entries
            ]
            return acp.PlanSessionUpdate(entries=entries)
        case "usage" | "other" | "child":
            return None


def _text_content(text: str) -> list[acp.ToolCallContent]:
    return [acp.ContentToolCallContent(content=acp.TextContentBlock(text=text))]


@final
class _TurnUpdates:
    """The updates of one prompt turn, in order, for one sending task.

    :meth:`push` never blocks. The turn's own updates queue as they come (a turn has a
    handful per model step). A child's text is coalesced: it accumulates per delegation (the
    last :data:`CHILD_TEXT_LIMIT` characters) and at most one update per delegation waits in
    the queue, carrying the text as it stands when it is sent; once the delegation's result
    is queued, later child text is dropped (it must not replace the result's content).
    """

    def __init__(self) -> None:
        self._queue: deque[SessionUpdate | str] = deque()  # str: a delegation's text is due
        self._child_text: dict[str, str] = {}
        self._cut: set[str] = set()
        self._due: set[str] = set()
        self._ended: set[str] = set()
        self._wakeup: anyio.Event | None = None
        self._closed = False

    def push(self, event: ProgressEvent) -> None:
        if event.kind == "child":
            self._child(event.tool_call_id, event.event)
            return
        if event.kind == "tool_result":
            self._ended.add(event.id)
        update = _update(event)
        if update is not None:
            self._queue.append(update)
            self._wake()

    def _child(self, call_id: str, event: ProgressEvent) -> None:
        if event.kind != "text" or not event.text or call_id in self._ended:
            return
        text = self._child_text.get(call_id, "") + event.text
        if len(text) > CHILD_TEXT_LIMIT:
            text = text[-CHILD_TEXT_LIMIT:]
            self._cut.add(call_id)
        self._child_text[call_id] = text
        if call_id not in self._due:
            self._due.add(call_id)
            self._queue.append(call_id)
            self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    async def send_all(self, turn: AgentTurn) -> None:
        """Send the updates as they come, until :meth:`close` and the queue is empty."""
        while True:
            if self._queue:
                item = self._queue.popleft()
                if isinstance(item, str):
                    self._due.discard(item)
                    text = self._child_text[item]
                    if item in self._cut:
                        text = "…" + text
                    item = acp.ToolCallUpdateSessionUpdate(
                        tool_call_id=item, status="in_progress", content=_text_content(text)
                    )
                await turn.send_update(item)
            elif self._closed:
                return
            else:
                self._wakeup = anyio.Event()
                await self._wakeup.wait()


@final
class RuntimeAgent(Agent):
    """Serves the sessions of ``runtime`` over ACP (see the module docstring)."""

    agent_name = "subagents-runtime"
    agent_title = "subagents in-process runtime"
    agent_version = __version__

    def __init__(
        self, runtime: AgentRuntime, task_group: anyio.abc.TaskGroup | None = None
    ) -> None:
        self.runtime = runtime
        self.agents: dict[str, RuntimeAgentSession] = {}
        self._running: dict[str, CancelSignal] = {}
        self._keys = itertools.count(1)
        self._task_group = task_group
        """Owns the tasks holding sessions' MCP servers (``None``: MCP servers are not
        connected; :func:`open_runtime_agent` gives one)."""
        self._mcp: dict[str, _McpServers] = {}

    def capabilities(self, params: acp.InitializeRequest) -> acp.AgentCapabilities:
        capabilities = super().capabilities(params)
        capabilities.prompt_capabilities = acp.PromptCapabilities(
            image=False, audio=False, embedded_context=True
        )
        connects = self._task_group is not None
        capabilities.mcp_capabilities = acp.McpCapabilities(http=connects, sse=connects)
        if self.runtime.sessions.directory is None:
            # Sessions live in this process only: a client that loads or resumes one later
            # (from a new process, as clients do) would find nothing. Advertise neither.
            capabilities.load_session = False
            capabilities.session_capabilities.resume = None
        return capabilities

    # -- MCP servers -------------------------------------------------------------------------

    async def _set_mcp_servers(
        self, agent: RuntimeAgentSession, servers: Sequence[McpServer]
    ) -> None:
        """Replace the MCP servers of ``agent``'s session with ``servers`` (connected before
        this returns; those that fail are left out)."""
        await self._drop_mcp_servers(agent.id)
        if not servers:
            return
        if self._task_group is None:
            logger.warning(
                "MCP servers of session %s ignored: no task group to hold them", agent.id
            )
            return
        held = _McpServers()
        self._mcp[agent.id] = held
        await self._task_group.start(self._hold_mcp_servers, agent, servers, held)

    async def _drop_mcp_servers(self, session_id: str) -> None:
        held = self._mcp.pop(session_id, None)
        if held is None:
            return
        held.close.set()
        with anyio.move_on_after(MCP_CONNECT_TIMEOUT, shield=True):
            await held.done.wait()
        agent = self.agents.get(session_id)
        if agent is not None:
            for name in held.tools:
                with suppress(ToolError):
                    agent.tools.unregister(name)

    async def _hold_mcp_servers(
        self,
        agent: RuntimeAgentSession,
        servers: Sequence[McpServer],
        held: _McpServers,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        from subagents.transports.mcp import McpError, open_mcp

        ready = [anyio.Event() for _ in servers]

        async def hold(server: McpServer, connected: anyio.Event) -> None:
            try:
                async with open_mcp(server, timeout=MCP_CONNECT_TIMEOUT) as connection:
                    for tool in connection.tools:
                        wrapped = McpServerTool(connection, tool)
                        try:
                            agent.tools.register(wrapped)
                        except ToolError:  # two servers' tools with one name: the first wins
                            continue
                        held.tools.append(wrapped.spec.name)
                    connected.set()
                    await held.close.wait()
            except McpError as exc:
                sys.stderr.write(f"subagents serve: MCP server {server.name!r} skipped: {exc}\n")
                logger.warning(
                    "MCP server %r of session %s skipped: %s", server.name, agent.id, exc
                )
            finally:
                connected.set()

        try:
            async with anyio.create_task_group() as tg:
                for server, connected in zip(servers, ready, strict=True):
                    tg.start_soon(hold, server, connected)
                for connected in ready:
                    await connected.wait()
                task_status.started()
        finally:
            held.done.set()

    @staticmethod
    def _check_cwd(cwd: str) -> None:
        if not os.path.isabs(cwd):
            raise RPCError.invalid_params({"cwd": "must be an absolute path", "value": cwd})

    def _agent(self, session_id: str) -> RuntimeAgentSession:
        agent = self.agents.get(session_id) or self.runtime.load_agent(session_id)
        if agent is None:
            raise RPCError.resource_not_found({"sessionId": session_id})
        self.agents[session_id] = agent
        return agent

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        self._check_cwd(params.cwd)
        agent = self.runtime.root_agent(key=f"acp-{next(self._keys)}")
        self.agents[agent.id] = agent
        await self._set_mcp_servers(agent, params.mcp_servers)
        return acp.NewSessionResponse(session_id=agent.id)

    async def load_session(
        self, params: LoadSessionRequest, conn: ClientConnection
    ) -> LoadSessionResponse:
        self._check_cwd(params.cwd)
        agent = self._agent(params.session_id)
        await self._set_mcp_servers(agent, params.mcp_servers)
        for message in agent.session.messages():
            if message.role == "tool" or not message.text:
                continue
            block = acp.TextContentBlock(text=message.text)
            update: SessionUpdate = (
                acp.UserMessageChunkSessionUpdate(content=block)
                if message.role == "user"
                else acp.AgentMessageChunkSessionUpdate(content=block)
            )
            await conn.send_update(agent.id, update)
        return acp.LoadSessionResponse()

    async def resume_session(
        self, params: ResumeSessionRequest, conn: ClientConnection
    ) -> ResumeSessionResponse:
        self._check_cwd(params.cwd)
        agent = self._agent(params.session_id)
        await self._set_mcp_servers(agent, params.mcp_servers or ())
        return acp.ResumeSessionResponse()

    async def close_session(
        self, params: CloseSessionRequest, conn: ClientConnection
    ) -> CloseSessionResponse:
        self._agent(params.session_id)
        signal = self._running.get(params.session_id)
        if signal is not None:
            signal.cancel("the session was closed")
        await self._drop_mcp_servers(params.session_id)
        self.agents.pop(params.session_id, None)
        return acp.CloseSessionResponse()

    async def prompt(self, params: PromptRequest, turn: AgentTurn) -> PromptResponse | StopReason:
        agent = self._agent(params.session_id)
        if params.session_id in self._running:
            raise RPCError(
                ErrorCode.INVALID_REQUEST,
                "A prompt is already running in this session",
                {"sessionId": params.session_id},
            )
        text = "".join(describe_block(block) for block in params.prompt)
        signal = CancelSignal()
        self._running[params.session_id] = signal
        outcome: TurnOutcome | None = None
        # Pushed synchronously by the loop, never blocking it (see _TurnUpdates); every update
        # is sent before the prompt is answered.
        updates = _TurnUpdates()

        async def watch_cancel() -> None:
            await turn.wait_cancelled()
            signal.cancel("cancelled by the client")

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(updates.send_all, turn)
                async with anyio.create_task_group() as inner:
                    inner.start_soon(watch_cancel)
                    try:
                        outcome = await agent.run(text, cancel=signal, on_progress=updates.push)
                    finally:
                        updates.close()
                    inner.cancel_scope.cancel()
        finally:
            self._running.pop(params.session_id, None)
        assert outcome is not None
        if outcome.status == "completed":
            return "end_turn"
        if outcome.status == "cancelled":
            return "cancelled"
        if outcome.message.startswith(_STEP_LIMIT_PREFIX):
            return "max_turn_requests"
        data: JsonValue = {"sessionId": params.session_id, "reason": outcome.message}
        raise RPCError(ErrorCode.INTERNAL_ERROR, f"The turn failed: {outcome.message}", data)


@asynccontextmanager
async def open_runtime_agent(
    runtime: AgentRuntime, *, delegate_to: str = "spawn"
) -> AsyncGenerator[RuntimeAgent, None]:
    """A :class:`RuntimeAgent` whose agents delegate through the ``subagent`` tool to
    ``delegate_to`` (``spawn`` or ``fork``), with both providers open for its lifetime, and a
    task group that holds the sessions' MCP servers (disconnected when the block ends)."""
    service = SubagentService()
    async with (
        SpawnProvider(runtime) as spawn,
        ForkProvider(runtime) as fork,
        anyio.create_task_group() as tg,
    ):
        service.register(spawn)
        service.register(fork)
        runtime.offer_subagents(service, delegate_to)
        yield RuntimeAgent(runtime, tg)
        tg.cancel_scope.cancel()  # disconnects every session's MCP servers


async def serve_runtime(
    make_runtime: Callable[[], AgentRuntime], *, delegate_to: str = "spawn"
) -> None:
    """Serve a runtime over this process's stdin and stdout until stdin ends."""
    async with open_runtime_agent(make_runtime(), delegate_to=delegate_to) as agent:
        await serve_agent(agent)
