"""Background delegation on the shared tasks runtime (task_* tools)."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
import pytest

from subagents.harness import (
    TaskLimitError,
    TaskRuntime,
    ToolRegistry,
    ToolResult,
    ToolSpec,
    task_tools,
)
from subagents.protocol import JsonValue
from subagents.providers import CancelSignal

pytestmark = pytest.mark.anyio


class Gate:
    """A tool that waits for a gate (or its cancel signal), like a long subagent run."""

    def __init__(self) -> None:
        self.open = anyio.Event()
        self.entered = 0
        self.all_entered = anyio.Event()
        self.expected = 1
        self.cancelled: list[str | None] = []

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("slow", "waits", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        with cancel.linked_scope():
            self.entered += 1
            if self.entered == self.expected:
                self.all_entered.set()
            await self.open.wait()
            return ToolResult(f"done: {arguments.get('x')}")
        self.cancelled.append(cancel.reason)
        return ToolResult.error(f"cancelled: {cancel.reason}")


def setup() -> tuple[ToolRegistry, Gate]:
    registry = ToolRegistry()
    gate = Gate()
    registry.register(gate)
    return registry, gate


async def test_a_tool_call_runs_in_the_background_and_is_collected_later() -> None:
    """Seam note: "Background delegation uses the shared ctx.tasks runtime and generic task_*
    tools"."""
    registry, gate = setup()
    async with TaskRuntime(registry) as runtime:
        for tool in task_tools(runtime):
            registry.register(tool)
        signal = CancelSignal()
        started = await registry.get("task_start").execute(
            {"tool": "slow", "arguments": {"x": 1}}, cancel=signal
        )
        assert started.content == "started task-1"
        status = await registry.get("task_status").execute({"task_id": "task-1"}, cancel=signal)
        assert status.content == "task-1 is running"
        gate.open.set()
        with anyio.fail_after(5):
            result = await registry.get("task_result").execute({"task_id": "task-1"}, cancel=signal)
        assert (result.content, result.is_error) == ("done: 1", False)


async def test_task_cancel_fires_the_task_s_signal() -> None:
    """task_cancel reaches the running tool through its cancel signal."""
    registry, gate = setup()
    async with TaskRuntime(registry) as runtime:
        info = runtime.start("slow", {})
        with anyio.fail_after(5):
            await gate.all_entered.wait()
            runtime.cancel(info.task_id)
            done = await runtime.result(info.task_id)
    assert done.state == "cancelled"
    assert gate.cancelled == ["cancelled with task_cancel"]


async def test_running_tasks_are_bounded() -> None:
    """Tasks are bounded: a start beyond the limit is refused, not queued."""
    registry, gate = setup()
    async with TaskRuntime(registry, max_running=2) as runtime:
        runtime.start("slow", {})
        runtime.start("slow", {})
        with pytest.raises(TaskLimitError, match="2 tasks are running, the limit is 2"):
            runtime.start("slow", {})
        gate.open.set()


async def test_closing_the_runtime_cancels_and_awaits_every_task() -> None:
    """Tasks are cleaned up when their owner closes: nothing outlives the runtime."""
    registry, gate = setup()
    gate.expected = 2
    with anyio.fail_after(5):
        async with TaskRuntime(registry) as runtime:
            first = runtime.start("slow", {})
            second = runtime.start("slow", {})
            await gate.all_entered.wait()
    assert runtime.status(first.task_id).state == "cancelled"
    assert runtime.status(second.task_id).state == "cancelled"
    assert gate.cancelled == ["the task runtime is closing"] * 2


async def test_unknown_tasks_and_tools_are_error_results() -> None:
    """Bad input from the model is an error result, never an exception."""
    registry, _ = setup()
    async with TaskRuntime(registry) as runtime:
        tools = {tool.spec.name: tool for tool in task_tools(runtime)}
        signal = CancelSignal()
        missing = await tools["task_status"].execute({"task_id": "task-9"}, cancel=signal)
        assert (missing.content, missing.is_error) == ("no task 'task-9'", True)
        no_tool = await tools["task_start"].execute(
            {"tool": "nope", "arguments": {}}, cancel=signal
        )
        assert (no_tool.content, no_tool.is_error) == ("no tool named 'nope'", True)


async def test_a_task_that_ignores_its_signal_is_stopped_at_close_after_the_bound() -> None:
    """Never hang: closing is bounded even when a tool ignores cancellation."""

    class Stubborn:
        @property
        def spec(self) -> ToolSpec:
            return ToolSpec("stubborn", "ignores its signal", {"type": "object"})

        async def execute(
            self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
        ) -> ToolResult:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    registry = ToolRegistry()
    registry.register(Stubborn())
    with anyio.fail_after(5):
        async with TaskRuntime(registry, close_timeout=0.1) as runtime:
            info = runtime.start("stubborn", {})
            await anyio.wait_all_tasks_blocked()
    final = runtime.status(info.task_id)
    assert final.state == "cancelled"
    assert final.result is not None
    assert final.result.content == "cancelled: the task runtime closed"
