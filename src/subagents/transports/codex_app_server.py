"""The Codex app-server client: drive ``codex app-server --listen stdio://`` as a subagent.

::

    async with connect_codex([codex, "app-server", "--listen", "stdio://"], env=env) as conn:
        thread = await conn.start_thread(cwd="/work", sandbox="read-only")
        async with thread.turn("Say hello.") as turn:
            async for event in turn:            # typed events, in order
                if isinstance(event, CodexAgentMessageDelta):
                    print(event.delta, end="")
        result = await turn.result()            # CodexTurnResult(status, final_text, ...)

The wire is JSON-RPC 2.0 without the ``"jsonrpc"`` member, one JSON object per line (the
peer runs with ``include_version=False, require_version=False``). :func:`connect_codex_over`
speaks it over any byte-stream pair. What this client takes care of (the facts are in the
project's research note on the real 0.171.0 binary):

- ``initialize`` (client info, ``experimentalApi: false``) then ``initialized``; a binary that
  exits first (a bad ``config.toml`` does) raises :class:`CodexStartupError` naming the exit
  status and the stderr tail;
- notifications are routed by thread id, then by turn id, in arrival order; those that arrive
  before the turn knows its id (``turn/started`` may come before the ``turn/start`` answer)
  are held and replayed, so nothing is lost;
- a turn's notifications become typed events (sans-IO, in :mod:`subagents.protocol.codex`,
  re-exported here); anything not modelled is a :class:`CodexOtherEvent`;
- every server request is answered: the two approval requests by a
  :data:`CodexApprovalPolicy` (default :func:`decline_policy`; a policy that raises (logged
  with its traceback), answers nonsense, or takes longer than :data:`APPROVAL_TIMEOUT`
  seconds, means ``decline``, as in every transport: issue 19), every other one with a
  JSON-RPC error (the server would otherwise wait forever);
- ``-32001`` (server overloaded) is retried with bounded exponential backoff;
- a turn whose ``turn/completed`` never comes (a known upstream bug) is reconciled through
  ``thread/read`` when its thread goes idle or its deadline passes;
- ``turn.cancel()`` and leaving a turn's block early interrupt it (``turn/interrupt``,
  time-boxed; "no active turn to interrupt" counts as success), and so does an overflow of
  its ``max_events`` (:class:`~subagents.transports.TurnOverflowError`);
- when the process dies, pending calls and running turns fail at once with
  :class:`~subagents.rpc.ConnectionClosedError` naming the exit status and the stderr tail;
- closing: stdin is closed (codex exits within ~40 ms, even mid-turn), then the process
  layer's shutdown ladder.

The unprefixed names of earlier releases (``TurnResult``, ``Decision``, ``ApprovalRequest``,
...) remain as deprecated aliases of the ``Codex``-prefixed ones.
"""

from __future__ import annotations

import logging
import os
import re
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final, TypeAlias, final

import anyio
import anyio.abc
from pydantic import ValidationError
from pydantic_core import from_json

from .. import __version__
from ..protocol import codex
from ..protocol.codex import (
    DECISIONS,
    CodexAgentMessageDelta,
    CodexApprovalRequest,
    CodexDecision,
    CodexEvent,
    CodexItemCompleted,
    CodexItemStarted,
    CodexOtherEvent,
    CodexPlanDelta,
    CodexPlanUpdated,
    CodexReasoningDelta,
    CodexTokenUsage,
    CodexTurnError,
    CodexTurnResult,
    methods,
)
from ..protocol.jsonrpc import ErrorCode, JsonValue
from ..rpc import ConnectionClosedError, Peer, Router, RPCError, open_peer
from ._child_connection import ChildCommand, ChildDialect, open_child_connection
from ._codex_turn import BACKLOG, CodexError, CodexTurn, ThreadState, request, wire_params
from ._policy import call_policy, policy_name
from ._turn_events import DEFAULT_MAX_EVENTS
from .process import AgentProcess

