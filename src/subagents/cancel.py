"""The cancellation signal of a delegation: owned by the caller, observed by whoever runs it.

Import it as ``from subagents import CancelSignal`` (its one documented path). It is defined
here, a leaf that the run contract (:mod:`subagents.providers.contract`) and the in-process
runtime (:mod:`subagents.harness`) both use; it imports nothing of the project. (The
project's own modules import it from here; ``subagents.providers`` re-exports the same class
so that older imports keep working.)
"""

from __future__ import annotations

import weakref
from collections.abc import Generator
from contextlib import contextmanager
from typing import final

import anyio

__all__ = ("CancelSignal",)


@final
class CancelSignal:
    """The one cancellation signal of a delegation, owned by the caller.

    Call :meth:`cancel` from anywhere in the event loop's thread; providers observe it by
    linking cancel scopes (:meth:`linked_scope`), by awaiting :meth:`wait`, or by polling
    :attr:`cancelled`. Firing it is idempotent and cannot be undone: a new delegation takes a
    new signal. (An anyio ``CancelScope`` cannot serve here: the caller's scope would also
    cancel the caller, and a scope can be entered by one task only.)
    """

    __slots__ = ("__weakref__", "_children", "_event", "_reason", "_scopes")

    def __init__(self) -> None:
        self._event: anyio.Event | None = None
        self._reason: str | None = None
        self._scopes: set[anyio.CancelScope] = set()
        self._children: weakref.WeakSet[CancelSignal] = weakref.WeakSet()

    def child(self) -> CancelSignal:
        """A new signal that fires when this one does (with its reason), and can also be
        fired on its own without firing this one."""
        signal = CancelSignal()
        if self._reason is not None:
            signal.cancel(self._reason)
        else:
            self._children.add(signal)
        return signal

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str = "cancelled by the caller") -> None:
        if self._reason is not None:
            return
        self._reason = reason
        if self._event is not None:
            self._event.set()
        for scope in list(self._scopes):
            scope.cancel()
        children, self._children = list(self._children), weakref.WeakSet()
        for child in children:
            child.cancel(reason)

    async def wait(self) -> None:
        """Return once the signal has fired."""
        if self._reason is not None:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()

    @contextmanager
    def linked_scope(self) -> Generator[anyio.CancelScope, None, None]:
        """A cancel scope that is cancelled when the signal fires (or already has)."""
        with anyio.CancelScope() as scope:
            if self._reason is not None:
                scope.cancel()
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)
