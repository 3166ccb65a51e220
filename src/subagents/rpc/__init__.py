"""The JSON-RPC peer: one bidirectional connection over an anyio byte-stream pair.

It knows JSON-RPC, not ACP: correlation of requests and responses (a separate id space per
direction), concurrent request handlers, ordered notifications, ``$/cancel_request`` both
ways, the one place where exceptions become wire errors, and closing that fails whatever is
pending. Runs on asyncio and trio. :class:`PendingRequests` is the same correlation for a
dialect that is not JSON-RPC (Claude Code's control protocol).
"""

from ._errors import ConnectionClosedError as ConnectionClosedError
from ._errors import RPCError as RPCError
from ._peer import CANCEL_REQUEST_METHOD as CANCEL_REQUEST_METHOD
from ._peer import Peer as Peer
from ._peer import PeerStatistics as PeerStatistics
from ._peer import open_peer as open_peer
from ._pending import PendingRequests as PendingRequests
from ._router import NotificationHandler as NotificationHandler
from ._router import ParamsError as ParamsError
from ._router import RequestHandler as RequestHandler
from ._router import Route as Route
from ._router import Router as Router

__all__ = (
    "CANCEL_REQUEST_METHOD",
    "ConnectionClosedError",
    "NotificationHandler",
    "ParamsError",
    "Peer",
    "PeerStatistics",
    "PendingRequests",
    "RPCError",
    "RequestHandler",
    "Route",
    "Router",
    "open_peer",
)
