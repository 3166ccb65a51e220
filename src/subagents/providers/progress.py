"""A bounded feed of live progress events that never blocks the child, and the progress
vocabulary as text and JSON (:func:`describe`, :func:`progress_json`)."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import final

import anyio

from ..protocol.jsonrpc import JsonValue
from .contract import PARTIAL_OUTPUT_LIMIT, ProgressEvent, SubagentOutcome, SubagentRun

__all__ = ("ProgressFeed", "StreamedText", "describe", "progress_json", "stopped_outcome")

logger = logging.getLogger("subagents.providers.progress")


@final
class StreamedText:
    """The text a run streamed, kept (up to a little more than
    :data:`~subagents.providers.contract.PARTIAL_OUTPUT_LIMIT`) for its outcome when the run is
    cancelled, fails or is stopped outright: a progress feed keeps one, and so does a consumer
    of the events (``subagents.delegate``, ``subagents run``)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0

    def add(self, event: ProgressEvent) -> None:
        if event.kind == "text" and self._size <= PARTIAL_OUTPUT_LIMIT:
            self._parts.append(event.text)
            self._size += len(event.text)

    @property
    def text(self) -> str:
        return "".join(self._parts)


async def stopped_outcome(
    run: SubagentRun | None, child_id: str, reason: str, streamed: str = ""
) -> SubagentOutcome:
    """The outcome of a run stopped outright (its turn never ended): ``cancelled`` with
    ``reason``, keeping the text the child streamed: the run's own partial output once its
    disposal settled it (every provider of the package keeps it), else ``streamed`` (what the
    consumer saw)."""
    if run is not None:
        settled: SubagentOutcome | None = None
        with anyio.move_on_after(1.0, shield=True):  # disposed: settled already, or soon
            settled = await run.result()
        if settled is not None:
            if settled.status == "completed":
                return settled
            if settled.partial_output is not None:
                return replace(settled, status="cancelled", message=reason, failure_kind=None)
    return SubagentOutcome.cancelled(child_id, reason, partial=streamed)


@final
class ProgressFeed:
    """A bounded progress iterator: when the consumer lags, the oldest events are dropped.

    The child never blocks on it; :attr:`dropped` counts what the consumer missed.
    ``on_push`` also receives every event as it is pushed (a continued turn's ``on_progress``);
    an exception it raises is logged and dropped.
    """

    def __init__(
        self, capacity: int, *, on_push: Callable[[ProgressEvent], None] | None = None
    ) -> None:
        if capacity < 1:
            raise ValueError("a progress feed needs room for at least one event")
        self._on_push = on_push
        self._events: deque[ProgressEvent] = deque(maxlen=capacity)
        self._wakeup: anyio.Event | None = None
        self._emptied: anyio.Event | None = None
        self._closed = False
        self.dropped = 0
        self._text = StreamedText()

    @property
    def streamed_text(self) -> str:
        """The text events pushed so far, joined (kept whether or not anyone read them, up to
        a little more than :data:`~subagents.providers.contract.PARTIAL_OUTPUT_LIMIT`): a
        cancelled or failed run's partial output."""
        return self._text.text

    def push(self, event: ProgressEvent) -> None:
        if self._closed:
            return
        self._text.add(event)
        if len(self._events) == self._events.maxlen:
            self.dropped += 1
        self._events.append(event)
        self._wake()
        if self._on_push is not None:
            try:
                self._on_push(event)
            except Exception:
                logger.exception("a progress callback raised (the event is dropped for it)")

    def close(self) -> None:
        self._closed = True
        self._wake()
        self._caught_up()

    async def caught_up(self) -> None:
        """Return once every event pushed so far has been read (or the feed is closed): what
        the consumer does with an event right after reading it has been done, so a note
        printed next comes after it (a permission question after the tool call it is about)."""
        while self._events and not self._closed:
            if self._emptied is None:
                self._emptied = anyio.Event()
            await self._emptied.wait()

    def _caught_up(self) -> None:
        if self._emptied is not None:
            self._emptied.set()
            self._emptied = None

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    def __aiter__(self) -> ProgressFeed:
        return self

    async def __anext__(self) -> ProgressEvent:
        while not self._events:
            if self._closed:
                raise StopAsyncIteration
            if self._wakeup is None:
                self._wakeup = anyio.Event()
            await self._wakeup.wait()
        event = self._events.popleft()
        if not self._events:
            self._caught_up()
        return event


def describe(event: ProgressEvent) -> str:
    """The event as text for people: a text or thought chunk as is, a tool call's title, a
    tool result's output excerpt, the plan one ``[status] entry`` line per entry, a usage
    summary, an other event's text; a child's event as that event's text."""
    match event.kind:
        case "text" | "thought" | "other":
            return event.text
        case "tool_call":
            return event.title
        case "tool_result":
            return event.output
        case "plan":
            lines = [f"[{entry.status}] {entry.content}" for entry in event.entries]
            if event.explanation:
                lines.insert(0, event.explanation)
            return "\n".join(lines)
        case "usage":
            counts = (
                ("input", event.input_tokens),
                ("output", event.output_tokens),
                ("total", event.total_tokens),
            )
            return ", ".join(f"{name} {value}" for name, value in counts if value is not None)
        case "child":
            return describe(event.event)


def progress_json(event: ProgressEvent) -> dict[str, JsonValue]:
    """The event as JSON: ``{"kind": K, "text": T, "data": D}``, ``text`` as
    :func:`describe` gives it and ``data`` by kind:

    - ``text``, ``thought``: ``{"message_id"}`` when the dialect names one, else ``null``;
    - ``tool_call``: ``{"id", "title", "tool_kind", "status", "input"}``;
    - ``tool_result``: ``{"id", "status", "output"}`` (the output excerpt);
    - ``plan``: ``{"entries": [{"content", "status"}], "explanation"}``;
    - ``usage``: ``{"input_tokens", "output_tokens", "total_tokens", "context_used",
      "context_size", "cost_usd", "reported"}`` (``null`` when not reported; ``reported`` is
      the dialect's own report);
    - ``other``: the event's data (or ``null``);
    - ``child``: ``{"tool_call_id", "event"}``, ``event`` the child's event in this format.
    """
    data: JsonValue
    match event.kind:
        case "text" | "thought":
            data = None if event.message_id is None else {"message_id": event.message_id}
        case "tool_call":
            data = {
                "id": event.id,
                "title": event.title,
                "tool_kind": event.tool_kind,
                "status": event.status,
                "input": event.input,
            }
        case "tool_result":
            data = {"id": event.id, "status": event.status, "output": event.output}
        case "plan":
            entries: list[JsonValue] = [
                {"content": entry.content, "status": entry.status} for entry in event.entries
            ]
            data = {"entries": entries, "explanation": event.explanation}
        case "usage":
            data = {
                "input_tokens": event.input_tokens,
                "output_tokens": event.output_tokens,
                "total_tokens": event.total_tokens,
                "context_used": event.context_used,
                "context_size": event.context_size,
                "cost_usd": event.cost_usd,
                "reported": dict(event.data) if event.data is not None else None,
            }
        case "other":
            data = dict(event.data) if event.data is not None else None
        case "child":
            data = {"tool_call_id": event.tool_call_id, "event": progress_json(event.event)}
    return {"kind": event.kind, "text": describe(event), "data": data}
