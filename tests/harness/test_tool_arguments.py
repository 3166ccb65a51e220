"""Issue 19, point 6: tool arguments are validated against the tool's schema before it runs.

A call whose arguments do not match the tool's declared JSON schema is answered with an error
result naming what is wrong (a missing required field, a wrong type and where, an unknown
field), the tool does not run (no child starts), and the turn goes on so the model can correct
itself. Driven by the scripted model through the real agent loop, task runtime and subagent
tool, with only the child boundary replaced by the package-local scripted provider."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import pytest

from subagents.harness import SubagentTool, TaskRuntime, ToolRegistry, ToolResult, ToolSpec
from subagents.harness import arguments as arguments_module
from subagents.harness.arguments import argument_problems
from subagents.harness.llm import ModelResponse, ScriptedAdapter, ToolCall
from subagents.harness.loop import AgentLoop, TurnOutcome
from subagents.harness.session import Session
from subagents.harness.tasks import task_tools
from subagents.protocol import JsonValue
from subagents.providers import CancelSignal, LifecycleEvent, SubagentService
from subagents.providers.scripted import ScriptedProvider

BOUND = 10.0


@dataclass
class World:
    provider: ScriptedProvider
    runtime: TaskRuntime
    tools: ToolRegistry
    events: list[LifecycleEvent] = field(default_factory=list[LifecycleEvent])


@asynccontextmanager
async def world() -> AsyncIterator[World]:
    """A registry with a subagent tool (``delegate``) and the ``task_*`` tools over it."""
    service = SubagentService()
    async with ScriptedProvider(name="remote") as provider:
        service.register(provider)
        tools = ToolRegistry()
        tools.register(SubagentTool(service, "remote", name="delegate"))
        async with TaskRuntime(tools) as runtime:
            for tool in task_tools(runtime):
                tools.register(tool)
            found = World(provider, runtime, tools)
            service.subscribe(found.events.append)
            yield found


def tool_results(session: Session) -> list[tuple[str, bool]]:
    return [(e.text, e.is_error) for e in session.events if e.kind == "tool_result"]


async def run_calls(
    tools: ToolRegistry, *steps: tuple[str, dict[str, JsonValue]]
) -> tuple[TurnOutcome, Session, ScriptedAdapter]:
    """One turn: the model makes each call in its own step, then answers ``done``."""
    script = [
        ModelResponse("", (ToolCall(f"c{index}", name, arguments),), "tool_use")
        for index, (name, arguments) in enumerate(steps, 1)
    ]
    model = ScriptedAdapter([*script, ModelResponse("done")])
    session = Session("s", key="root")
    with anyio.fail_after(BOUND):
        outcome = await AgentLoop(model, tools).run_turn(session, "go", cancel=CancelSignal())
    return outcome, session, model


@pytest.mark.anyio
async def test_a_task_start_call_without_its_required_arguments_gets_a_validation_error_and_starts_no_child() -> (  # noqa: E501
    None
):
    """Issue 19, tool arguments validated against the tool's schema: ``task_start`` without
    its required ``arguments`` does not run; the model is told the missing field's name."""
    async with world() as w:
        outcome, session, model = await run_calls(w.tools, ("task_start", {"tool": "delegate"}))
        assert w.runtime.list() == ()
    [(text, is_error)] = tool_results(session)
    assert is_error
    assert "invalid arguments for 'task_start'" in text
    assert "missing required field 'arguments'" in text
    assert w.provider.requests == []
    assert w.events == []
    # the loop goes on: the model saw the error and ended the turn itself
    assert outcome.status == "completed"
    assert outcome.text == "done"
    last = model.requests[-1].messages[-1]
    assert (last.role, last.text, last.is_error) == ("tool", text, True)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"tool": "delegate", "arguments": "research this"},
            "wrong type at 'arguments': expected object, got string",
        ),
        (
            {"tool": 7, "arguments": {"description": "d", "prompt": "p"}},
            "wrong type at 'tool': expected string, got integer",
        ),
    ],
)
async def test_a_wrongly_typed_task_start_argument_gets_a_validation_error_and_starts_no_child(
    arguments: dict[str, JsonValue], expected: str
) -> None:
    """Issue 19, tool arguments validated against the tool's schema: a wrong type is named
    with its path, expected and actual types; nothing starts."""
    async with world() as w:
        outcome, session, _ = await run_calls(w.tools, ("task_start", arguments))
        assert w.runtime.list() == ()
    [(text, is_error)] = tool_results(session)
    assert is_error
    assert expected in text
    assert w.provider.requests == []
    assert outcome.status == "completed"


@pytest.mark.anyio
async def test_task_start_checks_the_started_tool_s_arguments_against_that_tool_s_schema() -> None:
    """Issue 19, tool arguments validated against the tool's schema: the call task_start
    would run in the background is checked against its own tool's schema (the subagent tool's
    ``prompt`` is required) before anything starts."""
    async with world() as w:
        _, session, _ = await run_calls(
            w.tools, ("task_start", {"tool": "delegate", "arguments": {"description": "d"}})
        )
        assert w.runtime.list() == ()
    [(text, is_error)] = tool_results(session)
    assert is_error
    assert "invalid arguments for 'delegate'" in text
    assert "missing required field 'prompt'" in text
    assert w.provider.requests == []
    assert w.events == []


