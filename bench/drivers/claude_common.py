"""What the three Claude Code bench drivers share (stdlib only: it also runs in the official
SDK's venv). The timing helpers are those of the Codex drivers (``codex_common``).

Every driver does the same: spawn the ``claude`` CLI (stream-json both ways, partial messages
on, the argv of ``subagents.transports.claude_code.build_claude_argv``), send the
``initialize`` control request and wait for its answer (ready), then ``--short-turns`` user
messages asking the bench's fake Messages API for ``--short-deltas`` text deltas and
``--long-turns`` asking for ``--long-deltas``, each run to its ``result`` line. For each turn
it records the wall time from just before the user message is written to the first text delta
(a ``stream_event`` carrying a ``content_block_delta``/``text_delta``) and to the ``result``,
the number of deltas seen, its own CPU (``time.process_time``) and the CLI's CPU
(``/proc/PID/task/*/schedstat``). The result goes to ``--out`` as one JSON object.
"""

from __future__ import annotations

import argparse
from typing import Any

from codex_common import Init, peak_rss_mib, plan, write_result
from codex_common import Turn as _CodexTurn
from codex_common import codex_cpu_s as cli_cpu_s

__all__ = (
    "PROMPT",
    "Init",
    "Turn",
    "cli_cpu_s",
    "from_spawn_ms",
    "parse_args",
    "peak_rss_mib",
    "plan",
    "status_of",
    "text_delta",
    "write_result",
)

#: The prompt that makes the bench's fake Messages API stream ``n`` deltas (bench/claude.py).
PROMPT = "bench-deltas {n}"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--cli", required=True, help="the claude CLI")
    p.add_argument("--model", required=True)
    p.add_argument("--command", required=True, help="JSON list: the CLI's argv (the floor's)")
    p.add_argument("--env", required=True, help="JSON object: the environment (claude_env)")
    p.add_argument("--child-env", required=True, help="JSON object: the floor's CLI environment")
    p.add_argument("--cwd", required=True)
    p.add_argument("--short-turns", type=int, default=5)
    p.add_argument("--short-deltas", type=int, default=5)
    p.add_argument("--long-turns", type=int, default=2)
    p.add_argument("--long-deltas", type=int, default=500)
    p.add_argument("--out", required=True)
    return p.parse_args()


class Turn(_CodexTurn):
    """A Codex-bench turn timer whose record names the CLI's CPU ``cli_cpu_ms`` and also
    counts the events the client delivered (:meth:`event`, deltas included)."""

    events = 0

    def event(self) -> None:
        self.events += 1

    def completed(self, status: str | None) -> dict[str, Any]:
        record = super().completed(status)
        record["cli_cpu_ms"] = record.pop("codex_cpu_ms")
        record["events"] = self.events
        return record


def text_delta(event: Any) -> str | None:
    """The text of a raw Messages API stream event if it is a ``text_delta``, else ``None``."""
    if not isinstance(event, dict) or event.get("type") != "content_block_delta":
        return None
    delta = event.get("delta")
    if isinstance(delta, dict) and delta.get("type") == "text_delta":
        text = delta.get("text")
        return text if isinstance(text, str) else None
    return None


def status_of(subtype: str | None, is_error: bool) -> str:
    return f"{subtype}{' (is_error)' if is_error else ''}"


def from_spawn_ms(init: Init, first_turn: Turn) -> float | None:
    """Spawn → first text delta of the first turn, ms."""
    if first_turn.first is None:
        return None
    return (first_turn.first - init.t0) * 1e3
