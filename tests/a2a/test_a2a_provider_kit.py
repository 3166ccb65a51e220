"""A2AProvider passes the provider kit against the official ``a2a-sdk`` server (a subprocess
around a scripted executor), on asyncio and trio."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace

import pytest

from subagents.protocol.jsonrpc import JsonValue
from subagents.providers import CancelSignal, SubagentRequest
from subagents.providers.a2a import A2AProvider
from subagents.providers.output_schema import output_instructions
from subagents.testing import (
    ProviderCheck,
    ProviderCheckSkipped,
    ProviderScenarios,
    provider_checks,
)
from tests._ports import closed_port, silent_server
from tests.a2a._a2a_server import A2AServer, a2a_server

pytestmark = pytest.mark.anyio

SCENARIOS = ProviderScenarios(
    good=SubagentRequest("echo hello world"),
    good_output="echo hello world",
    slow=SubagentRequest("slow"),
    failing=SubagentRequest("fail"),
    failing_kind="turn",
    timeout=20.0,
    quiescence_grace=3.0,
)

NOT_APPLICABLE = {
    "a_failing_result_and_a_failing_disposal_both_surface": (
        "an A2A run's disposal closes an HTTP client: nothing of it can be made to fail"
    ),
    "an_unexpected_fault_inside_one_run_fails_only_that_run": (
        "checked with a fault injected into the provider's event mapping, "
        "tests/a2a/test_a2a_provider.py"
    ),
    "dispose_never_returns_silently_with_the_child_running": (
        "the agent runs on the server's side: disposing a run sends tasks/cancel and closes "
        "its connection, both bounded"
    ),
}
APPLICABLE = [c for c in provider_checks() if c.name not in NOT_APPLICABLE]


@asynccontextmanager
async def warmed(url: str) -> AsyncIterator[A2AProvider]:
    """An open provider that has run one request before the kit takes its baseline: the HTTP
    client, the agent card and the one idle connection it keeps for all its runs are the
    provider's (closed when it exits: tests/a2a/test_a2a_provider.py checks that), not what a
    run leaves behind, which is what the kit's quiescence rules are about."""
    async with A2AProvider(url, name="a2a") as provider:
        run = await provider.start(SubagentRequest("echo warm"), cancel=CancelSignal())
        await run.result()
        await run.dispose()
        yield provider


@pytest.fixture(scope="module")
def server() -> Iterator[A2AServer]:
    """One server (a process) for the module's checks, on both backends (each check opens a
    provider of its own): starting one per check cost ~0.3 s of CPU each."""
    with a2a_server() as running:
        yield running


@pytest.mark.parametrize("check", APPLICABLE, ids=lambda check: check.name)
async def test_the_a2a_provider_passes_the_provider_kit(
    check: ProviderCheck, server: A2AServer
) -> None:
    """Issue 21 point 4: "check_provider passes for A2AProvider on asyncio and trio" (the
    rules about a failed or interrupted start: a refused port, a server that never answers
    the card request)."""
    async with silent_server() as silent_port:
        factories = {
            "failure_before_publication_raises_and_leaves_nothing": (
                lambda: A2AProvider(f"http://127.0.0.1:{closed_port()}", name="a2a"),
                replace(SCENARIOS, failing_start=SubagentRequest("hi")),
            ),
            "a_signal_fired_during_start_cancels_the_start": (
                lambda: A2AProvider(f"http://127.0.0.1:{silent_port}", name="a2a"),
                replace(SCENARIOS, slow_start=SubagentRequest("hi")),
            ),
        }
        factory, scenarios = factories.get(check.name, (lambda: warmed(server.url), SCENARIOS))
        try:
            await check.run(factory, scenarios)
        except ProviderCheckSkipped as skip:
            pytest.fail(f"every applicable check must run: {skip}")


SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}
STRUCTURED = replace(
    SCENARIOS,
    good=SubagentRequest("data", output_schema=SCHEMA),
    good_output={
        "answer": 42,
        "schema": SCHEMA,
        "prompt": f"data\n\n{output_instructions(SCHEMA)}",
    },
)
"""The good request asks for an output schema (the scripted agent answers a data part)."""
ASKING_FOR_A_SCHEMA = [
    c
    for c in APPLICABLE
    if c.name
    in {
        "start_publishes_a_child_that_completes",
        "result_settles_once_and_repeats_the_same_outcome",
        "text_events_add_up_to_the_output_and_tool_results_pair_with_calls",
        "each_unadvertised_capability_is_rejected_before_a_run_exists",
        "each_published_run_emits_the_lifecycle_pair_exactly_once",
    }
]


@pytest.mark.parametrize("check", ASKING_FOR_A_SCHEMA, ids=lambda check: check.name)
async def test_the_a2a_provider_passes_the_kit_with_an_output_schema(
    check: ProviderCheck, server: A2AServer
) -> None:
    """Issue 21 point 1 and point 4: with output_schema advertised, the kit's checks of the
    good request pass when it asks for a schema (its output: the agent's data part)."""
    try:
        await check.run(lambda: warmed(server.url), STRUCTURED)
    except ProviderCheckSkipped as skip:
        pytest.fail(f"every applicable check must run: {skip}")
