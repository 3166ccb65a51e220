"""Starting and stopping ``sdk_agent_server.py`` (the official SDK's server) for the tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).with_name("sdk_agent_server.py")
START_TIMEOUT = 30.0


@dataclass
class SdkServer:
    """A running server: its process and its endpoint."""

    process: subprocess.Popen[str]
    port: int

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/acp"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/acp"

    def url(self, transport: str) -> str:
        return self.ws_url if transport == "ws" else self.http_url

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=START_TIMEOUT)


@contextmanager
def sdk_server(*args: str) -> Iterator[SdkServer]:
    """Run the SDK's server (``args``: ``--token T``) until the block ends; killed then."""
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    server: SdkServer | None = None
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded: the script prints it or exits
        if not line.startswith("PORT "):
            raise RuntimeError(f"the SDK server did not start: {line!r}")
        server = SdkServer(process, int(line.split()[1]))
        yield server
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=START_TIMEOUT)
        if process.stdout is not None:
            process.stdout.close()
