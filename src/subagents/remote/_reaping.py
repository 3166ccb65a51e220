"""Nothing held by the absent: the graces of HTTP clients, and the connections per client.

A Streamable HTTP client is *present* while one of its requests is being handled: a GET
stream open (the connection's or a session's), a POST being forwarded, the ``initialize``
being answered. An HTTP connection whose client is not present for a while is ended:

- **handshake grace** (:attr:`ServerLimits.handshake_grace`): after the ``initialize``
  answer, a client that sends nothing (no GET stream, no POST) for that long never will; the
  connection ends and its agent is stopped (an ``initialize`` costs an agent: abandoned ones
  would otherwise fill ``max_connections`` until the idle timeout);
- **client grace** (:attr:`ServerLimits.client_grace`): once the client came back after the
  ``initialize``, a client with no stream open and no request in flight for that long is gone
  (killed, or its network is): its turns are cancelled (``session/cancel`` for each session
  with a request in flight, answered within ``drain_timeout``), then the connection ends and
  its agent is stopped.

A well-behaved client is never absent that long: it opens its connection's stream right after
the ``initialize`` answer and keeps it open (the RFD's streams are long-lived), and reopens a
dropped stream at once. A long quiet turn with a stream open is present throughout.

A WebSocket is present until it closes, and its close ends its connection (turns cancelled
first) at once: no grace applies.

Connections per client (:attr:`ServerLimits.max_connections_per_principal`): a connection
counts for its principal (the name of the token that made it), or, without tokens, for the
client's address; one key beyond the limit is refused (503) while others are still served,
so one client cannot take every connection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterable, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, final

import anyio

if TYPE_CHECKING:
    from ._connections import RemoteConnection, ServerLimits

__all__ = (
    "ClientKeys",
    "Presence",
    "client_key",
    "per_principal_limit",
    "reap_absent",
    "reap_tick",
)


@final
class Presence:
    """Whether an HTTP connection's client is here (a request of its handled now), and since
    when it is not; whether it came back after its ``initialize``."""

    __slots__ = ("_greeted", "_requests", "followed_up", "key", "since")

    def __init__(self) -> None:
        self._requests = 0
        self._greeted = False
        self.since = anyio.current_time()
        """When the client was last present."""
        self.followed_up = False
        """Whether a request other than the ``initialize`` came (a stream or a POST)."""
        self.key = ""
        """What the connection counts for (:func:`client_key`)."""

    @property
    def present(self) -> bool:
        return self._requests > 0

    @contextmanager
    def request(self, *, follow_up: bool = True) -> Generator[None]:
        """The client is present while the block runs (a GET stream, a POST; the
        ``initialize`` with ``follow_up=False``)."""
        self._requests += 1
        if follow_up:
            self.followed_up = True
        try:
            yield
        finally:
            self._requests -= 1
            self.since = anyio.current_time()

    def greeted(self) -> None:
        """The ``initialize`` is answered: the client is absent from now on until it comes
        back (before, the ``initialize`` is in flight, bounded by ``initialize_timeout``)."""
        self._greeted = True
        self.since = anyio.current_time()

    def absent_for(self, now: float) -> float | None:
        """Seconds the client has not been present (``None``: it is present now, or its
        ``initialize`` is not answered yet)."""
        return None if self._requests or not self._greeted else now - self.since


def client_key(principal: str | None, scope: MutableMapping[str, Any]) -> str:
    """What a new connection counts for: its principal, else the client's address."""
    if principal is not None:
        return f"principal {principal}"
    client: Any = scope.get("client")
    host = str(client[0]) if client else "unknown"
    return f"address {host}"


def per_principal_limit(limits: ServerLimits) -> int:
    """Connections one principal (or address) may hold: the configured limit, else
    ``max_connections`` less an eighth of it (at least one kept for the others)."""
    if limits.max_connections_per_principal is not None:
        return limits.max_connections_per_principal
    total = limits.max_connections
    return max(1, total - max(1, total // 8))


@final
class ClientKeys:
    """The per-principal bound on connections (see the module docstring)."""

    def __init__(self, limits: ServerLimits) -> None:
        self.limit = per_principal_limit(limits)
        self._starting: Counter[str] = Counter()

    def refusal(self, key: str, connections: Iterable[RemoteConnection]) -> str | None:
        """Why ``key`` gets no new connection now (503), if so."""
        held = self._starting[key] + sum(1 for conn in connections if conn.presence.key == key)
        if held >= self.limit:
            return f"too many connections of one client ({key}; at most {self.limit})"
        return None

    @contextmanager
    def starting(self, key: str) -> Generator[None]:
        """A connection of ``key`` starts while the block runs (it counts already)."""
        self._starting[key] += 1
        try:
            yield
        finally:
            self._starting[key] -= 1
            if not self._starting[key]:
                del self._starting[key]


def reap_tick(limits: ServerLimits) -> float:
    """How often the server looks for idle and absent connections."""
    shortest = min(limits.idle_timeout, limits.client_grace, limits.handshake_grace)
    return min(1.0, shortest / 4)


def reap_absent(connections: Iterable[RemoteConnection], now: float) -> None:
    """End the HTTP connections whose client is gone (see the module docstring)."""
    for conn in connections:
        if conn.kind != "http" or conn.stopping:
            continue
        absent = conn.presence.absent_for(now)
        if absent is None:
            continue
        limits = conn.limits
        if not conn.presence.followed_up:
            if absent >= limits.handshake_grace:
                conn.stop(f"no stream or request within {limits.handshake_grace:g} s of initialize")
        elif absent >= limits.client_grace:
            conn.stop(
                f"the client was gone for {limits.client_grace:g} s (no stream open, no request)",
                drain=True,
            )
