"""A bound on request bodies for an ASGI application (the A2A server's, ``serve --a2a``).

The ``/acp`` endpoint reads each body itself, bounded by ``max_message_bytes``
(:mod:`subagents.remote._app`); the A2A SDK's routes read whatever comes. :func:`limit_body`
reads the body first: one longer than the limit is answered 413 (a JSON-RPC error, the A2A
binding's form) and never reaches the application; a shorter one is handed to it as one
message. The body is read to its end either way (beyond the limit discarded, bounded by
``DISCARD_BYTES`` and ``DISCARD_SECONDS`` as for ``/acp``: the same reader,
:func:`subagents.remote._app.read_body`) before any answer, for HTTP/2's sake.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from ..protocol.jsonrpc import ErrorCode
from ._app import ClientGone, read_body
from ._connections import ServerLimits

__all__ = ("DEFAULT_BODY_LIMIT", "limit_body")

DEFAULT_BODY_LIMIT: Final = ServerLimits().max_message_bytes
"""The body limit unless told otherwise: ``serve --listen``'s message limit (4 MiB)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def limit_body(app: App, limit: int) -> App:
    """``app`` behind a bound of ``limit`` bytes on every HTTP request's body."""
    if limit < 1:
        raise ValueError("the body limit must be at least 1 byte")

    async def limited(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        try:
            body = await read_body(receive, limit)
        except ClientGone:
            return
        if body is None:
            error = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": ErrorCode.INVALID_REQUEST,
                    "message": f"the body is larger than {limit} bytes",
                },
            }
            payload = json.dumps(error).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ]
            await send({"type": "http.response.start", "status": 413, "headers": headers})
            await send({"type": "http.response.body", "body": payload, "more_body": False})
            return
        replayed = False

        async def receive_once() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the disconnect, when it comes

        await app(scope, receive_once, send)

    return limited
