"""``AcpProvider``: any ACP agent command as a subagent.

start = spawn the agent + ``initialize`` + ``session/new``; the run is published once the
session exists. The prompt runs as one turn; live progress comes from ``session/update``;
the signal sends ``session/cancel`` and the run settles ``cancelled``; a crash settles
``failed`` (infrastructure) with the exit status and the stderr tail; ``dispose()`` runs the
shutdown ladder. Depth limit and tool filter cannot be enforced on a foreign process, and no
persona or output schema is applied, so every start-time capability is advertised off (the
service rejects such requests before a process is spawned).

The provider owns the runs' tasks: use it as ``async with AcpProvider(...) as provider``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import final

import anyio

from ..protocol.jsonrpc import JsonValue
from ..rpc import ConnectionClosedError, RPCError
from ..transports.acp_client import (
    AgentConnection,
    AgentStartupError,
    CapabilityError,
    ClientSession,
    PermissionPolicy,
    ProtocolVersionError,
    connect_agent,
    reject_policy,
)
from ..transports.process import ProcessStartError
from ._child_run import ChildConversation, ChildProvider, ChildRun
from .contract import (
    CancelSignal,
    ProgressEvent,
    SubagentCapabilities,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
)
from .progress import ProgressFeed

__all__ = ("AcpConversation", "AcpProvider", "AcpRun", "run_turn")

_DISPOSE_BOUND = 15.0
"""Bound on waiting for a run's task (including the agent's shutdown ladder) to finish."""


@final
class AcpRun(ChildRun["AcpProvider"]):
    """A published ACP child: one session, one turn."""

    _dispose_bound = _DISPOSE_BOUND
    _failures = (
        ProcessStartError,
        AgentStartupError,
        ProtocolVersionError,
        RPCError,
        ConnectionClosedError,
        CapabilityError,
    )

    def start_error_code(self) -> SubagentErrorCode:
        if isinstance(self.start_error, CapabilityError):
            return SubagentErrorCode.UNSUPPORTED_CAPABILITY
        return SubagentErrorCode.START_FAILED

    def __init__(self, provider: str, progress_capacity: int) -> None:
        super().__init__(provider, progress_capacity)
        self.session_id = ""

    def _child_key(self) -> str:
        return self.session_id

    async def _run(
        self, provider: AcpProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        async with provider.connect() as agent:
            session = await agent.new_session(provider.cwd)
            self.session_id = session.session_id
            self._publish()
            await self._conclude(
                await run_turn(session, self.id, request.prompt, cancel, self._feed)
            )


@final
class AcpConversation(ChildConversation):
    """A continuable ACP child: one session, kept open; each :meth:`send` is a new turn.

    Cold resume (:meth:`AcpProvider.resume_continuable`) starts a new agent process and
    reopens the session with ``session/load`` (or ``session/resume``), which the agent must
    advertise and be able to serve from its own storage.
    """

    _dispose_bound = _DISPOSE_BOUND

    def __init__(self, provider: AcpProvider, resume_id: str | None) -> None:
        super().__init__(provider.name)
        self._provider = provider
        self._resume_id = resume_id
        self.session_id = resume_id or ""

    def _child_key(self) -> str:
        return self.session_id

    async def _converse(self) -> None:
        provider = self._provider
        async with provider.connect() as agent:
            if self._resume_id is None:
                session = await agent.new_session(provider.cwd)
            elif agent.capabilities.load_session:
                session = await agent.load_session(self._resume_id, provider.cwd)
            else:
                session = await agent.resume_session(self._resume_id, provider.cwd)
            self.session_id = session.session_id

            async def turn(message: str, cancel: CancelSignal) -> SubagentOutcome:
                return await run_turn(session, self.id, message, cancel)

            await self._serve(turn)

    def _not_opened(self) -> str:
        return f"agent {self._provider.command[0]!r} did not open the session"

    def _start_error_code(self, failure: BaseException | None) -> SubagentErrorCode:
        if isinstance(failure, CapabilityError):
            return SubagentErrorCode.UNSUPPORTED_CAPABILITY
        return SubagentErrorCode.START_FAILED


@final
class AcpProvider(ChildProvider):
    """Runs children as ACP agent processes of ``command``."""

    _what = "AcpProvider"

    def __init__(
        self,
        command: Sequence[str],
        *,
        name: str = "acp",
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        permission_policy: PermissionPolicy = reject_policy,
        auth_method: str | None = None,
        initialize_timeout: float = 30.0,
        cancel_timeout: float = 10.0,
        progress_capacity: int = 256,
    ) -> None:
        if not command:
            raise ValueError("empty agent command")
        super().__init__(name)
        self.command = list(command)
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.inherit_env = inherit_env
        self.permission_policy = permission_policy
        self.auth_method = auth_method
        self.initialize_timeout = initialize_timeout
        self.cancel_timeout = cancel_timeout
        """How long a cancelled turn may take to be answered before the run stops waiting
        (it settles ``cancelled`` saying so; an agent that ignores the cancel cannot hold a
        run)."""
        self._progress_capacity = progress_capacity

    @property
    def capabilities(self) -> SubagentCapabilities:
        return SubagentCapabilities()

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[AgentConnection, None]:
        """Spawn the agent, ``initialize`` it and ``authenticate`` when configured; the agent
        is stopped (shutdown ladder) when the block exits."""
        async with connect_agent(
            self.command,
            cwd=self.cwd,
            env=self.env,
            inherit_env=self.inherit_env,
            permission_policy=self.permission_policy,
            initialize_timeout=self.initialize_timeout,
            cancel_timeout=self.cancel_timeout,
            name=self._name,
        ) as agent:
            if self.auth_method is not None:
                await agent.authenticate(self.auth_method)
            yield agent

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> AcpConversation:
        """Start a child whose session stays open; ``request`` is its first turn (its outcome
        is ``conversation.outcomes[0]``)."""
        conversation = await self._open_conversation(lambda: AcpConversation(self, None), cancel)
        await conversation.send(request.prompt, cancel=cancel)
        return conversation

    async def resume_continuable(self, child_id: str, *, cancel: CancelSignal) -> AcpConversation:
        """Cold-resume ``child_id`` (``"<provider>:<sessionId>"``) in a new agent process, with
        ``session/load`` or ``session/resume`` (the agent must advertise one of them)."""
        prefix = f"{self._name}:"
        session_id = child_id[len(prefix) :] if child_id.startswith(prefix) else child_id
        return await self._open_conversation(lambda: AcpConversation(self, session_id), cancel)

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> AcpRun:
        self._check_open()
        self._check_not_cancelled(cancel)
        run = AcpRun(self._name, self._progress_capacity)
        return await self._start_run(run, request, cancel, what=f"agent {self.command[0]!r}")


async def run_turn(
    session: ClientSession,
    child_id: str,
    prompt: str,
    cancel: CancelSignal,
    feed: ProgressFeed | None = None,
) -> SubagentOutcome:
    """Run one prompt turn on ``session`` and map its end to an outcome.

    ``end_turn`` -> completed with the agent's text; ``cancelled`` -> cancelled; ``refusal`` ->
    failed (prompt); other stop reasons -> failed (turn); an error answer -> failed (prompt for
    invalid requests or params, else turn); the agent gone -> failed (infrastructure).
    """
    from ..protocol import acp

    text: list[str] = []
    titles: dict[str, str] = {}
    response: acp.PromptResponse | None = None
    failure: SubagentOutcome | None = None
    async with session.prompt(prompt) as turn, anyio.create_task_group() as tg:

        async def forward_cancel() -> None:
            await cancel.wait()
            await session.cancel()
            # An agent that ignores session/cancel must not hold the run forever.
            await anyio.sleep(session.connection.cancel_timeout)
            turn.abandon()

        tg.start_soon(forward_cancel)
        async for update in turn:
            event: ProgressEvent | None = None
            if isinstance(update, acp.AgentMessageChunkSessionUpdate):
                if isinstance(update.content, acp.TextContentBlock):
                    text.append(update.content.text)
                    event = ProgressEvent("text", update.content.text)
            elif isinstance(update, acp.AgentThoughtChunkSessionUpdate):
                if isinstance(update.content, acp.TextContentBlock):
                    event = ProgressEvent("thought", update.content.text)
            elif isinstance(update, acp.ToolCallSessionUpdate):
                titles[update.tool_call_id] = update.title
                call: dict[str, JsonValue] = {
                    "id": update.tool_call_id,
                    "status": update.status or "pending",
                    "kind": update.kind,
                    "input": update.raw_input,
                }
                event = ProgressEvent("tool_call", update.title, call)
            elif isinstance(update, acp.ToolCallUpdateSessionUpdate):
                title = update.title or titles.get(update.tool_call_id, update.tool_call_id)
                data: dict[str, JsonValue] = {"id": update.tool_call_id, "status": update.status}
                event = ProgressEvent("tool_call", title, data)
            elif isinstance(update, acp.PlanSessionUpdate):
                entries: list[JsonValue] = [
                    {"content": entry.content, "status": entry.status} for entry in update.entries
                ]
                summary = "; ".join(f"{e.content} [{e.status}]" for e in update.entries)
                plan: dict[str, JsonValue] = {"entries": entries}
                event = ProgressEvent("plan", summary, plan)
            if event is not None and feed is not None:
                feed.push(event)
        try:
            response = await turn.result()
        except ConnectionClosedError as exc:
            failure = SubagentOutcome.failed(child_id, "infrastructure", str(exc), exc)
        except TimeoutError:  # abandoned: the agent never confirmed the cancel
            timeout = session.connection.cancel_timeout
            failure = SubagentOutcome.cancelled(
                child_id,
                f"{cancel.reason or 'cancelled'} (the agent did not confirm the cancel within "
                f"{timeout:g} s; stopped waiting)",
            )
        except RPCError as exc:
            kind = "prompt" if exc.code in (-32600, -32602) else "turn"
            failure = SubagentOutcome.failed(child_id, kind, f"the agent answered {exc}", exc)
        tg.cancel_scope.cancel()
    if failure is not None:
        return failure
    assert response is not None
    reason = response.stop_reason
    if reason == "end_turn":
        return SubagentOutcome.completed(child_id, "".join(text))
    if reason == "cancelled":
        return SubagentOutcome.cancelled(child_id, cancel.reason or "cancelled")
    if reason == "refusal":
        return SubagentOutcome.failed(child_id, "prompt", "the agent refused the prompt")
    return SubagentOutcome.failed(child_id, "turn", f"the turn stopped early: {reason}")
