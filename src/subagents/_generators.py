"""Finishing a nest of async generators (httpx's streamed bodies) that was left mid-way.

Closing only the outer generator of such a nest leaves the inner ones suspended at their
``yield``; the garbage collector finalises them later, and trio warns then (a
``ResourceWarning``, an error under ``-W error``). A cancellation raised at the innermost
read, or the end of the data, finishes them all: :func:`finish` runs the nest on to one of the
two.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio

__all__ = ("finish",)


async def finish(chunks: AsyncIterator[Any], grace: float = 0.0) -> None:
    """Run ``chunks`` to its end, at most ``grace`` seconds, ignoring what it yields or
    raises (call it from a ``finally``: inside a cancelled scope the first read ends it)."""
    with anyio.move_on_after(grace):
        try:
            async for _ in chunks:
                pass
        except Exception:  # what the caller does no longer depends on it
            return
