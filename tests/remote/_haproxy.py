"""HAProxy (Debian's 2.6 package), or open-source nginx, in front of three real ``subagents
serve --listen`` processes, for the load-balancer tests (``tests/remote/test_haproxy.py``,
``tests/remote/test_nginx.py``; nginx's configuration ``docs/load-balancer/nginx.conf`` gets
the addresses in place of its placeholders, nginx reading no environment).

The configuration is the README's recipe, the file ``docs/load-balancer/haproxy.cfg`` run as
it is (the addresses from the environment variables it names). Each instance serves the
in-process runtime on 127.0.0.1 with a sessions folder of its own and a bearer token (which
HAProxy passes through; its health checks need none); HAProxy logs every
request (its instance, status, method, the ``Acp-Connection-Id`` and ``Acp-Session-Id`` it
carried, the ``Acp-Connection-Id`` its answer carried) and every health-check change to its
stdout, a file here, which the tests read. Everything stops at the end of the block: the
instances with SIGTERM (each must exit 0, unless the test killed it), HAProxy with SIGTERM;
every wait is bounded.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pytest

from tests._ports import closed_port
from tests.remote._server_helpers import TOKEN

REPO: Final = Path(__file__).resolve().parents[2]
CONFIG: Final = REPO / "docs" / "load-balancer" / "haproxy.cfg"
NGINX_CONFIG: Final = REPO / "docs" / "load-balancer" / "nginx.conf"
NAMES: Final = ("a", "b", "c")
"""The instances, as the configuration names them (``server a "${ACP_SERVER_A}"``...)."""
START_BOUND: Final = 30.0
STOP_BOUND: Final = 20.0
TICK: Final = "0.02"
"""The runtime's offline model: ``slow N`` answers N ticks this many seconds apart."""
_LISTENING: Final = re.compile(r"listening on (http://(\S+)/acp)\n")
_REQUEST: Final = re.compile(
    r"^subagents/(\S+) (-?\d+) (\S+) connection=(\S*) session=(\S*) answered=(\S*)$"
)
_STATE: Final = re.compile(r"Server subagents/(\w+) is (UP|DOWN)\b")


def haproxy_command() -> str:
    """The haproxy executable; a test fails (it never skips) when it is missing."""
    found = shutil.which("haproxy") or next(
        (path for path in ("/usr/sbin/haproxy", "/sbin/haproxy") if os.path.exists(path)), None
    )
    if found is None:
        pytest.fail(
            "haproxy is not installed: run ./scripts/setup (as root it installs Debian's "
            "haproxy package; else: apt-get install haproxy)"
        )
    return found


@dataclass(frozen=True, slots=True)
class Request:
    """One request HAProxy logged."""

    server: str
    """The instance it went to (``<NOSRV>``: none)."""
    status: int
    method: str
    connection: str
    """The ``Acp-Connection-Id`` it carried (empty: none, an ``initialize``)."""
    session: str
    answered: str
    """The ``Acp-Connection-Id`` its answer carried (an ``initialize``'s answer)."""


@dataclass
class Fleet:
    """HAProxy and the instances behind it."""

    url: str
    """The load balancer's ACP endpoint, ``http://127.0.0.1:PORT/acp``."""
    instances: dict[str, subprocess.Popen[bytes]]
    addresses: dict[str, str]
    """Each instance's own ``HOST:PORT``."""
    log: Path
    token: str = TOKEN
    """The bearer token every instance requires."""
    killed: set[str] = field(default_factory=set[str])
    terminated: set[str] = field(default_factory=set[str])
    """The instances sent SIGTERM by the test (not sent it again at the end: a second SIGTERM
    landing as the drain ends would meet the default handler)."""

    @property
    def websocket_url(self) -> str:
        return "ws://" + self.url.removeprefix("http://")

    def health_url(self, name: str) -> str:
        return f"http://{self.addresses[name]}/health"

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def requests(self) -> list[Request]:
        """Every request logged so far, in order."""
        found: list[Request] = []
        for line in self.text().splitlines():
            match = _REQUEST.match(line.strip())
            if match:
                server, status, method, connection, session, answered = match.groups()
                found.append(
                    Request(
                        server,
                        int(status),
                        method,
                        *(_dash(v) for v in (connection, session, answered)),
                    )
                )
        return found

    def states(self) -> list[tuple[str, str]]:
        """The health checks' verdicts so far: (instance, ``UP``/``DOWN``), in order."""
        return _STATE.findall(self.text())

    def why_down(self, name: str) -> str:
        """HAProxy's line saying why it first marked instance ``name`` DOWN (empty: never)."""
        for line in self.text().splitlines():
            if f"Server subagents/{name} is DOWN" in line:
                return line
        return ""

    def sigterm(self, name: str) -> None:
        self.terminated.add(name)
        self.instances[name].send_signal(signal.SIGTERM)

    def kill(self, name: str) -> None:
        self.killed.add(name)
        self.instances[name].kill()
        self.instances[name].wait(timeout=STOP_BOUND)


def _dash(value: str) -> str:
    return "" if value == "-" else value


