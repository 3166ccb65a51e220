"""build_provider: registry entries become working providers; permissions follow the entry."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from subagents.config import AgentSpec, ConfigError, builtin_agents, parse_agents
from subagents.protocol.jsonrpc import JsonValue
from subagents.providers import CancelSignal, SubagentRequest
from subagents.providers.codex import CodexProvider
from subagents.providers.factory import (
    BuildContext,
    PermissionQuestion,
    UnknownProviderKind,
    build_provider,
)

pytestmark = pytest.mark.anyio

REFERENCE = builtin_agents()["reference"]
SPAWN = builtin_agents()["spawn"]


async def run_once(spec: AgentSpec, prompt: str, context: BuildContext | None = None) -> JsonValue:
    with anyio.fail_after(30):
        async with build_provider(spec, context) as provider:  # pyright: ignore[reportGeneralTypeIssues]
            assert provider.name == spec.name
            run = await provider.start(SubagentRequest(prompt), cancel=CancelSignal())
            async with run:
                outcome = await run.result()
    assert outcome.status == "completed", outcome.message
    return outcome.output


async def test_the_reference_entry_runs_through_acp() -> None:
    assert await run_once(REFERENCE, "stream 3") == "1 2 3 "


async def test_the_spawn_entry_runs_in_process() -> None:
    assert await run_once(SPAWN, "hello") == "You said: hello"


async def test_a_spawned_child_built_from_an_entry_can_delegate_further() -> None:
    """The entry's runtime offers its own provider as the agents' subagent tool."""
    assert await run_once(SPAWN, "delegate delegate hello") == (
        "subagent said: subagent said: You said: hello"
    )


async def test_permission_allow_lets_the_tool_run() -> None:
    assert await run_once(replace(REFERENCE, permission="allow"), "tool") == "The tool ran."


async def test_permission_deny_rejects_the_tool() -> None:
    output = await run_once(replace(REFERENCE, permission="deny"), "tool")
    assert isinstance(output, str)
    assert output.startswith("Permission denied")


@pytest.mark.parametrize(("answer", "expected"), [(True, "The tool ran."), (False, "Permission")])
async def test_permission_ask_uses_the_askers_answer(answer: bool, expected: str) -> None:
    questions: list[PermissionQuestion] = []

    async def ask(question: PermissionQuestion) -> bool:
        questions.append(question)
        return answer

    spec = replace(REFERENCE, name="asked-agent", permission="ask")
    output = await run_once(spec, "tool", BuildContext(ask=ask))
    assert isinstance(output, str)
    assert output.startswith(expected)
    assert len(questions) == 1
    assert questions[0].agent == "asked-agent"
    # The reference agent's request names the tool call by id only; the client fills in the
    # title from the earlier tool_call update, so the question names the tool.
    assert questions[0].tool == "Run the reference tool"
    assert questions[0].detail == "{'command': 'reference-tool'}"


async def test_permission_ask_without_an_asker_denies() -> None:
    output = await run_once(replace(REFERENCE, permission="ask"), "tool", BuildContext())
    assert isinstance(output, str)
    assert output.startswith("Permission denied")


def test_an_unknown_provider_kind_lists_the_known_kinds() -> None:
    spec = AgentSpec("odd", "no-such-kind")
    with pytest.raises(UnknownProviderKind) as caught:
        build_provider(spec)
    message = str(caught.value)
    assert "'no-such-kind'" in message
    for kind in ("acp", "codex", "claude-code", "spawn", "fork"):
        assert kind in message
    assert "subagents.providers" in message


def test_a_bad_spawn_adapter_is_a_config_error() -> None:
    spec = replace(SPAWN, name="bad-spawn", options={"adapter": "no-such-adapter"})
    with pytest.raises(ConfigError, match="bad-spawn"):
        build_provider(spec)


def test_claude_code_without_a_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="needs a model"):
        build_provider(AgentSpec("c", "claude-code", ("claude",)))


CODEX_ENTRY = """
[agents.slow-codex]
provider = "codex"
command = ["codex", "app-server", "--listen", "stdio://"]
startup_timeout = 20
turn_deadline = 120.5
"""


def test_a_codex_entry_s_turn_deadline_reaches_the_provider() -> None:
    """Issue 6 (turn deadline from the registry): a codex entry with ``turn_deadline`` builds
    a CodexProvider whose turn deadline is that many seconds; without it there is none."""
    spec = parse_agents(CODEX_ENTRY, "codex.toml")["slow-codex"]
    provider = build_provider(spec)
    assert isinstance(provider, CodexProvider)
    assert provider.turn_deadline == 120.5
    assert provider.startup_timeout == 20.0
    plain = build_provider(replace(spec, turn_deadline=None))
    assert isinstance(plain, CodexProvider)
    assert plain.turn_deadline is None


@pytest.mark.parametrize("deadline", ["0", "-1.5"])
def test_a_non_positive_codex_turn_deadline_is_a_config_error(deadline: str) -> None:
    """Issue 6 (turn deadline from the registry): zero or negative seconds are refused with a
    ConfigError naming the file, the entry and the field, whether read from a file or set on
    a spec handed to build_provider."""
    text = CODEX_ENTRY.replace("turn_deadline = 120.5", f"turn_deadline = {deadline}")
    with pytest.raises(ConfigError, match=r"^codex\.toml: agents\.slow-codex\.turn_deadline"):
        parse_agents(text, "codex.toml")
    spec = AgentSpec("direct", "codex", ("codex",), turn_deadline=float(deadline))
    with pytest.raises(ConfigError, match="direct: turn_deadline must be seconds > 0"):
        build_provider(spec)
