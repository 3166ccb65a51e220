"""Continuable children: presence of the methods is the capability; cold resume by id."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from subagents.providers import (
    CancelSignal,
    ContinuableProvider,
    Continuation,
    ContinuationManager,
    KnownChild,
    ProgressEvent,
    SubagentCapabilities,
    SubagentEnded,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    SubagentRun,
    SubagentService,
    SubagentStarted,
)

pytestmark = pytest.mark.anyio

STORE: dict[str, list[str]] = {}
"""What a real provider persists (a Codex thread, a Claude Code session, an ACP session)."""


@dataclass
class Chat:
    child_id: str
    live: bool = True
    outcomes: list[SubagentOutcome] = field(default_factory=list[SubagentOutcome])

    @property
    def remote_id(self) -> str:
        return self.child_id

    async def send(
        self,
        message: str,
        *,
        cancel: CancelSignal | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> SubagentOutcome:
        assert self.live, "sent to a disposed child"
        STORE[self.child_id].append(message)
        outcome = SubagentOutcome.completed(self.child_id, " | ".join(STORE[self.child_id]))
        self.outcomes.append(outcome)
        return outcome

    async def dispose(self) -> None:
        self.live = False


@dataclass
class ChatProvider:
    name: str = "chat"
    capabilities: SubagentCapabilities = field(default_factory=SubagentCapabilities)
    resumed: list[str] = field(default_factory=list[str])
    prepared: int = 0

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        raise NotImplementedError

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> Continuation:
        self.prepared += 1
        child = Chat(f"chat-{len(STORE) + 1}")
        STORE[child.child_id] = []
        return child

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> Continuation:
        self.resumed.append(remote_id)
        return Chat(remote_id)


@dataclass
class OneShotProvider:
    name: str = "oneshot"
    capabilities: SubagentCapabilities = field(default_factory=SubagentCapabilities)

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        raise NotImplementedError


def test_the_presence_of_the_methods_is_the_capability() -> None:
    """Seam note: "Continuable creation is the optional prepareContinuable method; presence is
    the capability ... so no separate flag can drift from the implementation"."""
    assert isinstance(ChatProvider(), ContinuableProvider)
    assert not isinstance(OneShotProvider(), ContinuableProvider)


async def test_a_one_shot_provider_cannot_be_continued() -> None:
    """Asking a provider without prepare_continuable is a loud, early error."""
    service = SubagentService()
    service.register(OneShotProvider())
    async with ContinuationManager(service) as children:
        with pytest.raises(SubagentError) as info:
            await children.start("oneshot", SubagentRequest("hi"))
    assert info.value.code is SubagentErrorCode.UNSUPPORTED_CAPABILITY
    assert info.value.feature == "continuable"


async def test_later_messages_reach_the_child_and_a_released_child_resumes_cold() -> None:
    """Seam note: "The continuation manager owns later delivery and cold resume"."""
    provider = ChatProvider()
    service = SubagentService()
    service.register(provider)
    async with ContinuationManager(service) as children:
        child = await children.start("chat", SubagentRequest("plan the trip"))
        first = await children.deliver(child.child_id, "book a train")
        await children.release(child.child_id)
        second = await children.deliver(child.child_id, "and a hotel")
        persisted = children.known()
    remote = child.remote_id
    assert (first.output, first.child_id) == ("book a train", child.child_id)
    assert (second.output, second.child_id) == ("book a train | and a hotel", child.child_id)
    assert provider.resumed == [remote]
    assert persisted == {child.child_id: KnownChild("chat", remote)}

    # A new manager (say, after a restart) continues the same child from the persisted ids.
    restored = {k: KnownChild.from_json(v.to_json()) for k, v in persisted.items()}
    async with ContinuationManager(service, known=restored) as later:
        third = await later.deliver(child.child_id, "cheapest please")
    assert third.output == "book a train | and a hotel | cheapest please"
    assert third.child_id == child.child_id
    assert provider.resumed == [remote, remote]


async def test_continuable_creation_passes_the_same_capability_gate_as_start() -> None:
    """Issue 15, point 4: "Continuable creation passes the same start-time capability check as
    start": a persona or tool filter the provider does not advertise is rejected loud before
    the provider is asked, and no lifecycle event is emitted."""
    provider = ChatProvider()
    service = SubagentService()
    service.register(provider)
    events: list[object] = []
    service.subscribe(events.append)
    async with ContinuationManager(service) as children:
        for request in (
            SubagentRequest("hi", persona="a pirate"),
            SubagentRequest("hi", tool_filter=("read",)),
        ):
            with pytest.raises(SubagentError) as info:
                await children.start("chat", request)
            assert info.value.code is SubagentErrorCode.UNSUPPORTED_CAPABILITY
    assert provider.prepared == 0
    assert events == []


async def test_continuable_children_emit_the_lifecycle_pair() -> None:
    """Issue 15, point 4: continuable children emit the same lifecycle pair as runs: started
    at publication, ended (with the last turn's outcome) when released; a cold resume is a new
    pair under the same minted child id."""
    service = SubagentService()
    service.register(ChatProvider())
    events: list[SubagentStarted | SubagentEnded] = []
    service.subscribe(events.append)
    async with ContinuationManager(service) as children:
        child = await children.start("chat", SubagentRequest("plan"))
        assert [type(e) for e in events] == [SubagentStarted]
        reply = await children.deliver(child.child_id, "go")
        await children.release(child.child_id)
        assert [type(e) for e in events] == [SubagentStarted, SubagentEnded]
        await children.deliver(child.child_id, "again")
    assert [type(e) for e in events] == [SubagentStarted, SubagentEnded] * 2
    assert {e.child_id for e in events} == {child.child_id}
    ended = events[1]
    assert isinstance(ended, SubagentEnded)
    assert ended.outcome == reply
    started = events[0]
    assert isinstance(started, SubagentStarted)
    assert started.remote_id == child.remote_id


async def test_an_unknown_child_is_a_clear_error() -> None:
    """Bad input gets a clear error."""
    async with ContinuationManager(SubagentService()) as children:
        with pytest.raises(SubagentError, match="no continuable child 'ghost'"):
            await children.deliver("ghost", "hello?")
