"""An agent URL as a stdio ACP agent: the relay behind ``subagents bridge URL``.

:func:`run_bridge` copies NDJSON lines both ways between a pair of byte streams (the process's
stdin and stdout) and a link to the agent at a URL (:func:`~.client.open_link`: Streamable HTTP
or WebSocket). Each line read is written to the link as it is
(:meth:`~._client_link.MessageLink.send_raw`: malformed lines, batches and objects that are
no JSON-RPC message too, so a client testing the agent sees what the server makes of them);
each message from the server is one line written out. The messages themselves are not
interpreted beyond what the link needs to route them (sessions, streams).

It returns when its input ends (the link is then closed: a DELETE over HTTP, a close frame
over WebSocket, both bounded by ``timeout``), and raises :class:`BridgeError` naming the URL,
the status and the cause when the link cannot be opened or is lost (the lines the server sent
before are written out first). A line longer than ``max_message_bytes`` is dropped (logged).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import anyio
import anyio.abc

from ..protocol.framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    END_OF_STREAM,
    NEED_DATA,
    LineSplitter,
    OversizedLine,
)
from ._client_link import MessageLink
from ._client_ws import WsUpgradeError
from .client import Transport, open_link

__all__ = ("BridgeError", "run_bridge")

logger = logging.getLogger("subagents.remote.bridge")


class BridgeError(Exception):
    """The link to the URL could not be opened, or was lost (the message says why)."""

    def __init__(self, message: str, *, status: int | None = None, unreachable: bool = False):
        super().__init__(message)
        self.status = status
        """The HTTP status the server refused with (401: the token), if any."""
        self.unreachable = unreachable
        """Whether the server could not be reached at all."""


async def run_bridge(
    url: str,
    receive: anyio.abc.ByteReceiveStream,
    send: anyio.abc.ByteSendStream,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    transport: Transport = "auto",
    http2: bool | None = None,
    timeout: float = 30.0,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """Relay NDJSON lines between ``receive``/``send`` and the agent at ``url`` until
    ``receive`` ends (see the module docstring). ``token``, ``headers``, ``transport``,
    ``http2`` and ``timeout`` are :func:`~.client.connect_agent_url`'s."""
    failure: str | None = None
    status: int | None = None
    unreachable = False
    try:
        async with open_link(
            url,
            token=token,
            headers=headers,
            transport=transport,
            http2=http2,
            timeout=timeout,
            max_message_bytes=max_message_bytes,
        ) as link:
            failure = await _relay(link, receive, send, max_message_bytes)
            status, unreachable = link.failure_status, link.unreachable
    except WsUpgradeError as exc:
        raise BridgeError(str(exc), status=exc.status, unreachable=exc.status is None) from exc
    if failure is not None:
        raise BridgeError(failure, status=status, unreachable=unreachable)


async def _relay(
    link: MessageLink,
    receive: anyio.abc.ByteReceiveStream,
    send: anyio.abc.ByteSendStream,
    max_message_bytes: int,
) -> str | None:
    """Copy both ways until the input ends (``None``) or the link is lost (why)."""
    lost: list[str] = []
    async with anyio.create_task_group() as tg:

        async def to_client() -> None:
            # Everything the link pushed is written out, then the end of the link is the end.
            try:
                while True:
                    await send.send(await link.receive())
            except anyio.EndOfStream:
                lost.append(await link.reason())
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                lost.append("the bridge's output was closed")
            tg.cancel_scope.cancel()

        tg.start_soon(to_client)
        if await _to_server(link, receive, max_message_bytes):
            tg.cancel_scope.cancel()  # the input ended: nothing more to relay
    return lost[0] if lost else None


async def _to_server(
    link: MessageLink, receive: anyio.abc.ByteReceiveStream, max_message_bytes: int
) -> bool:
    """Write each input line to the link; ``True`` when the input ended, ``False`` when the
    link failed (the reader then writes out what it had and ends the relay)."""
    lines = LineSplitter(max_line_bytes=max_message_bytes)
    while True:
        try:
            lines.receive_data(await receive.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            lines.receive_eof()
        while (line := lines.next_line()) is not NEED_DATA:
            if line is END_OF_STREAM:
                return True
            if isinstance(line, OversizedLine):
                logger.warning("a line of %d bytes dropped (over %d)", line.size, max_message_bytes)
                continue
            try:
                await link.send_raw(bytes(line) + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return False
