"""SubagentTool, the model-facing consumer of the seam; and the tool registry.

Each test's docstring quotes the rule of the seam design note it checks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType

import anyio
import pytest

from subagents.harness import SubagentTool, ToolError, ToolRegistry, ToolResult
from subagents.protocol import JsonValue
from subagents.providers import (
    CancelSignal,
    ProgressEvent,
    SubagentCapabilities,
    SubagentOutcome,
    SubagentRequest,
    SubagentRun,
    SubagentService,
)

pytestmark = pytest.mark.anyio


@dataclass
class Run:
    child_id: str
    outcome: SubagentOutcome | None
    cancel: CancelSignal
    result_error: Exception | None = None
    dispose_error: Exception | None = None
    log: list[str] = field(default_factory=list[str])
    hang: bool = False

    async def result(self) -> SubagentOutcome:
        self.log.append("result")
        if self.hang:
            await self.cancel.wait()
            return SubagentOutcome.cancelled(self.child_id, self.cancel.reason or "")
        if self.result_error is not None:
            raise self.result_error
        assert self.outcome is not None
        return self.outcome

    async def dispose(self) -> None:
        self.log.append("dispose")
        if self.dispose_error is not None:
            raise self.dispose_error

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        return None

    async def __aenter__(self) -> Run:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        await self.dispose()


@dataclass
class Provider:
    name: str
    make: Mapping[str, object] = field(default_factory=dict[str, object])
    capabilities: SubagentCapabilities = field(default_factory=SubagentCapabilities)
    requests: list[SubagentRequest] = field(default_factory=list[SubagentRequest])
    signals: list[CancelSignal] = field(default_factory=list[CancelSignal])
    runs: list[Run] = field(default_factory=list[Run])

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        self.requests.append(request)
        self.signals.append(cancel)
        child = f"{self.name}-child"
        run = Run(
            child, SubagentOutcome.completed(child, f"{self.name} did: {request.prompt}"), cancel
        )
        for key, value in self.make.items():
            setattr(run, key, value)
        self.runs.append(run)
        return run


def make(*providers: Provider) -> SubagentService:
    service = SubagentService()
    for provider in providers:
        service.register(provider)
    return service


ARGS: dict[str, JsonValue] = {"description": "sum numbers", "prompt": "add 2 and 2"}


def test_the_model_sees_only_description_and_prompt() -> None:
    """Seam note: "the model sees only { description, prompt }" (no provider parameter)."""
    tool = SubagentTool(make(Provider("acp")), "acp")
    schema = tool.spec.input_schema
    assert schema["required"] == ["description", "prompt"]
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert sorted(properties) == ["description", "prompt"]
    assert schema["additionalProperties"] is False


async def test_the_tool_is_bound_to_exactly_one_provider() -> None:
    """Seam note: "dsh-tool-subagent binds to exactly one provider name"."""
    spawn, acp = Provider("spawn"), Provider("acp")
    tool = SubagentTool(make(spawn, acp), "acp")
    result = await tool.execute(ARGS, cancel=CancelSignal())
    assert result.content == "acp did: add 2 and 2"
    assert not result.is_error
    assert (len(spawn.requests), len(acp.requests)) == (0, 1)
    assert acp.requests[0].description == "sum numbers"


async def test_two_transports_are_two_tools_under_distinct_names() -> None:
    """Seam note: "To expose more than one transport, load the tool plugin more than once,
    each bound to a different provider and a distinct toolName (the tool registry rejects a
    duplicate name)"."""
    service = make(Provider("spawn"), Provider("acp"))
    registry = ToolRegistry()
    registry.register(SubagentTool(service, "spawn", name="delegate_local"))
    registry.register(SubagentTool(service, "acp", name="delegate_remote"))
    with pytest.raises(ToolError, match="'delegate_remote' is already registered"):
        registry.register(SubagentTool(service, "spawn", name="delegate_remote"))
    assert registry.names == ("delegate_local", "delegate_remote")
    local = await registry.get("delegate_local").execute(ARGS, cancel=CancelSignal())
    remote = await registry.get("delegate_remote").execute(ARGS, cancel=CancelSignal())
    assert (local.content, remote.content) == ("spawn did: add 2 and 2", "acp did: add 2 and 2")


