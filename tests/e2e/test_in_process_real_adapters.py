"""Issue 15, point 11: spawn and fork end to end through real adapters.

A real agent loop (``AgentRuntime`` with the spawn or fork provider offered as the
``subagent`` tool) over the Anthropic Messages and OpenAI-compatible Chat Completions HTTP
adapters, against the project's fake model servers on 127.0.0.1 (which answer a last user
message ``delegate: <prompt>`` with a ``subagent`` call of that prompt, and a tool result
with ``TOOL_RESULT_SEEN: <result>``); nested delegation included. The same spawn scenario
runs against the real services (``real_model``) only when their key is in the environment;
without one it is reported as skipped (not run), never as passed.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import pytest

from subagents.harness.llm import AnthropicAdapter, LlmAdapter, OpenAIChatAdapter
from subagents.harness.loop import TurnOutcome
from subagents.harness.runtime import AgentRuntime, AgentSettings
from subagents.harness.session import Session, SessionEvent, SessionStore
from subagents.providers import CancelSignal, SubagentService
from subagents.providers._in_process import InProcessProvider
from subagents.providers.contract import SubagentStarted
from subagents.providers.fork import ForkProvider
from subagents.providers.spawn import SpawnProvider
from subagents.testing.fake_models._http import FakeHandler, FakeServer, serve
from subagents.testing.fake_models.anthropic_messages import (
    DEFAULT_REPLY,
    DELEGATE_DESCRIPTION,
    DELEGATE_PREFIX,
    DELEGATE_TOOL,
    FAKE_API_KEY,
    TOOL_RESULT_PREFIX,
    AnthropicMessagesHandler,
    message_requests,
)
from subagents.testing.fake_models.openai_chat import API_KEY, ChatCompletionsHandler, chat_requests

from ..harness.test_runtime import kinds

pytestmark = pytest.mark.anyio

BOUND = 30.0
"""Seconds a whole scenario on the fake servers may take."""

REAL_BOUND = 240.0
"""Seconds a whole scenario against a real service may take."""


# -- the two wire formats --------------------------------------------------------------------


@dataclass(frozen=True)
class Wire:
    """One HTTP adapter and the fake server speaking its API."""

    name: str
    handler: type[FakeHandler]
    make: Callable[[FakeServer], LlmAdapter]
    recorded: Callable[[FakeServer], list[Any]]
    auth: Callable[[dict[str, str]], bool]


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


ANTHROPIC = Wire(
    "anthropic",
    AnthropicMessagesHandler,
    lambda server: AnthropicAdapter(
        "fake-model", api_key=FAKE_API_KEY, base_url=server.base_url, timeout=10, max_retries=0
    ),
    lambda server: [r.body for r in message_requests(server)],
    lambda headers: _lower(headers).get("x-api-key") == FAKE_API_KEY,
)
OPENAI = Wire(
    "openai",
    ChatCompletionsHandler,
    lambda server: OpenAIChatAdapter(
        "fake-model", api_key=API_KEY, base_url=f"{server.base_url}/v1", timeout=10, max_retries=0
    ),
    lambda server: [r.body for r in chat_requests(server)],
    lambda headers: _lower(headers).get("authorization") == f"Bearer {API_KEY}",
)
WIRES = [pytest.param(ANTHROPIC, id="anthropic"), pytest.param(OPENAI, id="openai")]


@contextmanager
def fake_model(wire: Wire) -> Iterator[tuple[FakeServer, LlmAdapter]]:
    with serve(wire.handler) as server:
        yield server, wire.make(server)


Entry = tuple[str, ...]


def conversation(body: Any) -> list[Entry]:
    """The conversation a request body carries, in one form for both APIs (system prompts left
    out): ``(role, text)``, ``("call", id, name, arguments as sorted JSON)``,
    ``("result", call id, text)``."""
    out: list[Entry] = []
    for message in cast(list[dict[str, Any]], body["messages"]):
        role = str(message["role"])
        content = message.get("content")
        if role == "system":
            continue
        if role == "tool":
            out.append(("result", str(message["tool_call_id"]), str(content)))
            continue
        if isinstance(content, str) and content:
            out.append((role, content))
        elif isinstance(content, list):
            for block in cast(list[dict[str, Any]], content):
                if block["type"] == "text" and block["text"]:
                    out.append((role, str(block["text"])))
                elif block["type"] == "tool_use":
                    arguments = json.dumps(block["input"], sort_keys=True)
                    out.append(("call", str(block["id"]), str(block["name"]), arguments))
                elif block["type"] == "tool_result":
                    out.append(("result", str(block["tool_use_id"]), str(block["content"])))
        for call in cast(list[dict[str, Any]], message.get("tool_calls") or []):
            function = call["function"]
            arguments = json.dumps(json.loads(function["arguments"]), sort_keys=True)
            out.append(("call", str(call["id"]), str(function["name"]), arguments))
    return out


def offered_tools(body: Any) -> list[str]:
    names: list[str] = []
    for tool in cast(list[dict[str, Any]], body.get("tools") or []):
        function = tool.get("function")
        names.append(str(function["name"] if isinstance(function, dict) else tool["name"]))
    return names


# -- the scenario ----------------------------------------------------------------------------


@dataclass
class Delegation:
    """What a root turn that delegated left behind."""

    outcome: TurnOutcome
    root: Session
    children: list[Session]
    """Every other session of the runtime's store, shallowest first (then by key)."""

    def child_of(self, parent: Session) -> Session:
        [child] = [c for c in self.children if c.parent_session == parent.id]
        return child


