"""A2A agents in the registry (issue 21 point 3): ``provider = "a2a"`` with ``url`` and
``token_env``, the provider ``build_provider`` makes, ``subagents run NAME`` and
``subagents agents --probe`` against the official ``a2a-sdk`` server (a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from a2a.utils.errors import A2AError

from subagents.cancel import CancelSignal
from subagents.config import AgentSpec, ConfigError, parse_agents
from subagents.providers.a2a import A2AProvider, endpoint_refusal, fetch_card
from subagents.providers.contract import SubagentRequest
from subagents.providers.factory import build_provider
from subagents.providers.probe import probe_agent
from tests._ports import closed_port
from tests.a2a._a2a_server import a2a_server

BOUND = 30.0


def entry(body: str) -> AgentSpec:
    return parse_agents(f'[agents.far]\nprovider = "a2a"\n{body}\n', "test.toml")["far"]


def test_an_a2a_entry_takes_a_url_token_env_and_a_card_url() -> None:
    """Issue 21 point 3: `provider = "a2a"`, `url`, `token_env`; build_provider makes an
    A2AProvider on them (options.card_url: a card elsewhere)."""
    spec = entry(
        'url = "https://agents.example:9999"\ntoken_env = "FAR_TOKEN"\n'
        '[agents.far.options]\ncard_url = "https://cards.example/far.json"'
    )
    assert (spec.provider, spec.url, spec.token_env) == (
        "a2a",
        "https://agents.example:9999",
        "FAR_TOKEN",
    )
    provider = build_provider(spec)
    assert isinstance(provider, A2AProvider)
    assert (provider.name, provider.url, provider.token_env, provider.card_url) == (
        "far",
        "https://agents.example:9999",
        "FAR_TOKEN",
        "https://cards.example/far.json",
    )


@pytest.mark.parametrize(
    ("body", "message", "hint"),
    [
        ("", "provider 'a2a' needs the agent's url", "url = "),
        (
            'urls = ["http://a:1", "http://b:1"]',
            "an a2a entry takes one url",
            'url = "http://a:1"',
        ),
        (
            'url = "http://a:1"\ncommand = ["agent"]',
            "an a2a entry takes a url, not a command",
            "already running",
        ),
        ('url = "ws://a:1"', "over http:// or https://", 'url = "http://host:9999"'),
        ('url = "not a url"', "expected an http://", "url = "),
        ('url = "http://a:1"\ntoken_env = "not a name"', "token_env", "token_env = "),
    ],
)
def test_a_bad_a2a_entry_is_refused_with_a_hint(body: str, message: str, hint: str) -> None:
    """Issue 21 point 3: config.py allowed url only for acp; an a2a entry is checked with
    clear ConfigErrors (each with a hint)."""
    with pytest.raises(ConfigError) as caught:
        entry(body)
    assert message in str(caught.value)
    assert hint in caught.value.hint


@pytest.mark.anyio
async def test_an_a2a_entry_runs_and_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21 point 3: a run through the entry's provider completes; the probe shows the
    card's name, version, skills and streaming support, says needs credentials (401 on the
    card) or unreachable."""
    with a2a_server("--token", "tok") as server, anyio.fail_after(BOUND):
        spec = entry(f'url = "{server.url}"\ntoken_env = "FAR_TOKEN"')
        monkeypatch.setenv("FAR_TOKEN", "tok")
        async with build_provider(spec) as provider:
            run = await provider.start(SubagentRequest("echo far away"), cancel=CancelSignal())
            async with run:
                outcome = await run.result()
        assert outcome.output == "echo far away"
        found = await probe_agent(spec, 10.0)
        assert found.status == "ok", found.reason
        assert found.version == "1.2.3"
        assert found.capabilities == ("card scripted", "streaming", "skills echo fail")
        assert found.card == {
            "name": "scripted",
            "version": "1.2.3",
            "skills": [{"id": "echo", "name": "Echo"}, {"id": "fail", "name": "Fail"}],
            "streaming": True,
        }
    gone = await probe_agent(entry(f'url = "http://127.0.0.1:{closed_port()}"'), 10.0)
    assert gone.status == "unreachable"
    assert "start the A2A agent" in gone.hint


