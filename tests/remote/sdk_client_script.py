"""The official SDK's remote client, as a script: ``python sdk_client_script.py URL PROFILE``.

Runs on asyncio (the SDK's only loop) against a server at ``URL`` (``http://.../acp``;
``PROFILE`` is ``http`` or ``websocket``): initialize, session/new, a prompt turn
(``stream 3``), a permission round trip (``tool``, allowed) and a cancellation (``slow 600``,
cancelled after its first tick). Prints one JSON object with what it saw, for
``test_server_sdk_interop.py`` to check under trio as well (the server in the test's process,
on the test's loop).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import acp
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
)


class SdkClient(acp.Client):
    """An SDK ``Client`` that keeps the updates and allows what it is asked."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions = 0
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
        self.permissions += 1
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


async def run(url: str, profile: str) -> dict[str, Any]:
    client = SdkClient()  # pyright: ignore[reportAbstractUsage] - the SDK's Protocol, in part
    if profile == "http":
        from acp.http import create_http_stream

        transport = create_http_stream(url)
    else:
        from acp.ws import create_websocket_stream

        transport = await create_websocket_stream(url.replace("http://", "ws://", 1))
    async with acp.connect_to_agent(client, transport) as conn:
        init = await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        turn = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("stream 3")])
        while len(client.texts()) < 3:  # the SDK may hand updates over after the answer
            client.updated.clear()
            await client.updated.wait()
        streamed = client.texts()
        tool = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("tool")])
        slow = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("slow 600")])
        )
        while not any(text.startswith("tick") for text in client.texts()):
            client.updated.clear()
            await client.updated.wait()
        await conn.cancel(session_id=session.session_id)
        cancelled = await slow
    return {
        "protocol_version": init.protocol_version,
        "turn": turn.stop_reason,
        "streamed": streamed,
        "tool": tool.stop_reason,
        "permissions": client.permissions,
        "cancelled": cancelled.stop_reason,
    }


def main() -> None:
    url, profile = sys.argv[1], sys.argv[2]
    result = asyncio.run(asyncio.wait_for(run(url, profile), 60))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
