"""Background tasks: a bounded runtime and the generic ``task_*`` tools.

Foreground delegation holds the parent's step open for the child's whole run; background
delegation starts the same tool call as a task and collects it later. The runtime is generic
(any tool can run in the background: a subagent, a shell command), so the subagent seam itself
stays task-agnostic.

- ``task_start {tool, arguments}`` starts a registered tool in the background, returns its id;
- ``task_status {task_id}`` says whether it runs, completed, failed or was cancelled;
- ``task_result {task_id, wait}`` returns its result (waiting for it when ``wait`` is true);
- ``task_cancel {task_id}`` fires its cancel signal.

Arguments are checked against the schemas before anything starts: ``task_*`` calls against
their own, and the call to run against its tool's (a start that does not match is refused
with an error naming what is wrong; see :mod:`~subagents.harness.arguments`).

At most ``max_running`` tasks run at once (a start beyond that is refused, not queued), and
every task is cancelled and awaited when the runtime's owner closes it: its signal fires, and
a task still running after ``close_timeout`` is cancelled outright. What a task's tool raises
(any exception, also a ``BaseException`` such as ``KeyboardInterrupt`` or ``SystemExit``, or a
stray ``CancelledError`` no cancel scope of ours raised) fails that task only, naming it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Literal, TypeAlias, final

import anyio

from .._cancellation import passes_through
from .._exception_groups import first_leaf
from .._owned import OwnedTaskGroup
from ..cancel import CancelSignal
from ..protocol.jsonrpc import JsonValue
from .arguments import argument_problems
from .tools import ToolError, ToolRegistry, ToolResult, ToolSpec

__all__ = ("TaskInfo", "TaskLimitError", "TaskRuntime", "TaskState", "task_tools")

TaskState: TypeAlias = Literal["running", "completed", "failed", "cancelled"]


class TaskLimitError(Exception):
    """Too many tasks are running; the start was refused."""


@final
@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A snapshot of one task."""

    task_id: str
    tool: str
    description: str
    state: TaskState
    started_at: float
    ended_at: float | None = None
    result: ToolResult | None = None


@final
class _Task:
    def __init__(self, task_id: str, tool: str, description: str) -> None:
        self.task_id = task_id
        self.tool = tool
        self.description = description
        self.signal = CancelSignal()
        self.done = anyio.Event()
        self.state: TaskState = "running"
        self.result: ToolResult | None = None
        self.started_at = time.time()
        self.ended_at: float | None = None

    def info(self) -> TaskInfo:
        return TaskInfo(
            self.task_id,
            self.tool,
            self.description,
            self.state,
            self.started_at,
            self.ended_at,
            self.result,
        )


@final
class TaskRuntime:
    """Runs tool calls in the background; use it as ``async with TaskRuntime(...) as tasks``."""

    def __init__(
        self, registry: ToolRegistry, *, max_running: int = 8, close_timeout: float = 10.0
    ) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self._registry = registry
        self._max_running = max_running
        self._close_timeout = close_timeout
        self._tasks: dict[str, _Task] = {}
        self._ids = itertools.count(1)
        self._owned = OwnedTaskGroup("a TaskRuntime")
        self._closed = False

    @property
    def running(self) -> int:
        return sum(1 for task in self._tasks.values() if task.state == "running")

    async def __aenter__(self) -> TaskRuntime:
        await self._owned.open(closed=self._closed)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        self._closed = True
        for task in self._tasks.values():
            task.signal.cancel("the task runtime is closing")
        group = self._owned.group
        assert group is not None
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._close_timeout):
            for task in list(self._tasks.values()):
                await task.done.wait()
        group.cancel_scope.cancel()  # past the bound: whatever still runs is cancelled hard
        return await self._owned.close(exc_type, exc, traceback)

    def start(
        self, tool: str, arguments: Mapping[str, JsonValue], *, description: str = ""
    ) -> TaskInfo:
        """Start ``tool`` with ``arguments`` in the background; returns at once.

        Raises :class:`ToolError` (nothing starts) for an unknown tool, or arguments that do
        not match the tool's input schema (the error names what is wrong)."""
        group = self._owned.group
        if group is None or self._closed:
            raise RuntimeError("the task runtime is not running")
        if self.running >= self._max_running:
            raise TaskLimitError(
                f"{self.running} tasks are running, the limit is {self._max_running}"
            )
        target = self._registry.get(tool)
        problem = argument_problems(target.spec, arguments)
        if problem is not None:
            raise ToolError(problem)
        task = _Task(f"task-{next(self._ids)}", tool, description)
        self._tasks[task.task_id] = task

        async def run() -> None:
            try:
                # Cancellation is cooperative: the tool gets the signal and winds down (a
                # subagent tool passes it to start(), so the child is cancelled properly).
                # Only closing the runtime cancels a task that ignores it, after the bound.
                result = await target.execute(dict(arguments), cancel=task.signal)
                task.result = result
                if task.signal.cancelled and result.is_error:
                    task.state = "cancelled"
                else:
                    task.state = "failed" if result.is_error else "completed"
            except BaseException as exc:
                if passes_through(exc):
                    task.state = "cancelled"
                    task.result = ToolResult.error("cancelled: the task runtime closed")
                    raise
                # The tool's own exception, whatever it is (a BaseException subclass, a stray
                # cancel, KeyboardInterrupt or SystemExit raised by its code): this task's
                # failure, never its siblings' or the runtime's.
                task.state = "failed"
                cause = first_leaf(exc)
                task.result = ToolResult.error(f"{type(cause).__name__}: {cause}")
            finally:
                task.ended_at = time.time()
                task.done.set()

        group.start_soon(run, name=f"subagents task {task.task_id}")
        return task.info()

    def _task(self, task_id: str) -> _Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise ToolError(f"no task {task_id!r}") from None

    def status(self, task_id: str) -> TaskInfo:
        return self._task(task_id).info()

    async def result(self, task_id: str, *, wait: bool = True) -> TaskInfo:
        """The task's snapshot; with ``wait``, once it has ended."""
        task = self._task(task_id)
        if wait:
            await task.done.wait()
        return task.info()

    def cancel(self, task_id: str) -> TaskInfo:
        task = self._task(task_id)
        task.signal.cancel("cancelled with task_cancel")
        return task.info()

    def list(self) -> tuple[TaskInfo, ...]:
        return tuple(task.info() for task in self._tasks.values())


