"""``CodexProvider``: OpenAI Codex (``codex app-server``) as a subagent.

start = spawn ``codex app-server`` + ``initialize`` + ``thread/start``; the run is published
once the thread exists (its child id is ``"<provider name>:<thread id>"``). The prompt runs as
one turn. Live progress comes from the turn's typed item events, mapped onto the progress
vocabulary by :class:`CodexProgress`: message deltas -> text, reasoning -> thought, command
executions and file changes -> a tool call when started and its tool result (same id) when
completed, the plan -> plan, token usage -> usage, upstream ``error`` notifications -> other.

How a run ends:

- ``turn/completed`` ``completed`` -> ``completed`` with the final answer (the
  ``final_answer``-phase message when there is one);
- the signal sends ``turn/interrupt``; ``interrupted`` -> ``cancelled``;
- ``failed`` (an upstream HTTP error, for instance) -> ``failed`` (kind ``turn``) with the
  upstream message Codex reported;
- ``turn/start`` answered with an invalid-request error -> ``failed`` (kind ``prompt``);
- codex exits or the connection breaks -> ``failed`` (kind ``infrastructure``) naming the exit
  status and the stderr tail;
- ``dispose()`` of a run whose turn still runs closes codex's stdin at once (codex exits on
  EOF within tens of milliseconds, even mid-turn), then the process layer's shutdown ladder
  runs (wait, SIGTERM, SIGKILL the group), bounded; it settles the run ``cancelled``.

The signal sends ``turn/interrupt`` through the transport, which re-sends it when Codex 0.171.0
answers "no active turn to interrupt" because the turn has not really started yet.

Capabilities, advertised honestly:

- ``persona``: **on**. It becomes the thread's ``developerInstructions``, which Codex sends to
  the model as a developer message (checked in the tests against the request body the fake
  Responses API recorded).
- ``output_schema``: **on**, enforced on both sides. The schema is forwarded as the turn's
  ``outputSchema`` (Codex asks the model for strict JSON-schema output) *and* the final answer
  is parsed as JSON and validated locally with ``jsonschema``; an answer that is not JSON or
  does not conform settles ``failed`` (kind ``turn``), and a conforming one settles
  ``completed`` with the parsed object as its output. A schema that is itself invalid is
  rejected before anything starts (``INVALID_REQUEST``).
- ``depth_limit`` and ``tool_filter``: **off**. Codex's own tools cannot be filtered or its
  nesting bounded from here; the service rejects such requests before a process is spawned
  (and :meth:`CodexProvider.start` rejects them too when called directly).

Continuable: :meth:`CodexProvider.prepare_continuable` keeps the thread open and runs each
later message as a new turn; :meth:`CodexProvider.resume_continuable` starts a new process and
reopens the thread with ``thread/resume`` (it needs the same ``CODEX_HOME``: threads persist
there as rollout files).

The provider owns the runs' tasks: use it as ``async with CodexProvider(...) as provider``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Final, cast, final

import anyio
from pydantic import ValidationError

from ..protocol import codex
from ..protocol.jsonrpc import JsonValue
from ..rpc import ConnectionClosedError, RPCError
from ..transports import TurnOverflowError
from ..transports.codex_app_server import (
    CodexAgentMessageDelta,
    CodexApprovalPolicy,
    CodexConnection,
    CodexError,
    CodexItemCompleted,
    CodexItemStarted,
    CodexPlanDelta,
    CodexPlanUpdated,
    CodexReasoningDelta,
    CodexStartupError,
    CodexThread,
    CodexTokenUsage,
    CodexTurnError,
    connect_codex,
    decline_policy,
)
from ..transports.process import ProcessStartError
from ._child_run import Asker, ChildConversation, ChildProvider, ChildRun
from .contract import (
    CancelSignal,
    OtherProgress,
    PlanEntry,
    PlanEntryStatus,
    PlanProgress,
    ProgressEvent,
    SubagentCapabilities,
    SubagentOutcome,
    SubagentRequest,
    TextProgress,
    ThoughtProgress,
    ToolCallProgress,
    ToolResultProgress,
    UsageProgress,
)
from .output_schema import check_output_schema, structured_outcome
from .progress import ProgressFeed

__all__ = ("CodexConversation", "CodexProgress", "CodexProvider", "CodexRun", "run_codex_turn")

_DISPOSE_BOUND: Final = 20.0
"""Bound on waiting for a run's task (stdin closed, then the shutdown ladder) to finish."""