__all__ = (
    "APPROVAL_TIMEOUT",
    "AgentMessageDelta",
    "ApprovalPolicy",
    "ApprovalRequest",
    "CodexAgentMessageDelta",
    "CodexApprovalPolicy",
    "CodexApprovalRequest",
    "CodexConnection",
    "CodexDecision",
    "CodexError",
    "CodexEvent",
    "CodexItemCompleted",
    "CodexItemStarted",
    "CodexOtherEvent",
    "CodexPlanDelta",
    "CodexPlanUpdated",
    "CodexReasoningDelta",
    "CodexStartupError",
    "CodexThread",
    "CodexTokenUsage",
    "CodexTurn",
    "CodexTurnError",
    "CodexTurnResult",
    "Decision",
    "ItemCompleted",
    "ItemStarted",
    "OtherEvent",
    "PlanDelta",
    "PlanUpdated",
    "ReasoningDelta",
    "TokenUsage",
    "TurnError",
    "TurnResult",
    "accept_policy",
    "connect_codex",
    "connect_codex_over",
    "decline_policy",
)

logger = logging.getLogger("subagents.codex")

APPROVAL_TIMEOUT: float = 300.0
"""Seconds an approval policy may take to decide one request (the default of
:func:`connect_codex`'s ``approval_timeout``); past it the request is answered ``decline``,
since the server would wait forever for an answer that never comes. Generous, since the
policy may be a person answering in a terminal."""

_VERSION = re.compile(r"/(\d+\.\d+\.\d+[\w.+-]*)")


class CodexStartupError(Exception):
    """Codex did not complete ``initialize``: it exited, timed out, or answered an error."""


_CODEX: Final = ChildDialect(
    kind="codex app-server",
    startup_error=CodexStartupError,
    closed=(ConnectionClosedError,),
    refused=(RPCError, ValidationError),
)

# ---------------------------------------------------------------- approvals

CodexApprovalPolicy: TypeAlias = Callable[[CodexApprovalRequest], Awaitable[CodexDecision]]
"""``async def policy(request) -> CodexDecision``: decides an approval request."""


async def decline_policy(request: CodexApprovalRequest) -> CodexDecision:
    """The default: decline everything (the agent goes on without the action)."""
    return "decline"


async def accept_policy(request: CodexApprovalRequest) -> CodexDecision:
    """Accept every command and file change, once."""
    return "accept"


# ---------------------------------------------------------------- threads


def _inputs(value: str | Sequence[codex.UserInput]) -> list[codex.UserInput]:
    if isinstance(value, str):
        return [codex.TextUserInput(text=value)]
    return list(value)


def _path(value: str | os.PathLike[str] | None) -> str | None:
    return None if value is None else os.path.abspath(os.fspath(value))


