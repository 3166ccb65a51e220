"""Issue 19 / point 2: how ``agents --probe`` finds the model API an agent would call and
tells ``no network`` from ``ok`` (:mod:`subagents.providers._model_api`), without an agent.

The servers are the project's fake model servers on 127.0.0.1; "no network" is a loopback
port nobody listens on. Nothing here reaches the internet: a URL on another host is only
ever sent to a fake proxy, which refuses it.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from subagents.config import AgentSpec
from subagents.providers._model_api import (
    ANTHROPIC_API,
    CHATGPT_BACKEND,
    OPENAI_API,
    ModelApi,
    claude_api,
    codex_api,
    codex_config_api,
    model_api_cause,
    unreachable,
)
from subagents.testing.fake_models._http import FakeServer, serve
from subagents.testing.fake_models.openai_responses import ResponsesHandler
from tests._ports import closed_port


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with serve(ResponsesHandler) as server:
        yield server


@pytest.fixture(autouse=True)
def no_shell_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hints compare the agent's proxy with this process's: start from none."""
    for name in ("https_proxy", "http_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def codex(tmp_path: Path, config: str, *args: str) -> AgentSpec:
    home = tmp_path / "codex"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config, encoding="utf-8")
    env = {"CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-fake"}
    return AgentSpec("cx", "acp", ("codex-acp", *args), env=env, cwd=str(tmp_path))


# -- where the model API is ----------------------------------------------------------------


def test_codex_says_its_provider_and_the_builtin_one_is_the_api_or_the_chatgpt_backend() -> None:
    """Issue 19 / 2: from ``modelProvider/list`` and ``account/read``: a custom provider's
    base URL and key variable; the built-in ``openai`` provider's own URL when it has one,
    else the OpenAI API, or the ChatGPT backend for a ChatGPT login."""
    spec = AgentSpec("codex", "codex", ("codex",))
    custom = {
        "defaultProviderId": "gw",
        "data": [
            {
                "id": "gw",
                "baseUrl": "http://gw.example/v1",
                "settings": {
                    "type": "customGateway",
                    "auth": {"mode": "environmentVariable", "envKey": "GW_KEY"},
                },
            }
        ],
    }
    api = codex_api(spec, custom, {"account": None})
    assert api is not None
    assert (api.url, api.key_variable) == ("http://gw.example/v1", "GW_KEY")
    assert "'gw'" in api.source

    def builtin(url: str | None) -> dict[str, object]:
        entry = {"id": "openai", "baseUrl": url, "settings": {"type": "openai"}}
        return {"defaultProviderId": "openai", "data": [entry]}

    chatgpt = {"account": {"type": "chatgpt", "email": "a@b.c", "planType": "plus"}}
    for url, account, expected in [
        ("http://mine/v1", chatgpt, "http://mine/v1"),
        (None, {"account": {"type": "apiKey"}}, OPENAI_API),
        (None, {"account": None}, OPENAI_API),
        (None, chatgpt, CHATGPT_BACKEND),
    ]:
        found = codex_api(spec, builtin(url), account)
        assert found is not None
        assert (found.url, found.key_variable) == (expected, None)


def test_cloud_providers_and_unknown_answers_are_not_judged(tmp_path: Path) -> None:
    """Issue 19 / 2: Bedrock, Vertex and answers the probe cannot read give no model API
    (the probe claims nothing rather than a false ``no network``)."""
    spec = AgentSpec("codex", "codex", ("codex",))
    bedrock = {
        "defaultProviderId": "amazon-bedrock",
        "data": [{"id": "amazon-bedrock", "baseUrl": None, "settings": {"type": "bedrock"}}],
    }
    assert codex_api(spec, bedrock, {"account": None}) is None
    assert codex_api(spec, "nonsense", None) is None
    assert codex_api(spec, {"defaultProviderId": "x", "data": []}, None) is None
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path), "CLAUDE_CODE_USE_BEDROCK": "1"}
    claude = AgentSpec("c", "claude-code", ("claude",), env=env, cwd=str(tmp_path))
    assert claude_api(claude) is None


def test_codex_config_and_the_commands_overrides_choose_the_provider(tmp_path: Path) -> None:
    """Issue 19 / 2: for codex-acp (no provider query), ``$CODEX_HOME/config.toml`` read as
    Codex does: ``model_provider`` and its ``base_url`` and ``env_key``, ``-c`` overrides
    (TOML values, else strings), ``openai_base_url``, the OpenAI API by default."""
    config = """
model_provider = "a"
[model_providers.a]
base_url = "http://a.example/v1"
env_key = "A_KEY"
[model_providers.b]
base_url = "http://b.example/v1"
"""
    api = codex_config_api(codex(tmp_path, config))
    assert api is not None
    assert (api.url, api.key_variable) == ("http://a.example/v1", "A_KEY")
    api = codex_config_api(codex(tmp_path, config, "-c", 'model_provider="b"'))
    assert api is not None
    assert (api.url, api.key_variable) == ("http://b.example/v1", None)
    api = codex_config_api(codex(tmp_path, config, "--config=model_provider=openai"))
    assert api is not None
    assert api.url == OPENAI_API
    api = codex_config_api(codex(tmp_path, "openai_base_url = 'http://o.example/v1'\n"))
    assert api is not None
    assert api.url == "http://o.example/v1"
    api = codex_config_api(codex(tmp_path, ""))
    assert api is not None
    assert api.url == OPENAI_API