_EOF_GRACE: Final = 3.0
"""Seconds ``dispose()`` lets codex exit on stdin EOF before cancelling the run's task."""

_CAPABILITIES: Final = SubagentCapabilities(output_schema=True, persona=True)

_FAILURES: Final = (
    ProcessStartError,
    CodexStartupError,
    RPCError,  # CodexError included
    ConnectionClosedError,
    ValidationError,
)
"""What a start (or a live connection) can fail with."""

_INVALID_REQUEST_CODES: Final = frozenset({-32600, -32602})


def _usage(usage: CodexTokenUsage | None) -> dict[str, JsonValue] | None:
    if usage is None:
        return None
    data = cast("dict[str, JsonValue]", usage.total.model_dump(mode="json", by_alias=False))
    if usage.model_context_window is not None:
        data["model_context_window"] = usage.model_context_window
    return data


_PLAN_STATUS: Final[Mapping[str, PlanEntryStatus]] = {
    "pending": "pending",
    "inProgress": "in_progress",
    "completed": "completed",
}


def _plan(event: CodexPlanUpdated) -> PlanProgress:
    """The whole plan (``inProgress`` steps are ``in_progress``; an unknown status is
    ``pending``) and its explanation."""
    entries = tuple(
        PlanEntry(step.step, _PLAN_STATUS.get(step.status, "pending")) for step in event.steps
    )
    return PlanProgress(entries, event.explanation)


def _tool_call(item: codex.CommandExecutionItem | codex.FileChangeItem) -> ToolCallProgress:
    if isinstance(item, codex.CommandExecutionItem):
        command: dict[str, JsonValue] = {"command": item.command, "cwd": item.cwd}
        return ToolCallProgress(item.id, item.command, "execute", "in_progress", command)
    paths = ", ".join(change.path for change in item.changes)
    changes: list[JsonValue] = [
        {"path": change.path, "kind": change.kind} for change in item.changes
    ]
    return ToolCallProgress(item.id, f"edit {paths}", "edit", "in_progress", {"changes": changes})


def _tool_result(item: codex.CommandExecutionItem | codex.FileChangeItem) -> ToolResultProgress:
    """``completed`` -> completed; ``failed`` or ``declined`` -> failed. The output: a
    command's aggregated output, an applied file change's diffs (else its paths); the status
    when there is none (``declined``)."""
    done = item.status == "completed"
    if isinstance(item, codex.CommandExecutionItem):
        output = item.aggregated_output or ""
    elif done:
        output = "\n".join(change.diff or change.path for change in item.changes)
    else:
        output = ""
    if done:
        return ToolResultProgress(item.id, "completed", output)
    return ToolResultProgress(item.id, "failed", output or item.status)


def _usage_progress(usage: CodexTokenUsage) -> UsageProgress:
    """The thread's totals; the context used is the last request's total."""
    report = _usage(usage)
    if report is not None:
        report["last"] = cast("JsonValue", usage.last.model_dump(mode="json", by_alias=False))
    return UsageProgress(
        input_tokens=usage.total.input_tokens,
        output_tokens=usage.total.output_tokens,
        total_tokens=usage.total.total_tokens,
        context_used=usage.last.total_tokens,
        context_size=usage.model_context_window,
        data=report,
    )


