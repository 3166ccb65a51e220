"""Who may reach a server at all: the ``Origin`` and ``Host`` checks made on every HTTP request
and WebSocket upgrade of both servers (``serve --listen`` and ``serve --a2a``), as an ASGI
middleware (:func:`guard_origin_and_host`) in front of either application.

The attacks they stop (MCP's Streamable HTTP transport, which ACP's remote RFD adopts, says a
server MUST validate ``Origin`` for exactly these):

- **A web page posting to a local server.** A page the user opens may POST to
  ``http://127.0.0.1:PORT/`` or open a WebSocket to it (a WebSocket upgrade is not held back by
  CORS) and have the served agent run commands. Browsers send ``Origin`` on those requests;
  programs (the SDKs' clients, curl) do not. A request carrying an ``Origin`` that is not
  listed (``allowed_origins``) is refused with 403; one without ``Origin`` is served, and so
  is one whose ``Origin`` is the server itself at an IP address or ``localhost`` (the ``Host``
  it was sent to: some WebSocket libraries send that, and no page can, as the server serves
  none).
- **DNS rebinding.** A page at ``http://evil.example:PORT`` whose name the attacker then
  points at 127.0.0.1 reaches the local server as the page's own origin (no ``Origin`` on a
  GET): its requests carry ``Host: evil.example:PORT``. A ``Host`` whose name is not an IP
  address (a rebinding needs a name), ``localhost``, the bound host, the public URL's host or
  a listed name (``allowed_hosts``; ``*``: any) is refused with 421 (Misdirected Request).
  The port is not compared: a port mapping changes it, and the attack does not depend on it.

Paths in ``open_paths`` (the health checks) skip the ``Host`` check, as a load balancer's check
sends a ``Host`` of its own (or none); they must carry nothing sensitive. Every refusal's body
is a JSON-RPC error (``-32600``) with ``id`` null, and nothing is logged.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, final
from urllib.parse import urlsplit

__all__ = (
    "AsgiApp",
    "OriginPolicy",
    "guard_origin_and_host",
    "normalize_allowed_host",
    "normalize_allowed_origin",
)

Scope = MutableMapping[str, Any]
AsgiMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[AsgiMessage]]
Send = Callable[[AsgiMessage], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ANY_HOST: Final = "*"
MISDIRECTED: Final = 421
FORBIDDEN: Final = 403
_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_LOOPBACK_NAMES: Final = frozenset({"localhost"})
_INVALID_REQUEST: Final = -32600


def normalize_allowed_origin(value: str) -> str:
    """``value`` (an ``--allow-origin``) as compared: ``scheme://host[:port]``, lower case,
    the scheme's default port dropped. ``ValueError`` saying why for anything else (a path,
    ``*``, ``null``: any sandboxed page sends ``null``, so listing it would allow every page)."""
    text = value.strip()
    if text in ("*", "null"):
        raise ValueError(
            f"--allow-origin {value!r}: list each origin (scheme://host[:port]); "
            f"{text!r} would let any web page in"
        )
    origin = _normalize_origin(text)
    if origin is None:
        raise ValueError(
            f"--allow-origin {value!r}: expected an origin, scheme://host[:port] "
            "(as a browser sends it: no path)"
        )
    return origin


def normalize_allowed_host(value: str) -> str:
    """``value`` (an ``--allow-host``) as compared: a host name or address in lower case,
    without a port (``*``: any host). ``ValueError`` for an empty or malformed one."""
    text = value.strip()
    if text == ANY_HOST:
        return ANY_HOST
    name = _host_name(text)
    if name is None:
        raise ValueError(f"--allow-host {value!r}: expected a host name (a port is ignored)")
    return name


@final
@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The origins and host names a server answers (see the module docstring)."""

    allowed_origins: frozenset[str] = frozenset()
    """Normalized origins (:func:`normalize_allowed_origin`) whose requests are served."""
    allowed_hosts: frozenset[str] = frozenset()
    """Host names served besides IP addresses and ``localhost`` (``*``: every one)."""
    open_paths: frozenset[str] = frozenset()
    """Paths served whatever their ``Host`` (health checks)."""

    @classmethod
    def make(
        cls,
        *,
        bound_host: str,
        public_url: str | None = None,
        allowed_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] = (),
        open_paths: Iterable[str] = (),
    ) -> OriginPolicy:
        """The policy of a server bound to ``bound_host`` (its name is served), reached at
        ``public_url`` (its host too), with the operator's ``allowed_origins`` and
        ``allowed_hosts`` (each checked: :class:`~subagents.remote.RemoteServerConfigError`
        saying which is malformed)."""
        from .server import RemoteServerConfigError  # here: the server imports this module

        try:
            hosts = {normalize_allowed_host(host) for host in allowed_hosts}
            origins = frozenset(normalize_allowed_origin(origin) for origin in allowed_origins)
        except ValueError as exc:
            raise RemoteServerConfigError(str(exc)) from exc
        for extra in (bound_host, urlsplit(public_url).hostname if public_url else None):
            name = _host_name(extra) if extra else None
            if name is not None:
                hosts.add(name)
        return cls(
            origins,
            frozenset(hosts),
            frozenset(open_paths),
        )

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """The status and reason for refusing the request ``scope`` (``None``: serve it)."""
        headers: list[tuple[bytes, bytes]] = scope.get("headers") or []
        origin: str | None = None
        host: str | None = None
        for key, value in headers:
            if key == b"origin":
                origin = value.decode("latin-1")
            elif key == b"host":
                host = value.decode("latin-1")
        if origin is not None and not self._origin_ok(origin, host, scope.get("scheme")):
            return FORBIDDEN, (
                f"requests from web pages are refused (Origin: {origin[:200]}); the operator "
                "may allow an origin with --allow-origin"
            )
        if host is None or scope.get("path") in self.open_paths or self._host_ok(host):
            return None
        return MISDIRECTED, (
            f"this server does not answer for Host: {host[:200]} (a DNS rebinding guard); the "
            "operator may allow that name with --allow-host"
        )

    def _origin_ok(self, origin: str, host: str | None, scheme: str | None) -> bool:
        """Whether ``origin`` is listed, or is the server itself at a loopback name or an IP
        address (some WebSocket libraries send that; only a page this server served, and it
        serves none, could send it from a browser)."""
        normalized = _normalize_origin(origin.strip())
        if normalized is None:
            return False
        if normalized in self.allowed_origins:
            return True
        if host is None:
            return False
        parts = urlsplit(normalized)
        name = parts.hostname or ""
        if not (name in _LOOPBACK_NAMES or _is_ip(name)):
            return False
        host_name = _host_name(host)
        _, colon, host_port = host.rpartition(":") if not host.endswith("]") else ("", "", "")
        default = _DEFAULT_PORTS.get(scheme or "http", 80)
        port = int(host_port) if colon and host_port.isdigit() else default
        return host_name == name and (parts.port or _DEFAULT_PORTS.get(parts.scheme)) == port

    def _host_ok(self, host: str) -> bool:
        if ANY_HOST in self.allowed_hosts:
            return True
        name = _host_name(host)
        if name is None:
            return False
        return name in _LOOPBACK_NAMES or name in self.allowed_hosts or _is_ip(name)