_ID_SCHEMA: Final[Mapping[str, JsonValue]] = {
    "type": "object",
    "properties": {"task_id": {"type": "string"}},
    "required": ["task_id"],
    "additionalProperties": False,
}


# Module constants, so every agent's task tools share one validator per schema.
_START_SCHEMA: Final[Mapping[str, JsonValue]] = {
    "type": "object",
    "properties": {
        "tool": {"type": "string", "description": "The tool to run in the background."},
        "arguments": {"type": "object", "description": "Its arguments."},
        "description": {"type": "string"},
    },
    "required": ["tool", "arguments"],
    "additionalProperties": False,
}

_RESULT_SCHEMA: Final[Mapping[str, JsonValue]] = {
    "type": "object",
    "properties": {"task_id": {"type": "string"}, "wait": {"type": "boolean"}},
    "required": ["task_id"],
    "additionalProperties": False,
}


def _summary(info: TaskInfo) -> JsonValue:
    return {
        "task_id": info.task_id,
        "tool": info.tool,
        "description": info.description,
        "state": info.state,
    }


@final
class _TaskTool:
    def __init__(self, runtime: TaskRuntime, spec: ToolSpec, verb: str) -> None:
        self._runtime = runtime
        self._spec = spec
        self._verb = verb

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        problem = argument_problems(self._spec, arguments)
        if problem is not None:  # also when called directly, not through the agent loop
            return ToolResult.error(problem)
        try:
            if self._verb == "start":
                tool = arguments.get("tool")
                tool_arguments = arguments.get("arguments")
                description = arguments.get("description", "")
                if not isinstance(tool, str) or not isinstance(tool_arguments, dict):
                    return ToolResult.error("invalid arguments: expected {tool, arguments}")
                info = self._runtime.start(
                    tool,
                    tool_arguments,
                    description=description if isinstance(description, str) else "",
                )
                return ToolResult(f"started {info.task_id}", data=_summary(info))
            task_id = arguments.get("task_id")
            if not isinstance(task_id, str):
                return ToolResult.error("invalid arguments: expected {task_id}")
            if self._verb == "status":
                info = self._runtime.status(task_id)
                return ToolResult(f"{task_id} is {info.state}", data=_summary(info))
            if self._verb == "cancel":
                info = self._runtime.cancel(task_id)
                return ToolResult(f"cancelling {task_id}", data=_summary(info))
            wait = arguments.get("wait", True) is not False
            with cancel.linked_scope():
                info = await self._runtime.result(task_id, wait=wait)
            if info.result is None:
                return ToolResult(f"{task_id} is {info.state}", data=_summary(info))
            return ToolResult(info.result.content, info.result.is_error, _summary(info))
        except (ToolError, TaskLimitError, RuntimeError) as exc:
            return ToolResult.error(str(exc))


def task_tools(runtime: TaskRuntime) -> tuple[_TaskTool, ...]:
    """The four ``task_*`` tools over ``runtime``, to register in a :class:`ToolRegistry`."""
    return (
        _TaskTool(
            runtime,
            ToolSpec("task_start", "Start a tool call in the background.", _START_SCHEMA),
            "start",
        ),
        _TaskTool(
            runtime,
            ToolSpec("task_status", "The state of a background task.", _ID_SCHEMA),
            "status",
        ),
        _TaskTool(
            runtime,
            ToolSpec("task_result", "The result of a background task.", _RESULT_SCHEMA),
            "result",
        ),
        _TaskTool(
            runtime, ToolSpec("task_cancel", "Cancel a background task.", _ID_SCHEMA), "cancel"
        ),
    )