async def delegate(
    runtime: AgentRuntime,
    provider: Callable[[AgentRuntime], InProcessProvider],
    prompt: str,
    *,
    earlier: Sequence[str] = (),
    system: str | None = None,
    bound: float = BOUND,
) -> Delegation:
    """Offer ``provider`` as the ``subagent`` tool, run the ``earlier`` turns of a root agent,
    then ``prompt``; every wait bounded by ``bound`` seconds. The runtime's sessions must be
    kept in a directory: the children are found there (read back through the store)."""
    service = SubagentService()
    started: list[str] = []

    def listen(event: object) -> None:
        if isinstance(event, SubagentStarted):
            started.append(event.child_id)

    service.subscribe(listen)
    directory = runtime.sessions.directory
    assert directory is not None, "the runtime's sessions must be kept in a directory"
    with anyio.fail_after(bound):
        async with provider(runtime) as opened:
            service.register(opened)
            runtime.offer_subagents(service, opened.name)
            root = runtime.root_agent(system=system)
            for turn in earlier:
                before = await root.run(turn, cancel=CancelSignal())
                assert before.status == "completed", before.message
            outcome = await root.run(prompt, cancel=CancelSignal())
    children: list[Session] = []
    for path in directory.glob("*.jsonl"):
        session = runtime.sessions.get(path.stem)
        assert session is not None, f"the store cannot read {path.name}"
        if session.id != root.id:
            children.append(session)
    children.sort(key=lambda session: (session.depth, session.key))
    assert len(children) == len(started), (started, [c.key for c in children])
    return Delegation(outcome, root.session, children)


def only(session: Session, kind: str) -> SessionEvent:
    [event] = [e for e in session.events if e.kind == kind]
    return event


def assert_delegated_once(session: Session, prompt: str, result: str) -> str:
    """``session``'s one turn is: its prompt, one ``subagent`` call of ``prompt`` whose
    result is ``result``, then the final answer; returns the call's id."""
    assert kinds(session) == [
        "turn_start",
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "assistant",
        "turn_end",
    ]
    call = only(session, "tool_call").call
    assert call is not None
    assert call.name == DELEGATE_TOOL
    assert dict(call.arguments) == {"description": DELEGATE_DESCRIPTION, "prompt": prompt}
    answered = only(session, "tool_result")
    assert answered.call_id == call.id
    assert not answered.is_error
    assert answered.text == result
    assert only(session, "turn_end").status == "completed"
    return call.id


