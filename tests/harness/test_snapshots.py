"""Snapshot replay (issue 8, part 4): each session's model exchanges are recorded to a file
named by its stable key, and nested scenarios (parent -> child -> grandchild, spawn and fork)
replay from checked-in snapshots with no adapter at all (no key, no network). Replay fails
loudly when a request does not match its snapshot.

Regenerate the checked-in snapshots after a deliberate change with
``SUBAGENTS_RECORD_SNAPSHOTS=1 .venv/bin/pytest tests/harness/test_snapshots.py``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from subagents.harness.llm.offline import OfflineModel
from subagents.harness.loop import TurnOutcome
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import SessionStore
from subagents.harness.snapshots import SnapshotMode, SnapshotStore, first_difference
from subagents.providers import CancelSignal, SubagentService
from subagents.providers.fork import ForkProvider
from subagents.providers.spawn import SpawnProvider

pytestmark = pytest.mark.anyio

CHECKED_IN = Path(__file__).with_name("snapshots")
SCENARIOS: dict[str, tuple[str, tuple[str, ...]]] = {
    # name: (provider the agents delegate to, the root's prompts, one turn each)
    "spawn-nested": ("spawn", ("delegate delegate hello",)),
    "fork-nested": ("fork", ("remember the number 7", "delegate delegate what was it?")),
}
EXPECTED = {
    "spawn-nested": ["subagent said: subagent said: You said: hello"],
    "fork-nested": [
        "You said: remember the number 7",
        "subagent said: subagent said: You said: what was it?",
    ],
}


@asynccontextmanager
async def runtime_for(
    directory: Path, mode: SnapshotMode, provider: str, sessions: Path
) -> AsyncIterator[AgentRuntime]:
    adapter = OfflineModel() if mode == "record" else None
    runtime = AgentRuntime(
        adapter, sessions=SessionStore(sessions), snapshots=SnapshotStore(directory, mode)
    )
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn, ForkProvider(runtime) as fork:
        service.register(spawn)
        service.register(fork)
        runtime.offer_subagents(service, provider)
        yield runtime


async def play(
    name: str, directory: Path, mode: SnapshotMode, sessions: Path, prompts: tuple[str, ...] = ()
) -> list[TurnOutcome]:
    provider, default_prompts = SCENARIOS[name]
    outcomes: list[TurnOutcome] = []
    async with runtime_for(directory, mode, provider, sessions) as runtime:
        root = runtime.root_agent(key=name)
        for prompt in prompts or default_prompts:
            with anyio.fail_after(10):
                outcomes.append(await root.run(prompt, cancel=CancelSignal()))
    return outcomes


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_a_nested_scenario_replays_from_its_checked_in_snapshots(
    name: str, tmp_path: Path
) -> None:
    """Issue 8, done means: nested spawn/fork scenarios replay from checked-in snapshots in
    the test command (three sessions each: parent, child, grandchild)."""
    directory = CHECKED_IN / name
    if os.environ.get("SUBAGENTS_RECORD_SNAPSHOTS") == "1":
        shutil.rmtree(directory, ignore_errors=True)
        await play(name, directory, "record", tmp_path / "recorded")
    before = {p.name: p.read_bytes() for p in directory.glob("*.jsonl")}
    assert set(before) == {f"{name}.jsonl", f"{name}.1.jsonl", f"{name}.1.1.jsonl"}
    outcomes = await play(name, directory, "replay", tmp_path / "sessions")
    assert [o.status for o in outcomes] == ["completed"] * len(EXPECTED[name])
    assert [o.text for o in outcomes] == EXPECTED[name]
    assert {p.name: p.read_bytes() for p in directory.glob("*.jsonl")} == before


async def test_recording_then_replaying_gives_the_same_sessions(tmp_path: Path) -> None:
    """Issue 8 / snapshots: a recorded run replays to the same outcome and the same logs
    (streamed chunks included), with no adapter."""
    recorded = await play("fork-nested", tmp_path / "snaps", "record", tmp_path / "a")
    replayed = await play("fork-nested", tmp_path / "snaps", "replay", tmp_path / "b")
    assert [o.text for o in replayed] == [o.text for o in recorded]

    def logs(directory: Path) -> dict[str, list[object]]:
        result: dict[str, list[object]] = {}
        for path in directory.glob("*.jsonl"):
            lines = [json.loads(line) for line in path.read_text().splitlines()]
            result[lines[0]["key"]] = lines[1:]
        return result

    assert logs(tmp_path / "a") == logs(tmp_path / "b")
    first = json.loads((tmp_path / "snaps" / "fork-nested.jsonl").read_text().splitlines()[0])
    assert first["chunks"] == ["You ", "said: ", "remember ", "the ", "number ", "7"]


async def test_a_request_that_differs_from_its_snapshot_fails_loudly(tmp_path: Path) -> None:
    """Issue 8 / snapshots: replay fails loudly when a request does not match: the turn fails
    naming the file, the call and the first difference."""
    directory = CHECKED_IN / "spawn-nested"
    outcomes = await play(
        "spawn-nested", directory, "replay", tmp_path, prompts=("delegate delegate bye",)
    )
    assert outcomes[0].status == "failed"
    assert outcomes[0].message == (
        "the model call failed: snapshot spawn-nested.jsonl: call 1 differs from the "
        'recording: request.messages[0].text: recorded "delegate delegate hello" != now '
        '"delegate delegate bye"'
    )


async def test_a_call_beyond_the_snapshot_fails_loudly(tmp_path: Path) -> None:
    directory = tmp_path / "snaps"
    directory.mkdir()
    source = CHECKED_IN / "spawn-nested"
    for path in source.glob("*.jsonl"):
        shutil.copy(path, directory / path.name)
    root = directory / "spawn-nested.jsonl"
    root.write_text(root.read_text().splitlines()[0] + "\n")
    outcomes = await play("spawn-nested", directory, "replay", tmp_path / "sessions")
    assert outcomes[0].status == "failed"
    assert outcomes[0].message.endswith("call 2 was not recorded (the snapshot has 1)")


async def test_replay_without_a_snapshot_says_to_record_it_first(tmp_path: Path) -> None:
    outcomes = await play("spawn-nested", tmp_path / "empty", "replay", tmp_path / "sessions")
    assert outcomes[0].status == "failed"
    assert "record it first" in outcomes[0].message


def test_first_difference_names_the_path() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == (
        "request.a[1].b: recorded 2 != now 3"
    )
    assert first_difference({"a": [1]}, {"a": [1, 2]}) == "request.a: 1 recorded items, 2 now"
    assert first_difference({"a": 1}, {"a": 1}) is None
