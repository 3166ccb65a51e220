"""Scale-out on loopback (issue 20, point 4): several ``subagents serve --listen`` processes,
one registry entry spreading runs over their URLs, many concurrent runs with random cancels.

The servers are real processes (``127.0.0.1:0``, the URL read from their ``listening on``
line, stopped with SIGTERM at the end: each must exit 0). The entry is ``urls = [...]`` (two
Streamable HTTP URLs and one WebSocket URL), built by the factory into a ``SpreadProvider``
over one URL ``AcpProvider`` per server. Runs follow the run contract: ``start`` (cancelled
there: ``SubagentError(CANCELLED)``), then the run's ``result()``, disposed on leaving its
block. A seeded RNG (``SUBAGENTS_SCALE_SEED`` fixes it; the seed is in every failure's
notes) picks the runs to cancel and the moment of each cancel, from before the run is
published to well into its turn; a run to be cancelled asks for a turn far longer than the
test, so only its cancel can end it.

Leaks are counted, not guessed: after the provider's block, this process has the same open
file descriptors (``/proc/self/fd``; no tolerance: a warm-up through the same entry first
makes what is created once per process, before the baseline), the same anyio tasks, and no
child process but the servers; each server's ``/health`` says 0 connections and 0 sessions,
and a server fronting an agent command has no child process left.

One server-side leftover is bounded rather than absent: a run cancelled during its
``initialize`` POST. A client that disconnects before the answer has its connection stopped
by the server at once, and an answer already on its way is read by the client (a grace of
1 s) which then DELETEs the connection; but under load an answer the server wrote just as
the grace ended is never read, and that connection (no session) stays until the server's
idle timeout (seen once in a full suite run). The servers here run with ``--idle-timeout
10`` and the test waits for that, printing how many there were.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import httpx
import pytest

from subagents.cancel import CancelSignal
from subagents.config import AgentSpec, parse_agents
from subagents.providers.contract import SubagentError, SubagentErrorCode, SubagentRequest
from subagents.providers.factory import build_provider
from subagents.providers.spread import SpreadProvider

from ._serve_processes import REFERENCE, Server, children, health, open_fds, serve_processes

pytestmark = pytest.mark.anyio

SERVERS: Final = 3
SETTLE_BOUND: Final = 120.0
"""Seconds every run together may take to settle (none may hang)."""
IDLE_TIMEOUT: Final = 10.0
"""The servers' ``--idle-timeout``: what reclaims a connection whose client left without
learning its id (see the module docstring)."""
QUIET_BOUND: Final = IDLE_TIMEOUT + 10.0
"""Seconds a server may take, after the runs, to report no connection and no agent process."""
CANCEL_WINDOW: Final = 1.0
"""A cancel lands at a random moment within this many seconds of the start being called (a
third of them: mostly before publication, the start of 100 at once takes longer) or of the
run's publication (two thirds: during the turn)."""
LONGEST: Final = 300
"""pytest-timeout's bound on each test (the suite's 60 s is too short on a loaded machine;
the waits inside are bounded on their own: start, settle, quiet, stop)."""
LONG_TURN: Final = "slow 100000"
"""The prompt of a run to be cancelled: a turn longer than the test (only the cancel ends it)."""


def seed_of_this_run() -> int:
    fixed = os.environ.get("SUBAGENTS_SCALE_SEED")
    return int(fixed) if fixed else random.SystemRandom().randrange(1 << 32)


@contextmanager
def seed_noted(seed: int) -> Iterator[None]:
    """Any failure inside carries the seed (a note pytest prints), to replay it."""
    try:
        yield
    except BaseException as exc:
        exc.add_note(f"random seed {seed}: rerun with SUBAGENTS_SCALE_SEED={seed}")
        raise


def spread_entry(servers: Sequence[Server]) -> AgentSpec:
    """The registry entry over ``servers``: the last one by WebSocket, the others by HTTP."""
    urls = [server.url for server in servers[:-1]] + [servers[-1].websocket_url()]
    listed = ", ".join(f'"{url}"' for url in urls)
    return parse_agents(f"[agents.fleet]\nurls = [{listed}]\n", "scale.toml")["fleet"]


