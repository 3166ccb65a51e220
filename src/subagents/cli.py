"""The ``subagents`` command: ``demo``, ``run``, ``agents``, ``conformance``, ``serve`` and
``bridge`` (each in its own module of :mod:`subagents.commands`, imported when the command
line is parsed)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from typing import Any, NoReturn, Protocol, cast

from . import __version__

__all__ = ("main",)


class _Parser(argparse.ArgumentParser):
    """A parser whose usage errors are one line on stderr, then a hint naming ``--help``
    (argparse's default prints the whole usage first, many lines for ``run`` or ``serve``),
    exit status 2. Every command's parser (and their sub-parsers) is one."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}\n  hint: `{self.prog} --help` shows the usage\n")


class _Command(Protocol):
    """A module of :mod:`subagents.commands`: its parser, and the command itself."""

    def add_parser(self, commands: Any, /) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace, /) -> int: ...


_COMMANDS = ("demo", "run", "agents", "conformance", "serve", "bridge")
"""The commands, in the order ``--help`` lists them; each is ``subagents.commands.<name>``
with ``add_parser(subparsers)`` and ``run(args) -> int``."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``subagents`` command."""
    parser = _Parser(
        prog="subagents",
        description="A toolkit for out-of-process agents (ACP).",
        epilog="Start with `subagents demo`, then `subagents run reference hello`; "
        "`subagents COMMAND --help` describes each command.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"subagents {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks of errors (one line otherwise)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    argv = sys.argv[1:] if argv is None else argv
    # --debug anywhere before a `--` (errors say "rerun with --debug": it gets appended).
    end = argv.index("--") if "--" in argv else len(argv)
    if "--debug" in argv[:end]:
        argv = ["--debug", *(arg for arg in argv[:end] if arg != "--debug"), *argv[end:]]
    # Only the chosen command's module is imported (each command starts as a process of its
    # own: `bridge` and `conformance` are started once per check by tools and CI, and `run`'s
    # parser alone imports the provider layer); the others get a placeholder parser, never
    # used. Without a command (``--help``, a typo), every parser is built, for the help text.
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)
    modules: dict[str, _Command] = {}
    parsers: dict[str, argparse.ArgumentParser] = {}
    for name in _COMMANDS:
        if chosen in _COMMANDS and name != chosen:
            commands.add_parser(name)
            continue
        module = cast(_Command, importlib.import_module(f".commands.{name}", __package__))
        parsers[name] = module.add_parser(commands)
        modules[name] = module
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command in parsers:
        # An optional positional before an option is left unfilled by argparse
        # (`run reference --yes "the task"`): parse the command's arguments again,
        # intermixed, where its parser allows that (not with a REMAINDER or sub-commands).
        rest = argv[argv.index(args.command) + 1 :]
        with contextlib.suppress(TypeError):
            args, unknown = parsers[args.command].parse_known_intermixed_args(rest, args)
    if unknown:  # named by the command's own parser, whose --help lists what it takes
        parsers.get(args.command, parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    module = modules.get(args.command)
    if module is None:  # no command: a usage error like any other
        parser.error(f"no command given (one of {', '.join(_COMMANDS)})")
    try:
        return module.run(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a command's own bug: one line too (--debug: the traceback)
        from ._exception_groups import first_leaf
        from .commands._common import DEBUG_HINT, EXIT_FAILED, error_line

        leaf = first_leaf(exc)
        debug = bool(args.debug)
        message = f"unexpected error: {type(leaf).__name__}: {leaf}"
        error_line(args.command, message, hint=None if debug else DEBUG_HINT, exc=exc, debug=debug)
        return EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
