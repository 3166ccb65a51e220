"""Fault injection for the provider kit's ``crashing`` scenario: a bug inside one run.

:func:`faulty_progress` makes the runs of ``run_class`` whose request's description is
:data:`FAULT` raise a plain ``RuntimeError`` from their progress feed the first time the
provider's own event mapping pushes an event: an unexpected exception deep inside the
provider's turn (the real transport and the real child keep running), in that run only.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, Final

from subagents.providers import SubagentProvider, SubagentRequest

FAULT: Final = "inject a fault"
"""The description that marks the request whose run fails from the inside."""


def crashing(prompt: str) -> SubagentRequest:
    """A request whose run publishes, then fails from the inside (see :func:`faulty_progress`)."""
    return SubagentRequest(prompt, description=FAULT)


@contextmanager
def faulty_progress(run_class: Any) -> Generator[None, None, None]:
    real = run_class._run

    async def _run(self: Any, provider: Any, request: SubagentRequest, cancel: Any) -> None:
        if request.description == FAULT:

            def push(event: object) -> None:
                raise RuntimeError("a bug in the provider's progress mapping")

            self._feed.push = push
        await real(self, provider, request, cancel)

    run_class._run = _run
    try:
        yield
    finally:
        run_class._run = real


def with_faults(
    run_class: Any, factory: Callable[[], AbstractAsyncContextManager[SubagentProvider]]
) -> Callable[[], AbstractAsyncContextManager[SubagentProvider]]:
    """``factory``, with :func:`faulty_progress` applied while its provider is open."""

    @asynccontextmanager
    async def open_provider() -> AsyncGenerator[SubagentProvider, None]:
        with faulty_progress(run_class):
            async with factory() as provider:
                yield provider

    return open_provider
