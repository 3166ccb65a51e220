"""Issue 21: bounded tasks. The A2A server's task store keeps every running task, at most N
terminal ones (the least recently used evicted first) and input-required/auth-required ones
until they sit idle too long; an evicted task is "task not found" to a client.

The store's own tests run on asyncio and trio; the served ones on asyncio (the SDK's server
is asyncio-based), in-process and through a real ``serve --a2a --max-stored-tasks`` process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

pytest.importorskip("a2a.server")

from a2a.server.context import ServerCallContext
from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus
from a2a.utils.errors import TaskNotFoundError

from subagents.config import AgentSpec
from subagents.providers.contract import TextProgress
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.remote.a2a_server import serve_a2a_http
from subagents.remote.a2a_tasks import BoundedTaskStore
from tests.a2a_server._client import Turn, a2a_client, get_task, send
from tests.a2a_server.test_chain import TOKEN, serve_a2a

pytestmark = pytest.mark.anyio

CALL = ServerCallContext()
SCRIPTED = AgentSpec("scripted", "scripted", description="a scripted provider, over A2A")
ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""For the served tests: the SDK's server runs on asyncio only."""

COMPLETED = TaskState.TASK_STATE_COMPLETED
WORKING = TaskState.TASK_STATE_WORKING
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED


def task(task_id: str, state: TaskState) -> Task:
    return Task(id=task_id, context_id=f"ctx-{task_id}", status=TaskStatus(state=state))


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def stored(store: BoundedTaskStore, *ids: str) -> list[str]:
    """Which of ``ids`` ``get`` finds (each found one is counted as used)."""
    return [i for i in ids if await store.get(i, CALL) is not None]


async def test_only_the_n_most_recently_used_terminal_tasks_are_kept() -> None:
    """Issue 21: bounded tasks: N+k terminal tasks leave the N most recently used (of every
    terminal kind); running tasks are never evicted; get of an evicted task is None."""
    store = BoundedTaskStore(3)
    for i in range(4):
        await store.save(task(f"run{i}", WORKING), CALL)
    ends = [
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    ]
    for i in range(7):
        await store.save(task(f"done{i}", ends[i % 4]), CALL)
    assert (store.running, store.terminal, len(store)) == (4, 3, 7)
    assert await stored(store, *(f"done{i}" for i in range(7))) == ["done4", "done5", "done6"]
    assert await stored(store, *(f"run{i}" for i in range(4))) == [f"run{i}" for i in range(4)]
    assert await store.get("done0", CALL) is None
    listed = await store.list(ListTasksRequest(), CALL)
    assert sorted(t.id for t in listed.tasks) == ["done4", "done5", "done6"] + [
        f"run{i}" for i in range(4)
    ]


async def test_a_read_or_an_ending_counts_as_a_use() -> None:
    """Issue 21: bounded tasks: the least recently used terminal task goes first: a get
    counts as a use, and so does becoming terminal (a task that ran longest but ended last is
    the most recent); a running task becoming terminal joins the bound."""
    store = BoundedTaskStore(2)
    await store.save(task("long", WORKING), CALL)
    await store.save(task("a", COMPLETED), CALL)
    await store.save(task("b", COMPLETED), CALL)
    assert await store.get("a", CALL) is not None  # a is now more recent than b
    await store.save(task("long", COMPLETED), CALL)  # ends last: the most recent; b goes
    assert await stored(store, "a", "b", "long") == ["a", "long"]
    assert (store.running, store.terminal) == (0, 2)


async def test_idle_interrupted_tasks_are_evicted() -> None:
    """Issue 21: bounded tasks: an input-required or auth-required task idle (neither saved
    nor read) for interrupted_timeout seconds is evicted at the store's next call; one used
    meanwhile stays; at most N of them are kept; running tasks never go however old."""
    clock = Clock()
    store = BoundedTaskStore(2, interrupted_timeout=60.0, clock=clock)
    await store.save(task("run", WORKING), CALL)
    await store.save(task("asks", INPUT_REQUIRED), CALL)
    await store.save(task("login", TaskState.TASK_STATE_AUTH_REQUIRED), CALL)
    clock.now += 40
    assert await store.get("login", CALL) is not None  # used: its idle time starts again
    clock.now += 30  # asks: idle 70 s; login: 30 s
    assert await stored(store, "asks", "login", "run") == ["login", "run"]
    assert store.interrupted == 1
    clock.now += 1000
    await store.save(task("q1", INPUT_REQUIRED), CALL)
    await store.save(task("q2", INPUT_REQUIRED), CALL)
    await store.save(task("q3", INPUT_REQUIRED), CALL)  # past N=2: q1 goes (login: idle)
    assert await stored(store, "login", "q1", "q2", "q3", "run") == ["q2", "q3", "run"]
    await store.save(task("q2", WORKING), CALL)  # answered: running again, out of the bound
    clock.now += 1000
    assert await stored(store, "q2", "q3", "run") == ["q2", "run"]