@pytest.mark.anyio
async def test_an_unknown_field_is_named_when_the_schema_forbids_extras() -> None:
    """Issue 19, tool arguments validated against the tool's schema: the subagent tool's
    schema forbids extra fields, so a model trying to pick a provider is told the field is
    unknown, and which fields exist."""
    async with world() as w:
        _, session, _ = await run_calls(
            w.tools, ("delegate", {"description": "d", "prompt": "p", "provider": "codex"})
        )
    [(text, is_error)] = tool_results(session)
    assert is_error
    assert "unknown field 'provider' (known fields: description, prompt)" in text
    assert w.provider.requests == []


@pytest.mark.anyio
async def test_a_valid_task_start_call_still_starts_the_child_and_its_result_is_collected() -> None:
    """Issue 19, tool arguments validated against the tool's schema: a call that matches runs
    as before, after the model corrected an invalid one."""
    async with world() as w:
        outcome, session, _ = await run_calls(
            w.tools,
            ("task_start", {"tool": "delegate"}),
            ("task_start", {"tool": "delegate", "arguments": {"description": "d", "prompt": "hi"}}),
            ("task_result", {"task_id": "task-1", "wait": True}),
        )
    results = tool_results(session)
    assert results[0][1] is True
    assert results[1:] == [("started task-1", False), ("hi", False)]
    assert [r.prompt for r in w.provider.requests] == ["hi"]
    assert outcome.status == "completed"


@dataclass
class Recorder:
    """A plain tool with a schema; records every time it actually runs."""

    runs: list[Mapping[str, JsonValue]] = field(default_factory=list[Mapping[str, JsonValue]])

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            "note",
            "writes a note",
            {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["text"],
            },
        )

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        self.runs.append(arguments)
        return ToolResult("noted")


@pytest.mark.anyio
async def test_every_tool_call_is_validated_before_the_tool_runs() -> None:
    """Issue 19, tool arguments validated against the tool's schema: any tool, not only the
    task tools; nested paths are named; a valid call runs."""
    recorder = Recorder()
    tools = ToolRegistry()
    tools.register(recorder)
    outcome, session, _ = await run_calls(
        tools,
        ("note", {}),
        ("note", {"text": "x", "tags": ["a", 2]}),
        ("note", {"text": "x", "tags": ["a"]}),
    )
    results = tool_results(session)
    missing, wrong, noted = results
    assert missing[1]
    assert "missing required field 'text'" in missing[0]
    assert wrong[1]
    assert "wrong type at 'tags[1]': expected string, got integer" in wrong[0]
    assert noted == ("noted", False)
    assert recorder.runs == [{"text": "x", "tags": ["a"]}]
    assert outcome.status == "completed"


@pytest.mark.anyio
async def test_task_start_called_directly_without_its_arguments_starts_nothing() -> None:
    """Issue 19, tool arguments validated against the tool's schema: the task tools check
    their own arguments also when called outside the agent loop (``arguments`` no longer
    defaults to ``{}``)."""
    async with world() as w:
        result = await w.tools.get("task_start").execute(
            {"tool": "delegate"}, cancel=CancelSignal()
        )
        assert w.runtime.list() == ()
    assert result.is_error
    assert "missing required field 'arguments'" in result.content
    assert w.provider.requests == []


def test_a_validator_is_built_once_per_schema_not_per_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 19, tool arguments validated against the tool's schema: validators are cached by
    schema (the same object, or an equal one built again by a tool's ``spec`` property)."""
    real = arguments_module._build  # pyright: ignore[reportPrivateUsage]
    built: list[str] = []

    def counting(tool: str, schema: Mapping[str, JsonValue]) -> object:
        built.append(tool)
        return real(tool, schema)

    monkeypatch.setattr(arguments_module, "_build", counting)

    def spec() -> ToolSpec:
        schema: dict[str, JsonValue] = {
            "type": "object",
            "properties": {"once": {"type": "integer"}},
            "required": ["once"],
        }
        return ToolSpec("cached-once", "", schema)

    same = spec()
    for _ in range(3):
        assert argument_problems(same, {"once": 1}) is None
        assert argument_problems(spec(), {"once": 1}) is None
        assert argument_problems(spec(), {}) is not None
    assert built == ["cached-once"]


def test_a_schema_that_is_not_valid_json_schema_does_not_block_its_tool() -> None:
    """A tool's broken schema (a faulty MCP server's) is the tool's problem, not the model's:
    its calls are not checked rather than all refused."""
    broken = ToolSpec("broken", "", {"type": "no-such-type"})
    assert argument_problems(broken, {"anything": 1}) is None


def test_importing_the_harness_does_not_import_jsonschema() -> None:
    """Start-up: jsonschema is imported on the first check, not with the harness."""
    code = (
        "import sys, subagents.harness, subagents.harness.loop; print('jsonschema' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
