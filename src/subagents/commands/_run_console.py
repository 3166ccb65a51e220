"""What ``subagents run`` shows: live text, one-line status notes, the outcome; or JSON lines.

Human mode: the child's text goes to stdout as it arrives (flushed per chunk, byte for byte:
nothing is added to it); everything else is a note on stderr (``  · tool: ...``; a delegated
child's tool calls ``  · ↳ tool: ...``, its text is not shown). When stdout
and stderr share a screen, a note must not land in the middle of a line of text, so a note
written while the text's line is open starts with a newline (on stderr: stdout stays exactly
the child's text). Consecutive thought chunks share one ``  · thought: ...`` line.

JSON mode (``--json``): one object per line on stdout and nothing else there; notes still go
to stderr. A progress line is ``{"event": "progress", "kind", "text", "data"}``
(:func:`~subagents.providers.progress.progress_json`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, TextIO, final

from ..protocol.jsonrpc import JsonValue
from ..providers.contract import ProgressEvent, SubagentOutcome
from ..providers.progress import describe, progress_json

__all__ = ("Console", "format_seconds")

_NOTE_WIDTH: Final = 160


def format_seconds(seconds: float) -> str:
    """``0.5``, ``2``, ``1.2``: short, no trailing zeros."""
    text = f"{seconds:.2f}" if seconds < 1 else f"{seconds:.1f}"
    return text.rstrip("0").rstrip(".") or "0"


def _one_line(text: str, width: int = _NOTE_WIDTH) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


@final
class Console:
    """Renders one run on ``out`` (stdout) and ``err`` (stderr)."""

    def __init__(self, out: TextIO, err: TextIO, *, json_mode: bool) -> None:
        self.out = out
        self.err = err
        self.json_mode = json_mode
        self._text_open = False  # stdout's last text did not end a line
        self._thought_open = False  # a thought line is open on stderr
        self._last_note: str | None = None  # the note just written (repeats are dropped)
        self._titles: dict[str, str] = {}  # tool call ids -> titles, for their results

    # -- JSON ----------------------------------------------------------------------------------

    def event(self, payload: Mapping[str, JsonValue]) -> None:
        """One JSON line on stdout (JSON mode only)."""
        if self.json_mode:
            self.out.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
            self.out.flush()

    # -- stderr notes --------------------------------------------------------------------------

    def _close_thought(self) -> None:
        if self._thought_open:
            self.err.write("\n")
            self._thought_open = False

    def _fresh_line(self) -> None:
        """Make stderr's next write start a screen line of its own."""
        self._close_thought()
        if self._text_open:
            self.err.write("\n")
            self._text_open = False

    def note(self, text: str) -> None:
        """A one-line status note on stderr (``  · TEXT``)."""
        line = f"  · {_one_line(text)}"
        if line == self._last_note and not self._text_open and not self._thought_open:
            return
        self._fresh_line()
        self.err.write(line + "\n")
        self.err.flush()
        self._last_note = line

    def fresh_line(self) -> None:
        """End the open text or thought line, so that what is written next on stderr starts
        a line of its own."""
        self._fresh_line()
        self.err.flush()

    def line(self, text: str) -> None:
        """A line of our own on stderr (outcome, cancelling...)."""
        self._last_note = None
        self._fresh_line()
        self.err.write(f"{text}\n")
        self.err.flush()

    def prompt(self, text: str) -> None:
        """A question on stderr, the cursor left after it."""
        self._last_note = None
        self._fresh_line()
        self.err.write(text)
        self.err.flush()

    # -- progress ------------------------------------------------------------------------------

    def progress(self, event: ProgressEvent) -> None:
        if self.json_mode:
            self.event({"event": "progress", **progress_json(event)})
            return
        match event.kind:
            case "text":
                self._text(event.text)
            case "thought":
                self._thought(event.text)
            case "tool_call":
                self._titles[event.id] = event.title
                self.note(f"tool: {event.title} [{event.status}]")
            case "tool_result":
                title = self._titles.get(event.id, event.id)
                self.note(f"tool: {title} [{event.status}]")
            case "plan":
                self.note(f"plan: {describe(event)}")
            case "other":
                if event.text:
                    self.note(event.text)
            case "child":
                self._child(event.event)
            case "usage":
                pass

    def _child(self, event: ProgressEvent) -> None:
        """A delegated child's event: its tool calls, results and plans as notes (``↳``);
        its text and thoughts stay off (stdout is this run's own text)."""
        while event.kind == "child":
            event = event.event
        match event.kind:
            case "tool_call":
                self.note(f"↳ tool: {event.title} [{event.status}]")
            case "tool_result":
                self.note(f"↳ tool: {event.id} [{event.status}]")
            case "plan":
                self.note(f"↳ plan: {describe(event)}")
            case "other":
                if event.text:
                    self.note(f"↳ {event.text}")
            case "text" | "thought" | "usage":
                pass

    def _text(self, text: str) -> None:
        if not text:
            return
        self._close_thought()
        self._last_note = None
        self.err.flush()
        self.out.write(text)
        self.out.flush()
        self._text_open = not text.endswith("\n")

    def _thought(self, text: str) -> None:
        text = text.replace("\r", " ").replace("\n", " ")
        if not text.strip():
            return
        if self._thought_open:
            self.err.write(text)
        else:
            text = text.lstrip()
            self._fresh_line()
            self.err.write(f"  · thought: {text}")
            self._thought_open = True
        self.err.flush()

    def progress_text(self, output: JsonValue) -> None:
        """A result that came with no live text: shown once at the end (human mode)."""
        if self.json_mode:
            return
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        self._text(text)

    # -- the end -------------------------------------------------------------------------------

    def outcome(self, outcome: SubagentOutcome, elapsed: float) -> None:
        if self.json_mode:
            self.event(
                {
                    "event": "outcome",
                    "status": outcome.status,
                    "output": outcome.output,
                    "failure_kind": outcome.failure_kind,
                    "message": outcome.message,
                    "elapsed": round(elapsed, 3),
                }
            )
            return
        if outcome.status == "completed":
            self.line(f"[completed in {format_seconds(elapsed)} s]")
        elif outcome.status == "cancelled":
            self.line(f"[cancelled: {_one_line(outcome.message or 'cancelled', 400)}]")
        else:
            kind = outcome.failure_kind or "turn"
            self.line(f"[failed ({kind}): {_one_line(outcome.message or 'failed', 400)}]")
