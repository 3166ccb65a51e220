"""A URL is an agent: the ACP client over Streamable HTTP or WebSocket (issue 20).

::

    async with connect_agent_url("http://build-box:8000/acp", token=os.environ["T"]) as agent:
        session = await agent.new_session(cwd="/srv/work")
        async with session.prompt("hi") as turn:
            async for update in turn:
                ...

The connection is the same :class:`~subagents.transports.acp_client.AgentConnection` as over
stdio (``connect_agent`` dispatches a URL here): the same JSON-RPC peer runs over a link
(:mod:`._client_http`, :mod:`._client_ws`) instead of a child's pipes. ``http://`` and
``https://`` use Streamable HTTP, ``ws://`` and ``wss://`` a WebSocket
(``transport="websocket"`` forces it for an ``http`` URL); a URL without a path gets ``/acp``.

Failures: a server that cannot be reached, that refuses the token (401) or answers
``initialize`` with another status is a :class:`RemoteStartupError` (an
:class:`~subagents.transports.acp_client.AgentStartupError`) naming the URL, the status and
the cause; a connection lost later (a stream ended, a status on a POST, the socket closed)
fails the pending calls and the running turns with
:class:`~subagents.rpc.ConnectionClosedError` naming the same. Nothing reconnects.

Needs the optional extra ``subagents[remote]`` (HTTP/2, WebSocket); without it connecting
raises :class:`ImportError` naming ``pip install 'subagents[remote]'``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Literal, TypeAlias

from ..protocol import acp
from ..protocol.acp_remote import ServerDrainingError, agent_url
from ..protocol.errors import RemoteProtocolError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..rpc import ConnectionClosedError, RPCError
from ..transports.acp_client import (
    AgentConnection,
    AgentStartupError,
    ClientExtension,
    PermissionPolicy,
    connect_agent_over,
    reject_policy,
)
from ._client_http import open_http_link
from ._client_link import MessageLink
from ._client_ws import WsUpgradeError, open_ws_link

__all__ = (
    "EXTRA_HINT",
    "RemoteStartupError",
    "Transport",
    "connect_agent_url",
    "open_link",
    "token_from_env",
)

Transport: TypeAlias = Literal["auto", "http", "websocket"]
"""``"auto"``: by the URL's scheme; ``"http"``: Streamable HTTP; ``"websocket"``: a WebSocket
(an ``http(s)://`` URL is upgraded as ``ws(s)://``)."""

EXTRA_HINT = "pip install 'subagents[remote]'"


class RemoteStartupError(AgentStartupError):
    """A URL agent could not be reached, or refused the connection before ``initialize``."""

    def __init__(self, message: str, *, url: str, status: int | None, unreachable: bool) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        """The HTTP status it was refused with (401: the token), if any."""
        self.unreachable = unreachable
        """Whether the server could not be reached (connection refused, name not found)."""


def _require_extra(websocket: bool) -> None:
    try:
        if websocket:
            import httpx_ws  # noqa: F401  # pyright: ignore[reportUnusedImport]
            import wsproto  # noqa: F401  # pyright: ignore[reportUnusedImport]
        else:
            import h2  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError as exc:
        raise ImportError(
            f"an agent URL needs the optional extra: {EXTRA_HINT} ({exc.name} is missing)"
        ) from exc


def _websocket_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return {"http": "ws", "https": "wss"}.get(scheme.lower(), scheme) + sep + rest


@asynccontextmanager
async def connect_agent_url(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    transport: Transport = "auto",
    http2: bool | None = None,
    permission_policy: PermissionPolicy = reject_policy,
    extension: ClientExtension | None = None,
    client_info: acp.Implementation | None = None,
    timeout: float = 30.0,
    initialize_timeout: float = 30.0,
    cancel_timeout: float = 10.0,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_protocol_error: Callable[[RemoteProtocolError], None] | None = None,
    name: str | None = None,
    resuming: str | None = None,
) -> AsyncGenerator[AgentConnection, None]:
    """Connect to the ACP agent served at ``url``, ``initialize`` it, disconnect on exit.

    ``token`` is sent as ``Authorization: Bearer``, ``headers`` on every request;
    ``timeout`` bounds each HTTP request (a POST's answer, opening a stream, the upgrade, the
    DELETE on exit); ``http2`` is the Streamable HTTP choice (``None``: HTTP/2 by ALPN over
    ``https://``, HTTP/1.1 over ``http://``; ``True``: HTTP/2, h2c with prior knowledge over
    ``http://``; ``False``: HTTP/1.1). ``resuming`` names the session the connection is made
    to load or resume: it is sent as ``Acp-Session-Id`` on ``initialize`` (on the WebSocket
    upgrade), so that a load balancer can route the connection to the instance holding the
    session. The other keywords are :func:`~subagents.transports.connect_agent`'s.

    A connection lost because the server drains (it said so: a 503, a WebSocket closed for
    the drain) raises :class:`~subagents.protocol.acp_remote.ServerDrainingError` out of the
    block instead of the :class:`~subagents.rpc.ConnectionClosedError` it caused.
    """
    endpoint = agent_url(url)
    label = name or endpoint
    link_cm = open_link(
        endpoint,
        token=token,
        headers=headers,
        transport=transport,
        http2=http2,
        timeout=timeout,
        max_message_bytes=max_message_bytes,
        resuming=resuming,
    )
    link: MessageLink | None = None
    connected = False
    try:
        async with (
            link_cm as link,
            connect_agent_over(
                link,
                link,
                permission_policy=permission_policy,
                extension=extension,
                client_info=client_info,
                initialize_timeout=initialize_timeout,
                cancel_timeout=cancel_timeout,
                max_message_bytes=max_message_bytes,
                on_protocol_error=on_protocol_error,
                eof_reason=link.reason,
                name=label,
            ) as connection,
        ):
            connected = True
            yield connection
    except (ConnectionClosedError, RPCError) as exc:
        # What failed because the server drains (it said so) names the drain.
        if link is None or not link.draining:
            raise
        why = link.failure if link.failure and "draining" in link.failure else None
        raise ServerDrainingError(why or f"the server at {endpoint} is draining: {exc}") from exc
    except AgentStartupError as exc:
        if connected or link is None or link.failure is None:
            raise
        raise RemoteStartupError(
            link.failure, url=endpoint, status=link.failure_status, unreachable=link.unreachable
        ) from exc
    except WsUpgradeError as exc:
        raise RemoteStartupError(
            str(exc), url=endpoint, status=exc.status, unreachable=exc.status is None
        ) from exc


def open_link(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    transport: Transport = "auto",
    http2: bool | None = None,
    timeout: float = 30.0,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    resuming: str | None = None,
) -> AbstractAsyncContextManager[MessageLink]:
    """The link (a byte stream of NDJSON lines) to the agent at ``url``, for a block: what
    :func:`connect_agent_url` runs its peer over, and what ``subagents bridge`` copies stdio to.

    ``transport`` picks Streamable HTTP or a WebSocket (see :data:`Transport`); a URL without
    a path gets ``/acp``; ``resuming``: see :func:`connect_agent_url`. Raises
    :class:`ValueError` for ``transport="http"`` with a
    ``ws(s)://`` URL, :class:`ImportError` without the ``remote`` extra; a refused upgrade
    raises :class:`~._client_ws.WsUpgradeError` on entering the block.
    """
    endpoint = agent_url(url)
    scheme = endpoint.split("://", 1)[0].lower()
    websocket = transport == "websocket" or (transport == "auto" and scheme in ("ws", "wss"))
    if transport == "http" and scheme in ("ws", "wss"):
        raise ValueError(f"transport='http' needs an http:// or https:// URL, not {url!r}")
    _require_extra(websocket)
    if websocket:
        return open_ws_link(
            _websocket_url(endpoint),
            headers=headers,
            token=token,
            timeout=timeout,
            max_message_bytes=max_message_bytes,
            resuming=resuming,
        )
    return open_http_link(
        endpoint,
        headers=headers,
        token=token,
        timeout=timeout,
        http2=http2,
        max_message_bytes=max_message_bytes,
        resuming=resuming,
    )


def token_from_env(variable: str | None) -> str | None:
    """The token in the environment variable ``variable`` (``None`` when unset or empty)."""
    if not variable:
        return None
    return os.environ.get(variable) or None
