"""The client end of MCP (Model Context Protocol) servers, as an ACP agent is given them.

An ACP client hands its agent MCP servers in ``session/new`` (``session/load``,
``session/resume``): a ``stdio`` entry (a command to start), an ``http`` entry (streamable
HTTP) or an ``sse`` entry (the older HTTP + server-sent-events transport).
:func:`open_mcp` connects to one of them, runs the MCP handshake (``initialize``,
``notifications/initialized``, ``tools/list``), and yields an :class:`McpConnection` whose
:meth:`~McpConnection.call_tool` calls a tool; leaving the block disconnects (a stdio server's
stdin is closed and its process reaped through the shared child-process layer's bounded
ladder).

The JSON-RPC is the project's peer (:func:`~subagents.rpc.open_peer`: correlation, the
answer to requests the server sends, cancellation), the messages' content is sans-IO
(:mod:`subagents.protocol.mcp`); the peer runs over a byte-stream pair:

- stdio: the child's stdout and stdin, one message per line; a line is bounded
  (:data:`MAX_LINE`); the child's environment is the documented base plus the entry's
  ``env``;
- http: a link that POSTs each message to the entry's ``url`` with its ``headers`` and reads
  back the response's JSON body, or the messages of its event-stream body; an
  ``Mcp-Session-Id`` the server returns is sent back;
- sse: a GET of ``url`` opens an event stream whose ``endpoint`` event names where to POST;
  answers arrive as ``message`` events.

Every wait is bounded (``timeout`` per answer and for the start); a request given up on is
announced with ``notifications/cancelled``. One request runs at a time per connection
(requests are serialized); requests the server sends are answered ``-32601`` (this client
offers no sampling, roots or elicitation). Failures are :class:`McpError` with a message that
names the cause (``no answer to initialize within 5 s``, ``HTTP 404 from URL``, ``not JSON on
stdout: ...``, the exit status of a server that went away, ...).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Generator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final, cast, final

import anyio
import anyio.abc

from .. import __version__
from .._exception_groups import leaf_exceptions
from .._generators import finish
from ..protocol import JsonValue, acp
from ..protocol.errors import MessageTooLargeError, RemoteProtocolError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.mcp import (
    CANCELLED_METHOD,
    PROTOCOL_VERSION,
    McpTool,
    McpToolResult,
    initialize_params,
    parse_tools,
    sse_events,
    tool_result,
)
from ..rpc import ConnectionClosedError, Peer, RPCError, open_peer

if TYPE_CHECKING:
    import httpx

__all__ = (
    "MAX_LINE",
    "PROTOCOL_VERSION",
    "McpConnection",
    "McpError",
    "McpTool",
    "McpToolResult",
    "open_mcp",
)

logger = logging.getLogger("subagents.mcp")

MAX_LINE: Final = 4 * 1024 * 1024
"""Longest line (bytes) accepted from a stdio server."""
_EVENTS_BUFFER: Final = 64
_SHOWN: Final = 200


class McpError(Exception):
    """Connecting to an MCP server, or a request to it, failed; the message says why."""


# ------------------------------------------------------------------------------ requests


@final
class _BadLines:
    """Lines from the server the peer cannot read: each fails the request waiting (as a
    garbled answer would) with an error naming the line. A line that comes while no request
    waits (a server that writes before it is asked: the first request may be sent after the
    line was read), or after the waiting request's answer, fails the next request instead of
    being lost."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._refused = b""
        self._waiting: tuple[anyio.CancelScope, list[McpError]] | None = None
        self._unclaimed: McpError | None = None

    def loads(self, line: bytearray) -> JsonValue:
        """The peer's JSON parser: keeps the start of a line it refuses, for the error."""
        try:
            parsed: JsonValue = json.loads(line)
        except ValueError:
            self._refused = bytes(line[:_SHOWN])
            raise
        return parsed

    def on_protocol_error(self, error: RemoteProtocolError) -> None:
        if isinstance(error, MessageTooLargeError):
            self._fail(McpError(f"a line longer than {error.limit} bytes on {self.where}"))
        elif error.kind in ("invalid_json", "invalid_utf8"):
            text = self._refused.decode("utf-8", "replace")
            self._fail(McpError(f"not JSON on {self.where}: {text!r}"))
        # else (not an object, an unknown id): skipped, as a server's stray output

    def _fail(self, error: McpError) -> None:
        if self._waiting is not None:
            scope, errors = self._waiting
            errors.append(error)
            scope.cancel()
        elif self._unclaimed is None:
            self._unclaimed = error

    @contextmanager
    def failing(self) -> Generator[None]:
        """Within the block, a bad line ends it with the error naming that line."""
        if self._unclaimed is not None:
            error, self._unclaimed = self._unclaimed, None
            raise error
        errors: list[McpError] = []
        with anyio.CancelScope() as scope:
            self._waiting = (scope, errors)
            try:
                yield
            finally:
                self._waiting = None
        if errors:
            if scope.cancelled_caught:
                raise errors[0]
            # The request was answered before the line was read (both in one read, say):
            # the line is not its answer, so it is the next request's to report.
            if self._unclaimed is None:
                self._unclaimed = errors[0]


