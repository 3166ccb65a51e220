"""The seam end to end: the real service, lifecycle, task runtime and model-facing tool, with
only the child boundary replaced by the package-local scripted provider."""

from __future__ import annotations

import anyio
import pytest

from subagents.harness import SubagentTool, TaskRuntime, ToolRegistry, task_tools
from subagents.providers import (
    CancelSignal,
    LifecycleEvent,
    SubagentEnded,
    SubagentRun,
    SubagentService,
    SubagentStarted,
)
from subagents.providers.scripted import Script, ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_background_delegation_runs_through_the_tasks_runtime_with_one_lifecycle_pair() -> (
    None
):
    """Seam note: "Background delegation uses the shared ctx.tasks runtime and generic task_*
    tools, the same collection mechanism as background bash; the subagent seam itself remains
    task-agnostic." Registry and tool tests "replace only the nondeterministic child boundary
    with a package-local scripted provider while exercising the real SubagentService,
    lifecycle, task integration, and model-facing tool"."""
    gate = anyio.Event()
    service = SubagentService()
    events: list[LifecycleEvent] = []
    published = anyio.Event()

    def record(event: LifecycleEvent) -> None:
        events.append(event)
        published.set()

    service.subscribe(record)
    scripts = {"research": Script(output="found 3 papers", turn_gate=gate)}
    async with ScriptedProvider(scripts, name="remote") as provider:
        service.register(provider)
        tools = ToolRegistry()
        tools.register(SubagentTool(service, "remote", name="delegate"))
        async with TaskRuntime(tools) as runtime:
            for tool in task_tools(runtime):
                tools.register(tool)
            signal = CancelSignal()
            started = await tools.get("task_start").execute(
                {"tool": "delegate", "arguments": {"description": "r", "prompt": "research"}},
                cancel=signal,
            )
            assert started.content == "started task-1"
            with anyio.fail_after(5):
                await published.wait()
                status = await tools.get("task_status").execute(
                    {"task_id": "task-1"}, cancel=signal
                )
                assert status.content == "task-1 is running"
                gate.set()
                result = await tools.get("task_result").execute(
                    {"task_id": "task-1"}, cancel=signal
                )
    assert (result.content, result.is_error) == ("found 3 papers", False)
    assert [type(e) for e in events] == [SubagentStarted, SubagentEnded]
    assert provider.live_runs == 0


def test_a_one_shot_run_has_no_steering_or_resume() -> None:
    """Seam note: "one-shot SubagentRun has no steering or resume operation"."""
    members = {name for name in dir(SubagentRun) if not name.startswith("_")}
    assert members == {"child_id", "result", "dispose", "progress"}
