"""``subagents serve``: the in-process runtime as an ACP agent over stdio, or over HTTP.

With no options the model is the embedded offline one (no key, no network). Examples::

    subagents serve                                   # offline model, sessions in memory
    subagents serve --sessions ~/.subagents/sessions  # sessions persisted: load/resume later
    subagents serve --adapter anthropic --model claude-sonnet-4-6        # ANTHROPIC_API_KEY
    subagents serve --adapter openai --base-url http://127.0.0.1:8080/v1 --model local
    subagents conformance -- subagents serve          # the runtime is a conformant ACP agent

With ``--listen HOST:PORT`` the agent is served over ACP's Streamable HTTP and WebSocket
transport at ``http://HOST:PORT/acp`` (the ``remote`` extra; :mod:`subagents.remote`), one
agent per remote connection: the runtime, or any stdio ACP agent given after ``--``::

    subagents serve --listen 127.0.0.1:8765                        # loopback: no token needed
    ACP_TOKEN=... subagents serve --listen 0.0.0.0:8765 --token-env ACP_TOKEN
    subagents serve --listen 127.0.0.1:0 -- python -m subagents.agents.reference
    subagents serve --listen 0.0.0.0:8443 --token-file token --tls-cert c.pem --tls-key k.pem

When ready it writes ``listening on http://HOST:PORT/acp`` to stderr; SIGTERM or SIGINT
drains (turns cancelled and answered, streams closed, agent processes reaped) and exits 0.

With ``--a2a HOST:PORT`` a registry entry (``--agent NAME``, default ``spawn``; ``--config
FILE`` adds registry files) is served as an A2A agent instead (the ``a2a`` extra;
:mod:`subagents.commands._serve_a2a`, :mod:`subagents.remote.a2a_server`)::

    subagents serve --a2a 127.0.0.1:0 --agent reference
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from ..harness.llm.types import LlmAdapter
    from ..harness.runtime import AgentRuntime
    from ..remote import AgentBackend, ClientMcpPolicy, Principals, ServerLimits

__all__ = ("add_parser", "make_adapter", "make_runtime", "run")

ADAPTERS = ("offline", "anthropic", "openai")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to the ``subagents`` command's subparsers."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="serve the in-process runtime as an ACP agent over stdio (or HTTP: --listen)",
        description=(
            "Serve the in-process agent runtime as an ACP agent over stdin/stdout: each ACP "
            "session is a root session whose agents can delegate to in-process subagents "
            "(spawn or fork). With no options the model is the embedded offline one. With "
            "--listen HOST:PORT, serve it (or the stdio ACP agent command given after --, one "
            "process per remote connection) over ACP's Streamable HTTP and WebSocket "
            "transport at http://HOST:PORT/acp."
        ),
    )
    parser.add_argument(
        "--adapter", choices=ADAPTERS, default="offline", help="the model API (default: offline)"
    )
    parser.add_argument("--model", help="the model name (required by anthropic and openai)")
    parser.add_argument("--base-url", help="the API's base URL (local servers work)")
    parser.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding the key (default: ANTHROPIC_API_KEY or "
        "OPENAI_API_KEY)",
    )
    parser.add_argument("--system", help="the agents' system prompt")
    parser.add_argument(
        "--max-steps", type=int, default=32, help="model calls per turn at most (default: 32)"
    )
    parser.add_argument(
        "--delegate-to",
        choices=("spawn", "fork"),
        default="spawn",
        help="what the agents' subagent tool starts (default: spawn)",
    )
    parser.add_argument(
        "--sessions", type=Path, metavar="DIR", help="persist sessions here (JSONL per session)"
    )
    parser.add_argument(
        "--snapshots", type=Path, metavar="DIR", help="record or replay model snapshots here"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--record", action="store_true", help="with --snapshots: record")
    mode.add_argument("--replay", action="store_true", help="with --snapshots: replay")
    parser.add_argument(
        "--tick",
        type=float,
        default=0.1,
        help="offline model: seconds between the chunks of a 'slow' answer (default: 0.1)",
    )
    remote = parser.add_argument_group("over HTTP and WebSocket (the remote extra)")
    remote.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="serve at http://HOST:PORT/acp instead of stdio (port 0: any free port)",
    )
    token = remote.add_mutually_exclusive_group()
    token.add_argument(
        "--token-env",
        metavar="VAR",
        help="the environment variable holding the bearer token clients must send",
    )
    token.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help="a file holding the bearer token, or NAME:TOKEN lines (one principal each); "
        "not readable by group or others (chmod 600)",
    )
    remote.add_argument(
        "--allow-client-mcp-command",
        action="append",
        default=[],
        metavar="PROGRAM",
        help="with --listen: a stdio MCP server command a client may name in session/new "
        "(exactly; repeatable; default: none, every client MCP server is refused)",
    )
    remote.add_argument(
        "--allow-client-mcp-url",
        action="append",
        default=[],
        metavar="URL",
        help="with --listen: an http(s) MCP server URL (or a path below it) a client may "
        "name (repeatable; default: none)",
    )
    remote.add_argument(
        "--tls-cert", type=Path, metavar="PEM", help="serve HTTPS: the certificate (chain)"
    )
    remote.add_argument("--tls-key", type=Path, metavar="PEM", help="serve HTTPS: its key")
    remote.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="serve requests from web pages at ORIGIN (scheme://host[:port]; repeatable; "
        "default: none, a request carrying an Origin header is refused)",
    )
    remote.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="serve requests whose Host is NAME (repeatable; '*': any), besides IP addresses, "
        "localhost and the bound host (--a2a: and --public-url's): a DNS rebinding guard",
    )
    remote.add_argument(
        "--max-connections", type=int, default=64, help="connections at once (default: 64)"
    )
    remote.add_argument(
        "--max-sessions", type=int, default=32, help="sessions per connection (default: 32)"
    )
    remote.add_argument(
        "--max-connections-per-principal",
        type=int,
        metavar="N",
        help="connections one principal (without tokens: one client address) may hold, so "
        "one client cannot lock the others out (default: --max-connections less an eighth)",
    )
    remote.add_argument(
        "--max-message-bytes",
        type=int,
        default=4 * 1024 * 1024,
        help="the largest message either way; with --a2a, the largest request body "
        "(beyond: 413; default: 4 MiB)",
    )
    remote.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="close a connection with no request and no open stream for S seconds (default: 300)",
    )
    remote.add_argument(
        "--client-grace",
        type=float,
        default=10.0,
        metavar="S",
        help="with --listen: an HTTP client with no stream open and no request for S seconds "
        "is gone: its turns are cancelled and its agent stopped (default: 10)",
    )
    remote.add_argument(
        "--handshake-grace",
        type=float,
        default=10.0,
        metavar="S",
        help="with --listen: end a connection whose initialize is followed by no stream and "
        "no request for S seconds (default: 10)",
    )
    remote.add_argument(
        "--drain-timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="at shutdown, seconds cancelled turns get to be answered (default: 5)",
    )
    remote.add_argument(
        "--drain-notice",
        type=float,
        default=2.0,
        metavar="S",
        help="with --listen: at shutdown, first report draining on /health (503) for S "
        "seconds, serving the connections already made, so a load balancer's health check "
        "takes the instance out before the listener closes (default: 2)",
    )
    a2a = parser.add_argument_group("over A2A (the a2a extra)")
    a2a.add_argument(
        "--a2a",
        metavar="HOST:PORT",
        help="serve a registry agent as an A2A agent at http://HOST:PORT/ (port 0: any free "
        "port); --token-env, --token-file, --tls-cert/--tls-key (https://), "
        "--allow-origin, --allow-host and --drain-timeout apply",
    )
    a2a.add_argument(
        "--agent",
        dest="a2a_agent",
        metavar="NAME",
        default="spawn",
        help="with --a2a: the registry entry to serve (default: spawn, the runtime)",
    )
    a2a.add_argument(
        "--config",
        metavar="FILE",
        action="append",
        default=[],
        help="with --a2a: a registry file read after the default ones (repeatable)",
    )
    a2a.add_argument(
        "--public-url",
        metavar="URL",
        help="with --a2a: the endpoint the agent card names (default: http(s)://HOST:PORT/); "
        "give it when clients reach the server by another name or through a proxy",
    )
    a2a.add_argument(
        "--max-tasks", type=int, default=16, help="with --a2a: tasks at once (default: 16)"
    )
    a2a.add_argument(
        "--max-stored-tasks",
        type=int,
        default=1000,
        metavar="N",
        help="with --a2a: finished tasks kept for GetTask, the least recently used forgotten "
        "first (default: 1000); input-required ones idle an hour are forgotten too",
    )
    a2a.add_argument(
        "--max-stored-task-bytes",
        type=int,
        default=256 * 1024 * 1024,
        metavar="N",
        help="with --a2a: the bytes all stored tasks may hold together, the least recently "
        "used finished ones forgotten first, running ones never (default: 256 MiB)",
    )
    remote.add_argument(
        "agent",
        nargs=argparse.REMAINDER,
        help="with --listen: -- then a stdio ACP agent command to serve instead of the runtime",
    )
    return parser


class ServeConfigError(Exception):
    """The options do not make a runtime (the message says what to change)."""


def make_adapter(args: argparse.Namespace) -> LlmAdapter | None:
    """The model adapter the options name (``None`` when snapshots replay)."""
    from ..harness.llm.select import AdapterConfigError, make_adapter

    if args.snapshots is not None and args.replay:
        return None
    try:
        return make_adapter(
            args.adapter,
            model=args.model,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            tick=args.tick,
        )
    except AdapterConfigError as exc:
        raise ServeConfigError(f"--adapter {args.adapter}: {exc}") from exc


@contextmanager
def _creating(option: str, path: Path | None) -> Generator[None]:
    """A directory an option names that cannot be created is a bad option (one line)."""
    try:
        yield
    except OSError as exc:
        raise ServeConfigError(f"{option} {path}: cannot create it: {exc.strerror or exc}") from exc


def make_runtime(args: argparse.Namespace) -> AgentRuntime:
    from ..harness.runtime import AgentRuntime, AgentSettings
    from ..harness.session import SessionStore
    from ..harness.snapshots import SnapshotStore

    if (args.record or args.replay) and args.snapshots is None:
        raise ServeConfigError("--record and --replay need --snapshots DIR")
    if args.snapshots is not None and not (args.record or args.replay):
        raise ServeConfigError("--snapshots needs --record or --replay")
    if args.max_steps < 1:
        raise ServeConfigError("--max-steps must be at least 1")
    if not 0 <= args.tick < float("inf"):
        raise ServeConfigError(f"--tick must be seconds >= 0, not {args.tick}")
    snapshots = None
    if args.snapshots is not None:
        with _creating("--snapshots", args.snapshots):
            snapshots = SnapshotStore(args.snapshots, "replay" if args.replay else "record")
    with _creating("--sessions", args.sessions):
        sessions = SessionStore(args.sessions)
    return AgentRuntime(
        make_adapter(args),
        sessions=sessions,
        settings=AgentSettings(system=args.system, max_steps=args.max_steps),
        snapshots=snapshots,
    )


def run(args: argparse.Namespace) -> int:
    """Serve until stdin ends; 2 on bad options (one line on stderr saying why)."""
    from ..agents.runtime_agent import serve_runtime

    if args.a2a is not None:
        if args.listen is not None or _agent_command(args):
            sys.stderr.write("subagents serve: --a2a serves a registry agent (--agent NAME)\n")
            return 2
        if args.allow_client_mcp_command or args.allow_client_mcp_url:
            sys.stderr.write(
                "subagents serve: --allow-client-mcp-command and --allow-client-mcp-url go "
                "with --listen (an A2A client names no MCP server)\n"
            )
            return 2
        if args.public_url is not None and not _is_http_url(args.public_url):
            sys.stderr.write(
                f"subagents serve: --public-url {args.public_url!r}: expected an http:// or "
                "https:// URL with a host\n"
            )
            return 2
        from ._serve_a2a import run_a2a

        return run_a2a(args)
    if args.listen is not None:
        return _run_listen(args)
    if (
        _agent_command(args)
        or args.token_env
        or args.token_file
        or args.tls_cert
        or args.tls_key
        or args.allow_client_mcp_command
        or args.allow_client_mcp_url
    ):
        sys.stderr.write(
            "subagents serve: an agent command, a token, TLS and client MCP servers need "
            "--listen HOST:PORT\n"
        )
        return 2
    try:
        runtime = make_runtime(args)
    except (ServeConfigError, ValueError) as exc:
        sys.stderr.write(f"subagents serve: {exc}\n")
        return 2
    try:
        anyio.run(functools.partial(serve_runtime, lambda: runtime, delegate_to=args.delegate_to))
    except KeyboardInterrupt:
        return 130
    return 0


# ---------------------------------------------------------------------- over HTTP


def _is_http_url(value: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as ``(host, port)``."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ServeConfigError(f"--listen {value!r}: expected HOST:PORT (port 0: any free port)")
    return host, int(port)


def read_token(args: argparse.Namespace) -> str | Principals | None:
    """The bearer token from ``--token-env``, or the principals of ``--token-file`` (never
    from argv; a file readable by group or others is refused)."""
    if args.token_env:
        token = os.environ.get(args.token_env, "").strip()
        if not token:
            raise ServeConfigError(
                f"--token-env {args.token_env}: the variable is not set or empty"
            )
        return token
    if args.token_file is not None:
        from ..remote import Principals
        from ..remote._principals import TokenError

        try:
            return Principals.from_file(args.token_file)
        except TokenError as exc:
            raise ServeConfigError(f"--token-file: {exc}") from exc
    return None


def _client_mcp(args: argparse.Namespace) -> ClientMcpPolicy:
    from ..remote import ClientMcpPolicy

    try:
        return ClientMcpPolicy.allowing(args.allow_client_mcp_command, args.allow_client_mcp_url)
    except ValueError as exc:
        raise ServeConfigError(f"--allow-client-mcp-url: {exc}") from exc


def _agent_command(args: argparse.Namespace) -> list[str]:
    command: list[str] = list(args.agent or ())
    if command and command[0] == "--":
        command = command[1:]
    return command


def _limits(args: argparse.Namespace) -> ServerLimits:
    from ..remote import ServerLimits

    try:
        return ServerLimits(
            max_connections=args.max_connections,
            max_sessions=args.max_sessions,
            max_message_bytes=args.max_message_bytes,
            idle_timeout=args.idle_timeout,
            drain_timeout=args.drain_timeout,
            client_grace=args.client_grace,
            handshake_grace=args.handshake_grace,
            max_connections_per_principal=args.max_connections_per_principal,
        )
    except ValueError as exc:
        raise ServeConfigError(str(exc)) from exc


def _check_program(program: str) -> None:
    """The agent command's program must exist before the first connection (each connection
    starts one; a missing program would fail every one of them, after \"listening on\")."""
    import shutil

    if os.sep in program:
        path = Path(program).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            what = "is not executable" if path.is_file() else "does not exist"
            where = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
            raise ServeConfigError(f"the agent command: {program}{where} {what}")
    elif shutil.which(program) is None:
        raise ServeConfigError(f"the agent command: `{program}` is not on PATH")


