"""Steps several checks share."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

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
    """What a basic exchange produced."""

    init: dict[str, Any]
    session_id: str
    prompt: Response


async def basic_exchange(ctx: CheckContext, wire: AgentWire) -> Exchange:
    """initialize, session/new, one ordinary prompt (answered any way), a quiet period."""
    init = await ctx.ready(wire)
    session_id = await ctx.new_session(wire)
    response = await ctx.prompt(wire, session_id)
    await wire.quiet(ctx.options.quiet_period)
    return Exchange(init, session_id, response)


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
