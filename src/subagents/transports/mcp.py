"""The client end of MCP (Model Context Protocol) servers, as an ACP agent is given them.

An ACP client hands its agent MCP servers in ``session/new`` (``session/load``,
``session/resume``): a ``stdio`` entry (a command to start), an ``http`` entry (streamable
HTTP) or an ``sse`` entry (the older HTTP + server-sent-events transport).
:func:`open_mcp` connects to one of them, runs the MCP handshake (``initialize``,
``notifications/initialized``, ``tools/list``), and yields an :class:`McpConnection` whose
:meth:`~McpConnection.call_tool` calls a tool; leaving the block disconnects (a stdio server's
stdin is closed and its process reaped through the shared child-process layer's bounded
ladder).

- stdio: one JSON-RPC message per line on the child's stdin and stdout; a line is bounded
  (:data:`MAX_LINE`); the child's environment is the documented base plus the entry's
  ``env``;
- http: each message is POSTed to the entry's ``url`` with its ``headers``; the answer is the
  response's JSON body, or the messages of its event-stream body; an ``Mcp-Session-Id`` the
  server returns is sent back;
- sse: a GET of ``url`` opens an event stream whose ``endpoint`` event names where to POST;
  answers arrive as ``message`` events.

Every wait is bounded (``timeout`` per answer and for the start). One request runs at a time
per connection (requests are serialized); requests the server sends are answered
``-32601`` (this client offers no sampling, roots or elicitation). Failures are
:class:`McpError` with a message that names the cause (``no answer to initialize within
5 s``, ``HTTP 404 from URL``, the exit status of a server that went away, ...).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast, final

import anyio
import anyio.abc

from .. import __version__
from .._exception_groups import leaf_exceptions
from ..protocol import JsonValue, acp

if TYPE_CHECKING:
    import httpx

    from .process import AgentProcess

__all__ = (
    "MAX_LINE",
    "PROTOCOL_VERSION",
    "McpConnection",
    "McpError",
    "McpTool",
    "McpToolResult",
    "open_mcp",
)

PROTOCOL_VERSION: Final = "2025-06-18"
"""The MCP protocol version this client asks for."""
MAX_LINE: Final = 4 * 1024 * 1024
"""Longest line (bytes) accepted from a stdio server."""
_EVENTS_BUFFER: Final = 64


class McpError(Exception):
    """Connecting to an MCP server, or a request to it, failed; the message says why."""


@final
@dataclass(frozen=True, slots=True)
class McpTool:
    """A tool an MCP server offers."""

    name: str
    description: str
    input_schema: Mapping[str, JsonValue]


@final
@dataclass(frozen=True, slots=True)
class McpToolResult:
    """What a ``tools/call`` gave: its text content joined (other content described), and
    whether the server reports it as an error."""

    text: str
    is_error: bool = False


# ------------------------------------------------------------------------------ channels


class _Channel:
    """How JSON-RPC messages reach one server and come back (one class per transport)."""

    async def send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def receive(self) -> dict[str, Any]:
        """The next message from the server (objects only; anything else is skipped)."""
        raise NotImplementedError


@final
class _StdioChannel(_Channel):
    def __init__(self, child: AgentProcess) -> None:
        self.child = child
        self._buffer = bytearray()

    async def send(self, message: dict[str, Any]) -> None:
        await self.child.stdin.send(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        while True:
            line = await self._read_line()
            if not line.strip():
                continue
            parsed = _json(line.decode("utf-8", "replace"), "stdout")
            if parsed is not None:
                return parsed

    async def _read_line(self) -> bytes:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > MAX_LINE:
                raise McpError(f"a line longer than {MAX_LINE} bytes on stdout")
            try:
                self._buffer += await self.child.stdout.receive()
            except anyio.EndOfStream:
                raise McpError("the server closed its stdout") from None


def _json(text: str, where: str) -> dict[str, Any] | None:
    try:
        parsed: object = json.loads(text)
    except ValueError:
        raise McpError(f"not JSON on {where}: {text[:200]!r}") from None
    return cast(dict[str, Any], parsed) if isinstance(parsed, dict) else None


def _sse_events(text: str) -> list[tuple[str, str]]:
    """``(event, data)`` of each complete server-sent event in ``text``."""
    events: list[tuple[str, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", list[str]()
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if data:
            events.append((name, "\n".join(data)))
    return events


class _HttpChannel(_Channel):
    """Streamable HTTP: answers come back as response bodies, kept until received."""

    def __init__(self, client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
        self.client = client
        self.url = url
        self.headers = headers
        self.session_header: str | None = None
        self.answers_in, self.answers = anyio.create_memory_object_stream[dict[str, Any]](
            _EVENTS_BUFFER
        )

    async def _post(self, message: dict[str, Any]) -> httpx.Response:
        import httpx

        try:
            response = await self.client.post(self.url, json=message, headers=self._headers())
        except httpx.HTTPError as exc:
            raise McpError(f"{type(exc).__name__} from {self.url}: {exc}") from exc
        if response.status_code >= 400:
            raise McpError(f"HTTP {response.status_code} from {self.url}")
        return response

    def _headers(self) -> dict[str, str]:
        headers = {
            **self.headers,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session_header is not None:
            headers["Mcp-Session-Id"] = self.session_header
        return headers

    async def send(self, message: dict[str, Any]) -> None:
        response = await self._post(message)
        self.session_header = response.headers.get("mcp-session-id", self.session_header)
        if response.status_code == 202 or not response.content:
            return
        bodies = (
            [data for _, data in _sse_events(response.text)]
            if response.headers.get("content-type", "").startswith("text/event-stream")
            else [response.text]
        )
        for body in bodies:
            answer = _json(body, self.url)
            if answer is not None:
                await self.answers_in.send(answer)

    async def receive(self) -> dict[str, Any]:
        return await self.answers.receive()


@final
class _SseChannel(_HttpChannel):
    """The SSE transport: a GET event stream carries the answers; messages are POSTed to the
    URL its ``endpoint`` event names."""

    async def listen(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Read the event stream: the endpoint first (then started), then the answers."""
        from urllib.parse import urljoin

        import httpx

        try:
            async with self.client.stream("GET", self.url, headers=self.headers) as response:
                if response.status_code >= 400:
                    raise McpError(f"HTTP {response.status_code} from {self.url}")
                buffer = ""
                started = False
                async for chunk in response.aiter_text():
                    buffer += chunk.replace("\r\n", "\n")
                    complete, _, buffer = buffer.rpartition("\n\n")
                    for name, data in _sse_events(complete):
                        if name == "endpoint" and not started:
                            self.url = urljoin(self.url, data)
                            started = True
                            task_status.started()
                        elif name == "message" and started:
                            answer = _json(data, "the event stream")
                            if answer is not None:
                                await self.answers_in.send(answer)
        except httpx.HTTPError as exc:
            raise McpError(f"{type(exc).__name__} from {self.url}: {exc}") from exc
        raise McpError("the event stream ended")

    async def send(self, message: dict[str, Any]) -> None:
        await self._post(message)

    def _headers(self) -> dict[str, str]:
        return {**self.headers, "Content-Type": "application/json"}