@final
class CodexProgress:
    """Maps the transport's typed turn events onto the progress vocabulary.

    Agent message deltas -> text (``message_id``: the item; messages can interleave);
    reasoning summary and raw deltas -> thought (a reasoning item completed without deltas
    gives its text once); a command execution or file change started -> a tool call (its
    item id; ``execute`` or ``edit``) and completed -> its tool result with the same id
    (a call first seen completed is announced before its result); ``turn/plan/updated`` ->
    plan; ``thread/tokenUsage/updated`` -> usage; plan deltas (experimental upstream) and
    upstream ``error`` notifications -> other.
    """

    def __init__(self) -> None:
        self._reasoning_streamed: set[str] = set()
        self._calls: set[str] = set()

    def map(self, event: object) -> list[ProgressEvent]:
        if isinstance(event, CodexAgentMessageDelta):
            return [TextProgress(event.delta, event.item_id)]
        if isinstance(event, CodexReasoningDelta):
            self._reasoning_streamed.add(event.item_id)
            return [ThoughtProgress(event.delta, event.item_id)]
        if isinstance(event, CodexPlanUpdated):
            return [_plan(event)]
        if isinstance(event, CodexPlanDelta):
            return [OtherProgress(event.delta, {"type": "plan_delta", "item_id": event.item_id})]
        if isinstance(event, CodexItemStarted):
            return self._started(event.item)
        if isinstance(event, CodexItemCompleted):
            return self._completed(event.item)
        if isinstance(event, CodexTokenUsage):
            return [_usage_progress(event)]
        if isinstance(event, CodexTurnError):
            error: dict[str, JsonValue] = {
                "will_retry": event.will_retry,
                "codex_error_info": event.codex_error_info,
            }
            return [OtherProgress(event.message, error)]
        return []

    def _started(self, item: codex.ThreadItem) -> list[ProgressEvent]:
        if isinstance(item, codex.CommandExecutionItem | codex.FileChangeItem):
            self._calls.add(item.id)
            return [_tool_call(item)]
        return []

    def _completed(self, item: codex.ThreadItem) -> list[ProgressEvent]:
        if isinstance(item, codex.CommandExecutionItem | codex.FileChangeItem):
            events: list[ProgressEvent] = []
            if item.id not in self._calls:
                self._calls.add(item.id)
                events.append(_tool_call(item))
            events.append(_tool_result(item))
            return events
        if isinstance(item, codex.ReasoningItem):
            if item.id in self._reasoning_streamed:
                return []  # its text was already streamed as deltas
            text = "\n".join(item.summary or item.content)
            return [ThoughtProgress(text, item.id)] if text else []
        return []


async def run_codex_turn(
    thread: CodexThread,
    child_id: str,
    prompt: str,
    cancel: CancelSignal,
    feed: ProgressFeed | None = None,
    *,
    output_schema: Mapping[str, JsonValue] | None = None,
    deadline: float | None = None,
) -> SubagentOutcome:
    """Run ``prompt`` as one turn of ``thread`` and map its end to an outcome (see the module
    docstring). The signal interrupts the turn (``turn/interrupt``)."""
    if cancel.cancelled:
        return SubagentOutcome.cancelled(child_id, cancel.reason or "cancelled")
    mapper = CodexProgress()
    try:
        async with thread.turn(prompt, output_schema=output_schema, deadline=deadline) as turn:

            async def forward_cancel() -> None:
                await cancel.wait()
                # The transport re-sends an interrupt codex refuses before the turn started.
                with suppress(CodexError, ConnectionClosedError):
                    await turn.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(forward_cancel)
                with suppress(TurnOverflowError):  # result() raises it again, below
                    async for event in turn:
                        if feed is not None:
                            for progress in mapper.map(event):
                                feed.push(progress)
                tg.cancel_scope.cancel()
            result = await turn.result()
    except ConnectionClosedError as exc:
        return SubagentOutcome.failed(child_id, "infrastructure", str(exc), exc)
    except RPCError as exc:
        kind = "prompt" if exc.code in _INVALID_REQUEST_CODES else "turn"
        return SubagentOutcome.failed(child_id, kind, f"codex refused the turn: {exc}", exc)
    except TurnOverflowError as exc:
        return SubagentOutcome.failed(child_id, "turn", str(exc), exc)
    usage = _usage(result.usage)
    if result.status == "interrupted":
        reason = cancel.reason if cancel.cancelled else None
        return SubagentOutcome.cancelled(child_id, reason or "the turn was interrupted")
    if result.status == "failed":
        return SubagentOutcome.failed(child_id, "turn", result.error or "the turn failed")
    text = result.final_text or ""
    if output_schema is not None:
        return structured_outcome(child_id, text, output_schema, usage)
    return SubagentOutcome.completed(child_id, text, usage=usage)


