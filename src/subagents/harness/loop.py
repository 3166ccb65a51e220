"""``AgentLoop``: model <-> tools until the model stops, the step limit, or the signal.

One turn::

    turn_start, user(prompt)
    repeat (at most ``max_steps`` model calls):
        the model gets the session's whole conversation, the system prompt and the tools
        assistant(text), tool_call ... (as the model answered)
        no tool calls -> turn_end(completed); the answer is the text
        each tool call runs, in order, with the turn's signal -> tool_result
    turn_end(failed) when the step limit is reached

Everything is logged to the session as it happens. The signal is honoured at every await:
a model call stops mid-stream (the adapter raises ``LlmCancelled``), a tool gets the signal
and its result is logged, calls not yet started get an error result ("cancelled before it
ran"), and the turn ends ``cancelled``. So every tool call in the log has its result before
``turn_end``, also when the turn is cancelled from outside (an enclosing cancel scope): the
log stays balanced, which is what a fork's seed relies on.

A call's arguments are checked against the tool's input schema before it runs (see
:mod:`~subagents.harness.arguments`): a call that does not match gets an error result naming
what is wrong (a missing required field, a wrong type and where, an unknown field), the tool
does not run, and the turn goes on, so the model can correct itself.

Tool failures never end the turn: an exception becomes an error result the model sees (the
one place where tool exceptions turn into results). Model failures (``LlmError``) end it
``failed`` with the adapter's message.

Progress (``on_progress``, synchronous: it must not block) speaks the run contract's
vocabulary: streamed model text -> :class:`~subagents.providers.contract.TextProgress`; each
tool call -> a ``ToolCallProgress`` (the call's id, the tool's name as title, its arguments
as input) and its result -> a ``ToolResultProgress`` with the same id; the turn's token
counts so far after each model call -> ``UsageProgress``.

A tool's own progress reaches it through an explicit, optional channel: a tool that can
report progress implements :class:`~subagents.harness.tools.ProgressReportingTool`
(``execute_with_progress(arguments, cancel=..., on_progress=...)``, detected by the method's
presence, the way a continuable provider is). When someone listens, the loop calls it with a
callback that relays each event as ``ChildProgress(tool_call_id=<the call's id>, event=...)``;
every other tool (and every tool when nobody listens) runs through plain ``execute``. So
existing tools keep their signature, nothing is inferred from a signature, and a child's
events never mix with the turn's own (its text is not the parent's text). The subagent tool
relays its child's events this way while the child runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Final, final

from .._cancellation import is_real_cancellation
from .._exception_groups import first_leaf
from ..cancel import CancelSignal
from ..protocol.jsonrpc import JsonValue
from ..providers.contract import (
    ChildProgress,
    ProgressEvent,
    TextProgress,
    ToolCallProgress,
    ToolResultProgress,
    UsageProgress,
)
from .arguments import argument_problems
from .llm.types import LlmAdapter, LlmCancelled, LlmError, ModelRequest, ToolCall
from .session import Session, SessionEvent, TurnStatus
from .tools import ProgressReportingTool, ToolError, ToolRegistry, ToolResult

__all__ = ("DEFAULT_MAX_STEPS", "AgentLoop", "ProgressCallback", "TurnOutcome")

DEFAULT_MAX_STEPS: Final = 32

ProgressCallback = Callable[[ProgressEvent], None]


def _usage_progress(usage: Mapping[str, int]) -> UsageProgress:
    """The turn's token counts so far (the adapters' ``input_tokens`` / ``output_tokens``)."""
    inputs = usage.get("input_tokens")
    outputs = usage.get("output_tokens")
    total = inputs + outputs if inputs is not None and outputs is not None else None
    return UsageProgress(
        input_tokens=inputs, output_tokens=outputs, total_tokens=total, data=dict(usage)
    )


@final
@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended: ``text`` is the final answer when ``completed``; ``message`` says why
    otherwise."""

    status: TurnStatus
    text: str = ""
    message: str = ""
    steps: int = 0
    usage: Mapping[str, int] = field(default_factory=dict[str, int])


