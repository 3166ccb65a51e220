"""``subagents bridge URL``: an ACP agent served at a URL, as a stdio ACP agent.

Reads NDJSON lines on stdin and delivers each to the agent at ``URL`` as it is (Streamable
HTTP or WebSocket, :mod:`subagents.remote.bridge`); writes every message from the server as
one line on stdout, and nothing else there. Any stdio ACP client (an editor, ``subagents
conformance -- subagents bridge URL``) can so talk to a remote agent::

    subagents bridge http://build-box:8765/acp --token-env BUILD_BOX_TOKEN
    subagents bridge ws://127.0.0.1:8765/acp --header 'X-Team: infra'

Exit status: 0 when stdin ends (the connection is closed first: DELETE, or the socket's
close) or on SIGTERM; 1 when the connection cannot be made or is lost (the reason on stderr:
the URL, the status, the cause); 2 bad usage; 130 on SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any, TextIO, cast

import anyio

from ._common import EXIT_CANCELLED, EXIT_FAILED, EXIT_USAGE, error_line

__all__ = ("add_parser", "add_url_options", "parse_headers", "run")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``bridge`` to the ``subagents`` command's subparsers."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "bridge",
        help="serve the ACP agent at a URL over stdio (stdin/stdout NDJSON <-> HTTP/WebSocket)",
        description=(
            "Relay ACP between stdin/stdout (one JSON-RPC message per line) and the agent "
            "served at URL over Streamable HTTP (http://, https://) or WebSocket (ws://, "
            "wss://). Lines are delivered as they are; a line the server refuses comes back "
            "as a JSON-RPC error. Ends when stdin ends (closing the connection) or on SIGTERM."
        ),
        epilog=(
            "exit status: 0 stdin ended (or SIGTERM); 1 the connection could not be made or "
            "was lost (why on stderr); 2 bad usage; 130 SIGINT"
        ),
    )
    parser.add_argument("url", metavar="URL", help="the agent's endpoint (/acp when no path)")
    add_url_options(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="bound on each HTTP request, the upgrade and the close (default: %(default)s)",
    )
    return parser


def add_url_options(parser: Any) -> None:
    """``--token-env``, ``--transport`` and ``--header``: how to reach an agent URL (also
    ``subagents conformance``'s, which hands them to the bridge)."""
    parser.add_argument(
        "--token-env",
        metavar="VAR",
        help="the environment variable holding the server's bearer token (sent as Authorization)",
    )
    parser.add_argument(
        "--transport",
        choices=("auto", "http", "websocket"),
        default="auto",
        help="auto: by the URL's scheme; websocket upgrades an http(s) URL (default: auto)",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a header for every request to the URL (repeatable)",
    )


def parse_headers(items: list[str]) -> dict[str, str]:
    """``['Name: value', ...]`` as a mapping; :class:`ValueError` naming a malformed item."""
    headers: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip() or any(c in name for c in " \t\r\n"):
            raise ValueError(f"--header wants 'NAME: VALUE', got {item!r}")
        headers[name.strip()] = value.strip()
    return headers


def run(args: argparse.Namespace, err: TextIO | None = None) -> int:
    """Run the bridge on this process's stdin and stdout; returns the exit status."""
    from ..protocol.acp_remote import is_agent_url
    from ..remote.client import token_from_env

    err = err or cast(TextIO, sys.stderr)
    debug = bool(getattr(args, "debug", False))
    url: str = args.url
    if not is_agent_url(url):
        error_line(
            "bridge", f"not an agent URL (http://, https://, ws://, wss://): {url!r}", out=err
        )
        return EXIT_USAGE
    try:
        headers = parse_headers(args.header)
    except ValueError as exc:
        error_line("bridge", str(exc), out=err)
        return EXIT_USAGE
    token = token_from_env(args.token_env)
    if args.token_env and token is None:
        error_line(
            "bridge",
            f"--token-env {args.token_env}: the variable is not set (or empty)",
            hint=f"export {args.token_env}=<the server's token>",
            out=err,
        )
        return EXIT_USAGE
    if args.timeout <= 0:
        error_line("bridge", "--timeout must be positive", out=err)
        return EXIT_USAGE
    try:
        return anyio.run(_main, args, url, token, headers, err)
    except (ValueError, ImportError) as exc:
        error_line("bridge", str(exc), exc=exc, debug=debug, out=err)
        return EXIT_USAGE


async def _main(
    args: argparse.Namespace, url: str, token: str | None, headers: dict[str, str], err: TextIO
) -> int:
    from ..remote.bridge import BridgeError, run_bridge
    from ..transports._fd import open_stdio_streams

    signalled: list[signal.Signals] = []
    failure: BridgeError | None = None
    async with open_stdio_streams() as (receive, send), anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for received in signals:
                    signalled.append(received)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        try:
            await run_bridge(
                url,
                receive,
                send,
                token=token,
                headers=headers,
                transport=args.transport,
                timeout=args.timeout,
            )
        except BridgeError as exc:
            failure = exc
        tg.cancel_scope.cancel()
    if signalled:
        return EXIT_CANCELLED if signalled[0] == signal.SIGINT else 0
    if failure is not None:
        error_line("bridge", str(failure), out=err)
        return EXIT_FAILED
    return 0
