"""Faults of the chaos agent through ``AcpProvider`` (issue 10, part 2): every run settles
(bounded) with the right outcome and a message naming the fault, the progress before the
fault is delivered, and after dispose no process, zombie or file descriptor is left."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
)
from subagents.providers.acp import AcpProvider

from ._leaks import assert_no_leak, snapshot

Observe = Callable[[str, str, str], None]

pytestmark = pytest.mark.anyio

CHAOS = Path(__file__).with_name("chaos_agent.py")
BOUND = 30.0
ALL = "".join(f"chunk {i}" for i in range(1, 6))


def provider(fault: str, *args: str) -> AcpProvider:
    return AcpProvider(
        [sys.executable, str(CHAOS), fault, *args],
        name="chaos",
        initialize_timeout=2.0,
        cancel_timeout=1.0,
    )


async def settle(
    fault: str, *args: str, cancel_after_chunks: int | None = None
) -> tuple[SubagentOutcome, list[str]]:
    texts: list[str] = []
    signal = CancelSignal()
    async with (
        provider(fault, *args) as made,
        await made.start(SubagentRequest("go"), cancel=signal) as run,
    ):
        feed = run.progress()
        assert feed is not None
        async for event in feed:
            if event.kind != "text":
                continue
            texts.append(event.text)
            if cancel_after_chunks is not None and len(texts) == cancel_after_chunks:
                signal.cancel("enough")
        outcome = await run.result()
    return outcome, texts


@pytest.mark.parametrize(
    ("fault", "args"),
    [
        ("none", ()),
        ("split", ()),
        ("garbage", ()),
        ("huge-line", ("100",)),
        ("stderr-flood", ("100",)),
        ("no-eof-exit", ()),
        ("duplicate", ()),
        ("storm", ("2000",)),
    ],
)
@pytest.mark.timeout(120)
async def test_faults_the_run_survives_complete_it(
    fault: str, args: tuple[str, ...], observe: Observe
) -> None:
    before = snapshot()
    with anyio.fail_after(90):
        outcome, texts = await settle(fault, *args)
    assert outcome.status == "completed", outcome.message
    if fault == "storm":
        assert outcome.output == "storm of 2000 requests answered"
    else:
        assert "".join(texts) == ALL
        assert outcome.output == ALL
    assert_no_leak(before)
    observe(
        "AcpProvider", fault, f"{outcome.status}, the whole output; {len(texts)} progress events"
    )


async def test_a_crash_mid_turn_fails_the_run_with_status_and_stderr(observe: Observe) -> None:
    before = snapshot()
    with anyio.fail_after(BOUND):
        outcome, texts = await settle("crash-after", "3")
    assert outcome.status == "failed"
    assert outcome.failure_kind == "infrastructure"
    assert outcome.message is not None
    assert "exited with status 3" in outcome.message
    assert "crashing on purpose" in outcome.message
    assert texts == ["chunk 1", "chunk 2", "chunk 3"]
    assert_no_leak(before)
    observe(
        "AcpProvider",
        "crash-after",
        f"{len(texts)} progress events, then failed ({outcome.failure_kind}): {outcome.message}",
    )


@pytest.mark.parametrize("fault", ["hang", "ignore-cancel", "wrong-ids"])
async def test_a_cancel_the_agent_ignores_still_settles_the_run_cancelled(
    fault: str, observe: Observe
) -> None:
    """The signal sends session/cancel; an agent that never confirms it cannot hold the run:
    after ``cancel_timeout`` it settles cancelled, saying the agent did not confirm."""
    before = snapshot()
    with anyio.fail_after(BOUND):
        outcome, texts = await settle(fault, cancel_after_chunks=2)
    assert outcome.status == "cancelled"
    assert outcome.message == (
        "enough (the agent did not confirm the cancel within 1 s; stopped waiting)"
    )
    assert texts[:2] == ["chunk 1", "chunk 2"]
    assert_no_leak(before)
    observe("AcpProvider", fault, f"signal after 2 updates -> {outcome.status}: {outcome.message}")


async def test_an_answer_to_the_cancel_notification_is_ignored_and_the_run_cancelled(
    observe: Observe,
) -> None:
    """The agent answers session/cancel (a notification: a protocol error, reported by the
    client) and then ends the turn cancelled: the run settles cancelled."""
    before = snapshot()
    with anyio.fail_after(BOUND):
        outcome, texts = await settle("answer-notify", cancel_after_chunks=2)
    assert outcome.status == "cancelled"
    assert outcome.message == "enough"
    assert texts[:2] == ["chunk 1", "chunk 2"]
    assert_no_leak(before)
    observe("AcpProvider", "answer-notify", f"signal after 2 updates -> {outcome.status}")


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ("hang-init", "did not answer initialize"),
        ("exit-during-init", "status 4"),
    ],
)
async def test_a_start_that_cannot_finish_raises_start_failed(
    fault: str, expected: str, observe: Observe
) -> None:
    before = snapshot()
    with anyio.fail_after(BOUND):
        async with provider(fault) as made:
            with pytest.raises(SubagentError) as info:
                await made.start(SubagentRequest("go"), cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert expected in info.value.message
    assert_no_leak(before)
    observe("AcpProvider", fault, f"start() raises {info.value.code.value}: {info.value.message}")


async def test_no_grandchild_survives_the_disposal(tmp_path: Path, observe: Observe) -> None:
    before = snapshot()
    pid_file = tmp_path / "grandchild.pid"
    with anyio.fail_after(BOUND):
        outcome, _ = await settle("grandchild", str(pid_file))
    assert outcome.status == "completed"
    assert_no_leak(before, also_gone={int(pid_file.read_text())})
    observe("AcpProvider", "grandchild", f"{outcome.status}; after dispose the grandchild is gone")