def _listening(log: Path) -> tuple[str, str] | None:
    match = _LISTENING.search(log.read_text(errors="replace"))
    return (match.group(1), match.group(2)) if match else None


def _accepting(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with suppress(OSError), socket.create_connection((host, int(port)), timeout=1.0):
        return True
    return False


def nginx_command() -> str:
    """The nginx executable; a test fails (it never skips) when it is missing."""
    found = shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/sbin/nginx") if os.path.exists(path)), None
    )
    if found is None:
        pytest.fail(
            "nginx is not installed: run ./scripts/setup (as root it installs Debian's "
            "nginx-light package; else: apt-get install nginx-light)"
        )
    return found


def _haproxy(
    directory: Path, bind: str, addresses: dict[str, str]
) -> tuple[list[str], dict[str, str], Path]:
    """HAProxy's command, environment and log: the recipe's file as it is."""
    env = {**os.environ, "ACP_LB_BIND": bind}
    env.update({f"ACP_SERVER_{name.upper()}": addresses[name] for name in NAMES})
    return [haproxy_command(), "-db", "-f", str(CONFIG)], env, directory / "haproxy.log"


def _nginx(
    directory: Path, bind: str, addresses: dict[str, str]
) -> tuple[list[str], dict[str, str], Path]:
    """nginx's command, environment and log: the recipe's file with the addresses in place
    of its placeholders (nginx reads no environment), run with ``directory`` as its prefix."""
    text = NGINX_CONFIG.read_text(encoding="utf-8").replace("127.0.0.1:8000", bind)
    for index, name in enumerate(NAMES, start=1):
        text = text.replace(f"127.0.0.1:800{index}", addresses[name])
    (directory / "nginx.conf").write_text(text, encoding="utf-8")
    (directory / "temp").mkdir(exist_ok=True)
    command = [nginx_command(), "-p", str(directory), "-c", "nginx.conf", "-g", "daemon off;"]
    return command, dict(os.environ), directory / "nginx.log"


@contextmanager
def haproxy_fleet(directory: Path) -> Iterator[Fleet]:
    """Three instances and HAProxy in front of them (see the module docstring)."""
    with _fleet(directory, _haproxy) as fleet:
        yield fleet


@contextmanager
def nginx_fleet(directory: Path) -> Iterator[Fleet]:
    """Three instances and nginx in front of them (its access log: ``Fleet.access_log``)."""
    with _fleet(directory, _nginx) as fleet:
        yield fleet


@contextmanager
def _fleet(
    directory: Path,
    balancer: Callable[[Path, str, dict[str, str]], tuple[list[str], dict[str, str], Path]],
) -> Iterator[Fleet]:
    instances: dict[str, subprocess.Popen[bytes]] = {}
    logs: dict[str, Path] = {}
    proxy: subprocess.Popen[bytes] | None = None
    fleet: Fleet | None = None
    try:
        for name in NAMES:
            logs[name] = log = directory / f"serve-{name}.log"
            command = [sys.executable, "-m", "subagents", "serve", "--listen", "127.0.0.1:0"]
            command += ["--tick", TICK, "--sessions", str(directory / f"sessions-{name}")]
            command += ["--token-env", "ACP_FLEET_TOKEN"]
            with log.open("wb") as stderr:
                instances[name] = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    env={**os.environ, "ACP_FLEET_TOKEN": TOKEN},
                )
        addresses: dict[str, str] = {}
        deadline = time.monotonic() + START_BOUND
        for name in NAMES:
            while (found := _listening(logs[name])) is None:
                assert instances[name].poll() is None, logs[name].read_text(errors="replace")
                assert time.monotonic() < deadline, f"instance {name}: no 'listening on'"
                time.sleep(0.05)
            addresses[name] = found[1]
        bind = f"127.0.0.1:{closed_port()}"
        command, env, proxy_log = balancer(directory, bind, addresses)
        with proxy_log.open("wb") as out:
            proxy = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=directory,
            )
        while not _accepting(bind):
            assert proxy.poll() is None, proxy_log.read_text(errors="replace")
            assert time.monotonic() < deadline, f"{command[0]} does not accept connections"
            time.sleep(0.05)
        fleet = Fleet(f"http://{bind}/acp", instances, addresses, proxy_log)
        yield fleet
        for name, process in instances.items():
            if process.poll() is None and name not in fleet.terminated:
                process.send_signal(signal.SIGTERM)
        codes = {name: process.wait(timeout=STOP_BOUND) for name, process in instances.items()}
        expected = {name: (-signal.SIGKILL if name in fleet.killed else 0) for name in NAMES}
        assert codes == expected, (
            codes,
            {name: logs[name].read_text(errors="replace") for name in NAMES},
        )
    finally:
        if proxy is not None and proxy.poll() is None:
            proxy.send_signal(signal.SIGTERM)  # nginx: a fast shutdown (the pid file removed)
            with suppress(subprocess.TimeoutExpired):
                proxy.wait(timeout=STOP_BOUND)
        for process in [*instances.values(), *([proxy] if proxy is not None else [])]:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=STOP_BOUND)
