"""Starting and stopping ``sdk_agent_server.py`` (the official SDK's server) for the tests."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests._ports import port_script

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
    with port_script(SCRIPT, *args, what="the SDK server") as (process, port):
        yield SdkServer(process, port)
