"""Leak checks for tests and benchmarks: this process's descendants (zombies included) and
its open file descriptors, read from the process table (``/proc``, Linux), and the running
event loop's tasks (asyncio or trio, through anyio; none when called outside a loop), before
and after, with a bounded grace for the kernel to finish reaping::

    before = snapshot()
    ...  # start and dispose of children
    assert_no_leak(before)   # raises AssertionError listing every process, fd and task left

A task still running after the blocks that started it have ended is a task nobody owns
(structured concurrency ends every owned task with its block), so tasks get no grace.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio

__all__ = ("Resources", "assert_no_leak", "descendants", "snapshot")


@dataclass(frozen=True)
class Resources:
    children: frozenset[int]
    fds: frozenset[int]
    tasks: Mapping[int, str] = field(default_factory=dict[int, str])
    """Task id -> name of the event loop's live tasks (empty outside a loop)."""


def live_tasks() -> dict[int, str]:
    """Task id -> name of the running event loop's live tasks (empty outside a loop)."""
    try:
        running = anyio.get_running_tasks()
    except RuntimeError:  # no event loop runs here
        return {}
    return {task.id: task.name or repr(task.coro) for task in running}


def _ppid_and_state(pid: int) -> tuple[int, str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0]


def descendants(root: int | None = None) -> set[int]:
    """Every live or zombie process below ``root`` (this process by default)."""
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            found = _ppid_and_state(int(entry.name))
            if found is not None:
                parents[int(entry.name)] = found[0]
    below: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - below
        below |= frontier
    return below


def snapshot() -> Resources:
    return Resources(frozenset(descendants()), _open_fds(), live_tasks())


def _open_fds() -> frozenset[int]:
    """This process's open descriptors (not the one listing them, closed by then)."""
    listed = [int(name) for name in os.listdir("/proc/self/fd")]
    still: set[int] = set()
    for fd in listed:
        try:
            os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        still.add(fd)
    return frozenset(still)


def assert_no_leak(
    before: Resources, grace: float = 3.0, *, also_gone: frozenset[int] | set[int] = frozenset()
) -> None:
    """Fail unless no task, and within ``grace`` seconds no process and no descriptor, is
    left beyond ``before`` (and every pid of ``also_gone``, say a grandchild that left our
    tree, is gone)."""
    stray = {task: name for task, name in live_tasks().items() if task not in before.tasks}
    if stray:
        raise AssertionError(
            "tasks left running after dispose:\n  "
            + "\n  ".join(f"task {task}: {name}" for task, name in sorted(stray.items()))
        )
    deadline = time.monotonic() + grace
    while True:
        now = snapshot()
        extra_children = now.children - before.children
        extra_fds = now.fds - before.fds
        alive = {pid for pid in also_gone if _ppid_and_state(pid) is not None}
        if not extra_children and not extra_fds and not alive:
            return
        if time.monotonic() >= deadline:
            detail: list[str] = []
            for pid in sorted(extra_children | alive):
                found = _ppid_and_state(pid)
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                except OSError:
                    cmd = b"?"
                detail.append(f"pid {pid} state {found[1] if found else '?'}: {cmd[:120]!r}")
            for fd in sorted(extra_fds):
                try:
                    detail.append(f"fd {fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
                except OSError:
                    detail.append(f"fd {fd} (closed while reading)")
            raise AssertionError("left behind after dispose:\n  " + "\n  ".join(detail))
        time.sleep(0.05)
