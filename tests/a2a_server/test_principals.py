"""Principals on ``serve --a2a`` (issue 34 point 3): with named tokens, each principal's tasks
and contexts are its own: another's task is "not found" to get, list and cancel, and a message
in another's context starts a child of its own (the SDK's client; the server runs on asyncio).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import pytest
from a2a.types import ListTasksRequest
from a2a.utils.errors import TaskNotFoundError

from subagents.config import AgentSpec
from subagents.providers.factory import build_provider
from subagents.remote import Principals, RemoteServerConfigError
from subagents.remote.a2a_server import A2AServer, serve_a2a_http
from tests.a2a_server._client import Turn, a2a_client, cancel, get_task, send

REFERENCE: Final = AgentSpec(
    "ref", "acp", (sys.executable, "-m", "subagents.agents.reference"), description="ref"
)
ALICE: Final = "alice-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"
BOB: Final = "bob-Qz8Wx1Ec4Rv7Tb2Yn5Um9Ik3Ol6Pa0Sd-Fg_Hj1Kl4Zx"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's server is asyncio-based


@asynccontextmanager
async def serving() -> AsyncIterator[A2AServer]:
    principals = Principals({"alice": ALICE, "bob": BOB})
    async with (
        build_provider(REFERENCE) as provider,
        serve_a2a_http(provider, REFERENCE, port=0, token=principals) as server,
    ):
        yield server


async def continue_task(client: Any, task_id: str, context_id: str) -> None:
    """Send a message to the task ``task_id`` (a continuation of it)."""
    from a2a.types import Message, Part, Role, SendMessageRequest

    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text="hi")])
    message.task_id, message.context_id = task_id, context_id
    async for _ in client.send_message(SendMessageRequest(message=message)):
        pass


async def listed(client: Any) -> list[str]:
    response = await client.list_tasks(ListTasksRequest())
    return [task.id for task in response.tasks]


@pytest.mark.anyio
async def test_two_principals_cannot_see_each_others_tasks() -> None:
    """Issue 34: on --a2a, tasks are scoped to the principal that made them: bob's GetTask,
    ListTasks, SendMessage to it and CancelTask of alice's task behave as if it did not
    exist (alice's running turn goes on), while alice sees and cancels her own."""
    async with (
        serving() as server,
        a2a_client(server.url, ALICE) as alice,
        a2a_client(server.url, BOB) as bob,
    ):
        done = await send(alice, "stream 2")
        refused: list[str] = []
        cancelled: list[str] = []

        async def at_tick_2(turn: Turn) -> None:
            if "tick 2" in turn.chunks[-1]:
                try:
                    await cancel(bob, turn.task_id)
                except TaskNotFoundError:
                    refused.append("cancel")
            if "tick 4" in turn.chunks[-1]:
                cancelled.append(await cancel(alice, turn.task_id))

        with anyio.fail_after(60):
            with pytest.raises(TaskNotFoundError):
                await get_task(bob, done.task_id)
            with pytest.raises(TaskNotFoundError):
                await continue_task(bob, done.task_id, done.context_id)
            bobs = await listed(bob)
            alices = await listed(alice)
            mine = await get_task(alice, done.task_id)
            slow = await send(alice, "slow 100", on_chunk=at_tick_2)
    assert done.task_id not in bobs
    assert done.task_id in alices
    assert mine == "TASK_STATE_COMPLETED"
    assert refused == ["cancel"]
    assert any("tick 4" in chunk for chunk in slow.chunks)  # bob's cancel did not stop it
    assert cancelled == ["TASK_STATE_CANCELED"]


@pytest.mark.anyio
async def test_a_message_in_another_principals_context_starts_a_child_of_its_own() -> None:
    """Issue 34: contexts are scoped too: bob's message with alice's contextId does not
    continue alice's child (a new one starts for bob), and alice's next message still
    continues hers."""
    async with (
        serving() as server,
        a2a_client(server.url, ALICE) as alice,
        a2a_client(server.url, BOB) as bob,
    ):
        with anyio.fail_after(60):
            first = await send(alice, "echo hello")
            await send(bob, "echo intruding", context_id=first.context_id)
            await send(alice, "echo again", context_id=first.context_id)
        children = {
            owner: child.remote_id
            for (owner, context_id), child in server.executor._children.items()  # pyright: ignore[reportPrivateUsage]
            if context_id == first.context_id
        }
    assert set(children) == {"alice", "bob"}
    assert children["alice"] != children["bob"]


@pytest.mark.anyio
async def test_serve_a2a_http_refuses_a_weak_token() -> None:
    """Issue 34: serve_a2a_http refuses a weak token (the hint names a generator) before it
    listens."""
    async with build_provider(REFERENCE) as provider:
        with pytest.raises(RemoteServerConfigError, match=r"too weak.*token_urlsafe"):
            async with serve_a2a_http(provider, REFERENCE, port=0, token="a2a-test-token"):
                pass
