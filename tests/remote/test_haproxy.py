"""Issue 34 item 6: ``subagents serve --listen`` behind a real load balancer, HAProxy 2.6 from
Debian's package (``./scripts/setup`` installs it; missing, these tests fail saying so), in
front of three instances on 127.0.0.1 with a sessions folder each, configured by the README's
recipe (``docs/load-balancer/haproxy.cfg``, the very file; the README's block must equal it).

What the README says of load balancers is what these tests do: a connection's requests all
reach one instance (HAProxy's log says where each went); 30 concurrent runs over HTTP and
WebSocket all settle; a cold resume (``session/load`` on a new connection) reaches the
instance whose sessions folder holds the session; an instance sent SIGTERM says so on
``/health``, HAProxy's check takes it out and new runs go elsewhere while its own runs finish
or settle cancelled naming the drain; an instance killed with SIGKILL fails its runs with a
named cause and new runs go elsewhere. The instances and HAProxy are subprocesses; the client
side runs on asyncio and on trio.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import anyio
import httpx
import pytest

from subagents.cancel import CancelSignal
from subagents.providers.acp import AcpProvider
from subagents.providers.contract import SubagentOutcome, SubagentRequest

from ._haproxy import CONFIG, REPO, Fleet, Request, haproxy_fleet

pytestmark = pytest.mark.anyio

BOUND: Final = 60.0
"""Seconds each test's runs may take together (none may hang)."""
SEEN_BOUND: Final = 15.0
"""Seconds HAProxy may take to log what happened (a health check's verdict, a request's end)."""
LONG_TURN: Final = "slow 100000"
"""A turn longer than any test (only a cancel, a drain or a kill ends it)."""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """One HAProxy and its three instances for the tests that leave them running."""
    with haproxy_fleet(tmp_path_factory.mktemp("haproxy")) as running:
        yield running


async def outcome_of(
    provider: AcpProvider, prompt: str, cancel: CancelSignal | None = None
) -> SubagentOutcome:
    run = await provider.start(SubagentRequest(prompt), cancel=cancel or CancelSignal())
    async with run:
        return await run.result()


async def wait_for(what: str, check: object) -> None:
    """Wait (bounded) until ``check()`` is true."""
    assert callable(check)
    with anyio.fail_after(SEEN_BOUND):
        while True:
            if check():
                return
            await anyio.sleep(0.05)


async def health_of(http: httpx.AsyncClient, fleet: Fleet, name: str) -> httpx.Response:
    """Instance ``name``'s own ``/health`` answer (not through HAProxy)."""
    return await http.get(fleet.health_url(name))


def connections_by_instance(requests: Sequence[Request]) -> dict[str, set[str]]:
    """Each connection id seen (an initialize's answer, or a request naming it) -> the
    instances its requests went to."""
    where: dict[str, set[str]] = {}
    for request in requests:
        connection = request.answered or request.connection
        if connection:
            where.setdefault(connection, set()).add(request.server)
    return where


