"""Steps several checks share."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio

from ...transports.process import ProcessExit
from ..framework import CheckContext
from ..wire import AgentWire, ClientSide, Line, Response

HISTORY_UPDATES = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)
"""``sessionUpdate`` kinds that make up a conversation's history (what a replay sends)."""


@dataclass
class Exchange:
    """What the ordinary exchange of a :class:`BasicRun` produced."""

    init: dict[str, Any]
    session_id: str
    prompt: Response


EXIT_WAIT = 5.0
"""How long an agent gets to exit once its stdin is closed (ACP-SHUTDOWN-001)."""
POLL = 0.05
"""Files appearing and processes of other parents ending have no event: polled this often."""

BASIC = "basic"
"""The key of the shared :class:`BasicRun` (``@check(..., shares=BASIC)``)."""


@dataclass
class BasicRun:
    """One agent process as a client meets it: initialize, session/new, one ordinary prompt,
    a quiet period, then its stdin closed and its exit watched. The checks of what an ordinary
    exchange shows (the initialize result, the session id, the turn, the transport, the schema,
    stderr, the shutdown) all judge this one process (see :func:`basic_run`)."""

    wire: AgentWire
    init: dict[str, Any] | None = None
    session_id: str | None = None
    prompt_start: int = 0
    """Index in ``wire.lines`` of the prompt request."""
    prompt: Response | None = None
    error: Exception | None = None
    """What a step raised (a failure, a block, an inconclusive set-up): the steps after it
    were not run."""
    times: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Seconds that initialize (from the process start), session/new and the prompt took."""
    stderr_bytes: int = 0
    """Bytes on stderr by the end of the exchange (before stdin was closed)."""
    exit: ProcessExit | None = None
    """How it ended after stdin EOF; ``None``: still running :data:`EXIT_WAIT` s later."""
    exit_after: float = 0.0
    """Seconds from stdin EOF to the exit."""
    left_behind: list[int] = field(default_factory=list[int])
    """Processes of its group still running 1 s after it exited."""

    def initialized(self) -> dict[str, Any]:
        """The initialize result; re-raises what initialize raised."""
        if self.init is None:
            assert self.error is not None
            raise self.error
        return self.init

    def session(self) -> str:
        """The session id; re-raises what initialize or session/new raised."""
        if self.session_id is None:
            assert self.error is not None
            raise self.error
        return self.session_id

    def exchanged(self) -> tuple[AgentWire, Exchange]:
        """The wire and the whole exchange; re-raises what any step raised."""
        if self.error is not None:
            raise self.error
        assert self.init is not None
        assert self.session_id is not None
        assert self.prompt is not None
        return self.wire, Exchange(self.init, self.session_id, self.prompt)


async def basic_run(ctx: CheckContext) -> BasicRun:
    """The run's shared :class:`BasicRun` (made by the first check that asks), adopted into
    ``ctx`` so its transcript and schema findings are this check's too."""

    async def make() -> BasicRun:
        async with ctx.agent() as wire:
            run = BasicRun(wire)
            try:
                started = time.monotonic()
                run.init = await ctx.initialize(wire)
                await ctx.authenticate(wire)
                initialized = time.monotonic()
                run.session_id = await ctx.new_session(wire)
                created = time.monotonic()
                run.prompt_start = len(wire.lines)
                run.prompt = await ctx.prompt(wire, run.session_id)
                run.times = (
                    initialized - started,
                    created - initialized,
                    time.monotonic() - created,
                )
                await wire.quiet(ctx.options.quiet_period)
            except Exception as exc:  # recorded: every sharing check re-raises it
                run.error = exc
                return run
            run.stderr_bytes = wire.process.stderr_bytes
            await wire.close_stdin()
            closed = time.monotonic()
            run.exit = await wire.wait_exit(EXIT_WAIT)  # the process's exit is the event
            run.exit_after = time.monotonic() - closed
            if run.exit is not None:
                pgid = wire.process.pid
                await holds_soon(lambda: not group_members(pgid), 1.0)
                run.left_behind = group_members(pgid)
            return run

    run = await ctx.shared(BASIC, make)
    ctx.adopt(run.wire)
    return run


async def holds_soon(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether ``condition`` holds within ``timeout`` (polled every :data:`POLL` s)."""
    with anyio.move_on_after(timeout):
        while not condition():  # noqa: ASYNC110 - no event exists for a file appearing
            await anyio.sleep(POLL)
        return True
    return condition()


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - not Linux
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is the state, fields[2] the process group.
        if int(fields[2]) == pgid and fields[0] != b"Z":
            members.append(int(entry))
    return members


def index_of(wire: AgentWire, line: Line) -> int:
    for index, candidate in enumerate(wire.lines):
        if candidate is line:
            return index
    raise ValueError("line not in the transcript")


def sent_index(wire: AgentWire, method: str, request_id: Any = None) -> int:
    """Index of the last line the client sent with ``method`` (and ``id`` when given)."""
    for index in range(len(wire.lines) - 1, -1, -1):
        line = wire.lines[index]
        message = line.message if line.message is not None else _loads(line.raw)
        if line.direction == "client" and isinstance(message, dict):
            message = cast(dict[str, Any], message)
            if message.get("method") == method and (
                request_id is None or message.get("id") == request_id
            ):
                return index
    raise ValueError(f"{method} was not sent")


def _loads(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def updates_between(
    wire: AgentWire, start: int, end: int | None, session_id: str | None = None
) -> list[dict[str, Any]]:
    """``params`` of the ``session/update`` lines in ``wire.lines[start:end]``."""
    found: list[dict[str, Any]] = []
    for line in wire.lines[start:end]:
        message = line.message
        if line.direction != "agent" or not line.is_message or not isinstance(message, dict):
            continue
        message = cast(dict[str, Any], message)
        if message.get("method") != "session/update" or "id" in message:
            continue
        params = message.get("params")
        if isinstance(params, dict):
            params = cast(dict[str, Any], params)
            if session_id is None or params.get("sessionId") == session_id:
                found.append(params)
    return found


def update_kind(params: dict[str, Any]) -> str | None:
    update = params.get("update")
    if isinstance(update, dict):
        kind = cast(dict[str, Any], update).get("sessionUpdate")
        return kind if isinstance(kind, str) else None
    return None


def first_lines(lines: list[Line], limit: int = 3) -> str:
    shown = "; ".join(repr(line.raw[:200].decode("utf-8", "replace")) for line in lines[:limit])
    more = f" (and {len(lines) - limit} more)" if len(lines) > limit else ""
    return shown + more


ALL_CLIENT = ClientSide(
    read_text_file=True, write_text_file=True, terminal=True, permission="allow"
)
"""A client that offers everything (file system, terminals) and allows tool calls."""


def result_dict(response: Response) -> dict[str, Any]:
    result = response.result
    return cast(dict[str, Any], result) if isinstance(result, dict) else {}
