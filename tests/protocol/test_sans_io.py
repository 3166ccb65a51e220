"""The protocol layer is sans-IO: importing it pulls in no async framework."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_protocol_layer_does_not_import_anyio() -> None:
    """DESIGN.md layers: `protocol` imports no anyio and does no I/O."""
    code = (
        "import sys, subagents.protocol, subagents.protocol.framing, subagents.protocol.jsonrpc\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('anyio', 'trio', 'asyncio'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
