"""Registry entries with ``urls`` (issue 20, point 4): the entry, the spread provider the
factory makes of it, and its probe, against in-process servers of the runtime on 127.0.0.1
(asyncio and trio)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import pytest

from subagents.cancel import CancelSignal
from subagents.config import AgentSpec, ConfigError, parse_agents, to_toml
from subagents.harness.llm.offline import OfflineModel
from subagents.harness.runtime import AgentRuntime
from subagents.providers.contract import (
    ContinuableProvider,
    SubagentError,
    SubagentErrorCode,
    SubagentRequest,
)
from subagents.providers.factory import build_provider
from subagents.providers.probe import probe_agent
from subagents.providers.spread import SpreadProvider
from subagents.remote import RemoteServer, ServerLimits, runtime_agent
from tests._ports import closed_port

from ._server_helpers import running_server

BOUND = 30.0


def entry(body: str, existing: dict[str, AgentSpec] | None = None) -> AgentSpec:
    return parse_agents(f"[agents.fleet]\n{body}\n", "test.toml", existing)["fleet"]


def urls_entry(urls: Sequence[str], *extra: str) -> AgentSpec:
    listed = ", ".join(f'"{url}"' for url in urls)
    return entry("\n".join([f"urls = [{listed}]", *extra]))


@asynccontextmanager
async def runtime_servers(count: int) -> AsyncIterator[list[RemoteServer]]:
    """``count`` servers of the runtime (offline model, ``slow`` ticking every 50 ms); the
    block must end within :data:`BOUND`."""
    with anyio.fail_after(BOUND):
        async with AsyncExitStack() as stack:
            yield [
                await stack.enter_async_context(
                    running_server(runtime_agent(lambda: AgentRuntime(OfflineModel(tick=0.05))))
                )
                for _ in range(count)
            ]


async def until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) until ``condition()`` is true."""
    with anyio.fail_after(BOUND):
        while not condition():  # noqa: ASYNC110 - the server's state, polled
            await anyio.sleep(0.02)


def test_an_entry_takes_urls_with_one_token_env() -> None:
    """Issue 20 point 4: "an acp entry takes urls = [...] (instead of url/command; token_env
    applies to every URL)"; written back as TOML, the entry reads the same."""
    spec = urls_entry(["http://a:8000/acp", "ws://b:8000/acp"], 'token_env = "FLEET_TOKEN"')
    assert (spec.provider, spec.command, spec.url) == ("acp", (), None)
    assert spec.urls == ("http://a:8000/acp", "ws://b:8000/acp")
    assert spec.agent_urls == spec.urls
    assert spec.token_env == "FLEET_TOKEN"
    assert entry(to_toml(spec).split("\n", 1)[1]) == spec
    single = entry('url = "http://a:8000/acp"')
    assert (single.urls, single.agent_urls) == ((), ("http://a:8000/acp",))


def test_a_table_without_urls_updates_an_urls_entry() -> None:
    """A later table naming the entry without provider/command/url/urls updates it (the
    registry's rule): the URLs stay, the token variable is added."""
    base = {"fleet": urls_entry(["http://a:8000/acp", "http://b:8000/acp"])}
    updated = entry('token_env = "FLEET_TOKEN"\ntimeout = 60', base)
    assert updated.urls == base["fleet"].urls
    assert (updated.token_env, updated.timeout) == ("FLEET_TOKEN", 60.0)


@pytest.mark.parametrize(
    ("body", "message", "hint"),
    [
        (
            'url = "http://a/acp"\nurls = ["http://b/acp"]',
            "give url (one server) or urls (several), not both",
            'urls = ["http://a/acp", "http://b/acp"]',
        ),
        ("urls = []", "urls: the list is empty", "name at least one server"),
        (
            'urls = "http://a/acp"',
            "expected a list of URLs, not a string",
            'urls = ["http://a/acp"]',
        ),
        (
            'urls = ["http://a/acp", "a:8000"]',
            "urls[1]: 'a:8000' is not a server's URL",
            "urls = [",
        ),
        ('urls = ["http://"]', "urls[0]: 'http://' is not a server's URL", "urls = ["),
        ("urls = [8000]", "urls[0]: 8000 is not a server's URL", "urls = ["),
        ("urls = { a = 1 }", "urls: expected a list of URLs", "urls = ["),
        (
            'urls = ["http://a:8000", "http://a:8000/acp"]',
            "urls[1]: 'http://a:8000/acp' is the same server as urls[0]",
            "list each server once",
        ),
        ('urls = ["http://a/acp"]\ncommand = ["agent"]', "a command or a urls", "urls names"),
        ('provider = "codex"\nurls = ["http://a/acp"]', "only acp entries", 'provider = "acp"'),
        ('provider = "acp"', "needs a command or a url", "urls = ["),
    ],
)
def test_a_bad_urls_entry_is_refused_with_a_hint(body: str, message: str, hint: str) -> None:
    """Issue 20 point 4: "clear ConfigErrors with hints for mixing url and urls, an empty
    list, a non-URL"."""
    with pytest.raises(ConfigError) as info:
        entry(body)
    assert message in str(info.value)
    assert hint in info.value.hint


