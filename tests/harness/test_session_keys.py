"""Session keys are unique per sessions folder (issue 35, part A, point 3): across roots of one
runtime, runtimes on one folder and processes on one folder, so a snapshot recording (named by
the key) is never overwritten, while a run alone keeps the deterministic keys replay finds.

Each test's docstring names the requirement it checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from subagents.harness.llm.offline import OfflineModel
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import SessionStore
from subagents.harness.snapshots import SnapshotStore
from subagents.providers import CancelSignal, SubagentRequest, SubagentService
from subagents.providers.fork import ForkProvider
from subagents.providers.spawn import SpawnProvider

pytestmark = pytest.mark.anyio


def keys_in(sessions: Path) -> list[str]:
    """The keys of the session files in ``sessions`` (from their headers), sorted."""
    keys: list[str] = []
    for path in sessions.glob("*.jsonl"):
        header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        keys.append(str(header["key"]))
    return sorted(keys)


async def delegate_once(runtime: AgentRuntime, prompt: str) -> None:
    """One root turn that delegates ``prompt`` to a spawned child."""
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn:
        service.register(spawn)
        runtime.offer_subagents(service, "spawn")
        root = runtime.root_agent()
        with anyio.fail_after(10):
            outcome = await root.run(f"delegate {prompt}", cancel=CancelSignal())
    assert outcome.text == f"subagent said: You said: {prompt}"


async def test_a_runtime_alone_keeps_the_deterministic_keys(tmp_path: Path) -> None:
    """Issue 35, part A, point 3: with no collision the keys stay what replay expects: the
    root ``root``, its children ``root.1``, ``root.2``, a grandchild ``root.1.1``, a detached
    child ``detached-none.1``."""
    runtime = AgentRuntime(OfflineModel(), sessions=SessionStore(tmp_path))
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn:
        service.register(spawn)
        runtime.offer_subagents(service, "spawn")
        root = runtime.root_agent()
        with anyio.fail_after(10):
            await root.run("delegate delegate hello", cancel=CancelSignal())
            await root.run("delegate again", cancel=CancelSignal())
            async with await spawn.start(SubagentRequest("alone"), cancel=CancelSignal()) as run:
                await run.result()
    assert keys_in(tmp_path) == ["detached-none.1", "root", "root.1", "root.1.1", "root.2"]


async def test_two_roots_of_one_runtime_get_distinct_keys(tmp_path: Path) -> None:
    """Issue 35, part A, point 3: two roots of one runtime (each ``root_agent()`` call, as
    ``subagents run`` and ``subagents.delegate`` make one per fork) and their children get
    distinct keys (both were ``root`` and ``root.1``)."""
    runtime = AgentRuntime(OfflineModel(), sessions=SessionStore(tmp_path))
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn:
        service.register(spawn)
        runtime.offer_subagents(service, "spawn")
        for prompt in ("first", "second"):
            with anyio.fail_after(10):
                outcome = await runtime.root_agent().run(
                    f"delegate {prompt}", cancel=CancelSignal()
                )
            assert outcome.text == f"subagent said: You said: {prompt}"
    keys = keys_in(tmp_path)
    assert len(set(keys)) == len(keys) == 4
    assert "root" in keys
    assert "root.1" in keys


async def test_two_runtimes_on_one_folder_get_distinct_keys_and_keep_both_recordings(
    tmp_path: Path,
) -> None:
    """Issue 35, part A, point 3: two runtimes on one sessions folder, recording snapshots
    into one folder, get distinct keys (roots, children and detached children: the detached
    ones were both ``detached-none.1``), and neither recording overwrites the other's."""
    sessions, snapshots = tmp_path / "sessions", tmp_path / "snapshots"
    for prompt in ("first", "second"):
        runtime = AgentRuntime(
            OfflineModel(),
            sessions=SessionStore(sessions),
            snapshots=SnapshotStore(snapshots, "record"),
        )
        await delegate_once(runtime, prompt)
        async with SpawnProvider(runtime) as spawn:
            request = SubagentRequest(f"alone {prompt}")
            async with await spawn.start(request, cancel=CancelSignal()) as run:
                with anyio.fail_after(10):
                    assert (await run.result()).output == f"You said: alone {prompt}"
    keys = keys_in(sessions)
    assert len(set(keys)) == len(keys) == 6
    assert "detached-none.1" in keys
    recorded = sorted(p.stem for p in snapshots.glob("*.jsonl"))
    assert recorded == keys
    texts = "".join(p.read_text(encoding="utf-8") for p in snapshots.glob("*.jsonl"))
    for prompt in ("first", "second"):
        assert f"delegate {prompt}" in texts
        assert f"alone {prompt}" in texts


SCRIPT = """
import sys
from pathlib import Path

import anyio

from subagents.harness.llm.offline import OfflineModel
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import SessionStore
from subagents.harness.snapshots import SnapshotStore
from subagents.providers import CancelSignal, SubagentService
from subagents.providers.fork import ForkProvider


async def main(sessions: str, snapshots: str, prompt: str) -> None:
    runtime = AgentRuntime(
        OfflineModel(),
        sessions=SessionStore(Path(sessions)),
        snapshots=SnapshotStore(snapshots, "record"),
    )
    service = SubagentService()
    async with ForkProvider(runtime) as fork:
        service.register(fork)
        runtime.offer_subagents(service, "fork")
        root = runtime.root_agent()
        outcome = await root.run("delegate " + prompt, cancel=CancelSignal())
    print(outcome.text)


anyio.run(main, *sys.argv[1:])
"""