def test_the_readme_recipe_is_the_configuration_these_tests_run() -> None:
    """Issue 34: "The README recipe is the config those tests use": the README's HAProxy
    block is the file ``docs/load-balancer/haproxy.cfg`` these tests run, character for
    character."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```haproxy\n(.*?)```", readme, re.S)
    assert blocks == [CONFIG.read_text(encoding="utf-8")]


async def test_thirty_concurrent_runs_settle_and_each_connection_stays_on_one_instance(
    fleet: Fleet,
) -> None:
    """Issue 34: "affinity (a connection's requests all reach one instance), 30 concurrent
    runs (all settle)": 24 runs over Streamable HTTP and 6 over WebSocket through HAProxy all
    complete; every connection's requests (its initialize's answer, POSTs, GET streams,
    DELETE) went to one instance, and all three instances took connections."""
    before = len(fleet.requests())
    outcomes: list[SubagentOutcome] = []

    async def one(provider: AcpProvider) -> None:
        outcomes.append(await outcome_of(provider, "slow 10"))

    http = AcpProvider(fleet.url, token=fleet.token)
    websocket = AcpProvider(fleet.websocket_url, token=fleet.token)
    with anyio.fail_after(BOUND):
        async with http, websocket, anyio.create_task_group() as tg:
            for index in range(30):
                tg.start_soon(one, websocket if index % 5 == 4 else http)
    assert [outcome.status for outcome in outcomes] == ["completed"] * 30, outcomes

    def logged() -> bool:  # every HTTP connection's DELETE, every WebSocket's end
        new = fleet.requests()[before:]
        deletes = [r for r in new if r.method == "DELETE"]
        upgrades = [r for r in new if r.status == 101]
        return len(deletes) >= 24 and len(upgrades) >= 6

    await wait_for("every connection logged", logged)
    where = connections_by_instance(fleet.requests()[before:])
    assert len(where) >= 24, where
    assert {name for servers in where.values() for name in servers} == {"a", "b", "c"}
    assert [c for c, servers in where.items() if len(servers) != 1] == [], where


async def test_a_cold_resume_is_routed_to_the_instance_holding_the_session(fleet: Fleet) -> None:
    """Issue 34: "Cold resume behind a balancer works with separate session stores per
    instance ... from headers alone": a session made through HAProxy and released is
    resumed six times, each on a new connection (``initialize`` with ``Acp-Session-Id``, then
    ``session/load``), and each resumed turn completes: HAProxy learned the session's
    instance from its stream's ``Acp-Session-Id`` answer header, and every resuming
    connection went there, though round robin alone would have sent most elsewhere (where
    the session is unknown)."""
    provider = AcpProvider(fleet.url, token=fleet.token)
    with anyio.fail_after(BOUND):
        async with provider:
            first = await provider.prepare_continuable(
                SubagentRequest("slow 2"), cancel=CancelSignal()
            )
            assert first.outcomes[0].status == "completed"
            session = first.remote_id
            await first.dispose()
            for _ in range(6):
                again = await provider.resume_continuable(session, cancel=CancelSignal())
                try:
                    outcome = await again.send("slow 3", cancel=CancelSignal())
                finally:
                    await again.dispose()
                assert outcome.status == "completed", outcome
    streams = [r for r in fleet.requests() if r.session == session and r.method == "GET"]
    holder = {r.server for r in streams}
    assert len(holder) == 1, streams
    initializes = [r for r in fleet.requests() if r.session == session and not r.connection]
    assert len(initializes) == 6
    assert {r.server for r in initializes} == holder


async def test_a_draining_instance_is_taken_out_and_its_runs_settle(tmp_path: Path) -> None:
    """Issue 34: "a drain (SIGTERM one instance: HAProxy's health check sees it draining and
    stops sending new connections to it; runs in flight finish or are cancelled naming the
    drain)": long turns on every instance; instance b gets SIGTERM: its ``/health`` says
    ``draining`` (503), HAProxy marks it DOWN while its listener is still open (the notice,
    2 s by default); nine new runs, six started at once as b drains (an initialize b refuses
    is retried elsewhere), all complete and no new connection was made on b; b's turns
    settle ``cancelled`` naming the drain, the others' go on until the test cancels them."""
    with haproxy_fleet(tmp_path) as fleet:
        provider = AcpProvider(fleet.url, token=fleet.token)
        cancels = [CancelSignal() for _ in range(6)]
        outcomes: dict[int, SubagentOutcome] = {}
        mark = 0

        async def long_run(index: int) -> None:
            outcomes[index] = await outcome_of(provider, LONG_TURN, cancels[index])

        async def new_run(news: list[SubagentOutcome]) -> None:
            news.append(await outcome_of(provider, "slow 5"))

        async with httpx.AsyncClient(timeout=10.0) as http:
            with anyio.fail_after(BOUND):
                async with provider, anyio.create_task_group() as tg:
                    for index in range(6):
                        tg.start_soon(long_run, index)
                    while True:  # b's two runs are in their turns
                        if (await health_of(http, fleet, "b")).json()["sessions"] >= 2:
                            break
                        await anyio.sleep(0.05)
                    fleet.sigterm("b")
                    while True:
                        draining = await health_of(http, fleet, "b")
                        if draining.status_code != 200:
                            break
                        await anyio.sleep(0.05)
                    assert (draining.status_code, draining.json()["status"]) == (503, "draining")
                    mark = len(fleet.requests())
                    # At once, before HAProxy's check may have seen it: an initialize b
                    # refuses (503, draining) is retried on another instance.
                    news: list[SubagentOutcome] = []
                    async with anyio.create_task_group() as at_once:
                        for _ in range(6):
                            at_once.start_soon(new_run, news)
                    await wait_for("b DOWN", lambda: ("b", "DOWN") in fleet.states())
                    for _ in range(3):
                        await new_run(news)
                    assert [o.status for o in news] == ["completed"] * 9, news
                    await wait_for("b's runs settled", lambda: len(outcomes) >= 2)
                    for cancel in cancels:
                        cancel.cancel("the test is over")
        drained = [o for o in outcomes.values() if "drain" in o.message]
        assert len(drained) == 2, outcomes
        assert {o.status for o in drained} == {"cancelled"}, drained
        assert {o.status for o in outcomes.values()} == {"cancelled"}
        # HAProxy saw the drain on /health (the listener still open), not a refused connection.
        assert "Layer7 wrong status, code: 503" in fleet.why_down("b"), fleet.why_down("b")
        later = fleet.requests()[mark:]  # no new connection was made on b
        assert [r for r in later if r.server == "b" and r.answered] == [], later


