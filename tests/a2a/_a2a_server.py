"""Starting and stopping ``a2a_agent_server.py`` (the official ``a2a-sdk`` server around a
scripted executor) for the tests: a subprocess, so it serves whichever anyio backend the test
runs on, and the provider kit's counts of tasks and descriptors see only the client's."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests._ports import port_script

SCRIPT = Path(__file__).with_name("a2a_agent_server.py")


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
    with port_script(SCRIPT, *args, what="the A2A server") as (process, port):
        yield A2AServer(process, port)
