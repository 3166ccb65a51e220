"""An ACP agent written on the official Python SDK (``agent-client-protocol`` 0.12.1).

Each prompt streams ``tick N`` message chunks until the client sends ``session/cancel``, then
answers ``stopReason: "cancelled"``. Run as a script: ``python tests/interop/sdk_slow_agent.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from uuid import uuid4

import acp
from acp.interfaces import Client
from acp.schema import ClientCapabilities, Implementation

TICK_SECONDS = 0.05
MAX_TICKS = 400  # a lost cancel ends the turn with end_turn after ~20 s instead of never


class SlowAgent(acp.Agent):
    def __init__(self) -> None:
        self._cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> acp.InitializeResponse:
        info = Implementation(name="sdk-slow-agent", version="0.0.1")
        return acp.InitializeResponse(protocol_version=acp.PROTOCOL_VERSION, agent_info=info)

    async def new_session(self, cwd: str, *args: Any, **kwargs: Any) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=uuid4().hex)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> acp.PromptResponse:
        cancelled = self._cancelled[session_id] = asyncio.Event()
        for tick in range(MAX_TICKS):
            chunk = acp.update_agent_message_text(f"tick {tick}")
            await self._conn.session_update(session_id=session_id, update=chunk)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(cancelled.wait(), TICK_SECONDS)
            if cancelled.is_set():
                return acp.PromptResponse(stop_reason="cancelled")
        return acp.PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if (event := self._cancelled.get(session_id)) is not None:
            event.set()


if __name__ == "__main__":
    # The SDK's Agent is a Protocol whose other methods are stubs: "abstract" for pyright only.
    asyncio.run(acp.run_agent(SlowAgent()))  # pyright: ignore[reportAbstractUsage]
