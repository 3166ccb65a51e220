"""A scripted model for tests: canned answers, streamed like a real one, cancellable.

::

    model = ScriptedAdapter([
        ModelResponse("", (ToolCall("c1", "Bash", {"command": "ls"}),), "tool_use"),
        lambda request: ModelResponse(f"saw {len(request.messages)} messages"),
    ])

Each call takes the next step of the script: a :class:`ModelResponse` is the answer, a
callable computes it from the request, an :class:`LlmError` is raised. Built from a single
callable instead of a list, the adapter answers every call with it and never runs out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TypeAlias, final

import anyio
import anyio.lowlevel

from ...cancel import CancelSignal
from .types import LlmCancelled, LlmError, ModelRequest, ModelResponse, TextCallback

__all__ = ("Responder", "ScriptStep", "ScriptedAdapter")

Responder: TypeAlias = Callable[[ModelRequest], ModelResponse]
ScriptStep: TypeAlias = ModelResponse | LlmError | Responder


def _split(text: str, parts: int) -> list[str]:
    """``text`` in at most ``parts`` non-empty pieces of about the same size."""
    if not text:
        return []
    count = max(1, min(parts, len(text)))
    size, extra = divmod(len(text), count)
    pieces: list[str] = []
    start = 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


@final
class ScriptedAdapter:
    """An :class:`~.types.LlmAdapter` that plays a script (see the module documentation).

    Every request is recorded in :attr:`requests` (cancelled ones included, which use up
    their step). The answer's text goes to ``on_text`` in up to ``chunks`` pieces, ``delay``
    seconds apart (``0``: just a checkpoint), so cancellation mid-stream can be tested: when
    ``cancel`` fires, :meth:`complete` raises :class:`LlmCancelled`. A script that has run out
    raises :class:`LlmError` ``config``.
    """

    def __init__(
        self,
        script: Iterable[ScriptStep] | Responder = (),
        *,
        chunks: int = 3,
        delay: float = 0.0,
        name: str = "scripted",
    ) -> None:
        if chunks < 1:
            raise ValueError("chunks must be >= 1")
        self._responder: Responder | None = None
        self._steps: deque[ScriptStep] = deque()
        if callable(script):
            self._responder = script
        else:
            self._steps.extend(script)
        self.chunks = chunks
        self.delay = delay
        self.name = name
        self.requests: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        """Steps left in the script (``0`` for a single-callable adapter, which never runs
        out)."""
        return len(self._steps)

    def add(self, *steps: ScriptStep) -> None:
        """Append steps to the script."""
        self._steps.extend(steps)

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        """Record ``request``, take the next step, stream its text, return it."""
        self.requests.append(request)
        with cancel.linked_scope() as scope:
            step = self._next_step(len(self.requests))
            response = step if isinstance(step, ModelResponse) else step(request)
            for piece in _split(response.text, self.chunks):
                if self.delay > 0:
                    await anyio.sleep(self.delay)
                else:
                    await anyio.lowlevel.checkpoint()
                if on_text is not None:
                    on_text(piece)
            await anyio.lowlevel.checkpoint()
            return response
        # Only the signal's cancellation gets here; an enclosing scope's, if any, wins.
        assert scope.cancelled_caught
        await anyio.lowlevel.checkpoint_if_cancelled()
        raise LlmCancelled(cancel.reason or "cancelled")

    def _next_step(self, number: int) -> ModelResponse | Responder:
        if self._responder is not None:
            return self._responder
        if not self._steps:
            raise LlmError(
                "config",
                f"{self.name}: the script ran out: request #{number} has no scripted answer",
            )
        step = self._steps.popleft()
        if isinstance(step, LlmError):
            raise step
        return step
