"""Issue 19 / point 2: ``agents --probe`` says ``no network`` for an agent that has credentials
but cannot reach its model API, and still ``ok`` when it can: the real Codex (app-server and
codex-acp) and Claude (Claude Code and claude-agent-acp) agents from npm, offline.

Each agent is configured twice, with a (fake) key: once on the project's fake model server on
127.0.0.1, once on a loopback port nobody listens on (a socket bound, its port noted, then
closed), which is what an unreachable model API looks like to the agent. Nothing reaches the
internet, no model is called (the fake server sees only the probe's ``HEAD``), and every
agent keeps its state under ``tmp_path``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from subagents.cli import main
from subagents.config import AgentSpec, builtin_agents
from subagents.providers.probe import ProbeResult, find_command, probe_all
from subagents.testing.fake_models._http import FakeServer, serve
from subagents.testing.fake_models.anthropic_messages import (
    DEFAULT_REPLY,
    AnthropicMessagesHandler,
    claude_env,
)
from subagents.testing.fake_models.openai_responses import ResponsesHandler, codex_home
from tests._ports import closed_port

BOUND = 30.0
"""Each probe's bound (they take 0.3-2.5 s here: codex-acp is the slowest to stop)."""


@pytest.fixture
def openai() -> Iterator[FakeServer]:
    with serve(ResponsesHandler) as server:
        yield server


@pytest.fixture
def anthropic() -> Iterator[FakeServer]:
    with serve(AnthropicMessagesHandler) as server:
        yield server


def builtin(name: str) -> AgentSpec:
    spec = builtin_agents()[name]
    if find_command(spec) is None:
        pytest.fail(f"{name} is not installed: run ./scripts/setup (it needs node and npm)")
    return spec


def codex_entries(name: str, tmp_path: Path, server: FakeServer) -> tuple[AgentSpec, AgentSpec]:
    """The built-in ``name`` on the fake, and on a closed port (its config.toml's provider's
    ``base_url``)."""
    spec = builtin(name)
    online = codex_home(tmp_path / "online", server)
    offline = codex_home(tmp_path / "offline", server)
    config = Path(offline["CODEX_HOME"]) / "config.toml"
    dead = f"http://127.0.0.1:{closed_port()}"
    config.write_text(config.read_text().replace(server.base_url, dead), encoding="utf-8")
    return (
        AgentSpec("online", spec.provider, spec.command, env=online, cwd=str(tmp_path)),
        AgentSpec("offline", spec.provider, spec.command, env=offline, cwd=str(tmp_path)),
    )


