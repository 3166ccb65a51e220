"""AcpProvider: any ACP agent command as a subagent, checked with the provider kit against
the reference agent (a real child process)."""

from __future__ import annotations

import sys

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    SubagentError,
    SubagentErrorCode,
    SubagentRequest,
    SubagentService,
)
from subagents.providers.acp import AcpProvider
from subagents.testing import (
    ProviderCheck,
    ProviderCheckSkipped,
    ProviderScenarios,
    provider_checks,
)

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


@pytest.mark.parametrize("check", provider_checks(), ids=lambda check: check.name)
async def test_the_acp_provider_passes_the_provider_kit(check: ProviderCheck) -> None:
    """Issue 5: "It passes check_provider against the reference agent"."""
    try:
        await check.run(reference, SCENARIOS)
    except ProviderCheckSkipped as skip:
        pytest.skip(str(skip))


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
