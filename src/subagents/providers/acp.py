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

import json
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, cast, final

import anyio

from ..protocol.acp_remote import CANCEL_REASON_META, ServerDrainingError, is_agent_url
from ..protocol.jsonrpc import JsonValue
from ..rpc import ConnectionClosedError, RPCError
from ..transports import TurnOverflowError
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
from ._child_run import Asker, ChildConversation, ChildProvider, ChildRun
from .contract import (
    CancelSignal,
    PlanEntry,
    PlanProgress,
    ProgressEvent,
    SubagentCapabilities,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    TextProgress,
    ThoughtProgress,
    ToolCallProgress,
    ToolResultProgress,
    UsageProgress,
)
from .progress import ProgressFeed

if TYPE_CHECKING:
    from ..protocol.acp import (
        SessionUpdate,
        ToolCall,
        ToolCallSessionUpdate,
        ToolCallUpdate,
        ToolCallUpdateSessionUpdate,
    )

__all__ = ("AcpConversation", "AcpProgress", "AcpProvider", "AcpRun", "run_turn")

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
        ServerDrainingError,
    )

    def start_error_code(self) -> SubagentErrorCode:
        if isinstance(self.start_error, CapabilityError):
            return SubagentErrorCode.UNSUPPORTED_CAPABILITY
        if isinstance(self.start_error, ServerDrainingError):
            return SubagentErrorCode.CANCELLED  # the server's drain cancelled the start
        return SubagentErrorCode.START_FAILED

    session_id: str = ""
    """The ACP session's id, once published."""

    def _child_key(self) -> str:
        return self.session_id

    async def _run(
        self, provider: AcpProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        try:
            async with provider.connect(asker=self.asker) as agent:
                self._track_process(agent.process)
                session = await agent.new_session(provider.cwd)
                self.session_id = session.session_id
                self._publish()
                outcome = await run_turn(session, self.child_id, request.prompt, cancel, self._feed)
                if provider.url is not None and isinstance(outcome.cause, ConnectionClosedError):
                    # A remote connection lost: out of the block, which names a drain as such.
                    raise outcome.cause
                await self._conclude(outcome)
        except ServerDrainingError as exc:
            if not self.published:
                raise  # start_error_code: cancelled
            # The server's drain ended the turn: cancelled, as its own turns are (not failed).
            await self._conclude(SubagentOutcome.cancelled(self.child_id, str(exc)))


@final
class AcpConversation(ChildConversation):
    """A continuable ACP child: one session, kept open; each :meth:`send` is a new turn.

    Cold resume (:meth:`AcpProvider.resume_continuable`) starts a new agent process and
    reopens the session with ``session/load`` (or ``session/resume``), which the agent must
    advertise and be able to serve from its own storage.
    """

    _dispose_bound = _DISPOSE_BOUND

    def __init__(
        self, provider: AcpProvider, resume_id: str | None, child_id: str | None = None
    ) -> None:
        super().__init__(provider.name, child_id, dispose_bound=provider.dispose_timeout)
        self._provider = provider
        self._resume_id = resume_id
        self.session_id = resume_id or ""

    def _child_key(self) -> str:
        return self.session_id

    async def _converse(self) -> None:
        provider = self._provider
        async with provider.connect(asker=self.asker, resuming=self._resume_id) as agent:
            self._track_process(agent.process)
            if self._resume_id is None:
                session = await agent.new_session(provider.cwd)
            elif agent.capabilities.load_session:
                session = await agent.load_session(self._resume_id, provider.cwd)
            else:
                session = await agent.resume_session(self._resume_id, provider.cwd)
            self.session_id = session.session_id

            async def turn(
                message: str, cancel: CancelSignal, feed: ProgressFeed
            ) -> SubagentOutcome:
                return await run_turn(session, self.child_id, message, cancel, feed)

            await self._serve(turn)

    def _not_opened(self) -> str:
        return f"{self._provider.what} did not open the session"

    def _start_error_code(self, failure: BaseException | None) -> SubagentErrorCode:
        if isinstance(failure, CapabilityError):
            return SubagentErrorCode.UNSUPPORTED_CAPABILITY
        if isinstance(failure, ServerDrainingError):
            return SubagentErrorCode.CANCELLED
        return SubagentErrorCode.START_FAILED


@final
class AcpProvider(ChildProvider):
    """Runs children as ACP agent processes of ``command``, or on the agent served at the URL
    ``command`` is instead (``http(s)://``, ``ws(s)://``: one remote connection per child,
    ``token`` or the variable ``token_env`` as its bearer token)."""

    _what = "AcpProvider"

    def __init__(
        self,
        command: Sequence[str] | str,
        *,
        token: str | None = None,
        token_env: str | None = None,
        name: str = "acp",
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        permission_policy: PermissionPolicy = reject_policy,
        auth_method: str | None = None,
        initialize_timeout: float = 30.0,
        cancel_timeout: float = 10.0,
        progress_capacity: int = 256,
        dispose_timeout: float | None = None,
    ) -> None:
        if not command:
            raise ValueError("empty agent command")
        super().__init__(name, dispose_timeout=dispose_timeout)
        self.url: str | None = None
        """The agent's URL, for an agent served remotely."""
        if isinstance(command, str):
            if not is_agent_url(command):
                raise ValueError(f"a command is a list of words; a str must be a URL: {command!r}")
            self.url = command
        self.command = [] if self.url is not None else list(command)
        self.token = token
        self.token_env = token_env
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
    async def connect(
        self, *, asker: Asker | None = None, resuming: str | None = None
    ) -> AsyncGenerator[AgentConnection, None]:
        """Spawn the agent, ``initialize`` it and ``authenticate`` when configured; the agent
        is stopped (shutdown ladder) when the block exits. ``asker`` says which child the
        connection serves (a :class:`~subagents.providers.RunAware` policy is told);
        ``resuming``, the session it is made to resume (an agent URL: sent as
        ``Acp-Session-Id`` on ``initialize``, for a load balancer's routing)."""
        if self.url is not None:
            async with self._connect_url(self.url, asker, resuming) as agent:
                yield agent
            return
        async with connect_agent(
            self.command,
            cwd=self.cwd,
            env=self.env,
            inherit_env=self.inherit_env,
            permission_policy=self._policy_for(self.permission_policy, asker),
            initialize_timeout=self.initialize_timeout,
            cancel_timeout=self.cancel_timeout,
            name=self._name,
        ) as agent:
            if self.auth_method is not None:
                await agent.authenticate(self.auth_method)
            yield agent

    @asynccontextmanager
    async def _connect_url(
        self, url: str, asker: Asker | None, resuming: str | None
    ) -> AsyncGenerator[AgentConnection, None]:
        token = self.token
        if token is None and self.token_env is not None:
            token = os.environ.get(self.token_env) or None
            if token is None:
                raise AgentStartupError(
                    f"{url} needs the token in ${self.token_env} (token_env), which is not set"
                )
        from ..remote.client import connect_agent_url  # a URL: the remote extra is there

        async with connect_agent_url(
            url,
            token=token,
            permission_policy=self._policy_for(self.permission_policy, asker),
            initialize_timeout=self.initialize_timeout,
            cancel_timeout=self.cancel_timeout,
            name=self._name,
            resuming=resuming,
        ) as agent:
            if self.auth_method is not None:
                await agent.authenticate(self.auth_method)
            yield agent

    @property
    def what(self) -> str:
        """The agent, in messages: ``agent 'node'`` or ``agent at http://...``."""
        return f"agent at {self.url}" if self.url is not None else f"agent {self.command[0]!r}"

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> AcpConversation:
        """Start a child whose session stays open; ``request`` is its first turn (its outcome
        is ``conversation.outcomes[0]``)."""
        self._check_request(request, cancel)
        child_id = self._child_id(request)
        conversation = await self._open_conversation(
            lambda: AcpConversation(self, None, child_id), cancel
        )
        await conversation.send(request.prompt, cancel=cancel)
        return conversation

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> AcpConversation:
        """Cold-resume session ``remote_id`` (or the child of that id this provider started)
        in a new agent process, with ``session/load`` or ``session/resume`` (the agent must
        advertise one of them)."""
        self._check_open()
        self._check_not_cancelled(cancel)
        child, session_id = self._resume_ids(remote_id, child_id)
        return await self._open_conversation(
            lambda: AcpConversation(self, session_id, child), cancel
        )

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> AcpRun:
        self._check_request(request, cancel)
        run = self._new_run(AcpRun, request)
        return await self._start_run(run, request, cancel, what=self.what)


def _tool_output(update: ToolCallUpdate | ToolCall) -> str:
    """A finished tool call's content as text: its text blocks, ``diff PATH`` for a diff,
    ``[terminal ID]`` for a terminal; else its raw output."""
    from ..protocol import acp

    parts: list[str] = []
    for item in update.content or ():
        if isinstance(item, acp.ContentToolCallContent):
            if isinstance(item.content, acp.TextContentBlock):
                parts.append(item.content.text)
        elif isinstance(item, acp.DiffToolCallContent):
            parts.append(f"diff {item.path}")
        else:
            parts.append(f"[terminal {item.terminal_id}]")
    if parts:
        return "\n".join(parts)
    raw = update.raw_output
    if raw is None:
        return ""
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)


