"""How ``subagents run`` answers a child's permission requests.

The provider is always built with ``permission = "ask"`` and this asker, so that every
request passes here (and is reported as a JSON event) whatever the effective policy:
``allow`` / ``deny`` answer at once; ``ask`` asks on the terminal when there is one, and
denies otherwise (a note says so, once). The answer is read in a worker thread that polls,
so a cancelled question (the run's signal fired, or the run was stopped) leaves no thread
blocked on the terminal.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from functools import partial
from typing import Final, final

import anyio
import anyio.to_thread

from ..config import Permission
from ..providers.contract import CancelSignal
from ..providers.factory import PermissionQuestion
from ..providers.progress import ProgressFeed
from ._run_console import Console

__all__ = ("Permissions", "read_answer")

_POLL: Final = 0.1
_DETAIL_WIDTH: Final = 200
_CATCH_UP: Final = 0.5
"""How long a question waits for the run's earlier progress to be shown before it."""


def read_answer(stop: threading.Event, tty: str = "/dev/tty") -> str | None:
    """One line typed on the terminal (``/dev/tty``, else stdin); ``None`` once ``stop`` is
    set first; ``""`` at end of input."""
    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY)
        owned = True
    except OSError:
        fd = sys.stdin.fileno()
        owned = False
    try:
        data = b""
        while not stop.is_set():
            readable, _, _ = select.select([fd], [], [], _POLL)
            if not readable:
                continue
            chunk = os.read(fd, 1024)
            if not chunk:
                return data.decode(errors="replace")
            data += chunk
            if b"\n" in data:
                return data.split(b"\n", 1)[0].decode(errors="replace")
        return None
    finally:
        if owned:
            os.close(fd)


@final
class Permissions:
    """The asker given to the provider (``BuildContext(ask=...)``)."""

    def __init__(
        self,
        console: Console,
        *,
        policy: Permission,
        why: str,
        interactive: bool,
        cancel: CancelSignal,
    ) -> None:
        self.console = console
        self.policy: Permission = policy
        self.why = why
        """Where the policy comes from, for notes (``--yes``, ``permission = "deny"``)."""
        self.interactive = interactive
        self.cancel = cancel
        self._lock = anyio.Lock()
        self._noted_no_terminal = False
        self.progress: ProgressFeed | None = None
        """The run's progress, once it started: a question is shown after what came before
        it on the wire (the tool call it is about), not before."""

    async def __call__(self, question: PermissionQuestion) -> bool:
        if self.progress is not None:
            with anyio.move_on_after(_CATCH_UP):
                await self.progress.caught_up()
        async with self._lock:  # one question on the terminal at a time
            if self.policy == "allow":
                allowed, how = True, f"allowed ({self.why})"
            elif self.policy == "deny":
                allowed, how = False, f"denied ({self.why})"
            elif self.interactive:
                allowed = await self._ask(question)
                how = "allowed (you said yes)" if allowed else "denied"
            else:
                allowed, how = False, "denied"
                if not self._noted_no_terminal:
                    self._noted_no_terminal = True
                    self.console.note(
                        f'permission is "ask" ({self.why}) but there is no terminal to ask '
                        "in, so every request is denied (pass --yes to allow)"
                    )
        self.console.event(
            {
                "event": "permission",
                "tool": question.tool,
                "detail": question.detail,
                "allowed": allowed,
            }
        )
        if not self.console.json_mode:
            self.console.note(f"permission: {question.tool}: {how}")
        return allowed

    async def _ask(self, question: PermissionQuestion) -> bool:
        if self.cancel.cancelled:
            return False
        detail = " ".join(question.detail.split())
        if len(detail) > _DETAIL_WIDTH:
            detail = detail[: _DETAIL_WIDTH - 1] + "…"
        self.console.prompt(
            f"Allow {question.agent} to use {question.tool}? {detail + ' ' if detail else ''}[y/N] "
        )
        stop = threading.Event()
        answer: str | None = None
        with self.cancel.linked_scope():
            try:
                answer = await anyio.to_thread.run_sync(
                    partial(read_answer, stop), abandon_on_cancel=True
                )
            finally:
                stop.set()
        if answer is None:
            self.console.line("")
            return False
        return answer.strip().lower() in ("y", "yes")