@dataclass
class Tally:
    """What the runs came to, by index."""

    outcomes: dict[int, str] = field(default_factory=dict[int, str])
    """``completed``, ``cancelled``, ``cancelled before publication`` or ``failed: why``."""
    texts: dict[int, str] = field(default_factory=dict[int, str])
    peak_connections: list[int] = field(default_factory=list[int])
    """The most connections each server's ``/health`` reported while the runs went on."""


@dataclass(frozen=True)
class CancelAt:
    """When the test cancels a run: ``delay`` seconds into its ``phase`` (``start``: from the
    call to ``start``, so before publication unless the start is quick; ``turn``: from the
    run's publication, so during its turn)."""

    phase: str
    delay: float


async def one_run(
    provider: SpreadProvider, index: int, prompt: str, cancel_at: CancelAt | None, tally: Tally
) -> None:
    cancel = CancelSignal()

    async def cancel_later(at: CancelAt) -> None:
        await anyio.sleep(at.delay)
        cancel.cancel(f"run {index} cancelled by the test {at.delay:.2f} s into its {at.phase}")

    async with anyio.create_task_group() as tg:
        if cancel_at is not None and cancel_at.phase == "start":
            tg.start_soon(cancel_later, cancel_at)
        try:
            run = await provider.start(SubagentRequest(prompt), cancel=cancel)
        except SubagentError as exc:
            cancelled = exc.code is SubagentErrorCode.CANCELLED
            tally.outcomes[index] = (
                "cancelled before publication" if cancelled else f"failed: {exc}"
            )
        else:
            if cancel_at is not None and cancel_at.phase == "turn":
                tg.start_soon(cancel_later, cancel_at)
            async with run:
                outcome = await run.result()
            tally.outcomes[index] = (
                outcome.status if outcome.status != "failed" else f"failed: {outcome.message}"
            )
            tally.texts[index] = str(outcome.output or "")
        tg.cancel_scope.cancel()


async def watch_health(servers: Sequence[Server], tally: Tally) -> None:
    """Record each server's peak connection count until cancelled. (The bound on each
    request is the URL client's own: this process's event loop is the busiest of all.)"""
    tally.peak_connections = [0] * len(servers)
    async with httpx.AsyncClient(timeout=30.0) as http:
        while True:
            for index, server in enumerate(servers):
                try:
                    answer = await health(http, server)
                except httpx.TimeoutException:
                    continue  # a loaded machine: the runs' own bounds judge a stuck server

                tally.peak_connections[index] = max(
                    tally.peak_connections[index], answer["connections"]
                )
            await anyio.sleep(0.2)


async def quiet_servers(servers: Sequence[Server], *, agents: bool) -> list[int]:
    """Wait (bounded) until every server reports no connection and no session, and, for
    servers fronting an agent command, has no child process left; the connections each one
    still had when called (with no session: asserted)."""
    async with httpx.AsyncClient(timeout=5.0) as http:
        at_first = [await health(http, server) for server in servers]
        assert [answer["sessions"] for answer in at_first] == [0] * len(servers), at_first
        last: list[tuple[object, object]] = []
        try:
            with anyio.fail_after(QUIET_BOUND):
                while True:
                    last = []
                    for server in servers:
                        answer = await health(http, server)
                        last.append((answer, sorted(children(server.pid)) if agents else []))
                    if all(
                        answer == {"status": "ok", "connections": 0, "sessions": 0} and not kids
                        for answer, kids in last
                    ):
                        return [answer["connections"] for answer in at_first]
                    await anyio.sleep(0.1)
        except TimeoutError:
            pytest.fail(f"servers not quiet after {QUIET_BOUND} s: (health, children) = {last}")


async def warm_up(spec: AgentSpec) -> None:
    """One short run per server (least busy, then least recently used: one on each), so what
    a process creates once (the event loop's helpers, httpx's TLS context) exists before the
    baseline."""
    async with build_provider(spec) as provider:
        for _ in range(SERVERS):
            async with await provider.start(SubagentRequest("hello"), cancel=CancelSignal()) as run:
                assert (await run.result()).status == "completed"


