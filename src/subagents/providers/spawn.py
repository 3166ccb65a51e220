"""``SpawnProvider``: a fresh in-process child (an empty session of its own).

The rules every in-process child follows (limits, persona, output schema, outcomes, the
parent's log, continuation) are in :mod:`subagents.providers._in_process`. Use it as
``async with SpawnProvider(runtime) as spawn``; it owns its children's tasks.

What a child's own code raises, even a ``BaseException`` such as ``KeyboardInterrupt`` or
``SystemExit`` (the child's code raised it: a user's Ctrl-C is the event loop's), fails that
run only (``failed``, ``infrastructure``, the cause kept); its siblings and the provider go
on, and a real cancellation passes through (:mod:`subagents.providers._in_process`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import final

from ..harness.llm.types import Message
from ..harness.runtime import AgentRuntime
from ..harness.session import Session
from ._in_process import InProcessProvider
from .contract import SubagentRequest

__all__ = ("SpawnProvider",)


@final
class SpawnProvider(InProcessProvider):
    """Children start with an empty history: only the prompt (and their system prompt)."""

    _what = "SpawnProvider"

    def __init__(
        self,
        runtime: AgentRuntime,
        *,
        name: str = "spawn",
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
        return None
