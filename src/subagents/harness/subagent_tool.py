"""``SubagentTool``: the model-facing consumer of the seam, bound to one provider.

The model sees only ``{description, prompt}``. The tool passes its execution signal to
``start()``, awaits the child's result, disposes the run before reporting, and turns every
outcome that is not ``completed`` into an error result (never partial output presented as
success). When both the result and the disposal fail, both diagnostics survive. To expose two
transports, register two tools bound to different providers under distinct names.

Progress: called through ``execute_with_progress`` (it is a
:class:`~subagents.harness.tools.ProgressReportingTool`), the tool reads the child's
``run.progress()`` while awaiting its result and passes each event on at once to the
callback; the agent loop relays them to its own listener as ``ChildProgress`` of the
delegation's tool call. The child never waits for that: its feed is bounded (the oldest
events are dropped when the parent lags) and the callback is synchronous. The events the
child pushed before it settled are passed on before the tool returns (a feed that does not
end when its run settles is read for at most :data:`PROGRESS_DRAIN` seconds more).

The tool's description is the caller's, else the bound provider's ``tool_description``
attribute when it has one (``ForkProvider`` says the child starts from this conversation),
else :data:`DEFAULT_DESCRIPTION` (the child sees nothing but the prompt).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Final, final

import anyio

from ..cancel import CancelSignal
from ..protocol.jsonrpc import JsonValue
from ..providers.contract import (
    SubagentError,
    SubagentOutcome,
    SubagentRequest,
    SubagentRun,
    child_id_of,
)
from ..providers.service import SubagentService
from .arguments import argument_problems
from .tools import ToolProgressCallback, ToolResult, ToolSpec

__all__ = ("DEFAULT_DESCRIPTION", "PROGRESS_DRAIN", "SUBAGENT_INPUT_SCHEMA", "SubagentTool")

logger = logging.getLogger(__name__)

PROGRESS_DRAIN: Final = 1.0
"""Seconds the tool keeps reading a settled child's progress feed that has not ended (a
conforming feed ends when its run settles, so this is only a bound)."""

SUBAGENT_INPUT_SCHEMA: Final[Mapping[str, JsonValue]] = {
    "type": "object",
    "properties": {
        "description": {
            "type": "string",
            "description": "A short (3-5 word) label for the delegated task.",
        },
        "prompt": {
            "type": "string",
            "description": "The complete task for the subagent, with all the context it needs.",
        },
    },
    "required": ["description", "prompt"],
    "additionalProperties": False,
}


DEFAULT_DESCRIPTION: Final = (
    "Delegate a self-contained task to a subagent and get its final answer. "
    "The subagent does not see this conversation: put everything it needs in the prompt."
)
"""What the model is told when neither the caller nor the provider says otherwise."""


def _default_description(service: SubagentService, provider: str) -> str:
    """The provider's own ``tool_description`` (a fork's child does see the conversation),
    else :data:`DEFAULT_DESCRIPTION`."""
    try:
        bound = service.provider(provider)
    except SubagentError:
        return DEFAULT_DESCRIPTION
    own: object = getattr(bound, "tool_description", None)
    return own if isinstance(own, str) and own else DEFAULT_DESCRIPTION


@final
class SubagentTool:
    """Delegates a task to a subagent through one named provider of a service."""

    def __init__(
        self,
        service: SubagentService,
        provider: str,
        *,
        name: str = "subagent",
        description: str | None = None,
        parent_session: str | None = None,
    ) -> None:
        self._service = service
        self.provider = provider
        """The one provider this tool is bound to (not a parameter the model can choose)."""
        self._parent_session = parent_session
        self._spec = ToolSpec(
            name, description or _default_description(service, provider), SUBAGENT_INPUT_SCHEMA
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        return await self._delegate(arguments, cancel, None)

    async def execute_with_progress(
        self,
        arguments: Mapping[str, JsonValue],
        *,
        cancel: CancelSignal,
        on_progress: ToolProgressCallback,
    ) -> ToolResult:
        """``execute``, passing the child's progress events to ``on_progress`` while it runs."""
        return await self._delegate(arguments, cancel, on_progress)

    async def _delegate(
        self,
        arguments: Mapping[str, JsonValue],
        cancel: CancelSignal,
        on_progress: ToolProgressCallback | None,
    ) -> ToolResult:
        problem = argument_problems(self._spec, arguments)
        if problem is not None:  # also when called directly, not through the agent loop
            return ToolResult.error(problem)
        description = arguments.get("description")
        prompt = arguments.get("prompt")
        extra = sorted(set(arguments) - {"description", "prompt"})
        if not isinstance(prompt, str) or not isinstance(description, str) or extra:
            return ToolResult.error(
                "invalid arguments: expected {description: string, prompt: string}"
                + (f"; unexpected: {', '.join(extra)}" if extra else "")
            )
        request = SubagentRequest(
            prompt, description=description, parent_session=self._parent_session
        )
        try:
            run = await self._service.start(self.provider, request, cancel=cancel)
        except SubagentError as exc:
            return ToolResult.error(f"subagent could not start: {exc.message}", exc.code.value)
        outcome: SubagentOutcome | None = None
        result_error: Exception | None = None
        dispose_error: Exception | None = None
        try:
            outcome = await _result(run, on_progress)
        except Exception as exc:
            result_error = exc
        finally:
            try:
                await run.dispose()
            except Exception as exc:
                dispose_error = exc
        if result_error is not None and dispose_error is not None:
            raise ExceptionGroup(
                f"subagent {child_id_of(run)}: both the result and the disposal failed",
                [result_error, dispose_error],
            )
        if result_error is not None:
            raise result_error
        assert outcome is not None
        note = (
            f" (disposal also failed: {type(dispose_error).__name__}: {dispose_error})"
            if dispose_error is not None
            else ""
        )
        data: JsonValue = {"childId": outcome.child_id, "status": outcome.status}
        if outcome.status == "completed":
            if dispose_error is not None:
                return ToolResult.error(
                    f"subagent {outcome.child_id} completed but its disposal failed: "
                    f"{type(dispose_error).__name__}: {dispose_error}",
                    data,
                )
            output = outcome.output
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            return ToolResult(text, data=data)
        kind = f" ({outcome.failure_kind})" if outcome.failure_kind else ""
        partial = outcome.partial_output
        shown = f"\n\nWhat it wrote before it ended:\n{partial}" if partial else ""
        return ToolResult.error(
            f"subagent {outcome.child_id} {outcome.status}{kind}: {outcome.message}{note}{shown}",
            data,
        )


async def _result(run: SubagentRun, on_progress: ToolProgressCallback | None) -> SubagentOutcome:
    """``run.result()``; meanwhile the run's progress events go to ``on_progress``."""
    feed = run.progress() if on_progress is not None else None
    if feed is None or on_progress is None:
        return await run.result()
    done = anyio.Event()
    outcome: SubagentOutcome | None = None
    failure: Exception | None = None

    async def forward() -> None:
        try:
            async for event in feed:
                try:
                    on_progress(event)
                except Exception:  # the listener's bug must not fail the delegation
                    logger.exception("subagent %s: a progress listener failed", child_id_of(run))
                    return
        finally:
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(forward)
        try:
            outcome = await run.result()
        except Exception as exc:  # raised as is below, not in an ExceptionGroup
            failure = exc
        with anyio.move_on_after(PROGRESS_DRAIN):
            await done.wait()
        tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    assert outcome is not None
    return outcome