def _backend(args: argparse.Namespace) -> AgentBackend:
    from ..remote import agent_command, runtime_agent

    command = _agent_command(args)
    if command:
        _check_program(command[0])
        # The agent gets this environment, less the token's variable.
        env = {name: value for name, value in os.environ.items() if name != args.token_env}
        return agent_command(command, env=env)
    make_runtime(args)  # the options are checked once, before the first connection
    return runtime_agent(functools.partial(make_runtime, args), delegate_to=args.delegate_to)


def _run_listen(args: argparse.Namespace) -> int:
    """Serve over HTTP until SIGTERM or SIGINT, then drain; 2 on bad options."""
    try:
        import hypercorn  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        sys.stderr.write(
            "subagents serve: --listen needs the remote extra: pip install 'subagents[remote]'\n"
        )
        return 2
    from ..remote import RemoteServerConfigError, check_listen_address

    try:
        host, port = parse_listen(args.listen)
        principals = check_listen_address(host, read_token(args))
        limits = _limits(args)
        backend = _backend(args)
        client_mcp = _client_mcp(args)
    except (ServeConfigError, RemoteServerConfigError, ValueError) as exc:
        sys.stderr.write(f"subagents serve: {exc}\n")
        return 2
    # With the runtime and --sessions, each session's principal is recorded beside it.
    ownership = (
        args.sessions / ".principals" if args.sessions and not _agent_command(args) else None
    )
    serving = functools.partial(
        _serve_http,
        client_mcp=client_mcp,
        ownership_dir=ownership,
        allowed=(args.allow_origin, args.allow_host),
        drain_notice=args.drain_notice,
    )
    try:
        anyio.run(serving, backend, host, port, principals, limits, args.tls_cert, args.tls_key)
    except RemoteServerConfigError as exc:
        sys.stderr.write(f"subagents serve: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve_http(
    backend: AgentBackend,
    host: str,
    port: int,
    token: Principals | None,
    limits: ServerLimits,
    tls_cert: Path | None,
    tls_key: Path | None,
    *,
    client_mcp: ClientMcpPolicy,
    ownership_dir: Path | None,
    allowed: tuple[list[str], list[str]],
    drain_notice: float,
) -> None:
    from ..remote import serve_acp_http

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with serve_acp_http(
            backend,
            host=host,
            port=port,
            token=token,
            limits=limits,
            tls_certfile=tls_cert,
            tls_keyfile=tls_key,
            client_mcp=client_mcp,
            ownership_dir=ownership_dir,
            allowed_origins=allowed[0],
            allowed_hosts=allowed[1],
            drain_notice=drain_notice,
        ) as server:
            sys.stderr.write(f"listening on {server.url}\n")
            sys.stderr.flush()
            async for signum in signals:
                sys.stderr.write(f"subagents serve: {signal.Signals(signum).name}: draining\n")
                sys.stderr.flush()
                break