@final
class CodexThread:
    """A loaded thread (made by :meth:`CodexConnection.start_thread` & co.)."""

    def __init__(
        self,
        connection: CodexConnection,
        response: codex.ThreadStartResponse,
        state: ThreadState,
    ) -> None:
        self.connection = connection
        self.response = response
        """The ``thread/start`` (``resume``, ``fork``) answer: model, sandbox, thread, ..."""
        self.id = response.thread.id
        self.state = state

    @property
    def info(self) -> codex.Thread:
        return self.response.thread

    @property
    def backlog(self) -> list[tuple[str, JsonValue]]:
        """Notifications of this thread received while no turn ran (the last 256)."""
        return list(self.state.backlog)

    def turn(
        self,
        input: str | Sequence[codex.UserInput],
        *,
        output_schema: Mapping[str, JsonValue] | None = None,
        deadline: float | None = None,
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> CodexTurn:
        """A turn, started when entered: ``async with thread.turn("hi") as turn: ...``.

        ``deadline``: seconds after which a turn whose ``turn/completed`` has not come is
        reconciled through ``thread/read`` (and interrupted); if it still has no final status
        its result is ``failed`` with an error naming the deadline. More than ``max_events``
        events unread fail the turn with :class:`~subagents.transports.TurnOverflowError`
        and interrupt it.
        """
        return CodexTurn(self, _inputs(input), output_schema, deadline, max_events)

    async def run(
        self,
        input: str | Sequence[codex.UserInput],
        *,
        output_schema: Mapping[str, JsonValue] | None = None,
        deadline: float | None = None,
    ) -> CodexTurnResult:
        """Run one turn to its end, discarding the events; returns its result."""
        async with self.turn(input, output_schema=output_schema, deadline=deadline) as turn:
            return await turn.result()


# ---------------------------------------------------------------- what codex sends us


@final
class _Inbound:
    """The client's side of what codex sends: notifications routed to threads and turns,
    server requests answered (approvals by the policy, the rest refused)."""

    def __init__(self, policy: CodexApprovalPolicy, approval_timeout: float | None) -> None:
        self.policy = policy
        self.approval_timeout = approval_timeout
        self.threads: dict[str, ThreadState] = {}
        self.unrouted: deque[tuple[str, JsonValue]] = deque(maxlen=BACKLOG)

    def register(self, router: Router) -> None:
        router.on_request(methods.COMMAND_EXECUTION_REQUEST_APPROVAL, self.on_command_approval)
        router.on_request(methods.FILE_CHANGE_REQUEST_APPROVAL, self.on_file_change_approval)
        router.on_any_request(self.on_other_request)
        router.on_any_notification(self.on_notification)

    def state(self, thread_id: str) -> ThreadState:
        state = self.threads.get(thread_id)
        if state is None:
            state = self.threads[thread_id] = ThreadState()
        return state

    async def on_notification(self, method: str, params: JsonValue) -> None:
        thread_id = codex.thread_id_of(method, params)
        if thread_id is None:
            self.unrouted.append((method, params))
            return
        self.state(thread_id).route(method, params)

    def connection_lost(self, reason: str) -> None:
        for state in self.threads.values():
            state.lose(ConnectionClosedError(reason))

    async def on_command_approval(self, params: JsonValue) -> JsonValue:
        return await self._approval(methods.COMMAND_EXECUTION_REQUEST_APPROVAL, params)

    async def on_file_change_approval(self, params: JsonValue) -> JsonValue:
        return await self._approval(methods.FILE_CHANGE_REQUEST_APPROVAL, params)

    async def _approval(self, method: str, params: JsonValue) -> JsonValue:
        try:
            request = codex.approval_request(method, params)
        except ValidationError as exc:
            what = (
                "command" if method == methods.COMMAND_EXECUTION_REQUEST_APPROVAL else "file change"
            )
            logger.warning("%s approval with unexpected params declined: %s", what, exc)
            return {"decision": "decline"}
        state = self.threads.get(request.thread_id)
        if state is not None and state.turn is not None:
            await state.turn.read_before()
        return {"decision": await self._decide(request)}

    async def _decide(self, request: CodexApprovalRequest) -> CodexDecision:
        limit = APPROVAL_TIMEOUT if self.approval_timeout is None else self.approval_timeout
        decision: CodexDecision | None = None
        with anyio.move_on_after(limit) as bound:
            decision = await call_policy(
                self.policy,
                request,
                logger=logger,
                asked=request.describe(),
                role="approval policy",
            )
            if decision is None:  # it raised, logged: a policy that raises is a deny
                return "decline"
        if bound.cancelled_caught:
            logger.warning(
                "approval policy did not decide %s (item %s, turn %s, thread %s) within %s s; "
                "declining",
                request.method,
                request.item_id,
                request.turn_id,
                request.thread_id,
                limit,
            )
            return "decline"
        if decision not in DECISIONS:
            logger.error(
                "approval policy %s answered %r on %s; declining",
                policy_name(self.policy),
                decision,
                request.describe(),
            )
            return "decline"
        return decision

    async def on_other_request(self, method: str, params: JsonValue) -> JsonValue:
        logger.warning("server request %r refused: this client does not handle it", method)
        raise RPCError(
            ErrorCode.METHOD_NOT_FOUND,
            f"subagents codex client does not handle {method}",
            {"method": method},
        )


# ---------------------------------------------------------------- the connection


@final
class CodexConnection:
    """An initialized connection to ``codex app-server`` (made by :func:`connect_codex`)."""

    def __init__(
        self,
        peer: Peer,
        task_group: anyio.abc.TaskGroup,
        process: AgentProcess | None,
        initialize_response: codex.InitializeResponse,
        inbound: _Inbound,
    ) -> None:
        self.peer = peer
        """The JSON-RPC peer, for methods this class does not wrap (use :meth:`request`)."""
        self.task_group = task_group
        self.process = process
        self.initialize_response = initialize_response
        self._inbound = inbound

    @property
    def approval_policy(self) -> CodexApprovalPolicy:
        return self._inbound.policy

    @property
    def approval_timeout(self) -> float | None:
        """Seconds the policy may take per request (``None``: :data:`APPROVAL_TIMEOUT`)."""
        return self._inbound.approval_timeout

    @property
    def unrouted(self) -> deque[tuple[str, JsonValue]]:
        """Notifications that name no thread (``configWarning``, ...), the last 256."""
        return self._inbound.unrouted

    # -- what codex said about itself

    @property
    def user_agent(self) -> str:
        return self.initialize_response.user_agent

    @property
    def version(self) -> str | None:
        """The CLI version, parsed from ``user_agent`` (e.g. ``"0.171.0"``)."""
        found = _VERSION.search(self.user_agent)
        return None if found is None else found.group(1)

    @property
    def codex_home(self) -> str | None:
        return self.initialize_response.codex_home

    # -- requests

    async def request(self, method: str, params: JsonValue = None) -> JsonValue:
        """Any request: ``-32001`` is retried with backoff; errors raise :class:`CodexError`."""
        return await request(self.peer, method, params)

    async def start_thread(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        model: str | None = None,
        sandbox: codex.SandboxMode | None = None,
        approval_policy: codex.ApprovalPolicyName | None = None,
        base_instructions: str | None = None,
        developer_instructions: str | None = None,
        config: Mapping[str, JsonValue] | None = None,
        ephemeral: bool | None = None,
    ) -> CodexThread:
        """``thread/start``; unset options take codex's configured defaults."""
        params = codex.ThreadStartParams(
            cwd=_path(cwd),
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            base_instructions=base_instructions,
            developer_instructions=developer_instructions,
            config=None if config is None else dict(config),
            ephemeral=ephemeral,
        )
        result = await self.request(methods.THREAD_START, wire_params(params))
        return self._thread(codex.from_wire(codex.ThreadStartResponse, result))

    async def resume_thread(
        self,
        thread_id: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        model: str | None = None,
        sandbox: codex.SandboxMode | None = None,
        approval_policy: codex.ApprovalPolicyName | None = None,
        base_instructions: str | None = None,
        developer_instructions: str | None = None,
        config: Mapping[str, JsonValue] | None = None,
    ) -> CodexThread:
        """``thread/resume`` (also from a new process sharing the ``CODEX_HOME``)."""
        params = codex.ThreadResumeParams(
            thread_id=thread_id,
            cwd=_path(cwd),
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            base_instructions=base_instructions,
            developer_instructions=developer_instructions,
            config=None if config is None else dict(config),
        )
        result = await self.request(methods.THREAD_RESUME, wire_params(params))
        return self._thread(codex.from_wire(codex.ThreadResumeResponse, result))

    async def fork_thread(self, thread_id: str, *, ephemeral: bool | None = None) -> CodexThread:
        """``thread/fork``: a new thread carrying the history. An ephemeral fork is sent with
        ``excludeTurns: true``, which codex 0.171.0 requires for it."""
        params = codex.ThreadForkParams(
            thread_id=thread_id, ephemeral=ephemeral, exclude_turns=True if ephemeral else None
        )
        result = await self.request(methods.THREAD_FORK, wire_params(params))
        return self._thread(codex.from_wire(codex.ThreadForkResponse, result))

    async def read_thread(self, thread_id: str, include_turns: bool = True) -> codex.Thread:
        """``thread/read``: the thread, with its turns and their items when asked."""
        params = codex.ThreadReadParams(thread_id=thread_id, include_turns=include_turns)
        result = await self.request(methods.THREAD_READ, wire_params(params))
        return codex.from_wire(codex.ThreadReadResponse, result).thread

    def _thread(self, response: codex.ThreadStartResponse) -> CodexThread:
        return CodexThread(self, response, self._inbound.state(response.thread.id))


# ---------------------------------------------------------------- connecting


def _check_approval_timeout(value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"approval_timeout must be > 0 seconds, not {value!r}")


async def _initialize(
    peer: Peer, client_name: str, client_version: str
) -> codex.InitializeResponse:
    params = codex.InitializeParams(
        client_info=codex.ClientInfo(name=client_name, version=client_version),
        capabilities=codex.InitializeCapabilities(experimental_api=False),
    )
    result = await request(peer, methods.INITIALIZE, wire_params(params))
    response = codex.from_wire(codex.InitializeResponse, result)
    await peer.notify(methods.INITIALIZED)
    return response


@asynccontextmanager
async def connect_codex_over(
    receive_stream: anyio.abc.ByteReceiveStream,
    send_stream: anyio.abc.ByteSendStream,
    *,
    client_name: str = "subagents",
    client_version: str = __version__,
    approval_policy: CodexApprovalPolicy | None = None,
    approval_timeout: float | None = None,
    startup_timeout: float = 30.0,
    process: AgentProcess | None = None,
    name: str = "codex",
) -> AsyncGenerator[CodexConnection, None]:
    """Connect to an app-server over a byte-stream pair and ``initialize`` it; see
    :func:`connect_codex`. ``process``, when the streams are its stdio, names its exit in the
    errors of calls and turns it fails."""
    _check_approval_timeout(approval_timeout)
    policy: CodexApprovalPolicy = decline_policy if approval_policy is None else approval_policy
    router = Router()
    inbound = _Inbound(policy, approval_timeout)
    inbound.register(router)

    def open_link(
        _tg: anyio.abc.TaskGroup, eof_reason: Callable[[], Awaitable[str]] | None
    ) -> AbstractAsyncContextManager[Peer]:
        return open_peer(
            receive_stream,
            send_stream,
            router=router,
            include_version=False,
            require_version=False,
            eof_reason=eof_reason,
            json_loads=from_json,
            name=name,
        )

    def lost(peer: Peer, reason: str) -> None:
        if not peer.closed:
            peer.abort(reason)
        inbound.connection_lost(reason)

    async with open_child_connection(
        _CODEX,
        open_link,
        lambda peer: _initialize(peer, client_name, client_version),
        lost=lost,
        name=name,
        process=process,
        startup_timeout=startup_timeout,
    ) as child:
        yield CodexConnection(child.link, child.task_group, process, child.hello, inbound)


@asynccontextmanager
async def connect_codex(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    client_name: str = "subagents",
    client_version: str = __version__,
    approval_policy: CodexApprovalPolicy | None = None,
    approval_timeout: float | None = None,
    startup_timeout: float = 30.0,
    name: str | None = None,
) -> AsyncGenerator[CodexConnection, None]:
    """Start ``codex app-server`` (``command``), ``initialize`` it, and stop it on exit.

    ``command`` is the whole argv, e.g. ``[codex, "app-server", "--listen", "stdio://"]``.
    The child runs in its own process group with an explicit environment (a documented base
    plus ``env``; the parent's whole environment only with ``inherit_env=True``), its stderr
    drained into a bounded tail. ``client_name`` becomes the upstream ``originator`` and the
    user agent's prefix. Approval requests go to ``approval_policy`` (default: decline all);
    a policy that has not decided within ``approval_timeout`` seconds (default
    :data:`APPROVAL_TIMEOUT`, read when a request comes) is given up on: the request is
    answered ``decline`` and a warning names it.

    Raises :class:`CodexStartupError` when codex exits, refuses or stays silent (for
    ``startup_timeout`` seconds) before answering ``initialize``. On exit of the block: stdin
    is closed (codex exits on EOF), then the shutdown ladder (wait, SIGTERM the group, wait,
    SIGKILL), bounded.
    """
    label = name or "codex"
    _check_approval_timeout(approval_timeout)
    child = ChildCommand(command, env, inherit_env, cwd, startup_timeout)
    async with (
        child.spawn(label) as process,
        connect_codex_over(
            process.stdout,
            process.stdin,
            client_name=client_name,
            client_version=client_version,
            approval_policy=approval_policy,
            approval_timeout=approval_timeout,
            startup_timeout=startup_timeout,
            process=process,
            name=label,
        ) as connection,
    ):
        yield connection


# ---------------------------------------------------------------- deprecated names
# The unprefixed names of earlier releases, kept for one release (README, Changelog).

AgentMessageDelta = CodexAgentMessageDelta
ApprovalPolicy: TypeAlias = CodexApprovalPolicy
ApprovalRequest = CodexApprovalRequest
Decision: TypeAlias = CodexDecision
ItemCompleted = CodexItemCompleted
ItemStarted = CodexItemStarted
OtherEvent = CodexOtherEvent
PlanDelta = CodexPlanDelta
PlanUpdated = CodexPlanUpdated
ReasoningDelta = CodexReasoningDelta
TokenUsage = CodexTokenUsage
TurnError = CodexTurnError
TurnResult = CodexTurnResult
