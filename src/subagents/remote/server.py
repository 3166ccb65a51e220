"""Serve an ACP agent over Streamable HTTP and WebSocket (``subagents serve --listen``).

::

    from subagents.remote import agent_command, serve_acp_http

    async with serve_acp_http(agent_command(["my-agent", "--acp"]), port=0) as server:
        print(server.url)            # http://127.0.0.1:PORT/acp (ws:// for WebSocket)
        await anyio.sleep_forever()

The endpoint is the RFD's (``docs/spec/acp-streamable-http-websocket.mdx``; see
:mod:`subagents.remote._app` for the routing table). Each remote connection gets its own agent
from the backend: a process per connection for :func:`agent_command` (reaped when the
connection ends), an agent object per connection for :func:`in_process_agent` and
:func:`runtime_agent`. hypercorn serves HTTP/1.1 and HTTP/2 (h2c with prior knowledge, as the
RFD requires HTTP/2) in-process, on asyncio or trio.

Security: bound to anything but a loopback address, a bearer token is required (the server
refuses to start without one). Bounds: :class:`ServerLimits`. Leaving the ``async with``
drains: no new connection is accepted, turns in flight are cancelled (``session/cancel``) and
their answers delivered (bounded), the streams end, every agent is stopped, then the listener
closes.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast, final

import anyio

from ..protocol.acp_remote import ENDPOINT_PATH
from ._app import HEALTH_PATHS, AcpAsgiApp, ConnectionHub
from ._client_mcp import ClientMcpPolicy
from ._connections import ServerLimits
from ._drain import wait_notice
from ._guard import ClientGuard
from ._origin import AsgiApp, OriginPolicy, guard_origin_and_host
from ._principals import Principals, SessionOwners, TokenError

if TYPE_CHECKING:
    from hypercorn.config import Config

    from ._backends import AgentBackend

__all__ = (
    "REMOTE_EXTRA_HINT",
    "ClientMcpPolicy",
    "Principals",
    "RemoteServer",
    "RemoteServerConfigError",
    "ServerLimits",
    "as_principals",
    "check_listen_address",
    "is_loopback",
    "serve_acp_http",
)

logger = logging.getLogger("subagents.remote")

REMOTE_EXTRA_HINT: Final = "pip install 'subagents[remote]'"
GRACEFUL_TIMEOUT: Final = 3.0
"""Seconds hypercorn gives open HTTP connections once the listener closed."""
KEEP_ALIVE_TIMEOUT: Final = 75.0
"""Seconds an HTTP connection with no request in flight stays open (hypercorn's default is 5).

A client reuses an idle connection for its next POST; if the server closes it at the moment
the client writes, the POST is lost (httpx fails it with ``WriteError`` and does not retry a
POST). httpx drops its idle connections after 5 s, hypercorn closed them after 5 s too: under
load, whole servers' worth of turns failed that way. The server's timeout must exceed every
client's and load balancer's idle timeout (75 s: above the common 60 s of load balancers); at
shutdown idle connections close at once anyway."""
KEEP_ALIVE_MAX_REQUESTS: Final = 2**62
"""Requests one HTTP connection may carry (hypercorn's default is 1000). Every client message
is a POST: a long session over HTTP/2 would reach 1000 on its one connection, and hypercorn
then ends it with GOAWAY, failing the POST in flight (which no client may safely retry: the
server may have accepted it). No limit, as for a WebSocket."""


class RemoteServerConfigError(ValueError):
    """The server cannot start as configured (the message says what to change)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_listen_address(host: str, token: str | Principals | None) -> Principals | None:
    """Refuse to listen beyond loopback without a token, and any weak token
    (:class:`RemoteServerConfigError`); the principals ``token`` names (one token: the
    principal ``default``; see :mod:`subagents.remote._principals`)."""
    principals = as_principals(token)
    if principals is None and not is_loopback(host):
        raise RemoteServerConfigError(
            f"listening on {host!r} (not a loopback address) needs a bearer token: "
            "give one with --token-env VAR or --token-file PATH"
        )
    return principals


def as_principals(token: str | Principals | None) -> Principals | None:
    """``token`` as principals (a string: the principal ``default``), checked: an empty or
    weak token is a :class:`RemoteServerConfigError`."""
    if token is None or isinstance(token, Principals):
        return token
    if not token.strip():
        raise RemoteServerConfigError("the bearer token is empty")
    try:
        return Principals.single(token)
    except TokenError as exc:
        raise RemoteServerConfigError(str(exc)) from exc


@final
@dataclass(frozen=True, slots=True)
class RemoteServer:
    """A running server (made by :func:`serve_acp_http`)."""

    host: str
    port: int
    _hub: ConnectionHub
    tls: bool = False
    """Whether it serves HTTPS (``https://``, ``wss://``)."""

    @property
    def url(self) -> str:
        """The Streamable HTTP endpoint, ``http://HOST:PORT/acp`` (``https`` with TLS)."""
        return f"{self._origin('http')}{ENDPOINT_PATH}"

    @property
    def websocket_url(self) -> str:
        """The WebSocket endpoint, ``ws://HOST:PORT/acp`` (``wss`` with TLS)."""
        return f"{self._origin('ws')}{ENDPOINT_PATH}"

    @property
    def health_url(self) -> str:
        return f"{self._origin('http')}/health"

    def _origin(self, scheme: str) -> str:
        return f"{scheme}{'s' if self.tls else ''}://{_url_host(self.host)}:{self.port}"

    @property
    def connection_count(self) -> int:
        return len(self._hub.connections)

    @property
    def session_count(self) -> int:
        return self._hub.session_count

    async def drain(self) -> None:
        """What leaving the ``async with`` does first: refuse new connections (503), cancel
        the turns in flight and deliver their answers (bounded), end the streams, stop every
        agent. The listener stays open (``/health`` says ``draining``) until the block ends."""
        await self._hub.drain()

    def agent_pids(self) -> list[int]:
        """The process ids of the agents running now (command backends only)."""
        return [
            conn.link.pid
            for conn in self._hub.connections.values()
            if conn.link is not None and conn.link.pid is not None
        ]


@asynccontextmanager
async def serve_acp_http(
    backend: AgentBackend,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | Principals | None = None,
    limits: ServerLimits | None = None,
    tls_certfile: str | os.PathLike[str] | None = None,
    tls_keyfile: str | os.PathLike[str] | None = None,
    client_mcp: ClientMcpPolicy | None = None,
    ownership_dir: str | os.PathLike[str] | None = None,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    drain_notice: float = 0.0,
) -> AsyncGenerator[RemoteServer, None]:
    """Serve ``backend``'s agents at ``http://host:port/acp`` until the block ends.

    ``port=0`` picks a free port (read it from the yielded :class:`RemoteServer`). With
    ``tls_certfile`` and ``tls_keyfile`` (PEM) it serves HTTPS instead (HTTP/2 by ALPN).
    ``token``: one bearer token (the principal ``default``), or :class:`Principals` (named
    tokens, e.g. ``Principals.from_file(path)``); a weak one is refused. A session belongs to
    the connection that holds it and was made by its principal (recorded under
    ``ownership_dir`` too when given, so that it outlives the process: the sessions
    directory's ``.principals``). ``client_mcp`` lists the MCP servers a client may name
    (none by default; :class:`ClientMcpPolicy`).

    A request or WebSocket upgrade from a web page (with an ``Origin``) is refused (403) unless
    its origin is in ``allowed_origins``; one whose ``Host`` names neither an IP address,
    ``localhost``, ``host`` nor a name in ``allowed_hosts`` (``*``: any) is refused (421, the
    DNS rebinding guard; ``/health`` is exempt): see :mod:`subagents.remote._origin`.

    Leaving the block gives notice first, for ``drain_notice`` seconds (``subagents serve``:
    ``--drain-notice``, 2 s): ``/health`` answers 503 ``draining``, new connections are
    refused (503), the connections already made go on; then the drain (see :meth:`drain`),
    then the listener closes (:mod:`subagents.remote._drain`).

    Raises :class:`RemoteServerConfigError` when bound beyond loopback without ``token``,
    given a weak token (or one TLS file without the other, or a file that cannot be read, or
    a malformed origin or host name, or a negative ``drain_notice``), and ``ImportError``
    naming ``subagents[remote]`` when hypercorn is missing.
    """
    principals = check_listen_address(host, token)
    if not drain_notice >= 0:
        raise RemoteServerConfigError(f"the drain notice must be 0 or more seconds: {drain_notice}")
    origins = OriginPolicy.make(
        bound_host=host,
        allowed_origins=allowed_origins,
        allowed_hosts=allowed_hosts,
        open_paths=HEALTH_PATHS,
    )
    try:
        from hypercorn.config import Config
    except ImportError as exc:
        raise ImportError(
            f"serving ACP over HTTP needs the remote extra: {REMOTE_EXTRA_HINT}"
        ) from exc
    limits = limits or ServerLimits()
    config = Config()
    config.errorlog = logging.getLogger("subagents.remote.hypercorn")
    config.accesslog = None
    config.graceful_timeout = GRACEFUL_TIMEOUT
    config.keep_alive_timeout = KEEP_ALIVE_TIMEOUT
    config.keep_alive_max_requests = KEEP_ALIVE_MAX_REQUESTS
    config.websocket_max_message_size = limits.max_message_bytes
    config.include_server_header = False
    tls = configure_tls(config, tls_certfile, tls_keyfile)
    sock = _listen(host, port)
    bound_port: int = sock.getsockname()[1]
    config.bind = [f"fd://{sock.detach()}"]
    guard = ClientGuard(principals, SessionOwners(ownership_dir), client_mcp)
    hub = ConnectionHub(backend, limits, principals, guard)
    shutdown = anyio.Event()
    served = anyio.Event()

    async def serve() -> None:
        try:
            app = guard_origin_and_host(AcpAsgiApp(hub), origins)
            await _hypercorn_serve(app, config, shutdown.wait)
        finally:
            served.set()

    async with anyio.create_task_group() as tg:
        hub.bind(tg)
        tg.start_soon(serve)
        tg.start_soon(hub.reap_idle)
        try:
            yield RemoteServer(host, bound_port, hub, tls)
        finally:
            with anyio.CancelScope(shield=True):
                hub.draining = True  # the notice: /health says so, the connections go on
                await wait_notice(drain_notice)
                await hub.drain()
                shutdown.set()
                with anyio.move_on_after(GRACEFUL_TIMEOUT + 2.0):
                    await served.wait()
            tg.cancel_scope.cancel()


def configure_tls(
    config: Config,
    certfile: str | os.PathLike[str] | None,
    keyfile: str | os.PathLike[str] | None,
) -> bool:
    """Make hypercorn's ``config`` serve HTTPS with the PEM ``certfile`` and ``keyfile``
    (both or neither); whether it does. Shared by the ACP and the A2A server.

    The pair is loaded here (hypercorn's own SSL context, made and dropped) so that a file
    that cannot be read, or a key that does not match, refuses to start before anything is
    bound. Raises :class:`RemoteServerConfigError` for one file without the other, or files
    that cannot be used.
    """
    if (certfile is None) != (keyfile is None):
        raise RemoteServerConfigError("TLS needs both a certificate file and a key file")
    if certfile is None or keyfile is None:
        return False
    config.certfile = os.fspath(certfile)
    config.keyfile = os.fspath(keyfile)
    try:
        config.create_ssl_context()
    except (OSError, ValueError) as exc:
        raise RemoteServerConfigError(f"cannot use the TLS certificate or key: {exc}") from exc
    return True


_h2_patched = False


def _tolerate_data_after_the_response() -> None:
    """Make hypercorn's HTTP/2 protocol drop DATA for a stream that is already gone.

    hypercorn 0.18 raises ``KeyError`` (``H2Protocol._handle_events``) on a DATA frame for a
    stream whose response is complete, failing the TCP connection, and on trio the whole
    server: any client that keeps sending a body after its answer (say a 413) could stop it.
    Such frames are dropped here (their bytes still acknowledged, so the connection's flow
    control window stays open). Once per process; harmless where hypercorn handles them.
    """
    import h2.events
    from hypercorn.protocol.h2 import H2Protocol

    global _h2_patched
    if _h2_patched:
        return
    _h2_patched = True
    handle = cast(Any, H2Protocol)._handle_events

    async def handle_events(self: Any, events: list[Any]) -> None:
        # One event at a time: a stream is known once the event that opens it (in the same
        # batch, often) has been handled.
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.stream_id not in self.streams:
                self.connection.acknowledge_received_data(
                    event.flow_controlled_length or 0, event.stream_id
                )
                await self._flush()  # the window updates go out
                continue
            await handle(self, [event])

    cast(Any, H2Protocol)._handle_events = handle_events


async def _hypercorn_serve(app: AsgiApp, config: Any, trigger: Any) -> None:
    from ..transports._fd import on_asyncio

    _tolerate_data_after_the_response()
    framework = cast(Any, app)
    if on_asyncio():
        from hypercorn.asyncio import serve as asyncio_serve  # pyright: ignore[reportUnknownVariableType]

        await asyncio_serve(framework, config, shutdown_trigger=trigger, mode="asgi")
    else:
        from hypercorn.trio import serve as trio_serve  # pyright: ignore[reportUnknownVariableType]

        await trio_serve(framework, config, shutdown_trigger=trigger, mode="asgi")


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (its port known before hypercorn starts)."""
    try:
        infos = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError as exc:
        raise RemoteServerConfigError(f"cannot resolve {host!r}: {exc}") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise RemoteServerConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
