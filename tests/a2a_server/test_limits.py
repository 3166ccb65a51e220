"""Issue 34, nothing held by the absent, on ``serve --a2a``: a request body has the same limit
as ``serve --listen``'s messages (413 beyond), and the stored tasks are bounded in bytes, the
least recently used finished ones evicted first, running ones never.

The store's own tests run on asyncio and trio; the served ones on asyncio (the SDK's server
is asyncio-based).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import httpx
import pytest

pytest.importorskip("a2a.server")

from a2a.server.context import ServerCallContext
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from a2a.utils.errors import TaskNotFoundError

from subagents.config import AgentSpec
from subagents.providers.contract import TextProgress
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.remote.a2a_server import serve_a2a_http
from subagents.remote.a2a_tasks import BoundedTaskStore
from tests.a2a_server._client import Turn, a2a_client, get_task, send

pytestmark = pytest.mark.anyio

CALL = ServerCallContext()
SCRIPTED = AgentSpec("scripted", "scripted", description="a scripted provider, over A2A")
ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""For the served tests: the SDK's server runs on asyncio only."""
MIB = 1024 * 1024

COMPLETED = TaskState.TASK_STATE_COMPLETED
WORKING = TaskState.TASK_STATE_WORKING


def task(task_id: str, state: TaskState, text_bytes: int = 1000) -> Task:
    """A task whose history holds one message of ``text_bytes`` characters."""
    message = Message(
        message_id=f"m-{task_id}", role=Role.ROLE_USER, parts=[Part(text="x" * text_bytes)]
    )
    return Task(
        id=task_id, context_id=f"ctx-{task_id}", status=TaskStatus(state=state), history=[message]
    )


async def stored(store: BoundedTaskStore, *ids: str) -> list[str]:
    """Which of ``ids`` ``get`` finds (each found one is counted as used)."""
    return [i for i in ids if await store.get(i, CALL) is not None]


