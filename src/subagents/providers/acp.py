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
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import final

import anyio
import anyio.abc

from .._owned import open_owned_task_group
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
from .contract import (
    CancelSignal,
    ProgressEvent,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
)
from .progress import ProgressFeed

__all__ = ("AcpConversation", "AcpProvider", "AcpRun", "run_turn")

_DISPOSE_BOUND = 15.0
"""Bound on waiting for a run's task (including the agent's shutdown ladder) to finish."""


@final
class AcpRun:
    """A published ACP child: one session, one turn."""

    def __init__(self, provider: str, progress_capacity: int) -> None:
        self._provider = provider
        self.session_id = ""
        self._published = anyio.Event()
        self._phase = anyio.Event()  # set on publication, or when the task ends first
        self._settled = anyio.Event()
        self._finished = anyio.Event()
        self._release = anyio.Event()
        self._outcome: SubagentOutcome | None = None
        self._start_error: BaseException | None = None
        self._feed = ProgressFeed(progress_capacity)
        self._scope: anyio.CancelScope | None = None
        self._disposed = False

    @property
    def id(self) -> str:
        return f"{self._provider}:{self.session_id}"

    @property
    def published(self) -> bool:
        """Whether the session exists (the run was handed to the caller)."""
        return self._published.is_set()

    @property
    def start_error(self) -> BaseException | None:
        """Why the start failed, when it did."""
        return self._start_error

    async def wait_started(self) -> None:
        """Return once the run is published or its start failed."""
        await self._phase.wait()

    async def result(self) -> SubagentOutcome:
        await self._settled.wait()
        assert self._outcome is not None
        return self._outcome

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        return self._feed

    async def dispose(self) -> None:
        self._disposed = True
        self._release.set()
        if not self._settled.is_set():
            self._settle(SubagentOutcome.cancelled(self.id, "disposed before the turn ended"))
            if self._scope is not None:
                self._scope.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_DISPOSE_BOUND):
            await self._finished.wait()

    def _settle(self, outcome: SubagentOutcome) -> None:
        if self._outcome is None:
            self._outcome = outcome
            self._feed.close()
            self._settled.set()

    async def drive(
        self, provider: AcpProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        """The run's task (owned by the provider): spawn, session, turn, then wait for dispose."""
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                await self._session(provider, request, cancel)
        except (
            ProcessStartError,
            AgentStartupError,
            ProtocolVersionError,
            RPCError,
            ConnectionClosedError,
        ) as exc:
            if not self._published.is_set():
                self._start_error = exc
            else:
                self._settle(SubagentOutcome.failed(self.id, "infrastructure", str(exc), exc))
        finally:
            if self._published.is_set():
                self._settle(SubagentOutcome.cancelled(self.id, "the provider closed"))
            self._feed.close()
            self._phase.set()
            self._finished.set()

    async def _session(
        self, provider: AcpProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        async with provider.connect() as agent:
            session = await agent.new_session(provider.cwd)
            self.session_id = session.session_id
            self._published.set()
            self._phase.set()
            self._settle(await run_turn(session, self.id, request.prompt, cancel, self._feed))
            await self._release.wait()

    async def __aenter__(self) -> AcpRun:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        await self.dispose()


@final
class AcpConversation:
    """A continuable ACP child: one session, kept open; each :meth:`send` is a new turn.

    Cold resume (:meth:`AcpProvider.resume_continuable`) starts a new agent process and
    reopens the session with ``session/load`` (or ``session/resume``), which the agent must
    advertise and be able to serve from its own storage.
    """

    def __init__(self, provider: AcpProvider, resume_id: str | None) -> None:
        self._provider = provider
        self._resume_id = resume_id
        self.session_id = resume_id or ""
        self._ready = False
        self._phase = anyio.Event()  # set once the session is open, or when the task ends first
        self._finished = anyio.Event()
        self._failure: BaseException | None = None
        # Unbuffered: a message is handed over only when the driver takes it, so it is
        # answered, or its sender fails when the driver is gone.
        send, receive = anyio.create_memory_object_stream[
            tuple[str, CancelSignal, list[SubagentOutcome], anyio.Event]
        ](0)
        self._in_progress: anyio.Event | None = None
        self._jobs_in = send
        self._jobs_out = receive
        self.outcomes: list[SubagentOutcome] = []
        """The outcome of every turn so far, in order."""

    @property
    def id(self) -> str:
        return f"{self._provider.name}:{self.session_id}"

    async def send(self, message: str, *, cancel: CancelSignal | None = None) -> SubagentOutcome:
        if self._finished.is_set():
            return SubagentOutcome.failed(
                self.id, "infrastructure", f"the child is gone: {self._failure}", self._failure
            )
        slot: list[SubagentOutcome] = []
        done = anyio.Event()
        try:
            await self._jobs_in.send((message, cancel or CancelSignal(), slot, done))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            done.set()
        await done.wait()
        if not slot:
            return SubagentOutcome.failed(
                self.id, "infrastructure", f"the child is gone: {self._failure}", self._failure
            )
        return slot[0]

    async def dispose(self) -> None:
        self._jobs_in.close()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_DISPOSE_BOUND):
            await self._finished.wait()

    async def drive(self) -> None:
        """The child's task (owned by the provider)."""
        provider = self._provider
        try:
            async with provider.connect() as agent:
                if self._resume_id is None:
                    session = await agent.new_session(provider.cwd)
                elif agent.capabilities.load_session:
                    session = await agent.load_session(self._resume_id, provider.cwd)
                else:
                    session = await agent.resume_session(self._resume_id, provider.cwd)
                self.session_id = session.session_id
                self._ready = True
                self._phase.set()
                async for message, cancel, slot, done in self._jobs_out:
                    self._in_progress = done
                    outcome = await run_turn(session, self.id, message, cancel)
                    self.outcomes.append(outcome)
                    slot.append(outcome)
                    done.set()
        except Exception as exc:  # the start failed, or the agent went away: report it
            self._failure = exc
        finally:
            self._jobs_out.close()  # senders still waiting fail at once
            if self._in_progress is not None:
                self._in_progress.set()  # a turn cut short: its sender sees the failure
            self._phase.set()
            self._finished.set()

    async def wait_ready(self) -> None:
        """Return once the session exists, or raise why it could not be opened."""
        await self._phase.wait()
        if not self._ready:
            failure = self._failure
            code = (
                SubagentErrorCode.UNSUPPORTED_CAPABILITY
                if isinstance(failure, CapabilityError)
                else SubagentErrorCode.START_FAILED
            )
            raise SubagentError(
                code,
                f"agent {self._provider.command[0]!r} did not open the session: {failure}",
                provider=self._provider.name,
                feature="continuable" if code is SubagentErrorCode.UNSUPPORTED_CAPABILITY else None,
            ) from failure


@final
class AcpProvider:
    """Runs children as ACP agent processes of ``command``."""

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
        progress_capacity: int = 256,
    ) -> None:
        if not command:
            raise ValueError("empty agent command")
        self.command = list(command)
        self._name = name
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.inherit_env = inherit_env
        self.permission_policy = permission_policy
        self.auth_method = auth_method
        self.initialize_timeout = initialize_timeout
        self._progress_capacity = progress_capacity
        self._group: anyio.abc.TaskGroup | None = None
        self._closed = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> SubagentCapabilities:
        return SubagentCapabilities()

    async def __aenter__(self) -> AcpProvider:
        self._group = await open_owned_task_group(
            self._group, closed=self._closed, what="an AcpProvider"
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        self._closed = True
        group = self._group
        assert group is not None
        self._group = None
        group.cancel_scope.cancel()
        return await group.__aexit__(exc_type, exc, traceback)

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
        conversation = await self._open_conversation(None, cancel)
        await conversation.send(request.prompt, cancel=cancel)
        return conversation

    async def resume_continuable(self, child_id: str, *, cancel: CancelSignal) -> AcpConversation:
        """Cold-resume ``child_id`` (``"<provider>:<sessionId>"``) in a new agent process, with
        ``session/load`` or ``session/resume`` (the agent must advertise one of them)."""
        prefix = f"{self._name}:"
        session_id = child_id[len(prefix) :] if child_id.startswith(prefix) else child_id
        return await self._open_conversation(session_id, cancel)

    async def _open_conversation(
        self, resume_id: str | None, cancel: CancelSignal
    ) -> AcpConversation:
        if self._group is None:
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                "the AcpProvider is not open (use `async with provider`)",
                provider=self._name,
            )
        conversation = AcpConversation(self, resume_id)
        self._group.start_soon(conversation.drive)
        try:
            with cancel.linked_scope() as scope:
                await conversation.wait_ready()
        except SubagentError:
            await conversation.dispose()
            raise
        if scope.cancelled_caught:
            await conversation.dispose()
            raise SubagentError(
                SubagentErrorCode.CANCELLED,
                f"cancelled during the start: {cancel.reason}",
                provider=self._name,
            )
        return conversation

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> AcpRun:
        if self._group is None:
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                "the AcpProvider is not open (use `async with provider`)",
                provider=self._name,
            )
        if cancel.cancelled:
            raise SubagentError(
                SubagentErrorCode.CANCELLED, f"cancelled: {cancel.reason}", provider=self._name
            )
        run = AcpRun(self._name, self._progress_capacity)
        self._group.start_soon(run.drive, self, request, cancel)
        with cancel.linked_scope() as scope:
            await run.wait_started()
        if scope.cancelled_caught or (cancel.cancelled and not run.published):
            await run.dispose()
            raise SubagentError(
                SubagentErrorCode.CANCELLED,
                f"cancelled during the start: {cancel.reason}",
                provider=self._name,
            )
        if not run.published:
            error = run.start_error
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                f"agent {self.command[0]!r} did not start: {error}",
                provider=self._name,
            ) from error
        return run


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
    response: acp.PromptResponse | None = None
    failure: SubagentOutcome | None = None
    async with session.prompt(prompt) as turn, anyio.create_task_group() as tg:

        async def forward_cancel() -> None:
            await cancel.wait()
            await session.cancel()

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
                event = ProgressEvent("tool_call", update.title)
            elif isinstance(update, acp.PlanSessionUpdate):
                event = ProgressEvent("plan", f"{len(update.entries)} entries")
            if event is not None and feed is not None:
                feed.push(event)
        try:
            response = await turn.result()
        except ConnectionClosedError as exc:
            failure = SubagentOutcome.failed(child_id, "infrastructure", str(exc), exc)
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
