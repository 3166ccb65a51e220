"""The official Python SDK's remote clients (``agent-client-protocol`` 0.12.1:
``acp.http.create_http_stream`` and ``acp.ws.create_websocket_stream``, with
``acp.connect_to_agent``) against our server fronting the reference agent: a full prompt
turn, a permission round trip and a cancellation, over Streamable HTTP and over WebSocket.

Asyncio only: the SDK's clients are written on asyncio (tasks, ``asyncio.Queue``; the
WebSocket one on ``websockets``' asyncio API), so they cannot run under trio. Our server runs
in this process, on the same loop; its trio side is covered by the other files of this
directory.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Literal

import acp
import anyio
import pytest
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
)

from subagents.remote import RemoteServer
from tests.remote._server_helpers import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

Profile = Literal["http", "websocket"]


class SdkClient(acp.Client):
    """An SDK ``Client`` that keeps the updates and allows what it is asked."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions: list[list[PermissionOption]] = []
        self.updated = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.updated.set()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.permissions.append(options)
        [allow] = [option for option in options if option.kind == "allow_once"]
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id)
        )

    def texts(self) -> list[str]:
        return [
            u.content.text
            for u in self.updates
            if isinstance(u, AgentMessageChunk) and isinstance(u.content, TextContentBlock)
        ]


@asynccontextmanager
async def sdk_connection(
    server: RemoteServer, profile: Profile, client: SdkClient
) -> AsyncGenerator[ClientSideConnection, None]:
    if profile == "http":
        from acp.http import create_http_stream

        transport = create_http_stream(server.url)
    else:
        from acp.ws import create_websocket_stream

        transport = await create_websocket_stream(server.websocket_url)
    async with acp.connect_to_agent(client, transport) as conn:
        yield conn


@pytest.mark.parametrize("profile", ["http", "websocket"])
async def test_the_sdk_client_runs_a_turn_a_permission_and_a_cancellation(
    reference_server: RemoteServer, profile: Profile
) -> None:
    """Issue 20 interop: "the official SDK's client (acp.http.create_http_stream, acp.ws
    client) against our server — a full prompt turn, a cancellation, a permission round
    trip"."""
    client = SdkClient()  # pyright: ignore[reportAbstractUsage] - the SDK's Protocol, in part
    answers: list[Any] = []
    with anyio.fail_after(WAIT * 2):
        async with sdk_connection(reference_server, profile, client) as conn:
            init = await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd="/tmp", mcp_servers=[])
            turn = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("stream 3")]
            )
            tool = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("tool")])
            client.updated = asyncio.Event()
            async with anyio.create_task_group() as tg:

                async def slow() -> None:
                    answers.append(
                        await conn.prompt(
                            session_id=session.session_id, prompt=[acp.text_block("slow 600")]
                        )
                    )

                tg.start_soon(slow)
                while not any(t.startswith("tick") for t in client.texts()):
                    client.updated = asyncio.Event()
                    await client.updated.wait()
                await conn.cancel(session_id=session.session_id)
    assert init.protocol_version == 1
    assert turn.stop_reason == "end_turn"
    assert client.texts()[:3] == ["1 ", "2 ", "3 "]
    assert tool.stop_reason == "end_turn"
    assert len(client.permissions) == 1
    assert answers[0].stop_reason == "cancelled"