async def test_the_execution_signal_is_passed_to_start() -> None:
    """Seam note: "dsh-tool-subagent passes its execution signal to start()"."""
    provider = Provider("acp", {"hang": True})
    tool = SubagentTool(make(provider), "acp")
    signal = CancelSignal()
    results: list[ToolResult] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                results.append(await tool.execute(ARGS, cancel=signal))

            tg.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            signal.cancel("parent turn cancelled")
    assert provider.signals == [signal]
    assert results[0].is_error
    assert "cancelled: parent turn cancelled" in results[0].content


async def test_the_run_is_disposed_before_the_tool_reports() -> None:
    """Seam note: "awaits the child result, and disposes the run before reporting"."""
    provider = Provider("acp")
    tool = SubagentTool(make(provider), "acp")
    await tool.execute(ARGS, cancel=CancelSignal())
    assert provider.runs[0].log == ["result", "dispose"]


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (
            SubagentOutcome.cancelled("c", "stopped by user"),
            "subagent c cancelled: stopped by user",
        ),
        (
            SubagentOutcome.failed("c", "turn", "model refused"),
            "subagent c failed (turn): model refused",
        ),
        (
            SubagentOutcome.failed("c", "infrastructure", "agent exited with status 3"),
            "subagent c failed (infrastructure): agent exited with status 3",
        ),
    ],
)
async def test_non_completed_outcomes_become_error_results(
    outcome: SubagentOutcome, expected: str
) -> None:
    """Seam note: "Non-completed outcomes become error results rather than successful partial
    output"."""
    tool = SubagentTool(make(Provider("acp", {"outcome": outcome})), "acp")
    result = await tool.execute(ARGS, cancel=CancelSignal())
    assert result.is_error
    assert isinstance(result.data, dict)
    child_id = result.data["childId"]
    assert isinstance(child_id, str)
    assert child_id.startswith("acp:")  # minted by the service, not the provider's "c"
    assert result.content == expected.replace("subagent c ", f"subagent {child_id} ")


async def test_a_non_completed_outcome_shows_the_partial_output() -> None:
    """Issue 15, point 7: "the subagent tool's error result shows" the text the child
    streamed before it ended; the result stays an error."""
    outcome = SubagentOutcome.cancelled("c", "stopped by user", partial="half a plan")
    tool = SubagentTool(make(Provider("acp", {"outcome": outcome})), "acp")
    result = await tool.execute(ARGS, cancel=CancelSignal())
    assert result.is_error
    assert result.content.endswith("stopped by user\n\nWhat it wrote before it ended:\nhalf a plan")


async def test_a_failed_start_is_an_error_result_naming_the_cause() -> None:
    """A start rejected before publication reaches the model as an error, not a crash."""
    tool = SubagentTool(make(Provider("acp")), "codex")
    result = await tool.execute(ARGS, cancel=CancelSignal())
    assert result.is_error
    assert result.content.startswith("subagent could not start: no subagent provider named")
    assert result.data == "UNKNOWN_PROVIDER"


async def test_when_result_and_disposal_both_fail_both_diagnostics_survive() -> None:
    """Seam note: "independent result and disposal rejections retain both diagnostics"."""
    provider = Provider(
        "acp",
        {"dispose_error": OSError("kill failed")},
    )
    service = make(provider)
    tool = SubagentTool(service, "acp")
    provider.make = {
        "dispose_error": OSError("kill failed"),
        "outcome": SubagentOutcome.failed("acp-child", "turn", "bad turn"),
    }
    result = await tool.execute(ARGS, cancel=CancelSignal())
    assert result.is_error
    assert "bad turn" in result.content
    assert "disposal also failed: OSError: kill failed" in result.content


async def test_a_completed_run_whose_disposal_fails_is_not_reported_as_success() -> None:
    """Never partial success: a leak during disposal is an error the model sees."""
    tool = SubagentTool(make(Provider("acp", {"dispose_error": OSError("zombie left")})), "acp")
    result = await tool.execute(ARGS, cancel=CancelSignal())
    assert result.is_error
    assert "completed but its disposal failed: OSError: zombie left" in result.content


@pytest.mark.parametrize(
    "arguments",
    [{"prompt": "x"}, {"description": "d", "prompt": 3}, {**ARGS, "provider": "codex"}],
)
async def test_invalid_arguments_are_an_error_result(arguments: dict[str, JsonValue]) -> None:
    """The schema is enforced: the model cannot pick a provider or omit a field."""
    provider = Provider("acp")
    tool = SubagentTool(make(provider), "acp")
    result = await tool.execute(arguments, cancel=CancelSignal())
    assert result.is_error
    assert result.content.startswith("invalid arguments")
    assert provider.requests == []