def assert_answered(session: Session, prompt: str, answer: str) -> None:
    """``session``'s one turn is its prompt and the model's answer, nothing else."""
    assert kinds(session) == ["turn_start", "user", "assistant", "turn_end"]
    assert only(session, "user").text == prompt
    assert only(session, "assistant").text == answer
    assert only(session, "turn_end").status == "completed"


def call_entry(call_id: str, prompt: str) -> Entry:
    arguments = json.dumps({"description": DELEGATE_DESCRIPTION, "prompt": prompt}, sort_keys=True)
    return ("call", call_id, DELEGATE_TOOL, arguments)


# -- against the fake servers ----------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_a_spawned_child_answers_through_a_real_adapter(wire: Wire, tmp_path: Path) -> None:
    """Issue 15, point 11: spawn end to end through a real HTTP adapter on a loopback fake:
    the root's model calls `subagent`, the child's model answers, the root gets the answer as
    the tool result and finishes. The child's steps are in the child's own session (the
    root's log has only the delegation call and its result); the child's request to the model
    carries only its prompt (not the root's earlier turn) and the root's next request carries
    the tool result."""
    earlier = "Good morning."
    child_prompt = "Say hello."
    root_prompt = f"{DELEGATE_PREFIX} {child_prompt}"
    with fake_model(wire) as (server, adapter):
        runtime = AgentRuntime(adapter, sessions=SessionStore(tmp_path))
        done = await delegate(runtime, SpawnProvider, root_prompt, earlier=[earlier])
        bodies = wire.recorded(server)
        headers = [r.headers for r in server.requests]

    assert done.outcome.status == "completed", done.outcome.message
    assert done.outcome.text == TOOL_RESULT_PREFIX + DEFAULT_REPLY
    [first_turn, second_turn] = list(done.root.turns())
    assert [e.kind for e in first_turn] == ["turn_start", "user", "assistant", "turn_end"]
    assert [e.kind for e in second_turn] == [
        "turn_start",
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "assistant",
        "turn_end",
    ]
    call = second_turn[3].call
    assert call is not None
    assert call.name == DELEGATE_TOOL
    assert dict(call.arguments) == {"description": DELEGATE_DESCRIPTION, "prompt": child_prompt}
    assert (second_turn[4].call_id, second_turn[4].text) == (call.id, DEFAULT_REPLY)
    assert not second_turn[4].is_error
    assert second_turn[5].text == TOOL_RESULT_PREFIX + DEFAULT_REPLY
    [child] = done.children
    assert (child.parent_session, child.depth, child.key) == (done.root.id, 1, "root.1")
    assert_answered(child, child_prompt, DEFAULT_REPLY)

    assert len(bodies) == 4  # root turn 1, root turn 2, the child, root turn 2 again
    history = [("user", earlier), ("assistant", DEFAULT_REPLY)]
    assert conversation(bodies[1]) == [*history, ("user", root_prompt)]
    assert conversation(bodies[2]) == [("user", child_prompt)]
    assert conversation(bodies[3]) == [
        *history,
        ("user", root_prompt),
        call_entry(call.id, child_prompt),
        ("result", call.id, DEFAULT_REPLY),
    ]
    assert all(DELEGATE_TOOL in offered_tools(body) for body in bodies)
    assert all(body["stream"] is True for body in bodies)
    assert len(headers) == 4
    assert all(wire.auth(h) for h in headers)


