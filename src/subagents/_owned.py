"""A task group that an object owns while it is entered as an async context manager."""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType
from typing import final

import anyio
import anyio.abc

__all__ = ("OwnedTaskGroup",)


@final
class OwnedTaskGroup:
    """The task group of an object that is an async context manager: its ``__aenter__``
    calls :meth:`open`, its ``__aexit__`` calls :meth:`close`.

    The group is entered through an :class:`~contextlib.AsyncExitStack`. anyio requires it
    to be left in the task that entered it, in order: so such objects can be entered once,
    and only with ``async with``.
    """

    __slots__ = ("_group", "_stack", "_used", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        """The owner, for errors (``"a TaskRuntime"``)."""
        self._stack: AsyncExitStack | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._used = False

    @property
    def group(self) -> anyio.abc.TaskGroup | None:
        """The open task group: None before :meth:`open` and after :meth:`close`."""
        return self._group

    async def open(self, *, closed: bool = False) -> anyio.abc.TaskGroup:
        """Enter the task group. Raises :class:`RuntimeError` when it was opened before, or
        when the owner says it is ``closed`` already."""
        if self._used or closed:
            raise RuntimeError(f"{self._what} can be entered only once")
        self._used = True
        stack = AsyncExitStack()
        self._group = await stack.enter_async_context(anyio.create_task_group())
        self._stack = stack
        return self._group

    async def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> bool | None:
        """Leave the task group (with the owner's exception, if any): wait for its tasks.
        Returns whether the exception was handled, as ``__aexit__`` does."""
        stack, self._stack, self._group = self._stack, None, None
        assert stack is not None, "close() without open()"
        return await stack.__aexit__(exc_type, exc, traceback)
