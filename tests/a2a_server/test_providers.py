"""``serve_a2a_http`` in front of other providers than ACP: the in-process runtime (spawn)
and a provider that cannot continue a child; structured output and tool activity
(issue 21 point 2: "exposes any configured agent ... one A2A context per child conversation")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

pytest.importorskip("a2a.server")

from subagents.config import AgentSpec
from subagents.providers.contract import (
    CancelSignal,
    SubagentCapabilities,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    ToolCallProgress,
    ToolResultProgress,
)
from subagents.providers.factory import build_provider
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.remote.a2a_server import A2AServer, serve_a2a_http
from tests.a2a_server._client import a2a_client, send

SPAWN = AgentSpec("runtime", "spawn", description="the in-process runtime, offline model")
SCRIPTED = AgentSpec("scripted", "scripted")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class OneShot:
    """A provider with ``start`` only (not continuable): wraps a scripted one."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def capabilities(self) -> SubagentCapabilities:
        return self._inner.capabilities

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        return await self._inner.start(request, cancel=cancel)


@asynccontextmanager
async def serving(provider: SubagentProvider, spec: AgentSpec) -> AsyncIterator[A2AServer]:
    async with serve_a2a_http(provider, spec, port=0) as server:
        yield server


@pytest.mark.anyio
async def test_the_runtime_is_served_and_a_context_continues_its_child() -> None:
    """Issue 21 point 2: a spawn entry (the in-process runtime) served over A2A: a turn
    completes with text, and a later message in its context continues the same session."""
    async with (
        build_provider(SPAWN) as provider,
        serving(provider, SPAWN) as server,
        a2a_client(server.url) as client,
    ):
        with anyio.fail_after(30):
            first = await send(client, "hello")
            child = server.executor.contexts[first.context_id]
            again = await send(client, "hello again", context_id=first.context_id)
        assert first.final == "TASK_STATE_COMPLETED"
        assert first.text
        assert again.final == "TASK_STATE_COMPLETED"
        assert again.text
        assert child
        assert server.executor.contexts[first.context_id] == child


@pytest.mark.anyio
async def test_a_provider_that_cannot_continue_gets_a_new_child_per_message() -> None:
    """Issue 21 point 2: a later message in a context starts a new child when the provider
    is not continuable; tool activity streams as working status messages; structured output
    arrives as a data part."""
    script = Script(
        output={"answer": 42},
        progress=(
            ToolCallProgress(id="t1", title="look it up"),
            ToolResultProgress(id="t1", status="completed", output="found"),
        ),
    )
    async with ScriptedProvider({"ask": script}) as inner:
        async with serving(OneShot(inner), SCRIPTED) as server, a2a_client(server.url) as client:
            with anyio.fail_after(30):
                first = await send(client, "ask")
                again = await send(client, "echo", context_id=first.context_id)
        assert [r.prompt for r in inner.requests] == ["ask", "echo"]
        assert first.final == "TASK_STATE_COMPLETED"
        assert again.final == "TASK_STATE_COMPLETED"
        assert again.text == "echo"
        assert first.states[:3] == ["TASK_STATE_WORKING"] * 3
        assert first.notes[1:3] == ["tool: look it up (in_progress)", "tool t1: completed"]
        assert first.data == [{"answer": 42}]
        assert len(inner.runs) == 2