async def test_a_killed_instance_fails_its_runs_naming_the_cause_and_new_runs_go_elsewhere(
    tmp_path: Path,
) -> None:
    """Issue 34: "a kill -9 (runs on it fail with a named cause; new runs go elsewhere)", and
    "the WebSocket failure always names its cause": a run over HTTP and one over WebSocket on
    each instance; instance b is killed: its two runs settle failed naming what broke (the
    WebSocket's: closed without a close frame), HAProxy marks b DOWN, six new runs complete
    elsewhere."""
    with haproxy_fleet(tmp_path) as fleet:
        http = AcpProvider(fleet.url, token=fleet.token)
        websocket = AcpProvider(fleet.websocket_url, token=fleet.token)
        cancels = [CancelSignal() for _ in range(6)]
        outcomes: dict[int, SubagentOutcome] = {}
        failed: dict[int, SubagentOutcome] = {}
        mark = 0

        async def long_run(index: int, task_status: anyio.abc.TaskStatus[None]) -> None:
            provider = websocket if index % 2 == 0 else http
            run = await provider.start(SubagentRequest(LONG_TURN), cancel=cancels[index])
            task_status.started()
            async with run:
                outcomes[index] = await run.result()

        async with httpx.AsyncClient(timeout=10.0) as client:
            with anyio.fail_after(BOUND):
                async with http, websocket, anyio.create_task_group() as tg:
                    for index in range(6):  # one after the other: round robin, two each
                        await tg.start(long_run, index)
                    assert (await client.get(fleet.health_url("b"))).json()["connections"] == 2
                    fleet.kill("b")
                    await wait_for("b's runs failed", lambda: len(outcomes) >= 2)
                    await wait_for("b DOWN", lambda: ("b", "DOWN") in fleet.states())
                    mark = len(fleet.requests())
                    news = [await outcome_of(http, "slow 5") for _ in range(6)]
                    assert [o.status for o in news] == ["completed"] * 6, news
                    failed = dict(outcomes)
                    for cancel in cancels:
                        cancel.cancel("the test is over")
        assert sorted(o.status for o in failed.values()) == ["failed", "failed"], failed
        for outcome in failed.values():
            assert (
                fleet.url.removesuffix("/acp") in outcome.message or "127.0.0.1" in outcome.message
            )
            assert not outcome.message.rstrip().endswith(":"), outcome.message  # a cause, named
        by_websocket = [o for i, o in failed.items() if i % 2 == 0]
        assert len(by_websocket) == 1
        assert "without a WebSocket close frame" in by_websocket[0].message, by_websocket
        later = fleet.requests()[mark:]  # new connections: b's own DELETEs answered 503
        assert [r for r in later if r.server == "b" and not r.connection] == [], later