def claude_entries(name: str, tmp_path: Path, server: FakeServer) -> tuple[AgentSpec, AgentSpec]:
    """The built-in ``name`` with ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` on the fake,
    and the same with the URL on a closed port."""
    spec = builtin(name)
    online = claude_env(tmp_path / "online", server)
    offline = claude_env(tmp_path / "offline", server)
    offline["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{closed_port()}"
    model = spec.model
    return (
        AgentSpec(
            "online", spec.provider, spec.command, model=model, env=online, cwd=str(tmp_path)
        ),
        AgentSpec(
            "offline", spec.provider, spec.command, model=model, env=offline, cwd=str(tmp_path)
        ),
    )


async def probe(*specs: AgentSpec) -> dict[str, ProbeResult]:
    return {r.name: r for r in await probe_all(specs, BOUND, jobs=len(specs))}


def assert_told_apart(results: dict[str, ProbeResult], port_hint: str) -> None:
    assert results["online"].status == "ok", results["online"]
    offline = results["offline"]
    assert offline.status == "no network", offline
    assert "connection refused" in offline.reason
    assert port_hint in offline.reason
    assert "cannot reach its model API" in offline.hint
    assert offline.version  # the agent itself started: only its model API is unreachable


pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("name", ["codex", "codex-acp"])
async def test_a_codex_agent_with_a_key_but_no_model_api_is_no_network(
    name: str, tmp_path: Path, openai: FakeServer
) -> None:
    """Issue 19 / 2: Codex with its key (a custom provider's ``env_key``) probes ``no
    network`` when the provider's base URL does not answer, ``ok`` when it does; the URL comes
    from Codex's own ``modelProvider/list`` (app-server) or its ``config.toml`` (codex-acp)."""
    online, offline = codex_entries(name, tmp_path, openai)
    results = await probe(online, offline)
    config = (Path(offline.env["CODEX_HOME"]) / "config.toml").read_text()
    assert_told_apart(results, config.split('base_url = "', 1)[1].split('"', 1)[0])
    assert "Codex's model provider 'fake'" in results["offline"].hint
    assert not [r for r in openai.requests if r.method == "POST"]  # no model was called


@pytest.mark.parametrize("name", ["claude-code", "claude-agent-acp"])
async def test_a_claude_agent_with_a_key_but_no_model_api_is_no_network(
    name: str, tmp_path: Path, anthropic: FakeServer
) -> None:
    """Issue 19 / 2: Claude Code and claude-agent-acp with ``ANTHROPIC_API_KEY`` probe ``no
    network`` when ``ANTHROPIC_BASE_URL`` does not answer, ``ok`` when it does."""
    online, offline = claude_entries(name, tmp_path, anthropic)
    results = await probe(online, offline)
    assert_told_apart(results, offline.env["ANTHROPIC_BASE_URL"])
    assert "ANTHROPIC_BASE_URL in its environment" in results["offline"].hint
    assert [r.method for r in anthropic.requests] == ["HEAD"]  # the probe's; no model call


async def test_the_probe_follows_claudes_settings_over_its_environment_as_the_cli_does(
    tmp_path: Path, anthropic: FakeServer
) -> None:
    """Issue 19 / 2: ``ANTHROPIC_BASE_URL`` in the ``env`` of Claude's ``settings.json`` wins
    over the process environment: with the environment's URL dead and the settings' URL on
    the fake, the real CLI's turn reaches the fake, and the probe says ``ok``; the other way
    round, ``no network`` naming the settings file."""
    spec = builtin("claude-code")
    assert spec.model is not None
    dead = f"http://127.0.0.1:{closed_port()}"
    env = {**claude_env(tmp_path, anthropic), "ANTHROPIC_BASE_URL": dead}
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": anthropic.base_url}}))
    argv = [*spec.command, "-p", "hello", "--model", spec.model]
    with anyio.fail_after(BOUND):
        turn = await anyio.run_process(argv, input=b"", env=env, cwd=tmp_path, check=False)
    assert turn.stdout.decode().strip() == DEFAULT_REPLY, turn.stderr
    entry = AgentSpec(
        "cc", spec.provider, spec.command, model=spec.model, env=env, cwd=str(tmp_path)
    )
    assert (await probe(entry))["cc"].status == "ok"
    swapped = {**env, "ANTHROPIC_BASE_URL": anthropic.base_url}
    settings.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": dead}}))
    entry = AgentSpec(
        "cc", spec.provider, spec.command, model=spec.model, env=swapped, cwd=str(tmp_path)
    )
    result = (await probe(entry))["cc"]
    assert result.status == "no network", result
    assert f"ANTHROPIC_BASE_URL in {settings}" in result.hint


async def test_a_codex_provider_whose_key_variable_is_unset_needs_credentials(
    tmp_path: Path, openai: FakeServer
) -> None:
    """Issue 19 / 2: a Codex provider that reads its key from a variable the agent does not
    get cannot take a prompt (Codex fails the turn with "Missing environment variable"),
    although ``account/read`` needs no login: ``needs credentials``, naming the variable."""
    online, _ = codex_entries("codex", tmp_path, openai)
    env = {k: v for k, v in online.env.items() if k != "FAKE_OPENAI_API_KEY"}
    keyless = AgentSpec("keyless", online.provider, online.command, env=env, cwd=online.cwd)
    [result] = (await probe(keyless)).values()
    assert result.status == "needs credentials", result
    assert "FAKE_OPENAI_API_KEY" in result.reason
    assert 'FAKE_OPENAI_API_KEY = "..."' in result.hint


def test_the_probe_table_says_no_network_and_the_hint_names_the_url(
    tmp_path: Path,
    openai: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 19 / 2: ``subagents agents --probe`` prints ``no network`` for the unreachable
    entry and ``ok`` for the reachable one, then the hint naming the model API's URL; named
    explicitly, an agent with no network is not fine (exit 1)."""
    online, offline = codex_entries("codex", tmp_path, openai)
    lines: list[str] = []
    for spec in (online, offline):
        lines += [
            f"[agents.{spec.name}]",
            "provider = 'codex'",
            f"command = {json.dumps(list(spec.command))}",
            f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in spec.env.items())} }}",
        ]
    registry = tmp_path / "agents.toml"
    registry.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    code = main(["agents", "--config", str(registry), "--probe", "online", "offline"])
    out, err = capsys.readouterr()
    assert code == 1
    rows = {line.split()[0]: line.split()[1:3] for line in out.splitlines()[1:]}
    assert rows["online"][0] == "ok"
    assert rows["offline"][:2] == ["no", "network"]
    hint = err.splitlines()[-1]
    assert hint.startswith("  offline: offline cannot reach its model API http://127.0.0.1:")
