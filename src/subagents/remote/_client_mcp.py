"""The MCP servers a remote client may make the served agent start or call.

ACP's ``session/new``, ``session/load`` and ``session/resume`` carry ``mcpServers``: stdio
entries name a command the agent runs on the server's host, http and sse entries a URL the
agent calls from there. From a remote client that is a client running commands on the server
and reaching its internal network, so every entry is refused unless the operator allowed it
(:class:`ClientMcpPolicy`; ``subagents serve --allow-client-mcp-command PROGRAM`` and
``--allow-client-mcp-url URL``, each repeatable):

- a stdio entry is allowed when its ``command`` is exactly one of the allowed programs (as the
  client names it: ``npx`` and ``/usr/bin/npx`` are two programs); its arguments and
  environment are the client's, so allow only programs that cannot be turned into a shell;
- an http or sse entry is allowed when its URL has an allowed URL's scheme, host and port, and
  its path is that URL's path or below it (segment by segment; ``.`` and ``..`` segments are
  refused); an allowed URL whose port is ``*`` (``http://127.0.0.1:*``) admits any port;
- any other entry is refused.

A request with one entry refused is refused whole (JSON-RPC ``-32602``, naming the entry and
the option), before the agent sees it: the agent is never told of a server it did not get.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, final
from urllib.parse import SplitResult, unquote, urlsplit

from ..protocol.jsonrpc import JsonValue

__all__ = ("MCP_OPENING_METHODS", "ClientMcpPolicy")

MCP_OPENING_METHODS: Final = frozenset({"session/new", "session/load", "session/resume"})
"""The ACP methods whose params carry ``mcpServers``."""
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@final
@dataclass(frozen=True, slots=True)
class ClientMcpPolicy:
    """The MCP servers a remote client may name (nothing, by default)."""

    commands: frozenset[str] = frozenset()
    """Programs a stdio entry may name (exactly)."""
    urls: tuple[str, ...] = ()
    """URLs an http or sse entry may name (or a path below them)."""

    @classmethod
    def allowing(cls, commands: Iterable[str] = (), urls: Iterable[str] = ()) -> ClientMcpPolicy:
        """A policy allowing ``commands`` and ``urls`` (``ValueError`` for a URL that is not
        ``http://`` or ``https://`` with a host, or an empty command)."""
        allowed = frozenset(commands)
        if any(not command.strip() for command in allowed):
            raise ValueError("an allowed MCP command is empty")
        checked: list[str] = []
        for url in urls:
            parts = _split(_any_port(url) or url)
            if parts is None:
                raise ValueError(
                    f"allowed MCP URL {url!r}: expected an http:// or https:// URL with a host"
                )
            checked.append(url)
        return cls(allowed, tuple(checked))

    def refusal(self, method: str, params: JsonValue) -> str | None:
        """Why the ``mcpServers`` of a ``method`` request are refused (``None``: allowed, or
        none given)."""
        if method not in MCP_OPENING_METHODS or not isinstance(params, dict):
            return None
        servers = params.get("mcpServers")
        if servers is None or servers == []:
            return None
        if not isinstance(servers, list):
            return "mcpServers is not a list"
        for server in servers:
            why = self._why_not(server)
            if why is not None:
                return (
                    f"mcpServers from a remote client are refused: {why} (the operator "
                    "allows them with subagents serve --allow-client-mcp-command PROGRAM or "
                    "--allow-client-mcp-url URL)"
                )
        return None

    def _why_not(self, server: JsonValue) -> str | None:
        if not isinstance(server, dict):
            return "an entry is not an object"
        name = server.get("name")
        label = f"{name!r}" if isinstance(name, str) else "an entry"
        kind = server.get("type", "stdio")
        if kind == "stdio":
            command = server.get("command")
            if isinstance(command, str) and command in self.commands:
                return None
            return f"{label} runs the command {command!r}, which the operator has not allowed"
        if kind in ("http", "sse"):
            url = server.get("url")
            if isinstance(url, str) and self._url_allowed(url):
                return None
            return f"{label} calls {url!r}, which the operator has not allowed"
        return f"{label} is of type {kind!r}"

    def _url_allowed(self, url: str) -> bool:
        wanted = _split(url)
        if wanted is None:
            return False
        segments = [unquote(part) for part in wanted.path.split("/")]
        if any(part in (".", "..") for part in segments):
            return False
        for allowed_url in self.urls:
            any_port = _any_port(allowed_url)
            allowed = _split(any_port or allowed_url)
            if allowed is None:
                continue
            if any_port is not None:
                if _origin(allowed)[:2] != _origin(wanted)[:2]:
                    continue
            elif _origin(allowed) != _origin(wanted):
                continue
            base = allowed.path.rstrip("/")
            if wanted.path == base or wanted.path.startswith(base + "/") or not base:
                return True
        return False


def _any_port(url: str) -> str | None:
    """``url`` without its port when the port is ``*`` (any port), else ``None``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if not parts.netloc.endswith(":*"):
        return None
    return parts._replace(netloc=parts.netloc[:-2]).geturl()


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return parts


def _origin(parts: SplitResult) -> tuple[str, str, int]:
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS[scheme]
