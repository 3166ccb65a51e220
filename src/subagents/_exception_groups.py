"""Looking through exception groups: a task group wraps what its tasks (and its body) raise."""

from __future__ import annotations

from typing import cast

__all__ = ("first_leaf", "leaf_exceptions", "sole_leaf")


def leaf_exceptions(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """Every exception inside ``group``, nested groups looked through, in order."""
    leaves: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            leaves.extend(leaf_exceptions(cast(BaseExceptionGroup[BaseException], exc)))
        else:
            leaves.append(exc)
    return leaves


def first_leaf(exc: BaseException) -> BaseException:
    """``exc`` itself, or for an exception group the first exception inside it (nested groups
    looked through): what one line about a failure names."""
    while isinstance(exc, BaseExceptionGroup):
        exc = cast(BaseExceptionGroup[BaseException], exc).exceptions[0]
    return exc


def sole_leaf(exc: BaseException) -> BaseException:
    """The one exception inside the exception group ``exc`` (nested groups looked through);
    ``exc`` itself when it is no group or holds several."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    group = cast(BaseExceptionGroup[BaseException], exc)
    leaves = leaf_exceptions(group)
    return leaves[0] if len(leaves) == 1 else group