@pytest.mark.parametrize("wire", WIRES)
async def test_nested_delegation_answers_at_every_level_through_a_real_adapter(
    wire: Wire, tmp_path: Path
) -> None:
    """Issue 15, point 11 (nested delegation): root -> child -> grandchild (depth 2) through a
    real HTTP adapter; the grandchild answers, the child finishes on its result, the root on
    the child's. Each level's log holds only its own delegation; the requests go root, child,
    grandchild, child, root, each carrying only its own conversation."""
    leaf_prompt = "Say hello."
    child_prompt = f"{DELEGATE_PREFIX} {leaf_prompt}"
    root_prompt = f"{DELEGATE_PREFIX} {child_prompt}"
    child_answer = TOOL_RESULT_PREFIX + DEFAULT_REPLY
    with fake_model(wire) as (server, adapter):
        done = await delegate(
            AgentRuntime(adapter, sessions=SessionStore(tmp_path)), SpawnProvider, root_prompt
        )
        bodies = wire.recorded(server)

    assert done.outcome.status == "completed", done.outcome.message
    assert done.outcome.text == TOOL_RESULT_PREFIX + child_answer
    root_call = assert_delegated_once(done.root, child_prompt, child_answer)
    child = done.child_of(done.root)
    assert (child.depth, child.key) == (1, "root.1")
    child_call = assert_delegated_once(child, leaf_prompt, DEFAULT_REPLY)
    assert only(child, "user").text == child_prompt
    grandchild = done.child_of(child)
    assert (grandchild.depth, grandchild.key) == (2, "root.1.1")
    assert_answered(grandchild, leaf_prompt, DEFAULT_REPLY)
    assert len(done.children) == 2

    assert [conversation(body) for body in bodies] == [
        [("user", root_prompt)],
        [("user", child_prompt)],
        [("user", leaf_prompt)],
        [
            ("user", child_prompt),
            call_entry(child_call, leaf_prompt),
            ("result", child_call, DEFAULT_REPLY),
        ],
        [
            ("user", root_prompt),
            call_entry(root_call, child_prompt),
            ("result", root_call, child_answer),
        ],
    ]


@pytest.mark.parametrize("wire", WIRES)
async def test_a_fork_childs_first_request_carries_the_parents_completed_turns(
    wire: Wire, tmp_path: Path
) -> None:
    """Issue 15, point 11 (fork): after a completed turn, the root delegates through the fork
    provider over a real HTTP adapter; the child's first request to the model carries the
    root's completed turn as history (not the turn in flight), then its prompt; its steps are
    in its own session (seeded with that history) and its answer reaches the root as the tool
    result."""
    earlier = "Say hello."
    child_prompt = "Now say it once more."
    root_prompt = f"{DELEGATE_PREFIX} {child_prompt}"
    with fake_model(wire) as (server, adapter):
        done = await delegate(
            AgentRuntime(adapter, sessions=SessionStore(tmp_path)),
            ForkProvider,
            root_prompt,
            earlier=[earlier],
        )
        bodies = wire.recorded(server)

    assert done.outcome.status == "completed", done.outcome.message
    assert done.outcome.text == TOOL_RESULT_PREFIX + DEFAULT_REPLY
    [first_turn, second_turn] = list(done.root.turns())
    assert [e.kind for e in first_turn] == ["turn_start", "user", "assistant", "turn_end"]
    delegation = [e.kind for e in second_turn if e.kind in ("tool_call", "tool_result")]
    assert delegation == ["tool_call", "tool_result"]
    [call] = [e.call for e in second_turn if e.call is not None]
    assert dict(call.arguments) == {"description": DELEGATE_DESCRIPTION, "prompt": child_prompt}

    [child] = done.children
    assert (child.parent_session, child.depth) == (done.root.id, 1)
    history = [("user", earlier), ("assistant", DEFAULT_REPLY)]
    seed = only(child, "seed")
    assert [(m.role, m.text) for m in seed.messages] == history
    assert kinds(child) == ["seed", "turn_start", "user", "assistant", "turn_end"]
    assert only(child, "assistant").text == DEFAULT_REPLY

    assert len(bodies) == 4  # root turn 1, root turn 2, the fork child, root turn 2 again
    assert conversation(bodies[1]) == [*history, ("user", root_prompt)]
    assert conversation(bodies[2]) == [*history, ("user", child_prompt)]
    assert conversation(bodies[3]) == [
        *history,
        ("user", root_prompt),
        call_entry(call.id, child_prompt),
        ("result", call.id, DEFAULT_REPLY),
    ]


