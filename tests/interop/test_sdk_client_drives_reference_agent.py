"""The official Python SDK's client (``agent-client-protocol`` 0.12.1: ``acp.spawn_agent_process``
and its ``ClientSideConnection``) drives our reference agent, ``python -m
subagents.agents.reference``, as a real subprocess.

Asyncio only: the SDK's client runs in this process and is written on asyncio (futures,
``asyncio.create_subprocess_exec``), so it cannot run under trio. Our agent runs in its own
process and its own event loop, so the backend here says nothing about it.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from .conftest import REFERENCE_AGENT

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

BOUND_SECONDS = 15.0


class CollectingClient(acp.Client):
    """An SDK ``Client``: keeps every ``session/update`` and allows what it is asked, unless
    ``hold_permissions`` is set: then each permission request waits for ``release`` and is
    answered ``cancelled`` (what the spec asks of a client that cancels the turn)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permission_requests: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.hold_permissions = False
        self.permission_asked = asyncio.Event()
        self.release = asyncio.Event()
        self._arrived = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self._arrived.set()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.permission_requests.append((tool_call, options))
        self.permission_asked.set()
        if self.hold_permissions:
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        for option in options:
            if option.kind == "allow_once":
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
                )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def chunk_texts(self, since: int = 0) -> list[str]:
        """The texts of the agent message chunks received, from update number ``since`` on."""
        return [
            update.content.text
            for update in self.updates[since:]
            if isinstance(update, AgentMessageChunk)
            and isinstance(update.content, TextContentBlock)
        ]

    async def wait_for_chunks(self, count: int, since: int = 0) -> None:
        """Wait (unbounded: callers bound it) until ``count`` message chunks arrived."""
        while len(self.chunk_texts(since)) < count:
            self._arrived.clear()
            await self._arrived.wait()


@pytest.fixture
def client() -> CollectingClient:
    # The SDK's Client is a Protocol whose other methods are stubs: "abstract" for pyright only.
    return CollectingClient()  # pyright: ignore[reportAbstractUsage]


@asynccontextmanager
async def sdk_client_on_reference_agent(
    client: CollectingClient,
) -> AsyncGenerator[ClientSideConnection, None]:
    """``acp.spawn_agent_process`` on our reference agent, stderr to DEVNULL: the SDK leaves
    it an unread pipe by default (a known deadlock, research §11). Yields the SDK's
    ``ClientSideConnection``; checks that the agent exited with status 0 once its stdin closed.
    """
    command, *args = REFERENCE_AGENT
    async with acp.spawn_agent_process(
        client,
        command,
        *args,
        transport_kwargs={"stderr": subprocess.DEVNULL},
    ) as (conn, process):
        yield conn
    assert process.returncode == 0


async def start_session(conn: ClientSideConnection, cwd: Path) -> str:
    """``initialize`` (version 1 negotiated, agent named) then ``session/new``: the id."""
    init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    assert init.protocol_version == 1
    assert init.agent_info is not None
    assert init.agent_info.name
    session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
    assert session.session_id
    return session.session_id


async def test_the_sdk_client_streams_then_cancels_turns_of_our_reference_agent(
    client: CollectingClient, tmp_path: Path
) -> None:
    """Requirement: our agent interoperates with the SDK's client. ``initialize`` and
    ``session/new`` succeed; prompt ``stream 3`` delivers exactly three message chunks (one
    ``messageId``) before ``stopReason: "end_turn"``; on the same session, prompt ``slow``
    ticks until the SDK's ``cancel(session_id=...)`` (``session/cancel``), then the prompt is
    answered ``stopReason: "cancelled"``, never an error (prompt-turn §Cancellation)."""
    with anyio.fail_after(BOUND_SECONDS):
        async with sdk_client_on_reference_agent(client) as conn:
            session_id = await start_session(conn, tmp_path)

            first = len(client.updates)
            response = await conn.prompt(session_id=session_id, prompt=[acp.text_block("stream 3")])
            assert response.stop_reason == "end_turn"
            assert client.chunk_texts(first) == ["1 ", "2 ", "3 "]
            chunks = [u for u in client.updates[first:] if isinstance(u, AgentMessageChunk)]
            assert len({chunk.message_id for chunk in chunks}) == 1
            assert chunks[0].message_id is not None

            second = len(client.updates)
            responses: list[acp.PromptResponse] = []

            async def prompt_slow() -> None:
                slow = await conn.prompt(session_id=session_id, prompt=[acp.text_block("slow")])
                responses.append(slow)

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt_slow)
                await client.wait_for_chunks(2, since=second)
                await conn.cancel(session_id=session_id)

    (cancelled,) = responses
    assert cancelled.stop_reason == "cancelled"
    ticks = client.chunk_texts(second)
    assert ticks[:2] == ["tick 0", "tick 1"]
    assert ticks[-1].startswith("cancelled after ")


async def test_the_sdk_client_answers_a_permission_request_of_our_reference_agent(
    client: CollectingClient, tmp_path: Path
) -> None:
    """Requirement: our agent's ``session/request_permission`` is understood by the SDK's
    client, and the SDK's answer (the ``allow`` option selected) is understood by our agent:
    the tool call then goes ``in_progress`` → ``completed`` and the turn ends ``end_turn``."""
    with anyio.fail_after(BOUND_SECONDS):
        async with sdk_client_on_reference_agent(client) as conn:
            session_id = await start_session(conn, tmp_path)
            first = len(client.updates)
            response = await conn.prompt(session_id=session_id, prompt=[acp.text_block("tool")])
            assert response.stop_reason == "end_turn"

    ((tool_call, options),) = client.permission_requests
    assert {(option.option_id, option.kind) for option in options} == {
        ("allow", "allow_once"),
        ("reject", "reject_once"),
    }
    updates = client.updates[first:]
    (started,) = [u for u in updates if isinstance(u, ToolCallStart)]
    assert started.tool_call_id == tool_call.tool_call_id
    assert started.status == "pending"
    progress = [u.status for u in updates if isinstance(u, ToolCallProgress)]
    assert progress == ["in_progress", "completed"]


async def test_our_reference_agent_ends_a_turn_cancelled_during_a_permission_request(
    client: CollectingClient, tmp_path: Path
) -> None:
    """Requirement (prompt-turn §Cancellation, research §10.4): the client sends
    ``session/cancel`` while the agent's ``session/request_permission`` is pending, then answers
    that request ``cancelled`` (done by hand: the SDK's client does not); our agent marks the
    tool call ``failed`` and answers the prompt ``stopReason: "cancelled"``."""
    client.hold_permissions = True
    with anyio.fail_after(BOUND_SECONDS):
        async with sdk_client_on_reference_agent(client) as conn:
            session_id = await start_session(conn, tmp_path)
            first = len(client.updates)
            responses: list[acp.PromptResponse] = []

            async def prompt_tool() -> None:
                tool = await conn.prompt(session_id=session_id, prompt=[acp.text_block("tool")])
                responses.append(tool)

            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt_tool)
                await client.permission_asked.wait()
                await conn.cancel(session_id=session_id)
                client.release.set()

    (response,) = responses
    assert response.stop_reason == "cancelled"
    updates = client.updates[first:]
    assert [u.status for u in updates if isinstance(u, ToolCallProgress)][-1] == "failed"
