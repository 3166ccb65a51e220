"""A task group that an object owns for its life as an async context manager."""

from __future__ import annotations

import anyio
import anyio.abc

__all__ = ("open_owned_task_group",)


async def open_owned_task_group(
    current: anyio.abc.TaskGroup | None, *, closed: bool, what: str
) -> anyio.abc.TaskGroup:
    """Enter a new task group for an object's ``__aenter__``.

    The object keeps it and exits it in its ``__aexit__`` (``await group.__aexit__(...)``),
    which anyio requires to happen in the same task, in order: so such objects can be entered
    once, and only with ``async with``.
    """
    if current is not None or closed:
        raise RuntimeError(f"{what} can be entered only once")
    group = anyio.create_task_group()
    await group.__aenter__()
    return group