@final
class _Requests:
    """Requests over the peer: one at a time, each bounded, failures as :class:`McpError`."""

    def __init__(self, peer: Peer, bad_lines: _BadLines, closed: str) -> None:
        self.peer = peer
        self._bad_lines = bad_lines
        self._closed = closed
        self._lock = anyio.Lock()

    async def request(self, method: str, params: dict[str, Any], limit: float) -> dict[str, Any]:
        result: JsonValue = None
        answered = False
        async with self._lock:
            with anyio.move_on_after(limit), self._bad_lines.failing():
                try:
                    result = await self.peer.request(method, params)
                except RPCError as exc:
                    raise McpError(
                        f"{method} was answered with an error: {_error_object(exc)}"
                    ) from None
                except MessageTooLargeError as exc:
                    raise McpError(
                        f"a line longer than {exc.limit} bytes on {self._bad_lines.where}"
                    ) from None
                except ConnectionClosedError as exc:
                    cause = exc.__cause__
                    if cause is None:
                        raise McpError(self._closed) from None
                    raise McpError(
                        f"the connection broke ({type(cause).__name__}: {cause})"
                    ) from None
                answered = True
        if not answered:  # the peer announced the cancel (notifications/cancelled)
            raise McpError(f"no answer to {method} within {limit:g} s")
        if not isinstance(result, dict):
            raise McpError(f"{method} was answered without a result object")
        return cast(dict[str, Any], result)


def _error_object(exc: RPCError) -> dict[str, JsonValue]:
    error: dict[str, JsonValue] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return error


async def _handshake(
    requests: _Requests, timeout: float
) -> tuple[dict[str, Any], tuple[McpTool, ...]]:
    """``initialize``, ``notifications/initialized``, ``tools/list``: the server's info and
    its tools (first page)."""
    answer = await requests.request(
        "initialize", initialize_params("subagents", __version__), timeout
    )
    info = answer.get("serverInfo")
    await requests.peer.notify("notifications/initialized")
    tools = parse_tools(await requests.request("tools/list", {}, timeout))
    if tools is None:
        raise McpError("tools/list was answered without a tools list")
    return (cast(dict[str, Any], info) if isinstance(info, dict) else {}), tools


# ---------------------------------------------------------------------------- connection


