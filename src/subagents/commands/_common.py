"""What every subcommand shares: one-line errors (a traceback only with ``--debug``)."""

from __future__ import annotations

import sys
import traceback
from typing import TextIO

__all__ = ("EXIT_CANCELLED", "EXIT_FAILED", "EXIT_TIMEOUT", "EXIT_USAGE", "error_line")

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_CANCELLED = 130


def error_line(
    command: str,
    message: str,
    *,
    hint: str | None = None,
    exc: BaseException | None = None,
    debug: bool = False,
    out: TextIO | None = None,
) -> None:
    """Write ``subagents COMMAND: MESSAGE`` (then ``  hint: ...``) to stderr; with ``debug``,
    the traceback of ``exc`` first."""
    stream = out or sys.stderr
    if debug and exc is not None:
        traceback.print_exception(exc, file=stream)
    stream.write(f"subagents {command}: {message}\n")
    if hint:
        stream.write(f"  hint: {hint}\n")
    stream.flush()
