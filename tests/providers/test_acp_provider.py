"""AcpProvider: any ACP agent command as a subagent, checked with the provider kit against
the reference agent (a real child process)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    ContinuableProvider,
    ContinuationManager,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    SubagentService,
)
from subagents.providers import acp as acp_provider_module
from subagents.providers.acp import AcpProvider
from subagents.providers.progress import ProgressFeed
from subagents.testing import (
    ProviderCheck,
    ProviderCheckSkipped,
    ProviderScenarios,
    provider_checks,
)
from subagents.transports.acp_client import ClientSession

pytestmark = pytest.mark.anyio

REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]

SCENARIOS = ProviderScenarios(
    good=SubagentRequest("echo hello"),
    good_output="echo hello",
    slow=SubagentRequest("slow"),
    failing=SubagentRequest("crash"),
    failing_kind="infrastructure",
    timeout=20.0,
    quiescence_grace=2.0,
)


def reference() -> AcpProvider:
    return AcpProvider(REFERENCE, name="acp")


SILENT = [sys.executable, "-c", "import time; time.sleep(60)"]
"""An agent that never answers initialize: a start that can be caught midway."""

STUBBORN = [sys.executable, str(Path(__file__).parents[1] / "commands" / "stubborn_agent.py")]
"""An agent that ignores session/cancel and its stdin's end (only a signal stops it)."""


@asynccontextmanager
async def faulty_reference() -> AsyncGenerator[AcpProvider, None]:
    """The reference agent, with a fault injected into the provider's own turn mapping: the
    prompt ``echo fault`` makes it raise a plain RuntimeError mid-turn (a mapping bug)."""
    real = acp_provider_module.run_turn

    async def run_turn(
        session: ClientSession,
        child_id: str,
        prompt: str,
        cancel: CancelSignal,
        feed: ProgressFeed | None = None,
    ) -> SubagentOutcome:
        if prompt == "echo fault":
            raise RuntimeError("a bug in the event mapping")
        return await real(session, child_id, prompt, cancel, feed)

    acp_provider_module.run_turn = run_turn
    try:
        async with reference() as provider:
            yield provider
    finally:
        acp_provider_module.run_turn = real


OTHER_PROVIDER: dict[
    str, tuple[Callable[[], AbstractAsyncContextManager[AcpProvider]], ProviderScenarios]
] = {
    "an_unexpected_fault_inside_one_run_fails_only_that_run": (
        faulty_reference,
        replace(SCENARIOS, crashing=SubagentRequest("echo fault")),
    ),
    "dispose_never_returns_silently_with_the_child_running": (
        lambda: AcpProvider(STUBBORN, name="acp", dispose_timeout=1.0),
        replace(SCENARIOS, stubborn=SubagentRequest("hi")),
    ),
    # The kit's scenarios are requests; an ACP start fails or hangs because of the command,
    # so these two rules run with a provider whose command does that.
    "failure_before_publication_raises_and_leaves_nothing": (
        lambda: AcpProvider(["/no/such/agent"], name="acp"),
        replace(SCENARIOS, failing_start=SubagentRequest("hi")),
    ),
    "a_signal_fired_during_start_cancels_the_start": (
        lambda: AcpProvider(SILENT, name="acp"),
        replace(SCENARIOS, slow_start=SubagentRequest("hi")),
    ),
}

NOT_APPLICABLE = {
    "a_failing_result_and_a_failing_disposal_both_surface": (
        "an ACP run cannot be made to fail both result() and dispose(); the rule is checked "
        "with the scripted provider (tests/providers/test_scripted.py) and at the tool "
        "(tests/harness/test_subagent_tool.py)"
    ),
}

APPLICABLE = [c for c in provider_checks() if c.name not in NOT_APPLICABLE]


