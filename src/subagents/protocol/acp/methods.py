"""ACP method tables, one per protocol version.

:func:`method_table` maps wire method names (``"session/prompt"``) to a :class:`MethodSpec`:
who handles the method, whether it is a request or a notification, and the model types of its
params and result. The table for a version is loaded (with its models) on first use.

Only protocol version 1 exists as a stable release; version 2 is a draft. Tables are keyed by
version so that adding one is a new entry in ``_LOADERS``, not a change to the callers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

__all__ = (
    "PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "MethodKind",
    "MethodSide",
    "MethodSpec",
    "UnsupportedProtocolVersionError",
    "method_table",
)

PROTOCOL_VERSION: Final = 1
"""The protocol version this package speaks by default (the latest stable one)."""

SUPPORTED_PROTOCOL_VERSIONS: Final[tuple[int, ...]] = (1,)
"""Every protocol version :func:`method_table` has a table for."""

MethodSide: TypeAlias = Literal["agent", "client", "protocol", "both"]
"""The side that handles a method (the schema's ``x-side``).

``"protocol"`` is for ``$/cancel_request``, which either side may send and handle. ``"both"``
is what the v1 schema says for the unstable ``mcp/message``, which travels in both directions.
"""

MethodKind: TypeAlias = Literal["request", "notification"]
"""Whether a method expects a response (request) or not (notification)."""


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One ACP method: its wire name, handler side, kind, payload types and stability."""

    name: str
    """The wire method name, e.g. ``"session/prompt"``."""
    side: MethodSide
    """The side that handles the method."""
    kind: MethodKind
    """``"request"`` (expects a response) or ``"notification"``."""
    params_type: object
    """The type of ``params``: a model class or a union alias; pass it to ``from_wire``."""
    result_type: object
    """The type of a successful ``result``; ``None`` for notifications."""
    stable: bool
    """Whether the method is in the stable schema (``schema.json`` / ``meta.json``)."""
    notification_params_type: object = None
    """For a request that may also be sent as a notification (the unstable ``mcp/message``):
    the params type of the notification form. ``None`` otherwise."""


class UnsupportedProtocolVersionError(ValueError):
    """Raised for a protocol version that has no method table."""

    def __init__(self, requested: object) -> None:
        self.requested = requested
        self.supported = SUPPORTED_PROTOCOL_VERSIONS
        supported = ", ".join(str(v) for v in SUPPORTED_PROTOCOL_VERSIONS)
        super().__init__(
            f"ACP protocol version {requested!r} is not supported (supported: {supported})"
        )


def _load_v1() -> tuple[MethodSpec, ...]:
    from subagents.protocol.acp import _v1_generated

    return _v1_generated.METHODS


_LOADERS: Final[Mapping[int, Callable[[], tuple[MethodSpec, ...]]]] = {1: _load_v1}


def method_table(
    protocol_version: int = PROTOCOL_VERSION, *, unstable: bool = False
) -> Mapping[str, MethodSpec]:
    """The methods of ``protocol_version``, keyed by wire name.

    Unstable methods (draft features in ``schema.unstable.json``) are left out unless
    ``unstable=True``. Raises :class:`UnsupportedProtocolVersionError` for a version without a
    table (see :data:`SUPPORTED_PROTOCOL_VERSIONS`). The mapping is read-only.
    """
    if isinstance(protocol_version, bool) or protocol_version not in _LOADERS:
        raise UnsupportedProtocolVersionError(protocol_version)
    return _table(protocol_version, unstable)


@functools.cache
def _table(protocol_version: int, unstable: bool) -> Mapping[str, MethodSpec]:
    specs = _LOADERS[protocol_version]()
    return MappingProxyType({s.name: s for s in specs if unstable or s.stable})