@final
class McpConnection:
    """A connected MCP server (see the module docstring). Made by :func:`open_mcp`."""

    def __init__(
        self,
        name: str,
        requests: _Requests,
        timeout: float,
        server_info: dict[str, Any],
        tools: tuple[McpTool, ...],
    ) -> None:
        self.name = name
        """The server's name in the ACP entry."""
        self.timeout = timeout
        self.server_info = server_info
        """The ``serverInfo`` of the ``initialize`` answer."""
        self.tools = tools
        """What ``tools/list`` gave (first page)."""
        self._requests = requests

    async def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request; its result object, within ``timeout`` (default: the connection's)
        seconds. A cancelled or timed-out request is announced with
        ``notifications/cancelled`` (its late answer is dropped)."""
        limit = self.timeout if timeout is None else timeout
        return await self._requests.request(method, params, limit)

    async def call_tool(
        self, name: str, arguments: Mapping[str, JsonValue], *, timeout: float | None = None
    ) -> McpToolResult:
        """``tools/call``: the tool's text content (other content described), and whether the
        server marks it an error. Raises :class:`McpError` when the call itself fails."""
        result = await self.request(
            "tools/call", {"name": name, "arguments": dict(arguments)}, timeout=timeout
        )
        return tool_result(result)


@asynccontextmanager
async def _connected(
    name: str,
    receive_stream: anyio.abc.ByteReceiveStream,
    send_stream: anyio.abc.ByteSendStream,
    *,
    timeout: float,
    where: str,
    closed: str,
    max_line: int,
    label: str,
) -> AsyncGenerator[McpConnection]:
    """The peer over the pair, the handshake, the connection."""
    bad_lines = _BadLines(where)
    async with open_peer(
        receive_stream,
        send_stream,
        max_message_bytes=max_line,
        require_version=False,
        on_protocol_error=bad_lines.on_protocol_error,
        cancel_grace=1.0,
        cancel_method=CANCELLED_METHOD,
        name=label,
        json_loads=bad_lines.loads,
    ) as peer:
        requests = _Requests(peer, bad_lines, closed)
        server_info, tools = await _handshake(requests, timeout)
        yield McpConnection(name, requests, timeout, server_info, tools)


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
    label = f"mcp-{server.name}"
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
            name=label,
        ) as child:
            started = True
            yielded = False
            try:
                async with _connected(
                    server.name,
                    child.stdout,
                    child.stdin,
                    timeout=timeout,
                    where="stdout",
                    closed="the server closed its stdout",
                    max_line=MAX_LINE,
                    label=label,
                ) as connection:
                    yielded = True
                    yield connection
                return
            except McpError as exc:
                if yielded:
                    raise
                error = exc
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


# ------------------------------------------------------------------------- HTTP and SSE


def _json(text: str, where: str) -> dict[str, Any] | None:
    try:
        parsed: object = json.loads(text)
    except ValueError:
        raise McpError(f"not JSON on {where}: {text[:_SHOWN]!r}") from None
    return cast(dict[str, Any], parsed) if isinstance(parsed, dict) else None


class _HttpLink(anyio.abc.ByteStream):
    """Streamable HTTP as the peer's byte-stream pair: each message the peer writes is
    POSTed; the answers in the response bodies become the lines it reads.

    A request that cannot be POSTed raises :class:`McpError` (``HTTP 404 from URL``) in the
    task that sent it; a notification or answer that cannot is dropped (logged): nothing
    waits for it, and the connection goes on.
    """

    def __init__(self, client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
        self.client = client
        self.url = url
        self.headers = headers
        self.session_header: str | None = None
        self._inbound_in, self._inbound = anyio.create_memory_object_stream[bytes](_EVENTS_BUFFER)
        self._rest = b""

    # -- what the peer writes

    async def send(self, item: bytes) -> None:
        for line in item.splitlines():
            if not line.strip():
                continue
            message = cast(dict[str, Any], json.loads(line))
            try:
                await self.deliver(message)
            except McpError as exc:
                if "method" in message and "id" in message:
                    raise
                logger.debug("%s: %s dropped: %s", self.url, message.get("method", "answer"), exc)

    async def deliver(self, message: dict[str, Any]) -> None:
        """POST one message; queue the answers in the response."""
        response = await self._post(message)
        self.session_header = response.headers.get("mcp-session-id", self.session_header)
        if response.status_code == 202 or not response.content:
            return
        bodies = (
            [data for _, data in sse_events(response.text)]
            if response.headers.get("content-type", "").startswith("text/event-stream")
            else [response.text]
        )
        for body in bodies:
            answer = _json(body, self.url)
            if answer is not None:
                await self.push(answer)

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

    # -- what the peer reads

    async def push(self, message: dict[str, Any]) -> None:
        """A message from the server, for the peer to read (dropped once closed)."""
        line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        try:
            await self._inbound_in.send(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("%s: a message after the connection closed dropped", self.url)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._rest:
            self._rest = await self._inbound.receive()
        data, self._rest = self._rest[:max_bytes], self._rest[max_bytes:]
        return data

    async def send_eof(self) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._inbound_in.close()
        self._inbound.close()


@final
class _SseLink(_HttpLink):
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
                chunks = response.aiter_text()
                try:
                    async for chunk in chunks:
                        buffer += chunk.replace("\r\n", "\n")
                        complete, _, buffer = buffer.rpartition("\n\n")
                        for name, data in sse_events(complete):
                            if name == "endpoint" and not started:
                                self.url = urljoin(self.url, data)
                                started = True
                                task_status.started()
                            elif name == "message" and started:
                                answer = _json(data, "the event stream")
                                if answer is not None:
                                    await self.push(answer)
                finally:
                    # Cancelled in push (between two chunks): httpx's generators would be
                    # left to the garbage collector.
                    await finish(chunks)
        except httpx.HTTPError as exc:
            raise McpError(f"{type(exc).__name__} from {self.url}: {exc}") from exc
        raise McpError("the event stream ended")

    async def deliver(self, message: dict[str, Any]) -> None:
        await self._post(message)

    def _headers(self) -> dict[str, str]:
        return {**self.headers, "Content-Type": "application/json"}


@asynccontextmanager
async def _open_remote(
    server: acp.McpServerHttp | acp.McpServerSse, timeout: float
) -> AsyncGenerator[McpConnection]:
    import httpx

    headers = {header.name: header.value for header in server.headers}
    label = f"mcp-{server.name}"
    async with httpx.AsyncClient(timeout=timeout) as client:
        if isinstance(server, acp.McpServerHttp):
            link = _HttpLink(client, server.url, headers)
            async with _connected(
                server.name,
                link,
                link,
                timeout=timeout,
                where=server.url,
                closed=f"the connection to {server.url} closed",
                max_line=DEFAULT_MAX_MESSAGE_BYTES,
                label=label,
            ) as connection:
                yield connection
            return
        events = _SseLink(client, server.url, headers)
        try:
            async with anyio.create_task_group() as tg:
                try:
                    with anyio.fail_after(timeout):
                        await tg.start(events.listen)
                except TimeoutError:
                    raise McpError(
                        f"no endpoint event from {server.url} within {timeout:g} s"
                    ) from None
                async with _connected(
                    server.name,
                    events,
                    events,
                    timeout=timeout,
                    where="the event stream",
                    closed=f"the event stream of {server.url} closed",
                    max_line=DEFAULT_MAX_MESSAGE_BYTES,
                    label=label,
                ) as connection:
                    yield connection
                tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # One failure (the listener's, the handshake's or the caller's): itself.
            leaves = leaf_exceptions(group)
            raise (leaves[0] if len(leaves) == 1 else group) from None
