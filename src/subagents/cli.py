"""The ``subagents`` command: ``demo``, ``run``, ``agents``, ``conformance``, ``serve`` and
``bridge`` (each in its own module of :mod:`subagents.commands`, imported when the command
line is parsed)."""

from __future__ import annotations

import argparse
import sys

from . import __version__

__all__ = ("main",)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``subagents`` command."""
    parser = argparse.ArgumentParser(
        prog="subagents", description="A toolkit for out-of-process agents (ACP)."
    )
    parser.add_argument("-V", "--version", action="version", version=f"subagents {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks of errors (one line otherwise)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    from .commands import agents as agents_command
    from .commands import bridge as bridge_command
    from .commands import conformance as conformance_command
    from .commands import demo as demo_command
    from .commands import run as run_command
    from .commands import serve as serve_command

    demo_command.add_parser(commands)
    run_command.add_parser(commands)
    agents_command.add_parser(commands)
    conformance_command.add_parser(commands)
    serve_command.add_parser(commands)
    bridge_command.add_parser(commands)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "conformance":
        try:
            return conformance_command.run(args)
        except KeyboardInterrupt:
            return 130
    if args.command == "serve":
        return serve_command.run(args)
    if args.command == "run":
        return run_command.run(args)
    if args.command == "agents":
        return agents_command.run(args)
    if args.command == "bridge":
        return bridge_command.run(args)
    if args.command == "demo":
        return demo_command.run(args)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