@pytest.mark.anyio
async def test_the_factory_spreads_runs_over_the_servers_each_session_on_one() -> None:
    """Issue 20 point 4: "build_provider makes a SpreadProvider over one URL AcpProvider per
    entry", least busy first, "with a run's session pinned to its server": two runs at once
    land one on each server, each server holding its run's session until it settles."""
    async with runtime_servers(2) as servers:
        spec = urls_entry([servers[0].url, servers[1].websocket_url])
        provider = build_provider(spec)
        assert isinstance(provider, SpreadProvider)
        assert provider.name == "fleet"
        async with provider:
            cancels = [CancelSignal(), CancelSignal()]
            runs = [await provider.start(SubagentRequest("slow 600"), cancel=c) for c in cancels]
            assert provider.in_flight == (1, 1)
            assert [(s.connection_count, s.session_count) for s in servers] == [(1, 1), (1, 1)]
            for cancel in cancels:
                cancel.cancel()
            outcomes = [await run.result() for run in runs]
            for run in runs:
                await run.dispose()
            assert [o.status for o in outcomes] == ["cancelled", "cancelled"]
            assert provider.in_flight == (0, 0)
            await until(lambda: all(s.connection_count == 0 for s in servers))


@pytest.mark.anyio
async def test_a_continued_child_stays_on_the_server_that_started_it() -> None:
    """Issue 20 point 4: a continuable child's session is pinned to its server: its remote id
    names the member, and every later turn goes to that server only."""
    async with (
        runtime_servers(2) as servers,
        build_provider(urls_entry([s.url for s in servers])) as provider,
    ):
        assert isinstance(provider, ContinuableProvider)
        busy = CancelSignal()
        holder = await provider.start(SubagentRequest("slow 600"), cancel=busy)
        child = await provider.prepare_continuable(SubagentRequest("first"), cancel=CancelSignal())
        busy.cancel()
        assert (await holder.result()).status == "cancelled"
        await holder.dispose()
        assert child.remote_id.startswith("1:")  # server 0 was busy: server 1
        for word in ("second", "third"):
            outcome = await child.send(word)
            assert (outcome.status, outcome.output) == ("completed", f"You said: {word}")
            assert [s.session_count for s in servers] == [0, 1]
        await child.dispose()


@pytest.mark.anyio
async def test_a_server_that_is_down_is_skipped_and_all_down_names_every_url() -> None:
    """Issue 20 point 4 (least-busy spreading over a list of URLs): a server that cannot be
    reached is skipped for the next; when none can start the run, the error names each URL."""
    down = f"http://127.0.0.1:{closed_port()}/acp"
    async with (
        runtime_servers(1) as [server],
        build_provider(urls_entry([down, server.url])) as provider,
    ):
        for _ in range(2):
            async with await provider.start(SubagentRequest("hello"), cancel=CancelSignal()) as run:
                assert (await run.result()).output == "You said: hello"
    other = f"http://127.0.0.1:{closed_port()}/acp"
    with anyio.fail_after(BOUND), pytest.raises(SubagentError) as info:
        async with build_provider(urls_entry([down, other])) as provider:
            await provider.start(SubagentRequest("hello"), cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert down in str(info.value)
    assert other in str(info.value)


@pytest.mark.anyio
async def test_the_probe_of_an_urls_entry_reports_each_server() -> None:
    """Issue 20 point 4: "agents --probe must work with such an entry (probe: each URL's
    status ...)": the entry is ok when every server is; else it takes the first failing
    server's status, its reason counting the failures, and each URL's own result is kept."""
    down = f"http://127.0.0.1:{closed_port()}/acp"
    async with runtime_servers(2) as servers:
        urls = [servers[0].url, servers[1].websocket_url]
        fine = await probe_agent(urls_entry(urls), 10.0)
        assert fine.status == "ok", fine.reason
        assert [(m.url, m.status) for m in fine.members] == [(url, "ok") for url in urls]
        assert fine.version is not None
        assert fine.start_ms is not None
        partly = await probe_agent(urls_entry([servers[0].url, down]), 10.0)
    assert [(m.url, m.status) for m in partly.members] == [
        (servers[0].url, "ok"),
        (down, "unreachable"),
    ]
    assert partly.status == "unreachable"
    assert partly.reason.startswith(f"1 of 2 servers not ok: {down}: ")
    assert "subagents serve --listen" in partly.hint
    assert partly.to_json()["members"] == [m.to_json() for m in partly.members]


@pytest.mark.anyio
async def test_a_full_server_is_skipped_for_the_next() -> None:
    """Issue 20 point 4 (README: a server that refuses the start, e.g. 503 when full or
    draining, is skipped): the first server holds another client's connection, its limit;
    the spread tries it first (no run of its own there), gets 503, and starts on the next."""
    runtime = runtime_agent(lambda: AgentRuntime(OfflineModel(tick=0.05)))
    async with (
        running_server(runtime, limits=ServerLimits(max_connections=1)) as full,
        runtime_servers(1) as [spare],
        build_provider(urls_entry([full.url])) as other_client,
    ):
        held = await other_client.start(SubagentRequest("slow 600"), cancel=CancelSignal())
        async with held, build_provider(urls_entry([full.url, spare.url])) as provider:
            assert isinstance(provider, SpreadProvider)
            async with await provider.start(SubagentRequest("hi"), cancel=CancelSignal()) as run:
                assert (full.connection_count, spare.connection_count) == (1, 1)
                assert (await run.result()).output == "You said: hi"