async def scale_out(
    servers: Sequence[Server], *, runs: int, short_turn: str, done_text: str, agents: bool
) -> None:
    """``runs`` concurrent runs over ``servers``, a random third cancelled; then the checks."""
    seed = seed_of_this_run()
    rng = random.Random(seed)
    cancelled = set(rng.sample(range(runs), runs // 3))
    moments = {
        index: CancelAt(rng.choice(("start", "turn", "turn")), rng.uniform(0.0, CANCEL_WINDOW))
        for index in sorted(cancelled)
    }
    server_pids = {server.pid for server in servers}
    spec = spread_entry(servers)
    with seed_noted(seed):
        await warm_up(spec)
        fds, tasks = open_fds(), {task.id for task in anyio.get_running_tasks()}
        assert children(os.getpid()) == server_pids
        tally = Tally()
        started = time.monotonic()
        provider = build_provider(spec)
        assert isinstance(provider, SpreadProvider)
        async with provider, anyio.create_task_group() as watching:
            watching.start_soon(watch_health, servers, tally)
            with anyio.fail_after(SETTLE_BOUND):
                async with anyio.create_task_group() as tg:
                    for index in range(runs):
                        prompt = LONG_TURN if index in cancelled else short_turn
                        tg.start_soon(one_run, provider, index, prompt, moments.get(index), tally)
            watching.cancel_scope.cancel()
            assert provider.in_flight == (0,) * SERVERS
        elapsed = time.monotonic() - started
        # Every run settled: completed, or cancelled when (and only when) the test cancelled it.
        assert sorted(tally.outcomes) == list(range(runs))
        failed = {i: o for i, o in tally.outcomes.items() if o.startswith("failed")}
        assert failed == {}
        for index, outcome in tally.outcomes.items():
            if index in cancelled:
                assert outcome in ("cancelled", "cancelled before publication"), (index, outcome)
            else:
                assert outcome == "completed", (index, outcome)
                assert done_text in tally.texts[index], (index, tally.texts[index][-200:])
        # Spread: every server held some of the runs at once.
        assert all(peak > 0 for peak in tally.peak_connections), tally.peak_connections
        # Nothing leaked on this side.
        assert children(os.getpid()) == server_pids
        assert open_fds() == fds, sorted(os.listdir("/proc/self/fd"))
        left = [t.name for t in anyio.get_running_tasks() if t.id not in tasks]
        assert left == []
        # Nor on the servers' side (a connection whose client never learnt its id: bounded).
        leftover = await quiet_servers(servers, agents=agents)
    early = sum(o == "cancelled before publication" for o in tally.outcomes.values())
    print(
        f"{runs} runs ({len(cancelled)} cancelled: {early} before publication) over {SERVERS} "
        f"servers settled in {elapsed:.1f} s; peak connections per server "
        f"{tally.peak_connections}; connections left then {leftover}; "
        f"seed {seed}"
    )


@pytest.mark.long
@pytest.mark.timeout(LONGEST)
async def test_a_hundred_runs_over_three_runtime_servers_settle_and_leak_nothing(
    tmp_path: Path,
) -> None:
    """Issue 20 point 4: "Several serve --listen processes on different ports; a provider
    spreading runs over a list of URLs (least-busy), with a run's session pinned to its
    server; 100 concurrent remote runs with random cancels all settle, nothing leaks
    (processes, fds, tasks) on either side". The servers serve the in-process runtime
    (offline model, ``slow`` answers ticking every 50 ms)."""
    idle = ("--idle-timeout", str(IDLE_TIMEOUT))
    async with serve_processes(tmp_path, SERVERS, "--tick", "0.05", *idle) as servers:
        await scale_out(servers, runs=100, short_turn="slow 20", done_text="tick 20", agents=False)


@pytest.mark.long
@pytest.mark.timeout(LONGEST)
async def test_runs_over_servers_fronting_agent_processes_reap_every_agent(
    tmp_path: Path,
) -> None:
    """Issue 20 point 4, with servers fronting an agent command (the reference agent, one
    process per connection): 20 concurrent runs, a random third cancelled, all settle, and
    no agent process is left on any server ("nothing leaks (processes ...) on either side")."""
    idle = ("--idle-timeout", str(IDLE_TIMEOUT))
    async with serve_processes(tmp_path, SERVERS, *idle, agent=REFERENCE) as servers:
        await scale_out(servers, runs=20, short_turn="slow 10", done_text="tick 9", agents=True)