# ---------------------------------------------------------------------------- connection


@final
class McpConnection:
    """A connected MCP server (see the module docstring)."""

    def __init__(self, name: str, channel: _Channel, timeout: float) -> None:
        self.name = name
        """The server's name in the ACP entry."""
        self.timeout = timeout
        self.tools: tuple[McpTool, ...] = ()
        """What ``tools/list`` gave (first page)."""
        self.server_info: dict[str, Any] = {}
        self._channel = channel
        self._ids = itertools.count(1)
        self._lock = anyio.Lock()

    async def _notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._channel.send(message)

    async def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request; its result object, within ``timeout`` (default: the connection's)
        seconds. A cancelled or timed-out request is announced with
        ``notifications/cancelled`` (its late answer is dropped)."""
        limit = self.timeout if timeout is None else timeout
        async with self._lock:
            request_id = next(self._ids)
            answer: dict[str, Any] | None = None
            try:
                with anyio.move_on_after(limit):
                    await self._channel.send(
                        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
                    )
                    answer = await self._answer(request_id)
            finally:
                if answer is None:  # timed out, cancelled or failed: the server may stop
                    with anyio.move_on_after(1, shield=True):
                        await self._announce_cancel(request_id)
        if answer is None:
            raise McpError(f"no answer to {method} within {limit:g} s")
        if "error" in answer:
            raise McpError(f"{method} was answered with an error: {answer['error']}")
        result = answer.get("result")
        if not isinstance(result, dict):
            raise McpError(f"{method} was answered without a result object")
        return cast(dict[str, Any], result)

    async def _announce_cancel(self, request_id: int) -> None:
        with suppress(McpError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self._notify("notifications/cancelled", {"requestId": request_id})

    async def _answer(self, request_id: int) -> dict[str, Any]:
        """The server's response to ``request_id`` (answering its requests meanwhile)."""
        while True:
            message = await self._channel.receive()
            if "method" in message:
                if "id" in message:  # a request from the server: this client offers nothing
                    error = {"code": -32601, "message": "Method not found"}
                    await self._channel.send(
                        {"jsonrpc": "2.0", "id": message["id"], "error": error}
                    )
                continue
            if message.get("id") == request_id:
                return message
            # else: a late answer to an abandoned request

    async def _handshake(self) -> None:
        answer = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "subagents", "version": __version__},
            },
        )
        info = answer.get("serverInfo")
        self.server_info = cast(dict[str, Any], info) if isinstance(info, dict) else {}
        await self._notify("notifications/initialized")
        listed = await self.request("tools/list", {})
        tools = listed.get("tools")
        if not isinstance(tools, list):
            raise McpError("tools/list was answered without a tools list")
        found: list[McpTool] = []
        for entry in cast(list[object], tools):
            if not isinstance(entry, dict):
                continue
            tool = cast(dict[str, Any], entry)
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                continue
            schema = tool.get("inputSchema")
            description = tool.get("description")
            found.append(
                McpTool(
                    name,
                    description if isinstance(description, str) else "",
                    cast(dict[str, JsonValue], schema)
                    if isinstance(schema, dict)
                    else {"type": "object"},
                )
            )
        self.tools = tuple(found)

    async def call_tool(
        self, name: str, arguments: Mapping[str, JsonValue], *, timeout: float | None = None
    ) -> McpToolResult:
        """``tools/call``: the tool's text content (other content described), and whether the
        server marks it an error. Raises :class:`McpError` when the call itself fails."""
        result = await self.request(
            "tools/call", {"name": name, "arguments": dict(arguments)}, timeout=timeout
        )
        parts: list[str] = []
        content = result.get("content")
        for block in cast(list[object], content) if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            item = cast(dict[str, Any], block)
            kind = item.get("type")
            if kind == "text" and isinstance(item.get("text"), str):
                parts.append(cast(str, item["text"]))
            elif kind == "resource" and isinstance(item.get("resource"), dict):
                resource = cast(dict[str, Any], item["resource"])
                text = resource.get("text")
                parts.append(text if isinstance(text, str) else f"[resource {resource.get('uri')}]")
            else:
                parts.append(f"[{kind} {item.get('mimeType', '')}]".replace(" ]", "]"))
        if not parts and "structuredContent" in result:
            parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
        return McpToolResult("\n".join(parts), result.get("isError") is True)


