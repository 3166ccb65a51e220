"""``CodexProvider``: OpenAI Codex (``codex app-server``) as a subagent.

start = spawn ``codex app-server`` + ``initialize`` + ``thread/start``; the run is published
once the thread exists (its child id is ``"<provider name>:<thread id>"``). The prompt runs as
one turn. Live progress comes from the turn's typed item events: agent message deltas ->
``text`` (``data["item_id"]`` names the message: messages can interleave), reasoning summary
and raw deltas -> ``thought`` (``item_id``, ``part`` and ``index`` in ``data``; a reasoning
item completed without deltas gives its summary once), command executions and file changes
(started and completed) -> ``tool_call``, ``turn/plan/updated`` -> ``plan`` (one
``[status] step`` line per step, the steps in ``data``), plan deltas -> ``plan``, upstream
``error`` notifications -> ``other``.

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
from ..transports.codex_app_server import (
    AgentMessageDelta,
    ApprovalPolicy,
    CodexConnection,
    CodexError,
    CodexStartupError,
    CodexThread,
    ItemCompleted,
    ItemStarted,
    PlanDelta,
    PlanUpdated,
    ReasoningDelta,
    TokenUsage,
    TurnError,
    connect_codex,
    decline_policy,
)
from ..transports.process import ProcessStartError
from ._child_run import ChildConversation, ChildProvider, ChildRun
from .contract import (
    CancelSignal,
    ProgressEvent,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
)
from .output_schema import check_output_schema, structured_outcome
from .progress import ProgressFeed

__all__ = ("CodexConversation", "CodexProvider", "CodexRun", "run_codex_turn")

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


def _usage(usage: TokenUsage | None) -> dict[str, JsonValue] | None:
    if usage is None:
        return None
    data = cast("dict[str, JsonValue]", usage.total.model_dump(mode="json", by_alias=False))
    if usage.model_context_window is not None:
        data["model_context_window"] = usage.model_context_window
    return data


def _item_data(item: codex.ThreadItem, phase: str) -> dict[str, JsonValue]:
    data = cast("dict[str, JsonValue]", item.model_dump(mode="json", by_alias=True))
    data["event"] = phase
    return data


def _plan(event: PlanUpdated) -> ProgressEvent:
    """The whole plan as text, one ``[status] step`` line per step (the explanation first),
    and as data (``explanation``, ``plan``: the steps as sent)."""
    lines = [f"[{step.status}] {step.step}" for step in event.steps]
    if event.explanation:
        lines.insert(0, event.explanation)
    steps = cast("list[JsonValue]", [step.model_dump(mode="json") for step in event.steps])
    data: dict[str, JsonValue] = {"explanation": event.explanation, "plan": steps}
    return ProgressEvent("plan", "\n".join(lines), data)


@final
class _ProgressMapper:
    """Turns the transport's typed turn events into contract progress events."""

    def __init__(self) -> None:
        self._reasoning_streamed: set[str] = set()

    def map(self, event: object) -> ProgressEvent | None:
        if isinstance(event, AgentMessageDelta):
            return ProgressEvent("text", event.delta, {"item_id": event.item_id})
        if isinstance(event, ReasoningDelta):
            self._reasoning_streamed.add(event.item_id)
            data: dict[str, JsonValue] = {
                "item_id": event.item_id,
                "part": event.kind,
                "index": event.index,
            }
            return ProgressEvent("thought", event.delta, data)
        if isinstance(event, PlanUpdated):
            return _plan(event)
        if isinstance(event, PlanDelta):
            return ProgressEvent("plan", event.delta, {"item_id": event.item_id})
        if isinstance(event, ItemStarted | ItemCompleted):
            phase = "started" if isinstance(event, ItemStarted) else "completed"
            return self._item(event.item, phase)
        if isinstance(event, TurnError):
            error: dict[str, JsonValue] = {
                "will_retry": event.will_retry,
                "codex_error_info": event.codex_error_info,
            }
            return ProgressEvent("other", event.message, error)
        return None

    def _item(self, item: codex.ThreadItem, phase: str) -> ProgressEvent | None:
        if isinstance(item, codex.CommandExecutionItem):
            return ProgressEvent("tool_call", item.command, _item_data(item, phase))
        if isinstance(item, codex.FileChangeItem):
            paths = ", ".join(change.path for change in item.changes)
            return ProgressEvent("tool_call", f"edit {paths}", _item_data(item, phase))
        if isinstance(item, codex.ReasoningItem) and phase == "completed":
            if item.id in self._reasoning_streamed:
                return None  # its text was already streamed as deltas
            text = "\n".join(item.summary or item.content)
            return ProgressEvent("thought", text, {"item_id": item.id}) if text else None
        return None


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
    mapper = _ProgressMapper()
    try:
        async with thread.turn(prompt, output_schema=output_schema, deadline=deadline) as turn:

            async def forward_cancel() -> None:
                await cancel.wait()
                # The transport re-sends an interrupt codex refuses before the turn started.
                with suppress(CodexError, ConnectionClosedError):
                    await turn.interrupt()

            async with anyio.create_task_group() as tg:
                tg.start_soon(forward_cancel)
                async for event in turn:
                    progress = mapper.map(event)
                    if progress is not None and feed is not None:
                        feed.push(progress)
                tg.cancel_scope.cancel()
            result = await turn.result()
    except ConnectionClosedError as exc:
        return SubagentOutcome.failed(child_id, "infrastructure", str(exc), exc)
    except RPCError as exc:
        kind = "prompt" if exc.code in _INVALID_REQUEST_CODES else "turn"
        return SubagentOutcome.failed(child_id, kind, f"codex refused the turn: {exc}", exc)
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

    def __init__(self, provider: str, progress_capacity: int) -> None:
        super().__init__(provider, progress_capacity)
        self.thread_id = ""
        self.connection: CodexConnection | None = None
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
        async with provider.connect() as connection:
            thread = await provider.open_thread(connection, persona=request.persona)
            self.thread_id = thread.id
            self.connection = connection
            self._publish()
            outcome = await run_codex_turn(
                thread,
                self.id,
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
    ) -> None:
        super().__init__(provider.name)
        self._provider = provider
        self._resume_id = resume_id
        self._persona = None if request is None else request.persona
        self._first_schema = None if request is None else request.output_schema
        self.thread_id = resume_id or ""

    def _child_key(self) -> str:
        return self.thread_id

    async def _converse(self) -> None:
        provider = self._provider
        async with provider.connect() as connection:
            if self._resume_id is None:
                thread = await provider.open_thread(connection, persona=self._persona)
            else:
                thread = await provider.open_thread(connection, resume=self._resume_id)
            self.thread_id = thread.id

            async def turn(message: str, cancel: CancelSignal) -> SubagentOutcome:
                schema, self._first_schema = self._first_schema, None
                return await run_codex_turn(
                    thread,
                    self.id,
                    message,
                    cancel,
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
        approval_policy: ApprovalPolicy = decline_policy,
        config: Mapping[str, JsonValue] | None = None,
        startup_timeout: float = 30.0,
        turn_deadline: float | None = None,
        progress_capacity: int = 256,
    ) -> None:
        if not command:
            raise ValueError("empty codex command")
        super().__init__(name)
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
    async def connect(self) -> AsyncGenerator[CodexConnection, None]:
        """Spawn codex and ``initialize`` it; on exit stdin is closed, then the ladder."""
        async with connect_codex(
            self.command,
            env=self.env,
            inherit_env=self.inherit_env,
            cwd=self.cwd,
            approval_policy=self.approval_policy,
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
        self._check_open()
        for feature in request.requested_features():
            if not _CAPABILITIES.supports(feature):
                raise SubagentError(
                    SubagentErrorCode.UNSUPPORTED_CAPABILITY,
                    f"the codex provider cannot enforce {feature!r}",
                    provider=self._name,
                    feature=feature,
                )
        if request.output_schema is not None:
            check_output_schema(request.output_schema, provider=self._name)
        self._check_not_cancelled(cancel)

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> CodexRun:
        self._check(request, cancel)
        run = CodexRun(self._name, self._progress_capacity)
        return await self._start_run(run, request, cancel, what=f"codex {self.command[0]!r}")

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> CodexConversation:
        """Start a child whose thread stays open; ``request`` is its first turn (its outcome
        is ``conversation.outcomes[0]``)."""
        self._check(request, cancel)
        conversation = await self._open_conversation(
            lambda: CodexConversation(self, None, request), cancel
        )
        await conversation.send(request.prompt, cancel=cancel)
        return conversation

    async def resume_continuable(self, child_id: str, *, cancel: CancelSignal) -> CodexConversation:
        """Cold-resume ``child_id`` (``"<provider>:<threadId>"``) in a new codex process with
        ``thread/resume`` (the thread must be in this provider's ``CODEX_HOME``)."""
        self._check(SubagentRequest(""), cancel)
        prefix = f"{self._name}:"
        thread_id = child_id[len(prefix) :] if child_id.startswith(prefix) else child_id
        return await self._open_conversation(lambda: CodexConversation(self, thread_id), cancel)