async def test_owners_are_apart_and_delete_forgets() -> None:
    """Issue 21: bounded tasks: tasks are scoped by owner as in the SDK's store (one id under
    two owners is two tasks, each owner's get sees its own), the bound counts all owners, and
    delete forgets a task from the bound."""
    store = BoundedTaskStore(2, owner_resolver=lambda call: call.tenant)
    alice, bob = ServerCallContext(tenant="alice"), ServerCallContext(tenant="bob")
    await store.save(task("t", COMPLETED), alice)
    await store.save(task("t", WORKING), bob)
    found = await store.get("t", bob)
    assert found is not None
    assert found.status.state == WORKING
    await store.save(task("u", COMPLETED), bob)
    await store.save(task("v", COMPLETED), bob)  # the third terminal: alice's t goes
    assert await store.get("t", alice) is None
    await store.delete("u", bob)
    assert (store.terminal, store.running) == (1, 1)
    assert await store.get("u", bob) is None


async def test_bounds_below_one_are_refused() -> None:
    """Issue 21: bounded tasks: at least one terminal task is kept, the idle time is
    positive."""
    with pytest.raises(ValueError, match="at least 1"):
        BoundedTaskStore(0)
    with pytest.raises(ValueError, match="greater than 0"):
        BoundedTaskStore(1, interrupted_timeout=0)


@ASYNCIO_ONLY
async def test_served_tasks_past_the_bound_are_not_found() -> None:
    """Issue 21: bounded tasks, end to end: serve_a2a_http(max_stored_tasks=2) and the SDK's
    client: of three finished tasks GetTask finds the last two and answers "task not found"
    for the first; a task still running is found throughout; when it ends it is the most
    recent, and the least recently read of the other two is the one evicted."""
    gate = anyio.Event()
    scripts = {"wait": Script(progress=(TextProgress("waiting"),), turn_gate=gate)}
    started, ended = anyio.Event(), anyio.Event()
    slow_turn: list[Turn] = []
    async with (
        ScriptedProvider(scripts) as provider,
        serve_a2a_http(provider, SCRIPTED, port=0, max_stored_tasks=2) as server,
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
            slow_id = slow_turn[0].task_id
            quick = [await send(client, f"echo {i}") for i in range(3)]
            assert [t.final for t in quick] == ["TASK_STATE_COMPLETED"] * 3
            first, second, third = (t.task_id for t in quick)
            assert await get_task(client, slow_id) == "TASK_STATE_WORKING"
            with pytest.raises(TaskNotFoundError):
                await get_task(client, first)
            assert await get_task(client, second) == "TASK_STATE_COMPLETED"
            assert await get_task(client, third) == "TASK_STATE_COMPLETED"  # read last
            assert (server.tasks.running, server.tasks.terminal) == (1, 2)
            gate.set()
            await ended.wait()
            assert slow_turn[0].final == "TASK_STATE_COMPLETED"
            with pytest.raises(TaskNotFoundError):
                await get_task(client, second)
            assert await get_task(client, third) == "TASK_STATE_COMPLETED"
            assert await get_task(client, slow_id) == "TASK_STATE_COMPLETED"
            assert (server.tasks.running, server.tasks.terminal) == (0, 2)


@ASYNCIO_ONLY
async def test_the_command_line_bounds_stored_tasks(tmp_path: Path) -> None:
    """Issue 21: bounded tasks: a real ``serve --a2a --max-stored-tasks 2`` process in front
    of the reference ACP agent: after three tasks GetTask of the first answers "task not
    found", the last two are found completed."""
    async with serve_a2a(tmp_path, "--max-stored-tasks", "2") as served:
        async with a2a_client(served.url, TOKEN) as client:
            with anyio.fail_after(60):
                turns = [await send(client, f"echo {i}") for i in range(3)]
                assert [t.final for t in turns] == ["TASK_STATE_COMPLETED"] * 3
                with pytest.raises(TaskNotFoundError):
                    await get_task(client, turns[0].task_id)
                assert await get_task(client, turns[1].task_id) == "TASK_STATE_COMPLETED"
                assert await get_task(client, turns[2].task_id) == "TASK_STATE_COMPLETED"
        served.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(20):
            assert await served.process.wait() == 0


@ASYNCIO_ONLY
async def test_the_command_line_passes_the_public_url(tmp_path: Path) -> None:
    """Issue 21: the card of a ``serve --a2a --public-url URL`` process names URL (the option
    reached the server: it was parsed and then dropped before)."""
    public = "https://agents.example/chained/"
    async with serve_a2a(tmp_path, "--public-url", public) as served, httpx.AsyncClient() as http:
        card = (await http.get(served.card_url)).json()
    assert card["supportedInterfaces"][0]["url"] == public


@pytest.mark.parametrize("bound", ["0", "-1"])
def test_a_bound_below_one_is_refused_by_the_command(bound: str) -> None:
    """Issue 21: bounded tasks: ``--max-stored-tasks`` below 1 exits 2 saying why (nothing
    is served)."""
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "serve", "--a2a", "127.0.0.1:0",
         "--agent", "reference", "--max-stored-tasks", bound],
        capture_output=True, text=True, timeout=60, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 2
    assert "--max-stored-tasks must be at least 1" in done.stderr
    assert "listening on http" not in done.stderr
