"""An agent served at a URL, judged through ``subagents bridge`` (issue 20).

The suite drives a stdio process per check; for an agent at a URL that process is
``python -m subagents bridge URL ...`` (:func:`bridge_command`), which relays each line to
the server and each message back. Everything the agent says reaches the suite unchanged, so
the protocol requirements judge the agent behind the server. The process-level requirements
(:data:`JUDGE_THE_BRIDGE`) watch the process the suite started, which is the bridge: what
they find is about the bridge (and the server's framing), not the remote agent.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ("BRIDGE_NOTE", "JUDGE_THE_BRIDGE", "ThroughBridge", "bridge_command")

JUDGE_THE_BRIDGE: Final = (
    "ACP-TRANSPORT-001",
    "ACP-TRANSPORT-002",
    "ACP-TRANSPORT-003",
    "ACP-SHUTDOWN-001",
    "ACP-SHUTDOWN-002",
    "ACP-STDERR-001",
)
"""Requirements about the stdio process itself (stdout purity, UTF-8, framing, exit on stdin
close, no process left behind, stderr): through the bridge they judge the bridge."""

BRIDGE_NOTE: Final = (
    "judged through `subagents bridge` (a stdio process relaying to the URL): the "
    "process-level requirements (stdout purity, UTF-8, framing, exit on stdin close, no "
    f"process left, stderr: {', '.join(JUDGE_THE_BRIDGE)}) judge the bridge, not the remote "
    "agent; the others judge the agent behind the server"
)


@dataclass(frozen=True)
class ThroughBridge:
    """The agent under test is served at :attr:`url`; the suite ran the bridge to it."""

    url: str
    transport: str
    """``auto`` (by the URL's scheme), ``http`` or ``websocket``."""

    def to_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            "transport": self.transport,
            "judge_the_bridge": list(JUDGE_THE_BRIDGE),
            "note": BRIDGE_NOTE,
        }


def bridge_command(
    url: str,
    *,
    token_env: str | None = None,
    transport: str = "auto",
    headers: Sequence[str] = (),
    timeout: float | None = None,
) -> tuple[str, ...]:
    """The stdio command the suite runs for the agent at ``url``: this Python running
    ``subagents bridge`` (``headers`` as ``'Name: value'``)."""
    command = [sys.executable, "-m", "subagents", "bridge", url]
    if token_env:
        command += ["--token-env", token_env]
    if transport != "auto":
        command += ["--transport", transport]
    for header in headers:
        command += ["--header", header]
    if timeout is not None:
        command += ["--timeout", f"{timeout:g}"]
    return tuple(command)
