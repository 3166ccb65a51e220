"""Continuable children: presence of the methods is the capability; cold resume by id."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from subagents.providers import (
    CancelSignal,
    ContinuableProvider,
    Continuation,
    ContinuationManager,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    SubagentRun,
    SubagentService,
)

pytestmark = pytest.mark.anyio

STORE: dict[str, list[str]] = {}
"""What a real provider persists (a Codex thread, a Claude Code session, an ACP session)."""


@dataclass
class Chat:
    id: str
    live: bool = True

    async def send(self, message: str, *, cancel: CancelSignal | None = None) -> SubagentOutcome:
        assert self.live, "sent to a disposed child"
        STORE[self.id].append(message)
        return SubagentOutcome.completed(self.id, " | ".join(STORE[self.id]))

    async def dispose(self) -> None:
        self.live = False


@dataclass
class ChatProvider:
    name: str = "chat"
    capabilities: SubagentCapabilities = field(default_factory=SubagentCapabilities)
    resumed: list[str] = field(default_factory=list[str])

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        raise NotImplementedError

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> Continuation:
        child = Chat(f"chat-{len(STORE) + 1}")
        STORE[child.id] = []
        return child

    async def resume_continuable(self, child_id: str, *, cancel: CancelSignal) -> Continuation:
        self.resumed.append(child_id)
        return Chat(child_id)


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
        first = await children.deliver(child.id, "book a train")
        await children.release(child.id)
        second = await children.deliver(child.id, "and a hotel")
        persisted = children.known()
    assert first.output == "book a train"
    assert second.output == "book a train | and a hotel"
    assert provider.resumed == [child.id]
    assert persisted == {child.id: "chat"}

    # A new manager (say, after a restart) continues the same child from the persisted ids.
    async with ContinuationManager(service, known=persisted) as later:
        third = await later.deliver(child.id, "cheapest please")
    assert third.output == "book a train | and a hotel | cheapest please"
    assert provider.resumed == [child.id, child.id]


async def test_an_unknown_child_is_a_clear_error() -> None:
    """Bad input gets a clear error."""
    async with ContinuationManager(SubagentService()) as children:
        with pytest.raises(SubagentError, match="no continuable child 'ghost'"):
            await children.deliver("ghost", "hello?")
