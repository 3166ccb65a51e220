"""What every subcommand shares: one-line errors with a hint (a traceback only with
``--debug``), and the "did you mean" of an unknown agent name."""

from __future__ import annotations

import difflib
import shlex
import sys
import traceback
from collections.abc import Iterable, Sequence
from typing import TextIO

__all__ = (
    "DEBUG_HINT",
    "EXIT_CANCELLED",
    "EXIT_FAILED",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "error_line",
    "unknown_agents",
)

DEBUG_HINT = "rerun with --debug to see the traceback"

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


def _quoted(names: Sequence[str]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def unknown_agents(
    unknown: Sequence[str], known: Iterable[str], configs: Sequence[str] = ()
) -> tuple[str, str]:
    """The message and hint for agent names not in the registry: each with the closest known
    names (``did you mean``), else the list of known names; the hint names the command that
    lists them (with the same ``--config`` files)."""
    names = sorted(known)
    by_lower = {name.lower(): name for name in names}
    parts: list[str] = []
    suggested = False
    for name in unknown:
        close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
        if close:
            suggested = True
            parts.append(f"{name!r} (did you mean {_quoted([by_lower[c] for c in close])}?)")
        else:
            parts.append(repr(name))
    message = f"no agent named {', '.join(parts)}"
    if not suggested:
        message += f" (known: {', '.join(names)})"
    listing = shlex.join(["subagents", "agents", *(a for c in configs for a in ("--config", c))])
    hint = f"`{listing}` describes them; add one in subagents.toml or --config FILE"
    return message, hint