@pytest.mark.anyio
async def test_the_probe_checks_the_token_on_the_endpoint_not_only_the_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 21 point 3 (``agents --probe``): the card is public, so the probe also makes one
    authenticated request to the card's endpoint (GetTask of a random id): the right token
    is ok; a wrong one, none, or an unset token_env variable is a failure (needs
    credentials) naming the cause, with a hint naming the token_env variable."""
    with a2a_server("--token", "tok") as server, anyio.fail_after(BOUND):
        spec = entry(f'url = "{server.url}"\ntoken_env = "FAR_TOKEN"')
        monkeypatch.setenv("FAR_TOKEN", "tok")
        right = await probe_agent(spec, 10.0)
        monkeypatch.setenv("FAR_TOKEN", "wrong")
        wrong = await probe_agent(spec, 10.0)
        monkeypatch.delenv("FAR_TOKEN")
        unset = await probe_agent(spec, 10.0)
        none = await probe_agent(entry(f'url = "{server.url}"'), 10.0)
    assert right.status == "ok", right.reason
    assert right.card is not None
    assert (wrong.status, wrong.reason, wrong.hint) == (
        "needs credentials",
        "the agent's endpoint refused the token (HTTP 401 to GetTask)",
        "set $FAR_TOKEN to a token the agent accepts",
    )
    assert wrong.card is None
    assert (unset.status, unset.reason, unset.hint) == (
        "needs credentials",
        "$FAR_TOKEN (token_env) is not set",
        "set $FAR_TOKEN to the agent's token",
    )
    assert none.status == "needs credentials"
    assert (
        none.reason
        == "the agent's endpoint refused the request without a token (HTTP 401 to GetTask)"
    )
    assert 'token_env = "VARIABLE"' in none.hint
    with a2a_server() as open_server, anyio.fail_after(BOUND):
        open_probe = await probe_agent(entry(f'url = "{open_server.url}"'), 10.0)
    assert open_probe.status == "ok", open_probe.reason


@pytest.mark.anyio
async def test_an_endpoint_that_does_not_answer_is_not_taken_for_an_accepted_token() -> None:
    """Issue 21 point 3 (``agents --probe``): the endpoint check tells a refusal (401/403),
    an answer (task not found: accepted) and no answer at all (raised, a probe failure)
    apart."""
    with a2a_server() as server, anyio.fail_after(BOUND):
        async with httpx.AsyncClient() as http:
            card = await fetch_card(http, server.url, None)
            assert await endpoint_refusal(http, card) is None
            card.supported_interfaces[0].url = f"http://127.0.0.1:{closed_port()}/a2a"
            with pytest.raises(A2AError):
                await endpoint_refusal(http, card)


def _cli(
    config: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subagents", *args[:1], "--config", str(config), *args[1:]],
        capture_output=True,
        text=True,
        timeout=BOUND,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_subagents_run_and_agents_probe_work_with_an_a2a_entry(tmp_path: Path) -> None:
    """Issue 21 point 3: "`subagents run`, `agents --probe` (the card's name, version,
    skills, streaming support) work with it" (the CLI, as a user runs it); a token the
    endpoint refuses fails the probe (exit 1), naming the token_env variable."""
    with a2a_server("--token", "tok") as server:
        config = tmp_path / "subagents.toml"
        config.write_text(
            f'[agents.far]\nprovider = "a2a"\nurl = "{server.url}"\ntoken_env = "FAR_TOKEN"\n'
        )
        ran = _cli(config, "run", "far", "echo from the cli", env={"FAR_TOKEN": "tok"})
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == "echo from the cli"
        failed = _cli(config, "run", "far", "fail", env={"FAR_TOKEN": "tok"})
        assert failed.returncode == 1
        assert "the agent's task ended failed: it broke" in failed.stderr
        probed = _cli(config, "agents", "--json", "--probe", "far", env={"FAR_TOKEN": "tok"})
        assert probed.returncode == 0, probed.stderr
        (result,) = json.loads(probed.stdout)
        assert result["status"] == "ok"
        assert result["card"]["name"] == "scripted"
        assert result["card"]["streaming"] is True
        table = _cli(config, "agents", "--probe", "far", env={"FAR_TOKEN": "tok"})
        assert "card scripted, streaming, skills echo fail" in table.stdout
        refused = _cli(config, "agents", "--json", "--probe", "far", env={"FAR_TOKEN": "no"})
        assert refused.returncode == 1
        (result,) = json.loads(refused.stdout)
        assert result["status"] == "needs credentials"
        assert "refused the token (HTTP 401" in result["reason"]
        assert "$FAR_TOKEN" in result["hint"]


def test_a_run_of_an_a2a_entry_whose_server_is_down_points_at_serve_a2a(tmp_path: Path) -> None:
    """Issue 21 point 3 (first contact: a wheel install with the a2a extra, the server not
    started): the run fails at once with one line, and its hint names ``subagents serve
    --a2a`` (the A2A server), not the ACP one."""
    config = tmp_path / "subagents.toml"
    config.write_text(f'[agents.far]\nprovider = "a2a"\nurl = "http://127.0.0.1:{closed_port()}"\n')
    ran = _cli(config, "run", "far", "hello")
    assert ran.returncode == 1
    assert "could not start" in ran.stderr
    assert "(subagents serve --a2a)" in ran.stderr
    assert "serve --listen" not in ran.stderr