@final
class AcpProgress:
    """Maps ``session/update`` notifications onto the progress vocabulary.

    ``agent_message_chunk`` -> text, ``agent_thought_chunk`` -> thought (text blocks);
    ``tool_call`` -> a tool call (its id, title, kind, status, ``rawInput``); a
    ``tool_call_update`` that ends the call (``completed`` or ``failed``) -> its tool result
    (the content's text, else ``rawOutput``), any other one -> the same tool call again with
    what changed (a call first seen in an update is announced before its result); a
    ``tool_call`` that arrives already finished gives both. ``plan`` -> plan;
    ``usage_update`` -> usage (context used and size, the cost when in USD). Other updates
    carry no progress.
    """

    def __init__(self) -> None:
        self._calls: dict[str, ToolCallProgress] = {}

    def map(self, update: SessionUpdate) -> list[ProgressEvent]:
        from ..protocol import acp

        if isinstance(
            update, acp.AgentMessageChunkSessionUpdate | acp.AgentThoughtChunkSessionUpdate
        ):
            if not isinstance(update.content, acp.TextContentBlock):
                return []
            if isinstance(update, acp.AgentMessageChunkSessionUpdate):
                return [TextProgress(update.content.text)]
            return [ThoughtProgress(update.content.text)]
        if isinstance(update, acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate):
            return self._tool(update)
        if isinstance(update, acp.PlanSessionUpdate):
            entries = tuple(PlanEntry(entry.content, entry.status) for entry in update.entries)
            return [PlanProgress(entries)]
        if isinstance(update, acp.UsageUpdateSessionUpdate):
            cost = update.cost
            usd = cost.amount if cost is not None and cost.currency.upper() == "USD" else None
            report = cast("dict[str, JsonValue]", update.model_dump(mode="json", by_alias=True))
            report.pop("sessionUpdate", None)
            return [
                UsageProgress(
                    context_used=update.used, context_size=update.size, cost_usd=usd, data=report
                )
            ]
        return []

    def _tool(
        self, update: ToolCallSessionUpdate | ToolCallUpdateSessionUpdate
    ) -> list[ProgressEvent]:
        known = self._calls.get(update.tool_call_id)
        status = update.status
        events: list[ProgressEvent] = []
        if known is None or status not in ("completed", "failed"):
            call = ToolCallProgress(
                update.tool_call_id,
                update.title or (known.title if known is not None else update.tool_call_id),
                update.kind or (known.tool_kind if known is not None else "other"),
                status if status in ("pending", "in_progress") else "in_progress",
                update.raw_input
                if update.raw_input is not None
                else (known.input if known is not None else None),
            )
            self._calls[update.tool_call_id] = call
            events.append(call)
        if status == "completed" or status == "failed":
            events.append(ToolResultProgress(update.tool_call_id, status, _tool_output(update)))
        return events


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
    progress = AcpProgress()
    response: acp.PromptResponse | None = None
    failure: SubagentOutcome | None = None
    async with session.prompt(prompt) as turn, anyio.create_task_group() as tg:

        async def forward_cancel() -> None:
            await cancel.wait()
            await turn.cancel()
            # An agent that ignores session/cancel must not hold the run forever.
            await anyio.sleep(session.connection.cancel_timeout)
            turn.abandon()

        tg.start_soon(forward_cancel)
        with suppress(TurnOverflowError):  # result() raises it again, below
            async for update in turn:
                if isinstance(update, acp.AgentMessageChunkSessionUpdate) and isinstance(
                    update.content, acp.TextContentBlock
                ):
                    text.append(update.content.text)
                if feed is not None:
                    for event in progress.map(update):
                        feed.push(event)
        try:
            response = await turn.result()
        except TurnOverflowError as exc:
            failure = SubagentOutcome.failed(child_id, "turn", str(exc), exc)
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
        said = (response.meta or {}).get(CANCEL_REASON_META)
        server = f"cancelled by the server: {said}" if isinstance(said, str) and said else None
        return SubagentOutcome.cancelled(child_id, cancel.reason or server or "cancelled")
    if reason == "refusal":
        return SubagentOutcome.failed(child_id, "prompt", "the agent refused the prompt")
    return SubagentOutcome.failed(child_id, "turn", f"the turn stopped early: {reason}")