@final
class CodexRun(ChildRun["CodexProvider"]):
    """A published Codex child: one thread, one turn."""

    _dispose_bound = _DISPOSE_BOUND
    _failures = _FAILURES

    thread_id: str = ""
    """The Codex thread's id, once published."""
    connection: CodexConnection | None = None
    """The live connection (until the run is disposed), for inspection."""

    def _child_key(self) -> str:
        return self.thread_id

    async def _stop_turn(self) -> None:
        connection = self.connection
        if connection is not None and connection.process is not None:
            # A turn runs: close stdin at once (codex exits on EOF, even mid-turn), and let
            # the run's task see the connection end and leave normally. Not cancelling its
            # scope first matters: the scope holds the connection's reader, which a turn left
            # by cancellation waits on (see the report).
            with suppress(Exception), anyio.move_on_after(1.0):
                await connection.process.stdin.aclose()
            with anyio.move_on_after(_EOF_GRACE):
                await self._finished.wait()

    def _on_task_end(self) -> None:
        self.connection = None

    async def _run(
        self, provider: CodexProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        async with provider.connect(asker=self.asker) as connection:
            self._track_process(connection.process)
            thread = await provider.open_thread(connection, persona=request.persona)
            self.thread_id = thread.id
            self.connection = connection
            self._publish()
            outcome = await run_codex_turn(
                thread,
                self.child_id,
                request.prompt,
                cancel,
                self._feed,
                output_schema=request.output_schema,
                deadline=provider.turn_deadline,
            )
            await self._conclude(outcome)


@final
class CodexConversation(ChildConversation):
    """A continuable Codex child: one thread, kept open; each :meth:`send` is a new turn.

    Cold resume (:meth:`CodexProvider.resume_continuable`) starts a new ``codex app-server``
    and reopens the thread with ``thread/resume`` (same ``CODEX_HOME``); the history is
    replayed to the model.
    """

    _dispose_bound = _DISPOSE_BOUND

    def __init__(
        self,
        provider: CodexProvider,
        resume_id: str | None,
        request: SubagentRequest | None = None,
        child_id: str | None = None,
    ) -> None:
        super().__init__(provider.name, child_id, dispose_bound=provider.dispose_timeout)
        self._provider = provider
        self._resume_id = resume_id
        self._persona = None if request is None else request.persona
        self._first_schema = None if request is None else request.output_schema
        self.thread_id = resume_id or ""

    def _child_key(self) -> str:
        return self.thread_id

    async def _converse(self) -> None:
        provider = self._provider
        async with provider.connect(asker=self.asker) as connection:
            self._track_process(connection.process)
            if self._resume_id is None:
                thread = await provider.open_thread(connection, persona=self._persona)
            else:
                thread = await provider.open_thread(connection, resume=self._resume_id)
            self.thread_id = thread.id

            async def turn(
                message: str, cancel: CancelSignal, feed: ProgressFeed
            ) -> SubagentOutcome:
                schema, self._first_schema = self._first_schema, None
                return await run_codex_turn(
                    thread,
                    self.child_id,
                    message,
                    cancel,
                    feed,
                    output_schema=schema,
                    deadline=provider.turn_deadline,
                )

            await self._serve(turn)

    def _not_opened(self) -> str:
        return f"codex {self._provider.command[0]!r} did not open the thread"


@final
class CodexProvider(ChildProvider):
    """Runs children as ``codex app-server`` processes of ``command``.

    ``command`` is the whole argv (``[codex, "app-server", "--listen", "stdio://"]``).
    ``env``/``inherit_env``: the child's environment (a clean base plus ``env``; the parent's
    whole environment only with ``inherit_env=True``). ``cwd``, ``model``, ``sandbox``
    (kebab-case), ``approval_mode`` (Codex's ``approvalPolicy``: when it asks) and ``config``
    (free-form config overrides) go to ``thread/start`` (``None``: the ``config.toml``
    default). ``approval_policy`` answers Codex's approval requests (default: decline).
    ``startup_timeout`` bounds spawn + ``initialize``; ``turn_deadline`` (seconds) makes a turn
    whose ``turn/completed`` never comes fail after being reconciled through ``thread/read``.
    """

    _what = "CodexProvider"

    def __init__(
        self,
        command: Sequence[str],
        *,
        name: str = "codex",
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        model: str | None = None,
        sandbox: codex.SandboxMode | None = None,
        approval_mode: codex.ApprovalPolicyName | None = None,
        approval_policy: CodexApprovalPolicy = decline_policy,
        config: Mapping[str, JsonValue] | None = None,
        startup_timeout: float = 30.0,
        turn_deadline: float | None = None,
        progress_capacity: int = 256,
        dispose_timeout: float | None = None,
    ) -> None:
        if not command:
            raise ValueError("empty codex command")
        super().__init__(name, dispose_timeout=dispose_timeout)
        self.command = list(command)
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.inherit_env = inherit_env
        self.model = model
        self.sandbox: codex.SandboxMode | None = sandbox
        self.approval_mode: codex.ApprovalPolicyName | None = approval_mode
        self.approval_policy = approval_policy
        self.config = dict(config) if config is not None else None
        self.startup_timeout = startup_timeout
        self.turn_deadline = turn_deadline
        self._progress_capacity = progress_capacity

    @property
    def capabilities(self) -> SubagentCapabilities:
        return _CAPABILITIES

    @asynccontextmanager
    async def connect(self, *, asker: Asker | None = None) -> AsyncGenerator[CodexConnection, None]:
        """Spawn codex and ``initialize`` it; on exit stdin is closed, then the ladder.
        ``asker`` says which child the connection serves (a
        :class:`~subagents.providers.RunAware` approval policy is told)."""
        async with connect_codex(
            self.command,
            env=self.env,
            inherit_env=self.inherit_env,
            cwd=self.cwd,
            approval_policy=self._policy_for(self.approval_policy, asker),
            startup_timeout=self.startup_timeout,
            name=self._name,
        ) as connection:
            yield connection

    async def open_thread(
        self,
        connection: CodexConnection,
        *,
        persona: str | None = None,
        resume: str | None = None,
    ) -> CodexThread:
        """``thread/start`` (or ``thread/resume`` of ``resume``) with this provider's options."""
        cwd = self.cwd if self.cwd is not None else os.getcwd()
        if resume is not None:
            return await connection.resume_thread(
                resume,
                cwd=cwd,
                model=self.model,
                sandbox=self.sandbox,
                approval_policy=self.approval_mode,
                config=self.config,
            )
        return await connection.start_thread(
            cwd=cwd,
            model=self.model,
            sandbox=self.sandbox,
            approval_policy=self.approval_mode,
            developer_instructions=persona,
            config=self.config,
        )

    def _check(self, request: SubagentRequest, cancel: CancelSignal) -> None:
        self._check_request(request, cancel)
        if request.output_schema is not None:
            check_output_schema(request.output_schema, provider=self._name)

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> CodexRun:
        self._check(request, cancel)
        run = self._new_run(CodexRun, request)
        return await self._start_run(run, request, cancel, what=f"codex {self.command[0]!r}")

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> CodexConversation:
        """Start a child whose thread stays open; ``request`` is its first turn (its outcome
        is ``conversation.outcomes[0]``)."""
        self._check(request, cancel)
        child_id = self._child_id(request)
        conversation = await self._open_conversation(
            lambda: CodexConversation(self, None, request, child_id), cancel
        )
        await conversation.send(request.prompt, cancel=cancel)
        return conversation

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> CodexConversation:
        """Cold-resume thread ``remote_id`` (or the child of that id this provider started) in
        a new codex process with ``thread/resume`` (the thread must be in this provider's
        ``CODEX_HOME``)."""
        self._check(SubagentRequest(""), cancel)
        child, thread_id = self._resume_ids(remote_id, child_id)
        return await self._open_conversation(
            lambda: CodexConversation(self, thread_id, None, child), cancel
        )
