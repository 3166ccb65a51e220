"""A continued turn's progress (``Continuation.send(..., on_progress=)``), on a real ACP
child (the reference agent), the scripted provider and the service's wrapper."""

from __future__ import annotations

import sys

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    ProgressEvent,
    SubagentRequest,
    SubagentService,
    TextProgress,
)
from subagents.providers.acp import AcpProvider
from subagents.providers.scripted import Script, ScriptedProvider

pytestmark = pytest.mark.anyio

REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]


async def test_a_continued_acp_turn_hands_its_progress_to_the_callback_as_it_comes() -> None:
    """Issue 21 (``serve --a2a`` streams follow-ups): ``send(on_progress=)`` receives the
    turn's events in order while it runs, the text adding up to the outcome's output; a
    callback that raises is dropped for that event and the turn still completes."""
    events: list[ProgressEvent] = []

    def failing(event: ProgressEvent) -> None:
        raise RuntimeError("a buggy callback")

    async with AcpProvider(REFERENCE) as provider:
        with anyio.fail_after(20):
            child = await provider.prepare_continuable(
                SubagentRequest("echo first"), cancel=CancelSignal()
            )
            try:
                second = await child.send("stream 3", on_progress=events.append)
                third = await child.send("echo after a raising callback", on_progress=failing)
            finally:
                await child.dispose()
    texts = [e.text for e in events if isinstance(e, TextProgress)]
    assert texts == ["1 ", "2 ", "3 "]
    assert second.status == "completed"
    assert second.output == "".join(texts)
    assert third.status == "completed"
    assert third.output == "echo after a raising callback"


async def test_the_scripted_and_the_service_conversations_pass_progress_on() -> None:
    """Issue 21: every continuation the project makes takes ``on_progress`` (the contract):
    the scripted provider's script events reach it, through the service's handle too."""
    script = Script(progress=(TextProgress("a"), TextProgress("b")), output="ab")
    provider = ScriptedProvider({"turn": script})
    service = SubagentService()
    service.register(provider)
    events: list[ProgressEvent] = []
    async with provider:
        with anyio.fail_after(20):
            child = await service.start_continuable(provider.name, SubagentRequest("hello"))
            outcome = await child.send("turn", on_progress=events.append)
            await child.dispose()
    assert events == [TextProgress("a"), TextProgress("b")]
    assert outcome.output == "ab"
