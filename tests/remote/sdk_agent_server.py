"""An agent served by the official ACP SDK's experimental server (``acp.http``, ``acp.ws``)
under Hypercorn, for the client tests: ``python sdk_agent_server.py [--token T]``.

It binds 127.0.0.1 on a free port, prints ``PORT <n>`` on stdout once it listens, and serves
until killed. The SDK runs on asyncio only: the tests of both anyio backends start it in a
subprocess. Around the SDK's ASGI app, a gate the SDK does not have:

- ``--token T``: every request without ``Authorization: Bearer T`` is answered 401;
- a cookie (``affinity=<n>``) is set on every answer, and a request naming a connection
  (``Acp-Connection-Id``) without it is answered 400 ``cookie missing`` (RFD: clients MUST
  return the cookies the server sets).

The agent answers a prompt by its text:

- ``permission``: a ``tool_call`` update, then ``session/request_permission``; the answer's
  option id comes back as a chunk ``outcome: <id>``;
- ``wait``: a chunk ``waiting``, then it waits for ``session/cancel`` and ends ``cancelled``;
- ``hang``: a chunk ``hanging``, then nothing (the test kills the server);
- anything else: one chunk per word (``echo: `` first), then ``end_turn``.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from typing import TYPE_CHECKING, Any, cast
from uuid import uuid4

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    text_block,
    update_agent_message,
)
from acp.http.asgi import create_asgi_app
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    ToolCallStart,
    ToolCallUpdate,
)

if TYPE_CHECKING:
    from acp import Agent

Scope = dict[str, Any]


class ScriptAgent:
    """The SDK's ``Agent`` protocol, the methods this test agent needs (the SDK answers
    "method not found" for the others)."""

    _conn: Client

    def __init__(self) -> None:
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="sdk-script-agent", version="0"),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session_id = uuid4().hex
        self.cancelled[session_id] = asyncio.Event()
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def _say(self, session_id: str, text: str) -> None:
        await self._conn.session_update(
            session_id=session_id, update=update_agent_message(text_block(text))
        )

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = " ".join(
            str(block.get("text", "") if isinstance(block, dict) else getattr(block, "text", ""))
            for block in prompt
        ).strip()
        cancelled = self.cancelled.setdefault(session_id, asyncio.Event())
        cancelled.clear()
        if text == "permission":
            await self._conn.session_update(
                session_id=session_id,
                update=ToolCallStart(
                    session_update="tool_call", tool_call_id="t1", title="write x", kind="edit"
                ),
            )
            answer = await self._conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id="t1", title="write x"),
                options=[
                    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                ],
            )
            outcome = answer.outcome
            chosen = getattr(outcome, "option_id", None) or getattr(outcome, "outcome", "?")
            await self._say(session_id, f"outcome: {chosen}")
            return PromptResponse(stop_reason="end_turn")
        if text == "wait":
            await self._say(session_id, "waiting")
            await cancelled.wait()
            return PromptResponse(stop_reason="cancelled")
        if text == "hang":
            await self._say(session_id, "hanging")
            await asyncio.Event().wait()
        await self._say(session_id, "echo: ")
        for word in text.split():
            await self._say(session_id, word)
        return PromptResponse(stop_reason="end_turn")


class Gate:
    """Token check and cookie affinity around the SDK's app (see the module docstring)."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token
        self.cookie = f"affinity={uuid4().hex[:8]}"

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {key.lower(): value for key, value in scope["headers"]}
        if self.token is not None and headers.get(b"authorization") != (
            f"Bearer {self.token}".encode()
        ):
            await self._deny(scope, receive, send, 401, b'{"error":"unauthorized"}')
            return
        cookies = headers.get(b"cookie", b"").decode()
        if b"acp-connection-id" in headers and self.cookie not in cookies:
            await self._deny(scope, receive, send, 400, b'{"error":"cookie missing"}')
            return

        async def send_with_cookie(message: dict[str, Any]) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                extra = [
                    (b"set-cookie", f"{self.cookie}; Path=/".encode()),
                    (b"x-http-version", str(scope.get("http_version", "?")).encode()),
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    async def _deny(self, scope: Scope, receive: Any, send: Any, status: int, body: bytes) -> None:
        if scope["type"] == "http":  # the request's body first (Hypercorn's HTTP/2 needs it)
            while (await receive()).get("more_body", False):
                pass
        kind = "http" if scope["type"] == "http" else "websocket.http"
        headers = [(b"content-type", b"application/json")]
        await send({"type": f"{kind}.response.start", "status": status, "headers": headers})
        await send({"type": f"{kind}.response.body", "body": body})


async def main() -> None:
    import hypercorn.asyncio
    from hypercorn.config import Config

    parser = argparse.ArgumentParser()
    parser.add_argument("--token")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.set_inheritable(True)
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 0.5
    app = Gate(create_asgi_app(lambda conn: cast("Agent", ScriptAgent())), args.token)
    sys.stdout.write(f"PORT {sock.getsockname()[1]}\n")
    sys.stdout.flush()
    await hypercorn.asyncio.serve(app, config)  # pyright: ignore[reportArgumentType]


if __name__ == "__main__":
    asyncio.run(main())
