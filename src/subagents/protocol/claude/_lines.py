"""Claude Code stdout lines: which are stream-json messages, which are skipped.

The lines come from the project's one line splitter
(:class:`~subagents.protocol.framing.LineSplitter`): stream-json lines are JSON objects but not
JSON-RPC messages, so the JSON-RPC framer cannot decode them. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, Literal, final

from ..jsonrpc import JsonObject, JsonValue

__all__ = (
    "DEFAULT_MAX_LINE_BYTES",
    "ClaudeLineTooLongError",
    "SkippedLine",
    "decode_line",
    "is_result_head",
)

DEFAULT_MAX_LINE_BYTES: Final = 16 * 1024 * 1024
"""The largest stdout line read (16 MiB): long replies and big tool results exceed 1 MiB."""

_SHOWN_BYTES: Final = 200
_RESULT_HEAD: Final = re.compile(rb'^\s*\{\s*"type"\s*:\s*"result"')


class ClaudeLineTooLongError(Exception):
    """A stdout line was longer than the limit; it was skipped (its content is lost)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"claude wrote a stdout line of {size} bytes, over the limit of {limit} bytes "
            "(raise max_line_bytes); the line was skipped"
        )
        self.size = size
        self.limit = limit


@final
@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A stdout line that is not a JSON object: skipped, never fatal."""

    kind: Literal["not_json", "unreadable"]
    """``not_json``: it does not start with ``{`` (the CLI's stray output); ``unreadable``: it
    does, but is not valid JSON (or not an object)."""
    detail: str
    """Why it is unreadable (empty for ``not_json``)."""
    start: bytes
    """The line's first bytes (up to 200), whitespace stripped."""


def decode_line(line: bytes | bytearray) -> JsonObject | SkippedLine | None:
    """One stdout line (without its newline) as a JSON object; a :class:`SkippedLine` for
    anything else; ``None`` for a blank line. Never raises."""
    stripped = line.strip()
    if not stripped:
        return None
    if not stripped.startswith(b"{"):
        return SkippedLine("not_json", "", bytes(stripped[:_SHOWN_BYTES]))
    try:
        decoded: JsonValue = json.loads(stripped)
    except (ValueError, RecursionError) as exc:
        return SkippedLine("unreadable", str(exc) or repr(exc), bytes(stripped[:_SHOWN_BYTES]))
    if not isinstance(decoded, dict):  # pragma: no cover - a line starting with { is an object
        return SkippedLine("unreadable", "not a JSON object", bytes(stripped[:_SHOWN_BYTES]))
    return decoded


def is_result_head(head: bytes) -> bool:
    """Whether an oversized line's first bytes are those of a ``result`` line (the one that
    ends a turn): a lost result still ends the turn, the CLI being idle after it."""
    return _RESULT_HEAD.match(head) is not None
