"""The client end of ACP over WebSocket (the RFD's ``GET`` with ``Upgrade: websocket``).

:func:`open_ws_link` upgrades ``url`` (``ws://``, ``wss://``) and yields a :class:`WsLink`:
the byte stream the JSON-RPC peer runs over, unchanged. Each line the peer writes is one text
frame; each text frame received is one line it reads; binary frames are ignored (the RFD).
Cookies the server sets on the upgrade are kept by the connection's ``httpx.AsyncClient``.
The server closing the socket, or the network failing, fails the link naming the URL and
the close code or the cause; leaving the block closes the socket (httpx-ws sends the close
frame and closes the stream, without waiting for the server's). A refused upgrade
(a 401 without or with a wrong token, a 404, ...) raises :class:`WsUpgradeError` naming the
URL and the status.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final, final

import anyio
import anyio.abc

from .._exception_groups import sole_leaf
from ._client_link import MessageLink, lines_of, status_reason

if TYPE_CHECKING:
    import httpx
    from httpx_ws import AsyncWebSocketSession

__all__ = ("WsLink", "WsUpgradeError", "open_ws_link")

logger = logging.getLogger("subagents.remote.client")

KEEPALIVE_INTERVAL: Final = 20.0
"""Seconds between the client's WebSocket pings; a pong missing for as long fails the link
(the RFD leaves liveness to the implementer)."""


class WsUpgradeError(Exception):
    """The server did not upgrade to a WebSocket (its status is :attr:`status`, ``None``
    when it could not be reached)."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


@final
class WsLink(MessageLink):
    """A WebSocket as the peer's byte stream (made by :func:`open_ws_link`)."""

    def __init__(self, url: str, ws: AsyncWebSocketSession, timeout: float) -> None:
        super().__init__(url)
        self.ws = ws
        self.timeout = timeout
        self.connection_id: str | None = None
        """The ``Acp-Connection-Id`` of the upgrade's answer, when the server sent one."""

    async def send(self, item: bytes) -> None:
        for line in lines_of(item):
            await self._send_text(line.decode())

    async def send_raw(self, item: bytes) -> None:
        """Each line as one text frame, as it is (a JSON-RPC message or not: the server
        answers what it refuses on the socket); bytes that are not UTF-8 are replaced."""
        for line in lines_of(item):
            await self._send_text(line.decode("utf-8", "replace"))

    async def _send_text(self, text: str) -> None:
        from httpx_ws import HTTPXWSException

        self.check_open()
        try:
            with anyio.fail_after(self.timeout):
                await self.ws.send_text(text)
        except (HTTPXWSException, TimeoutError) as exc:
            raise self.broken(
                f"the WebSocket to {self.url} broke on send: {type(exc).__name__}: {exc}"
            ) from exc

    async def read(self) -> None:
        """Hand every text frame to the peer until the socket closes; then fail the link
        (unless the client closed it)."""
        import wsproto.events
        from httpx_ws import WebSocketDisconnect, WebSocketNetworkError

        try:
            while True:
                event = await self.ws.receive()
                if isinstance(event, wsproto.events.TextMessage):
                    await self.push_text(event.data)
                elif isinstance(event, wsproto.events.BytesMessage):
                    logger.debug("%s: a binary frame ignored", self.url)
        except WebSocketDisconnect as exc:
            self.fail(self.closed_by_server(exc.code, exc.reason))
        except WebSocketNetworkError as exc:
            self.fail(self.broke(exc))

    def closed_by_server(self, code: int, reason: str | None) -> str:
        """Why the link failed when the server closed the socket (with a close frame)."""
        from ._drain import DRAINING_REASON

        if reason == DRAINING_REASON:
            self.draining = True
            return f"the server at {self.url} is draining: it closed the WebSocket (code {code})"
        why = f": {reason}" if reason else ", no reason given"
        return f"the server closed the WebSocket {self.url} (code {code}{why})"

    def broke(self, exc: Exception) -> str:
        """Why the link failed when the socket broke: always a cause, never empty (httpx-ws's
        ``WebSocketNetworkError`` says nothing; it means one of two things)."""
        said = str(exc).strip()
        return (
            f"the WebSocket to {self.url} broke ({type(exc).__name__}"
            + (f": {said}" if said else "")
            + "): the connection closed without a WebSocket close frame (the server or the "
            f"network went away), or the keep-alive ping got no pong within "
            f"{KEEPALIVE_INTERVAL:g} s"
        )