# -- against the real services ---------------------------------------------------------------


def _has_key(variable: str) -> bool:
    return bool(os.environ.get(variable, "").strip())


def _not_run(variable: str, api: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not _has_key(variable),
        reason=f"{variable} is not set: the scenario against the real {api} was not run",
    )


def _real_anthropic(client: httpx.AsyncClient) -> LlmAdapter:
    model = os.environ.get("SUBAGENTS_ANTHROPIC_MODEL") or "claude-haiku-4-5"
    return AnthropicAdapter(model, timeout=60, http_client=client)


def _real_openai(client: httpx.AsyncClient) -> LlmAdapter:
    model = os.environ.get("SUBAGENTS_OPENAI_MODEL") or "gpt-4.1-mini"
    return OpenAIChatAdapter(
        model, max_tokens_field="max_completion_tokens", timeout=60, http_client=client
    )


REAL = [
    pytest.param(
        _real_anthropic,
        id="api.anthropic.com",
        marks=_not_run("ANTHROPIC_API_KEY", "Anthropic Messages API (api.anthropic.com)"),
    ),
    pytest.param(
        _real_openai,
        id="api.openai.com",
        marks=_not_run("OPENAI_API_KEY", "OpenAI Chat Completions API (api.openai.com)"),
    ),
]


@pytest.mark.real_model
@pytest.mark.timeout(REAL_BOUND + 30)
@pytest.mark.parametrize("make", REAL)
async def test_a_spawned_child_answers_through_the_real_service(
    make: Callable[[httpx.AsyncClient], LlmAdapter], tmp_path: Path
) -> None:
    """Issue 15, point 11 (real services): the spawn scenario against api.anthropic.com or
    api.openai.com, run only when the key is in the environment (else skipped, not run). The
    real model delegates with the `subagent` tool, the child's answer (a random word) comes
    back as the tool result and into the final answer; the child's steps are in its own
    session and its first request carries only its prompt."""
    word = f"KIWI{secrets.randbelow(10**6):06d}"
    system = "You are an agent under test. Follow the user's instructions exactly."
    prompt = (
        f"Use the {DELEGATE_TOOL} tool exactly once, with the prompt: 'Reply with exactly this "
        f"word and nothing else: {word}'. Then reply with exactly what it answered."
    )
    bodies: list[Any] = []

    async def record(request: httpx.Request) -> None:
        bodies.append(json.loads(request.content))

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as client:
        settings = AgentSettings(max_tokens=1024, max_steps=6)
        runtime = AgentRuntime(make(client), sessions=SessionStore(tmp_path), settings=settings)
        done = await delegate(runtime, SpawnProvider, prompt, system=system, bound=REAL_BOUND)

    assert done.outcome.status == "completed", done.outcome.message
    assert word in done.outcome.text
    calls = [e.call for e in done.root.events if e.call is not None]
    results = [e for e in done.root.events if e.kind == "tool_result"]
    assert calls, "the real model did not delegate"
    assert all(c.name == DELEGATE_TOOL for c in calls)
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert not any(r.is_error for r in results), [r.text for r in results]
    assert any(word in r.text for r in results)
    assert set(kinds(done.root)) == {
        "turn_start",
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "turn_end",
    }

    child = done.children[0]
    assert (child.parent_session, child.depth) == (done.root.id, 1)
    assert only(child, "user").text == calls[0].arguments["prompt"]
    assert only(child, "turn_end").status == "completed"
    assert word in "".join(e.text for e in child.events if e.kind == "assistant")
    child_first = next(b for b in bodies if conversation(b)[0] != ("user", prompt))
    assert conversation(child_first) == [("user", calls[0].arguments["prompt"])]