@final
class AgentLoop:
    """Runs turns of a session against ``adapter`` with the tools of ``tools``."""

    def __init__(
        self,
        adapter: LlmAdapter,
        tools: ToolRegistry,
        *,
        system: str | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.adapter = adapter
        self.tools = tools
        self.system = system
        self.model = model
        self.max_tokens = max_tokens
        self.max_steps = max_steps

    async def run_turn(
        self,
        session: Session,
        prompt: str,
        *,
        cancel: CancelSignal,
        on_progress: ProgressCallback | None = None,
    ) -> TurnOutcome:
        """Run one turn of ``session`` for ``prompt`` (see the module docstring)."""
        turn = _Turn(self, session, cancel, on_progress)
        return await turn.run(prompt)


class _Turn:
    def __init__(
        self,
        loop: AgentLoop,
        session: Session,
        cancel: CancelSignal,
        on_progress: ProgressCallback | None,
    ) -> None:
        self.loop = loop
        self.session = session
        self.cancel = cancel
        self.on_progress = on_progress
        self.usage: dict[str, int] = {}
        self.steps = 0
        self.open_calls: list[ToolCall] = []

    def _progress(self, event: ProgressEvent) -> None:
        if self.on_progress is not None:
            self.on_progress(event)

    def _end(self, status: TurnStatus, text: str = "", message: str = "") -> TurnOutcome:
        for call in self.open_calls:
            self.session.append(
                SessionEvent(
                    "tool_result", "cancelled before it ran", call_id=call.id, is_error=True
                )
            )
        self.open_calls = []
        self.session.append(SessionEvent("turn_end", message, status=status))
        return TurnOutcome(status, text, message, self.steps, dict(self.usage))

    def _cancelled(self) -> TurnOutcome:
        return self._end("cancelled", message=self.cancel.reason or "cancelled")

    async def run(self, prompt: str) -> TurnOutcome:
        session = self.session
        session.append(SessionEvent("turn_start"))
        session.append(SessionEvent("user", prompt))
        try:
            return await self._steps()
        except BaseException as exc:
            # Cancelled from outside, or an unexpected error (an adapter's bug, a full disk, a
            # BaseException or a stray cancel raised by the adapter or a tool): keep the log
            # balanced (no await) when it can still be written, and re-raise (the provider
            # settles the run failed, naming the error).
            if not session.events or session.events[-1].kind != "turn_end":
                if is_real_cancellation(exc):
                    status: TurnStatus = "cancelled"
                    message = "the turn was cancelled"
                else:
                    status = "failed"
                    message = f"unexpected {type(first_leaf(exc)).__name__}: {first_leaf(exc)}"
                with suppress(Exception):
                    self._end(status, message=message)
            raise

    async def _steps(self) -> TurnOutcome:
        loop = self.loop
        while self.steps < loop.max_steps:
            if self.cancel.cancelled:
                return self._cancelled()
            self.steps += 1
            request = ModelRequest(
                self.session.messages(),
                loop.system,
                loop.tools.specs(),
                loop.model,
                loop.max_tokens,
            )
            try:
                response = await loop.adapter.complete(
                    request,
                    cancel=self.cancel,
                    on_text=lambda text: self._progress(TextProgress(text)),
                )
            except LlmCancelled:
                return self._cancelled()
            except LlmError as exc:
                return self._end("failed", message=f"the model call failed: {exc.message}")
            for name, count in response.usage.items():
                self.usage[name] = self.usage.get(name, 0) + count
            if response.usage:
                self._progress(_usage_progress(self.usage))
            self.session.append(SessionEvent("assistant", response.text))
            for call in response.tool_calls:
                self.session.append(SessionEvent("tool_call", call=call))
            self.open_calls = list(response.tool_calls)
            if not response.tool_calls:
                return self._end("completed", text=response.text)
            while self.open_calls:
                if self.cancel.cancelled:
                    return self._cancelled()
                call = self.open_calls[0]
                result = await self._call(call)
                self.open_calls.pop(0)
                self.session.append(
                    SessionEvent(
                        "tool_result", result.content, call_id=call.id, is_error=result.is_error
                    )
                )
                status = "failed" if result.is_error else "completed"
                self._progress(ToolResultProgress(call.id, status, result.content))
            if self.cancel.cancelled:
                return self._cancelled()
        return self._end("failed", message=f"the step limit ({loop.max_steps}) was reached")

    async def _call(self, call: ToolCall) -> ToolResult:
        arguments: dict[str, JsonValue] = dict(call.arguments)
        self._progress(ToolCallProgress(call.id, call.name, "other", "in_progress", arguments))
        try:
            tool = self.loop.tools.get(call.name)
        except ToolError as exc:
            return ToolResult.error(str(exc))
        try:
            problem = argument_problems(tool.spec, call.arguments)
            if problem is not None:  # the tool does not run; the model sees what to fix
                return ToolResult.error(problem)
            if self.on_progress is not None and isinstance(tool, ProgressReportingTool):

                def relay(event: ProgressEvent) -> None:
                    self._progress(ChildProgress(call.id, event))

                return await tool.execute_with_progress(
                    call.arguments, cancel=self.cancel, on_progress=relay
                )
            return await tool.execute(call.arguments, cancel=self.cancel)
        except Exception as exc:  # a tool's failure is the model's to see, not the turn's end
            return ToolResult.error(f"the tool {call.name!r} failed: {type(exc).__name__}: {exc}")
