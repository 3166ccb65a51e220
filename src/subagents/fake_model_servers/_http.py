"""The HTTP layer the fake model servers share: a threaded server on 127.0.0.1.

A fake model server is a :class:`FakeHandler` subclass that answers ``POST`` requests from a
scripted model. :func:`serve` runs it on a loopback port chosen by the kernel, in a daemon
thread, for the life of a ``with`` block (so it stops by itself), and records every request
it saw in :attr:`FakeServer.requests`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

__all__ = ("FakeHandler", "FakeServer", "RecordedRequest", "serve")


@dataclass(frozen=True)
class RecordedRequest:
    """One request a fake server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    """The decoded JSON body (``None`` when there was none or it was not JSON)."""


@dataclass
class FakeServer:
    """A running fake server: its base URL and what it has seen."""

    host: str
    port: int
    requests: list[RecordedRequest] = field(default_factory=list[RecordedRequest])
    lock: threading.Lock = field(default_factory=threading.Lock)
    state: dict[str, Any] = field(default_factory=dict[str, Any])
    """Free-form state a handler may keep across requests (guarded by :attr:`lock`)."""

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


class FakeHandler(BaseHTTPRequestHandler):
    """Base request handler: JSON in, JSON or server-sent events out.

    Subclasses implement :meth:`handle_post` (and optionally :meth:`handle_get`). The server
    instance is in :attr:`fake`.
    """

    protocol_version = "HTTP/1.1"
    fake: ClassVar[FakeServer]

    # -- hooks ---------------------------------------------------------------------------

    def handle_post(self, body: Any) -> None:  # pragma: no cover - overridden
        self.send_json(404, {"error": {"message": f"no route for POST {self.path}"}})

    def handle_get(self) -> None:
        self.send_json(404, {"error": {"message": f"no route for GET {self.path}"}})

    # -- helpers -------------------------------------------------------------------------

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def send_sse(self, events: Iterable[tuple[str | None, Any]]) -> None:
        """Stream ``(event name, JSON data)`` pairs as server-sent events, then close (quietly
        when the client has gone, even before the headers were sent: a cancelled turn)."""
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for name, data in events:
                chunk = ""
                if name is not None:
                    chunk += f"event: {name}\n"
                chunk += f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
                self.wfile.write(chunk.encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return

    # -- plumbing ------------------------------------------------------------------------

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _record(self, body: Any) -> None:
        with self.fake.lock:
            self.fake.requests.append(
                RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
            )

    def do_POST(self) -> None:
        body = self._read_body()
        self._record(body)
        self.handle_post(body)

    def do_GET(self) -> None:
        self._record(None)
        self.handle_get()

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: tests read self.fake.requests instead


@contextmanager
def serve(handler: type[FakeHandler], *, port: int = 0) -> Generator[FakeServer]:
    """Serve ``handler`` on ``127.0.0.1`` (a free port unless given) for a ``with`` block."""
    fake = FakeServer("127.0.0.1", 0)
    bound = type(handler.__name__, (handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", port), bound)
    server.daemon_threads = True
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="fake-model-server", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def text_chunks(text: str, size: int) -> Iterator[str]:
    """``text`` in pieces of ``size`` characters (a streamed reply's deltas)."""
    for start in range(0, len(text), size):
        yield text[start : start + size]


def counting_deltas(limit: float, interval: float) -> Iterator[str]:
    """``"1 "``, ``"2 "``, ... one every ``interval`` seconds, for at most ``limit`` seconds:
    a slow stream that stops by itself."""
    deadline = time.monotonic() + limit
    count = 0
    while time.monotonic() < deadline:
        count += 1
        yield f"{count} "
        time.sleep(interval)