@asynccontextmanager
async def open_mcp(server: acp.McpServer, *, timeout: float = 5.0) -> AsyncGenerator[McpConnection]:
    """Connect to ``server`` (an ACP ``mcpServers`` entry: stdio, http or sse), run the
    handshake, and yield the connection; see the module docstring. Raises
    :class:`McpError` naming what failed (for a stdio server that exited, its exit status)."""
    if isinstance(server, acp.McpServerStdio):
        async with _open_stdio(server, timeout) as connection:
            yield connection
    elif isinstance(server, acp.McpServerHttp | acp.McpServerSse):
        async with _open_remote(server, timeout) as connection:
            yield connection
    else:
        raise McpError(f"the {server.type} transport is not supported")


@asynccontextmanager
async def _open_stdio(server: acp.McpServerStdio, timeout: float) -> AsyncGenerator[McpConnection]:
    from .process import ProcessStartError, open_agent_process

    env = {variable.name: variable.value for variable in server.env}
    started = False
    error: McpError | None = None
    try:
        async with open_agent_process(
            [server.command, *server.args],
            env=env,
            start_timeout=timeout,
            close_timeout=1.0,
            term_timeout=1.0,
            kill_timeout=1.0,
            name=f"mcp-{server.name}",
        ) as child:
            started = True
            connection = McpConnection(server.name, _StdioChannel(child), timeout)
            try:
                await connection._handshake()  # pyright: ignore[reportPrivateUsage]
            except McpError as exc:
                error = exc
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                error = McpError(f"the connection broke ({type(exc).__name__}: {exc})")
            else:
                yield connection
                return
    except (ProcessStartError, ValueError, OSError) as exc:
        if started:
            raise
        raise McpError(
            str(exc) if isinstance(exc, ProcessStartError) else f"{type(exc).__name__}: {exc}"
        ) from exc
    # The handshake failed; the process block has ended (the child is reaped).
    assert error is not None
    if child.exit is not None:
        raise McpError(f"{error}; the server {child.exit.describe()}") from error
    raise error


@asynccontextmanager
async def _open_remote(
    server: acp.McpServerHttp | acp.McpServerSse, timeout: float
) -> AsyncGenerator[McpConnection]:
    import httpx

    headers = {header.name: header.value for header in server.headers}
    async with httpx.AsyncClient(timeout=timeout) as client:
        if isinstance(server, acp.McpServerHttp):
            channel = _HttpChannel(client, server.url, headers)
            with channel.answers_in, channel.answers:
                connection = McpConnection(server.name, channel, timeout)
                await connection._handshake()  # pyright: ignore[reportPrivateUsage]
                yield connection
            return
        events = _SseChannel(client, server.url, headers)
        try:
            with events.answers_in, events.answers:
                async with anyio.create_task_group() as tg:
                    try:
                        with anyio.fail_after(timeout):
                            await tg.start(events.listen)
                    except TimeoutError:
                        raise McpError(
                            f"no endpoint event from {server.url} within {timeout:g} s"
                        ) from None
                    connection = McpConnection(server.name, events, timeout)
                    await connection._handshake()  # pyright: ignore[reportPrivateUsage]
                    yield connection
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # One failure (the listener's, the handshake's or the caller's): itself.
            leaves = leaf_exceptions(group)
            raise (leaves[0] if len(leaves) == 1 else group) from None