def guard_origin_and_host(app: AsgiApp, policy: OriginPolicy) -> AsgiApp:
    """``app`` behind ``policy``: a refused HTTP request is answered with its status and a
    JSON-RPC error body; a refused WebSocket upgrade too (or closed with 1008 where the server
    cannot answer an upgrade with a response)."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        refusal = policy.refusal(scope) if kind in ("http", "websocket") else None
        if refusal is None:
            await app(scope, receive, send)
            return
        status, reason = refusal
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": _INVALID_REQUEST, "message": reason}},
            separators=(",", ":"),
        ).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        if kind == "http":
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        first = await receive()
        if first.get("type") != "websocket.connect":
            return
        extensions: dict[str, object] = scope.get("extensions") or {}
        if "websocket.http.response" not in extensions:
            await send({"type": "websocket.close", "code": 1008})
            return
        start = {"type": "websocket.http.response.start", "status": status, "headers": headers}
        await send(start)
        await send({"type": "websocket.http.response.body", "body": body, "more_body": False})

    return guarded


def _normalize_origin(value: str) -> str | None:
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if not scheme or not host or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    shown = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        shown = f"{shown}:{port}"
    return f"{scheme}://{shown}"


def _host_name(value: str) -> str | None:
    """The name in a ``Host`` value (``name``, ``name:port``, ``[v6]:port``), lower case and
    without a trailing dot; ``None`` when malformed."""
    text = value.strip().lower()
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return name if _is_ip(name) else None
    if text.count(":") > 1:  # a bare IPv6 address (as a bound host is written)
        return text if _is_ip(text) else None
    name, colon, port = text.partition(":")
    if colon and not port.isdigit():
        return None
    name = name.rstrip(".")
    if not name or not name.isascii() or not all(c.isalnum() or c in "-._" for c in name):
        return None
    return name


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
