"""What a remote client may ask of its connection's agent: the checks made on each client
request before the agent sees it (:class:`ClientGuard`), over HTTP and WebSocket alike.

- ``mcpServers`` in ``session/new``, ``session/load``, ``session/resume``: refused unless the
  operator allowed them (:mod:`subagents.remote._client_mcp`), JSON-RPC ``-32602``;
- ``session/load``, ``session/resume``, ``session/delete`` of a session made by another
  principal (or, with several principals, of one whose principal is not recorded): the
  "Resource not found" error (``-32002``), as for a session that does not exist;
- the same for a session live on another connection of the same principal: ``-32600``
  saying so (close it there first);
- any other request or notification naming a session that is not the connection's
  (prompt, cancel, close...): ``-32002`` (a notification is dropped). Over HTTP the routing
  table refuses those first (404);
- the answer to ``session/list`` leaves out the sessions the connection's principal may not
  load (:meth:`ClientGuard.filter_listing`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

from ..protocol.acp_remote import CONNECTION_SCOPED_METHODS, session_id_of
from ..protocol.jsonrpc import ErrorCode, JsonValue
from ._client_mcp import ClientMcpPolicy
from ._principals import Principals, SessionOwners

if TYPE_CHECKING:
    from ._connections import RemoteConnection

__all__ = ("ClientGuard", "Refusal")

STORED_SESSION_METHODS: Final = frozenset({"session/load", "session/resume", "session/delete"})
"""Connection-scoped methods naming a session that need not be the connection's."""

Refusal = tuple[int, str]
"""A JSON-RPC error code and message."""


@final
class ClientGuard:
    """The server's rules for client requests (see the module docstring)."""

    def __init__(
        self,
        principals: Principals | None = None,
        owners: SessionOwners | None = None,
        mcp: ClientMcpPolicy | None = None,
    ) -> None:
        self.principals = principals
        self.owners = owners or SessionOwners()
        self.mcp = mcp or ClientMcpPolicy()

    def check(self, conn: RemoteConnection, message: dict[str, JsonValue]) -> Refusal | None:
        """Why ``conn``'s client may not send ``message`` (``None``: it may)."""
        method = message.get("method")
        if not isinstance(method, str):
            return None  # an answer to the agent: the routing checks it
        why = self.mcp.refusal(method, message.get("params"))
        if why is not None:
            return ErrorCode.INVALID_PARAMS, why
        session_id = session_id_of(message)
        if session_id is None or conn.has_session(session_id):
            return None
        if method in STORED_SESSION_METHODS:
            return self._stored_refusal(conn, session_id)
        if method not in CONNECTION_SCOPED_METHODS:
            why = f"unknown session for this connection: {session_id}"
            return ErrorCode.RESOURCE_NOT_FOUND, why
        return None

    def _stored_refusal(self, conn: RemoteConnection, session_id: str) -> Refusal | None:
        owners = self.owners
        recorded = owners.principal(session_id)
        if recorded is not None and recorded != conn.principal:
            return _not_found(session_id)
        if recorded is None and self.principals is not None and len(self.principals) > 1:
            return _not_found(session_id)
        holder = owners.holder(session_id)
        if holder is not None and holder != conn.id:
            return (
                ErrorCode.INVALID_REQUEST,
                f"session {session_id} is open on another connection: only that connection "
                "may use it until it closes the session (session/close) or ends",
            )
        return None

    def filter_listing(self, conn: RemoteConnection, answer: dict[str, JsonValue]) -> bool:
        """Take out of a ``session/list`` answer the sessions of other principals (with
        several principals, also those whose principal is not recorded); whether any was."""
        if self.principals is None:
            return False  # one (anonymous) principal: every session is its own
        result = answer.get("result")
        sessions = result.get("sessions") if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(sessions, list):
            return False
        kept = [info for info in sessions if self._listed(conn, info)]
        if len(kept) == len(sessions):
            return False
        result["sessions"] = kept
        return True

    def _listed(self, conn: RemoteConnection, info: JsonValue) -> bool:
        session_id = info.get("sessionId") if isinstance(info, dict) else None
        if not isinstance(session_id, str) or conn.has_session(session_id):
            return True
        refusal = self._stored_refusal(conn, session_id)
        return refusal is None or refusal[0] != ErrorCode.RESOURCE_NOT_FOUND

    def claim(self, conn: RemoteConnection, session_id: str) -> None:
        """``session_id`` is ``conn``'s now (made, loaded or resumed there)."""
        self.owners.claim(session_id, conn.id, conn.principal)

    def release(self, conn: RemoteConnection, session_id: str) -> None:
        """``conn`` no longer holds ``session_id`` (closed there, or the connection ended)."""
        self.owners.release(session_id, conn.id)


def _not_found(session_id: str) -> Refusal:
    return ErrorCode.RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}"
