"""The ``subagents`` command."""

from __future__ import annotations

import sys

from . import __version__

__all__ = ("main",)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``subagents`` command."""
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        print(f"subagents {__version__}")
        return 0
    print("usage: subagents --version  (more commands arrive with the transports)", file=sys.stderr)
    return 2
