"""A tiny MCP server over HTTP on 127.0.0.1, for the checks of agents that advertise
``mcpCapabilities.http`` or ``.sse`` (ACP-MCP-003/004).

One listener serves both remote MCP transports, enough for a client to connect, list the
tools (one: ``echo``, which answers its ``text`` argument) and call it:

- streamable HTTP at ``/mcp``: each POSTed JSON-RPC request is answered with a JSON body,
  a notification with ``202 Accepted``; a GET (the optional server stream) gets ``405``;
- SSE at ``/sse``: a GET opens an event stream whose first event (``endpoint``) names
  ``/messages``; each request POSTed there is acknowledged with ``202`` and answered as a
  ``message`` event on the stream.

It records the JSON-RPC methods it received (:attr:`McpHttpServer.methods`), so a check can
say whether the agent connected. Every connection is bounded in size and in time; the server
stops with the check that opened it (``async with``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectSendStream

__all__ = ("McpHttpServer", "serve_mcp_http")

_MAX_HEAD = 16 * 1024
_MAX_BODY = 1024 * 1024
_IO_TIMEOUT = 10.0


@dataclass
class McpHttpServer:
    """What the running server offers and saw."""

    port: int
    methods: list[str] = field(default_factory=list[str])
    """JSON-RPC methods received, in order, over either transport."""
    event_streams: list[MemoryObjectSendStream[bytes]] = field(
        default_factory=list[MemoryObjectSendStream[bytes]]
    )

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def sse_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sse"

    def answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON-RPC answer to ``message`` (``None`` for a notification)."""
        method = message.get("method")
        self.methods.append(str(method))
        if "id" not in message:
            return None
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "initialize":
            params = cast(dict[str, Any], message.get("params") or {})
            reply["result"] = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "subagents-conformance-http", "version": "1"},
            }
        elif method == "tools/list":
            reply["result"] = {
                "tools": [
                    {
                        "name": "echo",
                        "description": "Answers its text argument.",
                        "inputSchema": {
                            "type": "object",
                            "properties": {"text": {"type": "string"}},
                            "required": ["text"],
                        },
                    }
                ]
            }
        elif method == "tools/call":
            params = cast(dict[str, Any], message.get("params") or {})
            arguments = cast(dict[str, Any], params.get("arguments") or {})
            text = arguments.get("text")
            if params.get("name") == "echo" and isinstance(text, str):
                reply["result"] = {"content": [{"type": "text", "text": text}]}
            else:
                reply["result"] = {
                    "content": [{"type": "text", "text": "echo needs a string text"}],
                    "isError": True,
                }
        elif method == "ping":
            reply["result"] = {}
        else:
            reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
        return reply


def _response(status: str, body: bytes = b"", content_type: str = "application/json") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    if body:
        head += f"Content-Type: {content_type}\r\n"
    return head.encode() + b"\r\n" + body


async def _read_request(stream: anyio.abc.ByteStream) -> tuple[str, str, bytes] | None:
    """``(method, path, body)`` of one HTTP/1.1 request; ``None`` when it is unusable."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _MAX_HEAD:
            return None
        try:
            data += await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) < 2:
        return None
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    if length > _MAX_BODY:
        return None
    while len(body) < length:
        try:
            body += await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    return parts[0], parts[1].split("?")[0], body[:length]


async def _handle(server: McpHttpServer, stream: anyio.abc.ByteStream) -> None:
    request = None
    with anyio.move_on_after(_IO_TIMEOUT):
        request = await _read_request(stream)
    if request is None:
        return
    method, path, body = request
    if method == "GET" and path == "/sse":
        await _event_stream(server, stream)
        return
    if method != "POST" or path not in ("/mcp", "/messages"):
        await stream.send(
            _response("405 Method Not Allowed" if path == "/mcp" else "404 Not Found")
        )
        return
    try:
        message = json.loads(body)
    except ValueError:
        await stream.send(_response("400 Bad Request"))
        return
    if not isinstance(message, dict):
        await stream.send(_response("400 Bad Request"))
        return
    answer = server.answer(cast(dict[str, Any], message))
    if path == "/messages":
        if answer is not None:
            event = b"event: message\ndata: " + json.dumps(answer).encode() + b"\n\n"
            for events in server.event_streams:
                events.send_nowait(event)
        await stream.send(_response("202 Accepted"))
    elif answer is None:
        await stream.send(_response("202 Accepted"))
    else:
        await stream.send(_response("200 OK", json.dumps(answer).encode()))


async def _event_stream(server: McpHttpServer, stream: anyio.abc.ByteStream) -> None:
    send, receive = anyio.create_memory_object_stream[bytes](64)
    server.event_streams.append(send)
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        b"Connection: close\r\n\r\n"
    )
    try:
        await stream.send(head + b"event: endpoint\ndata: /messages\n\n")
        async with receive:
            async for event in receive:
                await stream.send(event)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        server.event_streams.remove(send)
        send.close()


@asynccontextmanager
async def serve_mcp_http() -> AsyncGenerator[McpHttpServer, None]:
    """Serve on an ephemeral port of 127.0.0.1 until the block ends."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    server = McpHttpServer(port)

    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await _handle(server, stream)

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()