def test_claude_settings_env_wins_over_the_agents_environment(tmp_path: Path) -> None:
    """Issue 19 / 2: Claude Code applies its settings' ``env`` over its process environment
    (checked on the real CLI), the project's local settings first: the probe does the same;
    without ``ANTHROPIC_BASE_URL`` anywhere it is the Anthropic API."""
    config = tmp_path / "config"
    project = tmp_path / "project" / ".claude"
    config.mkdir()
    project.mkdir(parents=True)
    env = {"CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": "http://env.example"}
    spec = AgentSpec("c", "claude-code", ("claude",), env=env, cwd=str(project.parent))
    api = claude_api(spec)
    assert api is not None
    assert (api.url, api.source) == ("http://env.example", "ANTHROPIC_BASE_URL in its environment")

    def settings(path: Path, url: str) -> None:
        path.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": url}}), encoding="utf-8")

    settings(config / "settings.json", "http://user.example")
    api = claude_api(spec)
    assert api is not None
    assert api.url == "http://user.example"
    assert str(config / "settings.json") in api.source
    settings(project / "settings.local.json", "http://local.example")
    settings(project / "settings.json", "http://project.example")
    api = claude_api(spec)
    assert api is not None
    assert api.url == "http://local.example"
    bare = AgentSpec("c", "claude-code", ("claude",), env={"CLAUDE_CONFIG_DIR": str(tmp_path)})
    api = claude_api(bare)
    assert api is not None
    assert api.url == ANTHROPIC_API


# -- whether it answers --------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_closed_port_is_no_network_and_any_answer_is_reachable(fake: FakeServer) -> None:
    """Issue 19 / 2: a refused connection is ``no network`` with the URL and the cause; a
    server that answers, even ``501`` to a ``HEAD`` (the fake Responses API), is reachable."""
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    why = await unreachable(ModelApi(dead, "test", {}))
    assert why == f"{dead}: connection refused"
    assert await unreachable(ModelApi(fake.base_url + "/v1", "test", {})) is None


@pytest.mark.anyio
async def test_a_server_that_accepts_but_never_answers_is_judged_within_the_bound() -> None:
    """Issue 19 / 2: the probe never hangs: a listener that accepts the connection and says
    nothing is reachable (the network works), decided within the check's bound."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        started = time.monotonic()
        with anyio.fail_after(5):
            assert await unreachable(ModelApi(url, "test", {}), timeout=0.5) is None
    assert time.monotonic() - started < 3


@pytest.mark.anyio
async def test_the_agents_proxy_is_used_and_no_proxy_is_honoured(fake: FakeServer) -> None:
    """Issue 19 / 2: the check goes through the proxy the agent's environment names (here
    the fake server, which answers for a dead URL; a closed proxy is ``no network`` naming
    it), except for the hosts of ``NO_PROXY``."""
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    assert await unreachable(ModelApi(dead, "test", {"HTTP_PROXY": fake.base_url})) is None
    proxy = f"http://user:secret@127.0.0.1:{closed_port()}"
    why = await unreachable(ModelApi(fake.base_url, "test", {"http_proxy": proxy}))
    assert why is not None
    assert "connection refused through the proxy http://127.0.0.1:" in why
    assert "secret" not in why
    bypass = {"HTTP_PROXY": proxy, "NO_PROXY": "localhost,127.0.0.0/8"}
    assert await unreachable(ModelApi(fake.base_url, "test", bypass)) is None


@pytest.mark.anyio
async def test_a_proxy_that_refuses_the_tunnel_is_no_network(fake: FakeServer) -> None:
    """Issue 19 / 2: an HTTPS model API behind a proxy that refuses ``CONNECT`` (the fake
    server answers it ``501``) cannot be reached: ``no network``, naming the proxy."""
    api = ModelApi("https://api.example.invalid/v1", "test", {"HTTPS_PROXY": fake.base_url})
    why = await unreachable(api)
    assert why is not None
    assert f"the proxy {fake.base_url} refused it" in why


@pytest.mark.anyio
async def test_the_cause_needs_a_key_variable_first_then_names_the_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 19 / 2: a key variable the agent does not get is ``needs credentials``; an
    unreachable API is ``no network`` whose hint names the URL, where it comes from, and a
    proxy of this shell that the agent does not get."""
    spec = AgentSpec("cx", "codex", ("codex",))
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    keyless = await model_api_cause(spec, ModelApi(dead, "Codex's provider 'a'", {}, "A_KEY"))
    assert keyless is not None
    assert keyless.cause == "needs credentials"
    assert "A_KEY" in keyless.detail
    assert 'env = { A_KEY = "..." }' in keyless.hint
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    offline = await model_api_cause(spec, ModelApi(dead, "Codex's provider 'a'", {}))
    assert offline is not None
    assert offline.cause == "no network"
    assert offline.detail == f"{dead}: connection refused"
    assert f"cannot reach its model API {dead} (Codex's provider 'a')" in offline.hint
    assert "your HTTPS_PROXY is not passed to agents" in offline.hint
    assert await model_api_cause(spec, None) is None
