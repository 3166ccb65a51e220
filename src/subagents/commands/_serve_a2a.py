"""``subagents serve --a2a HOST:PORT``: a registry agent served as an A2A agent.

The entry named by ``--agent`` (any provider: ACP command, Codex, Claude Code, spawn, fork)
is built with :func:`~subagents.providers.factory.build_provider` and served by
:func:`~subagents.remote.a2a_server.serve_a2a_http` on asyncio (the SDK's server is
asyncio-based). ``--tls-cert``/``--tls-key`` serve HTTPS, as for ``--listen``. When ready it
writes ``listening on http://HOST:PORT/ (card: URL)`` (``https`` with TLS) to stderr; SIGTERM
or SIGINT drains (turns cancelled and settled, children reaped) and exits 0.
"""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from ..config import AgentSpec
    from ..remote import Principals

__all__ = ("run_a2a",)


@dataclass(frozen=True, slots=True)
class _Bounds:
    """The options bounding a server: turns at once, terminal tasks kept, drain seconds,
    the largest request body, the bytes of the tasks kept."""

    max_tasks: int
    max_stored_tasks: int
    drain_timeout: float
    max_message_bytes: int
    max_stored_task_bytes: int


@dataclass(frozen=True, slots=True)
class _Tls:
    """The PEM files HTTPS is served with (both or neither)."""

    cert: Path | None
    key: Path | None


def run_a2a(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or SIGINT, then drain; 2 on bad options (one line saying why)."""
    try:
        import a2a.server  # noqa: F401  # pyright: ignore[reportUnusedImport]
        import hypercorn  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError as exc:
        sys.stderr.write(
            f"subagents serve: --a2a needs the a2a extra ({exc.name or exc} is missing): "
            "pip install 'subagents[a2a]'\n"
        )
        return 2
    from hypercorn.config import Config

    from ..config import ConfigError, load_agents
    from ..providers.factory import UnknownProviderKind
    from ..remote import RemoteServerConfigError, check_listen_address
    from ..remote._origin import OriginPolicy
    from ..remote.server import configure_tls
    from .serve import ServeConfigError, parse_listen, read_token

    try:
        host, port = parse_listen(args.a2a)
        token = check_listen_address(host, read_token(args))
        # The origins and host names are checked now too, before the agent is built.
        OriginPolicy.make(
            bound_host=host,
            public_url=args.public_url,
            allowed_origins=args.allow_origin,
            allowed_hosts=args.allow_host,
        )
        # The certificate and key are checked now, before the agent is built (as --listen's).
        configure_tls(Config(), args.tls_cert, args.tls_key)
        if args.max_tasks < 1:
            raise ServeConfigError("--max-tasks must be at least 1")
        if args.max_stored_tasks < 1:
            raise ServeConfigError("--max-stored-tasks must be at least 1")
        if args.max_message_bytes < 1:
            raise ServeConfigError("--max-message-bytes must be at least 1")
        if args.max_stored_task_bytes < 1:
            raise ServeConfigError("--max-stored-task-bytes must be at least 1")
        agents = load_agents([Path(p) for p in args.config])
        spec = agents.get(args.a2a_agent)
        if spec is None:
            known = ", ".join(sorted(agents))
            raise ServeConfigError(
                f"--agent {args.a2a_agent}: no such registry entry (known: {known})"
            )
    except (ServeConfigError, RemoteServerConfigError, ConfigError, ValueError) as exc:
        sys.stderr.write(f"subagents serve: {str(exc).removeprefix('--listen ')}\n")
        return 2
    try:
        anyio.run(
            _serve,
            spec,
            host,
            port,
            token,
            _Bounds(
                args.max_tasks,
                args.max_stored_tasks,
                args.drain_timeout,
                args.max_message_bytes,
                args.max_stored_task_bytes,
            ),
            args.public_url,
            _Tls(args.tls_cert, args.tls_key),
            (args.allow_origin, args.allow_host),
        )
    except (RemoteServerConfigError, ConfigError, UnknownProviderKind) as exc:
        sys.stderr.write(f"subagents serve: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(
    spec: AgentSpec,
    host: str,
    port: int,
    token: Principals | None,
    bounds: _Bounds,
    public_url: str | None,
    tls: _Tls,
    allowed: tuple[list[str], list[str]],
) -> None:
    from ..providers.factory import build_provider
    from ..remote.a2a_server import serve_a2a_http

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with (
            build_provider(spec) as provider,
            serve_a2a_http(
                provider,
                spec,
                host=host,
                port=port,
                token=token,
                max_tasks=bounds.max_tasks,
                drain_timeout=bounds.drain_timeout,
                public_url=public_url,
                max_stored_tasks=bounds.max_stored_tasks,
                max_message_bytes=bounds.max_message_bytes,
                max_stored_task_bytes=bounds.max_stored_task_bytes,
                tls_certfile=tls.cert,
                tls_keyfile=tls.key,
                allowed_origins=allowed[0],
                allowed_hosts=allowed[1],
            ) as server,
        ):
            sys.stderr.write(f"listening on {server.url} (card: {server.card_url})\n")
            sys.stderr.flush()
            async for signum in signals:
                name = signal.Signals(signum).name
                sys.stderr.write(f"subagents serve: {name}: draining\n")
                sys.stderr.flush()
                break