@asynccontextmanager
async def open_ws_link(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    timeout: float = 30.0,
    max_message_bytes: int = 64 * 1024 * 1024,
    resuming: str | None = None,
) -> AsyncGenerator[WsLink, None]:
    """A WebSocket link to the ACP endpoint ``url`` (``ws://`` or ``wss://``) for the block.

    ``headers`` go on the upgrade request, ``token`` as ``Authorization: Bearer``;
    ``timeout`` bounds the upgrade (httpx's connect and read time-outs) and each send.
    ``resuming``: the session the connection is made to load or resume, sent as
    ``Acp-Session-Id`` on the upgrade (for a load balancer's routing).
    """
    import httpx

    from ..protocol.acp_remote import SESSION_HEADER

    all_headers = dict(headers or {})
    if resuming is not None:
        all_headers[SESSION_HEADER] = resuming
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    token_sent = "authorization" in {name.lower() for name in all_headers}
    raised: BaseException | None = None
    async with (
        httpx.AsyncClient(headers=all_headers, timeout=httpx.Timeout(timeout)) as client,
        anyio.create_task_group() as tg,
    ):
        try:
            link: WsLink = await tg.start(
                _run_socket, client, url, timeout, max_message_bytes, token_sent
            )
        except BaseException as exc:  # the upgrade's failure, as itself
            raised = sole_leaf(exc)
        else:
            try:
                yield link
            except BaseException as exc:
                raised = exc
            finally:
                link.closing = True  # its task closes it, cancelled here
        tg.cancel_scope.cancel()
    if raised is not None:  # re-raised as itself, not wrapped in an ExceptionGroup
        raise raised


async def _run_socket(
    client: httpx.AsyncClient,
    url: str,
    timeout: float,
    max_message_bytes: int,
    token_sent: bool,
    *,
    task_status: anyio.abc.TaskStatus[WsLink],
) -> None:
    """Upgrade, hand the link over, read it until it closes or the task is cancelled (the
    socket is closed on the way out: httpx-ws sends the close frame)."""
    import httpx
    from httpx_ws import WebSocketUpgradeError, aconnect_ws

    try:
        async with aconnect_ws(
            url,
            client,
            max_message_size_bytes=max_message_bytes,
            keepalive_ping_interval_seconds=KEEPALIVE_INTERVAL,
            keepalive_ping_timeout_seconds=KEEPALIVE_INTERVAL,
        ) as ws:
            link = WsLink(url, ws, timeout)
            try:
                if ws.response is not None:
                    link.connection_id = ws.response.headers.get("acp-connection-id")
                task_status.started(link)
                await link.read()
                await anyio.sleep_forever()  # the owner closes
            finally:
                # Closed here, not by the owner: an owner cancelled while the link was handed
                # over (its start() raises) never got it.
                link.close_inbound()
    except WebSocketUpgradeError as exc:
        response = exc.response
        try:
            body = (await response.aread()).decode("utf-8", "replace")
        except (httpx.HTTPError, httpx.StreamError):  # the body was not kept
            body = ""
        reason = status_reason(
            url, response.status_code, "the WebSocket upgrade", body, token_sent=token_sent
        )
        raise WsUpgradeError(reason, response.status_code) from None
    except httpx.HTTPError as exc:
        raise WsUpgradeError(f"cannot connect to {url}: {type(exc).__name__}: {exc}", None) from exc