@pytest.mark.parametrize("check", APPLICABLE, ids=lambda check: check.name)
async def test_the_acp_provider_passes_the_provider_kit(check: ProviderCheck) -> None:
    """Issue 5: "It passes check_provider against the reference agent" (and, for the two
    rules about failed or interrupted starts, against a command that fails or hangs)."""
    factory, scenarios = OTHER_PROVIDER.get(check.name, (reference, SCENARIOS))
    try:
        await check.run(factory, scenarios)
    except ProviderCheckSkipped as skip:
        pytest.fail(f"every applicable check must run for the ACP provider: {skip}")


def test_only_the_documented_check_is_left_out() -> None:
    """No rule of the kit is silently dropped for this provider."""
    names = {c.name for c in provider_checks()}
    assert set(NOT_APPLICABLE) <= names
    assert set(OTHER_PROVIDER) <= names
    assert len(APPLICABLE) == len(names) - len(NOT_APPLICABLE)


async def test_a_command_that_cannot_start_fails_before_publication() -> None:
    """Start = spawn + initialize + session/new; a failure there is START_FAILED, nothing
    published, nothing left behind."""
    async with AcpProvider(["/no/such/agent"], name="broken") as provider:
        with anyio.fail_after(10), pytest.raises(SubagentError) as info:
            await provider.start(SubagentRequest("hi"), cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert "cannot start '/no/such/agent'" in info.value.message


@pytest.mark.parametrize("feature", ["output_schema", "depth_limit", "tool_filter", "persona"])
async def test_features_it_cannot_enforce_are_advertised_off_and_rejected(feature: str) -> None:
    """Seam note: "ACP advertises both capabilities off and rejects such a request" (depth
    limit and tool filter; persona and output schema are not applied either)."""
    values: dict[str, object] = {
        "output_schema": {"type": "object"},
        "depth_limit": 1,
        "tool_filter": ["read"],
        "persona": "terse",
    }
    service = SubagentService()
    async with AcpProvider(REFERENCE) as provider:
        service.register(provider)
        with pytest.raises(SubagentError) as info:
            await service.start("acp", SubagentRequest("hi", **{feature: values[feature]}))  # type: ignore[arg-type]
    assert info.value.code is SubagentErrorCode.UNSUPPORTED_CAPABILITY
    assert info.value.feature == feature


async def test_a_continuable_acp_child_hears_later_messages_and_resumes_cold(
    tmp_path: Path,
) -> None:
    """Issue 5: "Continuable through session/load or session/resume when the agent
    advertises them"; seam note: "The continuation manager owns later delivery and cold
    resume"."""
    sessions = tmp_path / "sessions"
    service = SubagentService()
    env = {"SUBAGENTS_REFERENCE_SESSION_DIR": str(sessions)}
    async with AcpProvider(REFERENCE, env=env, cwd=tmp_path) as provider:
        assert isinstance(provider, ContinuableProvider)
        service.register(provider)
        with anyio.fail_after(30):
            async with ContinuationManager(service) as children:
                child = await children.start("acp", SubagentRequest("echo first"))
                second = await children.deliver(child.child_id, "echo second")
                await children.release(child.child_id)  # the agent process exits
                third = await children.deliver(
                    child.child_id, "echo third"
                )  # a new process loads it
                child_id = child.child_id
                session_id = children.known()[child_id].remote_id
    assert second.output == "echo second"
    assert third.output == "echo third"
    assert child_id.startswith("acp:")
    assert session_id != child_id.removeprefix("acp:")  # the minted id is not the session's
    saved = json.loads((sessions / f"{session_id}.json").read_text())
    assert [text for role, text in saved["history"] if role == "user"] == [
        "echo first",
        "echo second",
        "echo third",
    ]


async def test_resuming_an_unknown_child_fails_clearly(tmp_path: Path) -> None:
    """Cold resume of a session the agent does not know is a start failure naming the cause."""
    async with AcpProvider(REFERENCE, cwd=tmp_path) as provider:
        with anyio.fail_after(20), pytest.raises(SubagentError) as info:
            await provider.resume_continuable("acp:0123abcd", cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert "Resource not found" in info.value.message