def test_two_processes_on_one_folder_get_distinct_keys_and_keep_both_recordings(
    tmp_path: Path,
) -> None:
    """Issue 35, part A, point 3: two processes (as two ``subagents run`` calls on one
    ``sessions`` folder, each starting from a root) get distinct keys, and the second
    recording does not overwrite the first's."""
    sessions, snapshots = tmp_path / "sessions", tmp_path / "snapshots"
    for prompt in ("first", "second"):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(sessions), str(snapshots), prompt],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"subagent said: You said: {prompt}"
    keys = keys_in(sessions)
    assert len(set(keys)) == len(keys) == 4
    assert sorted(p.stem for p in snapshots.glob("*.jsonl")) == keys
    texts = "".join(p.read_text(encoding="utf-8") for p in snapshots.glob("*.jsonl"))
    assert "delegate first" in texts
    assert "delegate second" in texts


async def test_a_fork_run_replays_after_another_run_on_the_same_folder(tmp_path: Path) -> None:
    """Issue 35, part A, point 3: a recording made on a folder that already had a run (so its
    keys were bumped) replays in a fresh folder where the same sequence of runs gets the same
    keys."""
    snapshots = tmp_path / "snapshots"

    async def two_runs(sessions: Path, mode: str) -> list[str]:
        texts: list[str] = []
        store = SessionStore(sessions)
        for prompt in ("first", "second"):
            runtime = AgentRuntime(
                OfflineModel() if mode == "record" else None,
                sessions=store,
                snapshots=SnapshotStore(snapshots, "record" if mode == "record" else "replay"),
            )
            service = SubagentService()
            async with ForkProvider(runtime) as fork:
                service.register(fork)
                runtime.offer_subagents(service, "fork")
                with anyio.fail_after(10):
                    outcome = await runtime.root_agent().run(
                        f"delegate {prompt}", cancel=CancelSignal()
                    )
            texts.append(outcome.text)
        return texts

    recorded = await two_runs(tmp_path / "a", "record")
    replayed = await two_runs(tmp_path / "b", "replay")
    assert (
        replayed
        == recorded
        == [
            "subagent said: You said: first",
            "subagent said: You said: second",
        ]
    )
    assert keys_in(tmp_path / "a") == keys_in(tmp_path / "b")


def test_a_folder_from_before_key_claims_has_its_keys_claimed(tmp_path: Path) -> None:
    """Issue 35, part A, point 3: a sessions folder written before keys were claimed (session
    files, no claims) has its sessions' keys claimed on first use: a new root there does not
    take the key (and so the recording) of an old one."""
    old = SessionStore(tmp_path).create(key="root")
    for claim in (tmp_path / ".keys").iterdir():
        claim.unlink()
    (tmp_path / ".keys").rmdir()
    assert keys_in(tmp_path) == ["root"]
    new = SessionStore(tmp_path).create()
    assert new.key != old.key
    assert keys_in(tmp_path) == ["root", new.key]


async def test_two_delegations_to_a_fork_entry_on_one_folder_get_distinct_keys(
    tmp_path: Path,
) -> None:
    """Issue 35, part A, point 3: ``subagents.delegate`` (as ``subagents run``) to a fork entry
    whose sessions folder is shared starts each call from a root of its own: two calls get
    four distinct keys (both calls' root and child were ``root`` and ``root.1``)."""
    import subagents

    registry = tmp_path / "agents.toml"
    registry.write_text(
        '[agents.forked]\nprovider = "fork"\noptions = { sessions = "sessions" }\n',
        encoding="utf-8",
    )
    for prompt in ("first", "second"):
        with anyio.fail_after(30):
            events = [e async for e in subagents.delegate("forked", prompt, config=registry)]
        outcome = events[-1]
        assert isinstance(outcome, subagents.DelegationOutcome)
        assert outcome.output == f"You said: {prompt}"
    keys = keys_in(tmp_path / "sessions")
    assert len(set(keys)) == len(keys) == 4
    assert {"root", "root.1"} <= set(keys)


async def test_a_key_recorded_twice_at_once_in_one_process_is_refused_not_overwritten(
    tmp_path: Path,
) -> None:
    """Issue 35, part A, point 3: two runtimes with stores of their own (in memory: their keys
    are unique only in each) recording into one snapshot folder would both record ``root``;
    the second is refused, naming the file and what to do, and the first recording is kept
    whole. Once the first runtime is gone, recording the key again (re-recording) works."""
    snapshots = tmp_path / "snapshots"
    first = AgentRuntime(OfflineModel(), snapshots=SnapshotStore(snapshots, "record"))
    with anyio.fail_after(10):
        await first.root_agent().run("hello", cancel=CancelSignal())
    recorded = (snapshots / "root.jsonl").read_text(encoding="utf-8")
    second = AgentRuntime(OfflineModel(), snapshots=SnapshotStore(snapshots, "record"))
    with pytest.raises(ValueError, match="already being recorded") as info:
        second.root_agent()
    assert "root.jsonl" in str(info.value)
    assert "sessions folder" in str(info.value)
    assert (snapshots / "root.jsonl").read_text(encoding="utf-8") == recorded
    del first
    again = AgentRuntime(OfflineModel(), snapshots=SnapshotStore(snapshots, "record"))
    with anyio.fail_after(10):
        await again.root_agent().run("bye", cancel=CancelSignal())
    assert "bye" in (snapshots / "root.jsonl").read_text(encoding="utf-8")
