"""acp-py echo agent: ``acp.run_agent`` with an echo ``Agent`` (agent-client-protocol 0.12.1).

Runs only inside bench/.venvs/acp-py (the official SDK and its dependencies, nothing else).
"""
# pyright: reportMissingImports=false, reportMissingModuleSource=false

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import acp
from _wire import parse_prompt
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
)


class EchoAgent:
    def __init__(self) -> None:
        self._conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> Any:
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="bench-acp-py", version="0"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        return NewSessionResponse(session_id=uuid.uuid4().hex)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> Any:
        text: str = prompt[0].text
        n, size, ack = parse_prompt(text)
        conn = self._conn
        if ack:
            await conn.session_update(session_id, acp.update_agent_message_text(f"len={len(text)}"))
        payload = "x" * size
        for _ in range(n):
            await conn.session_update(session_id, acp.update_agent_message_text(payload))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(acp.run_agent(EchoAgent()))