async def test_stored_tasks_are_bounded_in_bytes_least_recently_used_first() -> None:
    """Issue 34: "a byte bound on stored tasks": past max_bytes the least recently used
    finished task goes first (a read counts as a use), however few tasks are stored."""
    size = task("probe", COMPLETED).ByteSize()
    store = BoundedTaskStore(1000, max_bytes=3 * size + size // 2)  # room for three
    for name in ("a", "b", "c"):
        await store.save(task(name, COMPLETED), CALL)
    assert await stored(store, "a") == ["a"]  # a is now more recent than b and c
    await store.save(task("d", COMPLETED), CALL)  # four do not fit: b goes
    assert await stored(store, "a", "b", "c", "d") == ["a", "c", "d"]
    assert store.max_bytes is not None
    assert store.bytes <= store.max_bytes
    assert store.terminal == 3


async def test_a_running_task_is_never_evicted_for_bytes() -> None:
    """Issue 34: "a running task is never evicted": running tasks past the byte bound stay;
    the finished ones go, and a running task that ends is then bounded like them."""
    size = task("probe", WORKING).ByteSize()
    store = BoundedTaskStore(1000, max_bytes=2 * size + size // 2)
    await store.save(task("done", COMPLETED), CALL)
    for name in ("r1", "r2", "r3"):
        await store.save(task(name, WORKING), CALL)
    assert await stored(store, "done", "r1", "r2", "r3") == ["r1", "r2", "r3"]
    assert store.bytes > 2 * size  # over the bound: nothing finished is left to evict
    await store.save(task("r1", COMPLETED), CALL)  # ended: finished, evicted (over the bound)
    assert await stored(store, "r1", "r2", "r3") == ["r2", "r3"]
    assert store.running == 2


async def test_a_byte_bound_below_one_is_refused() -> None:
    """Issue 34: the byte bound is at least one byte."""
    with pytest.raises(ValueError, match="max_bytes must be at least 1"):
        BoundedTaskStore(1, max_bytes=0)


def oversized_body(size: int) -> bytes:
    """A SendMessage request of about ``size`` bytes."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": "m1",
                "role": "ROLE_USER",
                "parts": [{"text": "echo " + "x" * size}],
            }
        },
    }
    return json.dumps(message).encode()


@ASYNCIO_ONLY
async def test_a_16_mib_body_is_refused_413() -> None:
    """Issue 34: "--a2a gets the same body limit as --listen": a 16 MiB request body is
    answered 413 (a JSON-RPC error saying why) and never reaches the SDK; a message within
    the limit is still served."""
    async with (
        ScriptedProvider() as provider,
        serve_a2a_http(provider, SCRIPTED, port=0) as server,
        httpx.AsyncClient(timeout=httpx.Timeout(60)) as http,
    ):
        response = await http.post(
            server.url,
            content=oversized_body(16 * MIB),
            headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
        )
        async with a2a_client(server.url) as client:
            with anyio.fail_after(30):
                turn = await send(client, "echo within the limit")
    assert response.status_code == 413
    assert "larger than 4194304 bytes" in response.json()["error"]["message"]
    assert turn.final == "TASK_STATE_COMPLETED"


@ASYNCIO_ONLY
async def test_the_body_limit_is_configurable() -> None:
    """Issue 34: the A2A body limit is configurable (max_message_bytes): a body within
    --listen's default but past the configured limit is 413."""
    async with (
        ScriptedProvider() as provider,
        serve_a2a_http(provider, SCRIPTED, port=0, max_message_bytes=64 * 1024) as server,
        httpx.AsyncClient(timeout=httpx.Timeout(60)) as http,
    ):
        response = await http.post(
            server.url,
            content=oversized_body(MIB),
            headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
        )
    assert response.status_code == 413


@ASYNCIO_ONLY
async def test_served_finished_tasks_past_the_byte_bound_are_not_found() -> None:
    """Issue 34: the byte bound end to end (serve_a2a_http(max_stored_task_bytes=1)): every
    finished task is evicted at once ("task not found"), a running one is found until it
    ends."""
    gate = anyio.Event()
    scripts = {"wait": Script(progress=(TextProgress("waiting"),), turn_gate=gate)}
    started, ended = anyio.Event(), anyio.Event()
    slow_turn: list[Turn] = []
    async with (
        ScriptedProvider(scripts) as provider,
        serve_a2a_http(provider, SCRIPTED, port=0, max_stored_task_bytes=1) as server,
        a2a_client(server.url) as client,
        anyio.create_task_group() as tg,
    ):

        async def note(turn: Turn) -> None:
            slow_turn.append(turn)
            started.set()

        async def slow() -> None:
            await send(client, "wait", on_chunk=note)
            ended.set()

        with anyio.fail_after(30):
            tg.start_soon(slow)
            await started.wait()
            quick = await send(client, "echo done at once")
            assert quick.final == "TASK_STATE_COMPLETED"
            with pytest.raises(TaskNotFoundError):
                await get_task(client, quick.task_id)
            assert await get_task(client, slow_turn[0].task_id) == "TASK_STATE_WORKING"
            gate.set()
            await ended.wait()
            assert slow_turn[0].final == "TASK_STATE_COMPLETED"
            with pytest.raises(TaskNotFoundError):
                await get_task(client, slow_turn[0].task_id)
            assert (server.tasks.running, server.tasks.terminal) == (0, 0)


@pytest.mark.parametrize("option", ["--max-stored-task-bytes", "--max-message-bytes"])
def test_a_byte_bound_below_one_is_refused_by_the_command(option: str) -> None:
    """Issue 34: ``--max-stored-task-bytes`` or ``--max-message-bytes`` below 1 with --a2a
    exits 2 saying why (nothing is served)."""
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "serve", "--a2a", "127.0.0.1:0",
         "--agent", "reference", option, "0"],
        capture_output=True, text=True, timeout=60, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 2
    assert f"{option} must be at least 1" in done.stderr
    assert "listening on http" not in done.stderr
