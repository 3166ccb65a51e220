"""URL agents in the registry, the ACP provider and the probe (issue 20, point 3), against the
official SDK's server in a subprocess (asyncio and trio)."""

from __future__ import annotations

import sys

import anyio
import pytest

from subagents.cancel import CancelSignal
from subagents.config import AgentSpec, ConfigError, parse_agents, to_toml
from subagents.protocol.acp_remote import agent_url, is_agent_url
from subagents.providers.contract import SubagentRequest, TextProgress
from subagents.providers.factory import build_provider
from subagents.providers.probe import probe_agent
from subagents.transports.acp_client import connect_agent
from tests._ports import closed_port

from ._sdk_server import sdk_server

pytestmark = pytest.mark.anyio

BOUND = 30.0


def entry(body: str) -> AgentSpec:
    return parse_agents(f"[agents.far]\n{body}\n", "test.toml")["far"]


def test_an_entry_takes_a_url_and_token_env_instead_of_a_command() -> None:
    """Issue 20 point 3: "registry entries take url and token_env (with provider acp;
    command not needed then)"; written back as TOML, the entry reads the same."""
    spec = entry('url = "https://box:8000/acp"\ntoken_env = "BOX_TOKEN"')
    assert (spec.provider, spec.command, spec.url, spec.token_env) == (
        "acp",
        (),
        "https://box:8000/acp",
        "BOX_TOKEN",
    )
    assert entry(to_toml(spec).split("\n", 1)[1]) == spec


@pytest.mark.parametrize(
    ("body", "message", "hint"),
    [
        ('url = "box:8000"', "expected an http://", "url ="),
        ('url = "http://box"\ncommand = ["agent"]', "not both", "a url names"),
        ('provider = "codex"\nurl = "http://box"', "only acp entries", 'provider = "acp"'),
        ('command = ["agent"]\ntoken_env = "T"', "only an entry with a url", "url ="),
        ('url = "http://box"\ntoken_env = "NOT A NAME"', "environment variable", "token_env ="),
        ('provider = "acp"', "needs a command or a url", "url ="),
    ],
)
def test_a_bad_url_entry_is_refused_with_a_hint(body: str, message: str, hint: str) -> None:
    """Issue 20 point 3: "validation and hints like the existing ones"."""
    with pytest.raises(ConfigError, match=message) as info:
        entry(body)
    assert hint in info.value.hint


def test_agent_urls_are_recognised_and_get_the_endpoint_when_they_have_no_path() -> None:
    """Issue 20 point 2: a str starting with http://, https://, ws://, wss:// is a URL; "a
    bare host URL gets /acp appended only if its path is empty"."""
    assert all(is_agent_url(u) for u in ("http://a", "HTTPS://a", "ws://a", "wss://a"))
    assert not any(is_agent_url(u) for u in ("ftp://a", "agent", "/usr/bin/agent"))
    assert agent_url("http://box:8000") == "http://box:8000/acp"
    assert agent_url("http://box:8000/") == "http://box:8000/"
    assert agent_url("wss://box/agents/one") == "wss://box/agents/one"
    with pytest.raises(ValueError, match="names a host"):
        agent_url("http://")


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_url_entry_runs_through_the_acp_provider(scheme: str) -> None:
    """Issue 20 point 3: "AcpProvider connects by URL"; a run completes with the agent's
    text (what ``subagents run NAME`` does with an entry)."""
    with sdk_server() as server, anyio.fail_after(BOUND):
        spec = entry(f'url = "{scheme}://127.0.0.1:{server.port}"')
        async with build_provider(spec) as provider:
            run = await provider.start(SubagentRequest("far away"), cancel=CancelSignal())
            async with run:
                outcome = await run.result()
        assert outcome.status == "completed", outcome.message
        assert outcome.output == "echo: faraway"


async def test_a_dropped_connection_fails_the_running_turn_as_infrastructure() -> None:
    """Issue 20 point 3: "A dropped connection settles running turns as failed
    (infrastructure) naming the cause" (the server is stopped mid-turn)."""
    with sdk_server() as server, anyio.fail_after(BOUND):
        spec = entry(f'url = "http://127.0.0.1:{server.port}/acp"')
        async with build_provider(spec) as provider:
            run = await provider.start(SubagentRequest("hang"), cancel=CancelSignal())
            async with run:
                progress = run.progress()
                assert progress is not None
                async for event in progress:
                    if isinstance(event, TextProgress) and "hanging" in event.text:
                        break
                server.kill()
                outcome = await run.result()
        assert outcome.status == "failed"
        assert outcome.failure_kind == "infrastructure"
        assert f"127.0.0.1:{server.port}" in outcome.message


async def test_the_probe_of_a_url_entry_says_ok_unreachable_or_needs_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 20 point 3: "subagents agents --probe NAME ... says ok, unreachable (connection
    refused / DNS) or needs credentials (401) with a hint"."""
    with sdk_server("--token", "tok") as server, anyio.fail_after(BOUND):
        base = f'url = "http://127.0.0.1:{server.port}"\ntoken_env = "FAR_TOKEN"'
        monkeypatch.delenv("FAR_TOKEN", raising=False)
        missing = await probe_agent(entry(base), 10.0)
        assert (missing.status, missing.hint) == (
            "needs credentials",
            "set $FAR_TOKEN to the server's token",
        )
        monkeypatch.setenv("FAR_TOKEN", "wrong")
        wrong = await probe_agent(entry(base), 10.0)
        assert wrong.status == "needs credentials"
        assert "refused the token" in wrong.reason
        monkeypatch.setenv("FAR_TOKEN", "tok")
        fine = await probe_agent(entry(base), 10.0)
        assert fine.status == "ok", fine.reason
        assert fine.version == "0"
        no_token = await probe_agent(entry(f'url = "http://127.0.0.1:{server.port}"'), 10.0)
        assert no_token.status == "needs credentials"
        assert "token_env" in no_token.hint
    gone = await probe_agent(entry(f'url = "http://127.0.0.1:{closed_port()}"'), 10.0)
    assert gone.status == "unreachable"
    assert "subagents serve --listen" in gone.hint


@pytest.mark.parametrize(("module", "url"), [("h2", "http://box/acp"), ("httpx_ws", "ws://box")])
async def test_a_missing_extra_is_an_error_naming_the_install(
    monkeypatch: pytest.MonkeyPatch, module: str, url: str
) -> None:
    """Issue 20 point 2: "a missing extra is an error naming pip install 'subagents[remote]'"
    (nothing is connected to)."""
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"pip install 'subagents\[remote\]'"):
        async with connect_agent(url):
            pass
