"""Starting and stopping ``a2a_agent_server.py`` (the official ``a2a-sdk`` server around a
scripted executor) for the tests: a subprocess, so it serves whichever anyio backend the test
runs on, and the provider kit's counts of tasks and descriptors see only the client's."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).with_name("a2a_agent_server.py")
STOP_TIMEOUT = 10.0


@dataclass
class A2AServer:
    """A running server: its process and its base URL."""

    process: subprocess.Popen[str]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def a2a_server(*args: str) -> Iterator[A2AServer]:
    """Run the server (``args``: ``--token T``) until the block ends; killed then."""
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded: the script prints it or exits
        if not line.startswith("PORT "):
            raise RuntimeError(f"the A2A server did not start: {line!r}")
        yield A2AServer(process, int(line.split()[1]))
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=STOP_TIMEOUT)
        if process.stdout is not None:
            process.stdout.close()
