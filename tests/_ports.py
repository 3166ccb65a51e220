"""Loopback ports for tests."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STOP_TIMEOUT = 30.0
"""Seconds a killed server process may take to be reaped."""


def closed_port() -> int:
    """A port on 127.0.0.1 that nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def port_script(script: Path, *args: str, what: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Run ``python script *args`` (a server that prints ``PORT <n>`` once it listens on
    127.0.0.1) until the block ends, then kill it and reap it; ``what`` names it in the error
    when it does not start."""
    process = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded: the script prints it or exits
        if not line.startswith("PORT "):
            raise RuntimeError(f"{what} did not start: {line!r}")
        yield process, int(line.split()[1])
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=STOP_TIMEOUT)
        if process.stdout is not None:
            process.stdout.close()
