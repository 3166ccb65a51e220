"""Telling a real cancellation from a stray one.

A cancellation is *real* when a cancel scope around the current task was cancelled (or its
deadline has passed): the run's own scope, the provider closing, the caller's scope. The
backend's cancellation class raised by anything else (an adapter or a tool raising
``asyncio.CancelledError`` itself, say) is a *stray*: just an exception from that code, which
must not be mistaken for ours (an anyio task group that sees a task end with it cancels its
siblings and its host, silently).
"""

from __future__ import annotations

import asyncio
import math
from typing import cast

import anyio

from ._exception_groups import leaf_exceptions

__all__ = ("is_real_cancellation", "owner_cancelled", "passes_through")


def owner_cancelled() -> bool:
    """Whether a cancel scope around the current task has been cancelled (or its deadline
    has passed), or, on asyncio, the task itself was cancelled (``task.cancel()``: a task
    of asyncio's own, or the main task on a Ctrl-C): a cancellation seen now is real."""
    deadline = anyio.current_effective_deadline()
    if deadline == -math.inf or deadline <= anyio.current_time():
        return True
    if anyio.get_cancelled_exc_class() is asyncio.CancelledError:
        task = asyncio.current_task()
        return task is not None and task.cancelling() > 0
    return False


def is_real_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` is nothing but the backend's cancellation (an exception group of it
    included) while a scope around the current task is cancelled: re-raise it. Anything
    else is an exception of the code that raised it."""
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, BaseExceptionGroup):
        leaves = leaf_exceptions(cast(BaseExceptionGroup[BaseException], exc))
    else:
        leaves = [exc]
    return all(isinstance(leaf, cancelled) for leaf in leaves) and owner_cancelled()


def passes_through(exc: BaseException) -> bool:
    """Whether code that keeps what its children raise as their failure must still re-raise
    ``exc``: a real cancellation, or ``GeneratorExit`` (the coroutine itself is being closed).
    Anything else, a ``BaseException`` included, is the failure of the code that raised it."""
    return isinstance(exc, GeneratorExit) or is_real_cancellation(exc)
