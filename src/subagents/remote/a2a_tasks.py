"""The A2A server's task store, bounded (``subagents serve --a2a --max-stored-tasks N``).

The SDK's ``InMemoryTaskStore`` keeps every task it is given for as long as the process
runs. :class:`BoundedTaskStore` implements the same ``TaskStore`` interface (the tasks
themselves are held by an ``InMemoryTaskStore`` inside: deep copies in and out, the SDK's own
``ListTasks`` filters and pages) and forgets tasks by these rules:

- **Running** tasks (submitted, working, or any other state that is neither terminal nor
  interrupted) are kept until they change state: the executor bounds how many run at once.
- **Terminal** tasks (completed, failed, canceled, rejected): at most ``max_terminal`` are
  kept; one more evicts the least recently used. A task counts as used when it is saved (so
  one that has just ended is the most recent) and when it is read by id (``GetTask``,
  ``SendMessage`` to it, ``CancelTask``...); listing uses nothing.
- **Interrupted** tasks (input-required, auth-required) wait for a client that may never
  come back: one idle (neither saved nor read) for ``interrupted_timeout`` seconds is evicted,
  and at most ``max_terminal`` of them are kept (the least recently used evicted first). Idle
  ones are found at each call of the store (no timer runs).
- **Bytes**: a task holds its whole history and artifacts (each message up to the server's
  body limit). While the stored tasks together exceed ``max_bytes`` (their serialized size),
  the least recently used terminal task is evicted, then the least recently used interrupted
  one; running tasks are never evicted (the executor bounds how many run, the body limit what
  each message adds).

An evicted task is gone: ``get`` answers ``None``, so the SDK's request handler answers its
usual "task not found" error. Tasks are scoped by owner (``owner_resolver``, the SDK's
default: the authenticated user's name) as in the SDK's store; the bounds count all owners
together. Needs the a2a extra (``pip install 'subagents[a2a]'``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, cast, final

from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import OwnerResolver, resolve_user_scope
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task, TaskState

__all__ = (
    "DEFAULT_INTERRUPTED_TIMEOUT",
    "DEFAULT_MAX_STORED_TASKS",
    "DEFAULT_MAX_STORED_TASK_BYTES",
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
    "BoundedTaskStore",
)

DEFAULT_MAX_STORED_TASKS: Final = 1000
"""How many terminal (and how many interrupted) tasks are kept unless told otherwise."""
DEFAULT_INTERRUPTED_TIMEOUT: Final = 3600.0
"""Seconds an input-required or auth-required task may sit idle before it is evicted."""
DEFAULT_MAX_STORED_TASK_BYTES: Final = 256 * 1024 * 1024
"""The bytes all stored tasks may hold together unless told otherwise (256 MiB)."""

TERMINAL_STATES: Final = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
"""The states a task never leaves."""
INTERRUPTED_STATES: Final = frozenset(
    {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}
)
"""The states in which a task waits for its client."""

_OWNER: Final = "subagents.a2a_tasks.owner"
"""The key of the owner in the contexts handed to the inner store."""

_Key = tuple[str, str]
"""(owner, task id)."""


def _inner_owner(context: ServerCallContext) -> str:
    return cast(str, context.state[_OWNER])


@final
class BoundedTaskStore(TaskStore):
    """A ``TaskStore`` keeping every running task, the ``max_terminal`` most recently used
    terminal tasks, and interrupted tasks used in the last ``interrupted_timeout`` seconds (at
    most ``max_terminal`` of them); see the module docstring for the rules.

    ``max_bytes`` bounds the serialized size of all stored tasks together (``None``: no
    bound). ``clock`` gives the time in seconds (monotonic); ``owner_resolver`` names a
    call's owner.
    """

    def __init__(
        self,
        max_terminal: int = DEFAULT_MAX_STORED_TASKS,
        *,
        interrupted_timeout: float = DEFAULT_INTERRUPTED_TIMEOUT,
        max_bytes: int | None = DEFAULT_MAX_STORED_TASK_BYTES,
        owner_resolver: OwnerResolver = resolve_user_scope,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_terminal < 1:
            raise ValueError("max_terminal must be at least 1")
        if interrupted_timeout <= 0:
            raise ValueError("interrupted_timeout must be greater than 0")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.max_terminal = max_terminal
        self.max_bytes = max_bytes
        self.interrupted_timeout = interrupted_timeout
        self.owner_resolver = owner_resolver
        self._clock = clock
        self._tasks = InMemoryTaskStore(owner_resolver=_inner_owner)
        self._running: set[_Key] = set()
        self._terminal: OrderedDict[_Key, None] = OrderedDict()
        """Least recently used first."""
        self._interrupted: OrderedDict[_Key, float] = OrderedDict()
        """Key -> when last used; least recently used first."""
        self._sizes: dict[_Key, int] = {}
        """Key -> the stored task's serialized size."""
        self._bytes = 0

    @property
    def running(self) -> int:
        """How many running tasks are stored."""
        return len(self._running)

    @property
    def terminal(self) -> int:
        """How many terminal tasks are stored."""
        return len(self._terminal)

    @property
    def interrupted(self) -> int:
        """How many interrupted tasks are stored."""
        return len(self._interrupted)

    @property
    def bytes(self) -> int:
        """The serialized size of the stored tasks together."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._running) + len(self._terminal) + len(self._interrupted)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Store ``task`` (a copy) for the call's owner, count it as used, then evict what
        the bounds say."""
        owner = self.owner_resolver(context)
        key = (owner, task.id)
        await self._tasks.save(task, _context(owner))
        self._forget(key)
        state = task.status.state
        if state in TERMINAL_STATES:
            self._terminal[key] = None
        elif state in INTERRUPTED_STATES:
            self._interrupted[key] = self._clock()
        else:
            self._running.add(key)
        self._sizes[key] = size = task.ByteSize()
        self._bytes += size
        await self._evict()

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task (a copy) for the call's owner, counted as used; ``None`` when unknown or
        evicted."""
        await self._evict()
        owner = self.owner_resolver(context)
        task = await self._tasks.get(task_id, _context(owner))
        if task is not None:
            key = (owner, task_id)
            if key in self._terminal:
                self._terminal.move_to_end(key)
            elif key in self._interrupted:
                self._interrupted[key] = self._clock()
                self._interrupted.move_to_end(key)
        return task

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The call's owner's stored tasks, filtered and paged as ``params`` say (the SDK's
        rules); nothing is counted as used."""
        await self._evict()
        return await self._tasks.list(params, _context(self.owner_resolver(context)))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget the task for the call's owner (nothing when unknown)."""
        owner = self.owner_resolver(context)
        self._forget((owner, task_id))
        await self._tasks.delete(task_id, _context(owner))

    def _holds(self, key: _Key) -> bool:
        return key in self._running or key in self._terminal or key in self._interrupted

    def _forget(self, key: _Key) -> None:
        self._running.discard(key)
        self._terminal.pop(key, None)
        self._interrupted.pop(key, None)
        self._bytes -= self._sizes.pop(key, 0)

    async def _evict(self) -> None:
        """Drop terminal tasks past the bound, then interrupted ones past the bound or idle
        too long (least recently used first, both)."""
        gone: list[_Key] = []
        while len(self._terminal) > self.max_terminal:
            key, _ = self._terminal.popitem(last=False)
            gone.append(key)
        deadline = self._clock() - self.interrupted_timeout
        while self._interrupted:
            key, used = next(iter(self._interrupted.items()))
            if len(self._interrupted) <= self.max_terminal and used > deadline:
                break
            del self._interrupted[key]
            gone.append(key)
        for key in gone:
            self._bytes -= self._sizes.pop(key, 0)
        gone += self._evict_bytes()
        for key in gone:
            if not self._holds(key):  # not saved again meanwhile
                await self._tasks.delete(key[1], _context(key[0]))

    def _evict_bytes(self) -> list[_Key]:
        """Forget finished tasks (terminal, then interrupted; least recently used first)
        while the stored ones exceed ``max_bytes``; the keys forgotten."""
        gone: list[_Key] = []
        if self.max_bytes is None:
            return gone
        while self._bytes > self.max_bytes and (self._terminal or self._interrupted):
            if self._terminal:
                key, _ = self._terminal.popitem(last=False)
            else:
                key, _ = self._interrupted.popitem(last=False)
            self._bytes -= self._sizes.pop(key, 0)
            gone.append(key)
        return gone


def _context(owner: str) -> ServerCallContext:
    """A call context naming ``owner`` to the inner store."""
    return ServerCallContext(state={_OWNER: owner})
