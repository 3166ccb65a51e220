"""``ForkProvider``: an in-process child seeded with its parent's history.

The child's session starts with the **balanced prefix** of the parent's log: completed turns
only, in order (the turns that ended ``completed``, and the parent's own seed when it is a
fork itself). Cancelled and failed turns are left out, and so is the turn in flight (whose
delegation call has no result yet, so it cannot be replayed as history); every tool call in
the prefix has its result, and the roles alternate as every model adapter expects
(:func:`subagents.harness.session.balanced_prefix`). The request must name the parent
(``parent_session``, which the subagent tool sets) and the parent must be a session of the
same runtime; otherwise the start is refused (``INVALID_REQUEST``). The other rules are those
of every in-process child (:mod:`subagents.providers._in_process`): among them, what a child's
own code raises, even ``KeyboardInterrupt`` or ``SystemExit``, fails that run only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import final

from ..harness.llm.types import Message
from ..harness.runtime import AgentRuntime
from ..harness.session import Session
from ._in_process import InProcessProvider
from .contract import SubagentError, SubagentErrorCode, SubagentRequest

__all__ = ("ForkProvider",)


@final
class ForkProvider(InProcessProvider):
    """Children start with the parent's completed turns as their history."""

    _what = "ForkProvider"
    tool_description = (
        "Delegate a task to a subagent that starts from a copy of this conversation (its "
        "completed turns) and get its final answer. It already knows the context: say what "
        "to do. Its work does not enter this conversation, only its answer."
    )
    """What a :class:`~subagents.harness.subagent_tool.SubagentTool` bound to a fork provider
    tells the model by default (the child does see the conversation)."""

    def __init__(
        self,
        runtime: AgentRuntime,
        *,
        name: str = "fork",
        progress_capacity: int = 256,
        dispose_timeout: float | None = None,
    ) -> None:
        super().__init__(
            runtime,
            name=name,
            progress_capacity=progress_capacity,
            dispose_timeout=dispose_timeout,
        )

    def _seed(self, parent: Session | None, request: SubagentRequest) -> Sequence[Message] | None:
        if parent is None:
            what = (
                "names no parent session"
                if request.parent_session is None
                else f"names parent session {request.parent_session!r}, which this runtime "
                "does not have"
            )
            raise SubagentError(
                SubagentErrorCode.INVALID_REQUEST,
                f"a fork needs its parent's history, but the request {what}",
                provider=self._name,
            )
        return parent.balanced_prefix()
