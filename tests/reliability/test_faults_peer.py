"""Faults of the chaos agent through the bare JSON-RPC peer (issue 10, part 2): the peer over
the child's stdio, no ACP on top (raw requests, a raw notification handler): no hang (every
request bounded), a clear error naming the fault, every well-formed notification delivered,
and no process or descriptor left after the block."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from subagents.protocol.jsonrpc import JsonValue
from subagents.rpc import ConnectionClosedError, Peer, Router, open_peer
from subagents.transports.process import exit_reason_for, open_agent_process

from ._leaks import assert_no_leak, snapshot

pytestmark = pytest.mark.anyio

Observe = Callable[[str, str, str], None]
CHAOS = Path(__file__).with_name("chaos_agent.py")
BOUND = 30.0
INIT: dict[str, JsonValue] = {"protocolVersion": 1, "clientCapabilities": {}}


@dataclass
class Seen:
    chunks: list[str] = field(default_factory=list[str])
    errors: list[str] = field(default_factory=list[str])
    requests: int = 0


@asynccontextmanager
async def chaos_peer(fault: str, *args: str) -> AsyncIterator[tuple[Peer, Seen]]:
    seen = Seen()
    router = Router()

    async def on_update(params: JsonValue) -> None:
        assert isinstance(params, dict)
        update: Any = params["update"]
        seen.chunks.append(update["content"]["text"])

    async def on_request(params: JsonValue) -> None:
        seen.requests += 1
        return

    router.on_notification("session/update", on_update)
    router.on_request("fs/read_text_file", on_request)
    async with (
        open_agent_process([sys.executable, str(CHAOS), fault, *args]) as process,
        open_peer(
            process.stdout,
            process.stdin,
            router=router,
            on_protocol_error=lambda error: seen.errors.append(str(error)),
            eof_reason=exit_reason_for(process, f"chaos agent {fault!r}"),
            name="chaos",
        ) as peer,
    ):
        yield peer, seen


async def prompt(peer: Peer, timeout: float = 10.0) -> JsonValue:
    await peer.request("initialize", INIT, timeout=5)
    session: Any = await peer.request("session/new", {"cwd": "/", "mcpServers": []}, timeout=5)
    return await peer.request(
        "session/prompt",
        {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "go"}]},
        timeout=timeout,
    )


def reported(errors: list[str]) -> str:
    return f"{len(errors)} reported: " + "; ".join(sorted(set(errors))) if errors else "none"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("fault", "args"),
    [
        ("none", ()),
        ("split", ()),
        ("garbage", ()),
        ("huge-line", ("100",)),
        ("duplicate", ()),
        ("storm", ("2000",)),
    ],
)
async def test_faults_the_peer_survives_answer_the_request(
    fault: str, args: tuple[str, ...], observe: Observe
) -> None:
    before = snapshot()
    with anyio.fail_after(90):
        async with chaos_peer(fault, *args) as (peer, seen):
            result = await prompt(peer, timeout=60)
            if fault == "duplicate":  # the peer still works after the stray answer
                await peer.request("session/new", {"cwd": "/", "mcpServers": []}, timeout=5)
    assert result == {"stopReason": "end_turn"}
    if fault == "storm":
        assert seen.requests == 2000
        assert seen.chunks == ["storm of 2000 requests answered"]
    else:
        assert seen.chunks == [f"chunk {i}" for i in range(1, 6)]
    assert_no_leak(before)
    what = f"{seen.requests} agent requests answered; " if fault == "storm" else ""
    observe(
        "JSON-RPC peer",
        fault,
        f"request answered; {what}{len(seen.chunks)} notifications; {reported(seen.errors)}",
    )


async def test_a_crash_fails_the_pending_request_naming_the_exit(observe: Observe) -> None:
    before = snapshot()
    with anyio.fail_after(BOUND):
        async with chaos_peer("crash-after", "3") as (peer, seen):
            with pytest.raises(ConnectionClosedError) as info:
                await prompt(peer)
    assert seen.chunks == ["chunk 1", "chunk 2", "chunk 3"]
    assert "exited with status 3" in str(info.value)
    assert_no_leak(before)
    observe(
        "JSON-RPC peer",
        "crash-after",
        f"{len(seen.chunks)} notifications, then ConnectionClosedError: {info.value}",
    )


@pytest.mark.parametrize("fault", ["hang", "ignore-cancel", "wrong-ids", "hang-init"])
async def test_an_unanswered_request_times_out_in_bound(fault: str, observe: Observe) -> None:
    """The per-request timeout bounds every wait (and a $/cancel_request is sent)."""
    before = snapshot()
    with anyio.fail_after(BOUND):
        async with chaos_peer(fault) as (peer, seen):
            with pytest.raises(TimeoutError):
                await prompt(peer, timeout=1.0) if fault != "hang-init" else await peer.request(
                    "initialize", INIT, timeout=1.0
                )
    assert_no_leak(before)
    if fault != "hang-init":
        assert seen.chunks[:2] == ["chunk 1", "chunk 2"]
    observe(
        "JSON-RPC peer",
        fault,
        "TimeoutError after the request's timeout (1 s here); the notifications sent before "
        f"it delivered; {reported(seen.errors)}",
    )


async def test_an_exit_during_a_request_names_the_status(observe: Observe) -> None:
    before = snapshot()
    with anyio.fail_after(BOUND):
        async with chaos_peer("exit-during-init") as (peer, _):
            with pytest.raises(ConnectionClosedError) as info:
                await peer.request("initialize", INIT, timeout=5)
    assert "exited with status 4" in str(info.value)
    assert_no_leak(before)
    observe("JSON-RPC peer", "exit-during-init", f"ConnectionClosedError: {info.value}")


async def test_answering_a_notification_is_reported(observe: Observe) -> None:
    before = snapshot()
    with anyio.fail_after(BOUND):
        async with chaos_peer("answer-notify") as (peer, seen):
            await peer.request("initialize", INIT, timeout=5)
            await peer.notify("session/cancel", {"sessionId": "chaos-1"})
            await peer.request("session/new", {"cwd": "/", "mcpServers": []}, timeout=5)
    assert seen.errors
    assert_no_leak(before)
    observe("JSON-RPC peer", "answer-notify", f"the peer goes on; {reported(seen.errors)}")


async def test_stderr_flood_and_eof_and_grandchild_end_clean(
    tmp_path: Path, observe: Observe
) -> None:
    """The process layer under the peer: a 100 MB stderr flood is drained, an agent that
    ignores EOF is stopped by the ladder, and a SIGTERM-proof grandchild is killed."""
    for fault, args in (
        ("stderr-flood", ("100",)),
        ("no-eof-exit", ()),
        ("grandchild", (str(tmp_path / "pid"),)),
    ):
        before = snapshot()
        with anyio.fail_after(90):
            async with chaos_peer(fault, *args) as (peer, seen):
                result = await prompt(peer, timeout=60)
        assert result == {"stopReason": "end_turn"}
        also = {int((tmp_path / "pid").read_text())} if fault == "grandchild" else set[int]()
        assert_no_leak(before, also_gone=also)
        observe(
            "JSON-RPC peer",
            fault,
            f"request answered; {len(seen.chunks)} notifications; nothing left after the block",
        )
