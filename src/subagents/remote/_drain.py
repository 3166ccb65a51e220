"""A draining ``serve --listen``: how it says so, to load balancers and to clients.

Leaving :func:`~subagents.remote.serve_acp_http` (SIGTERM, SIGINT for the command line) first
gives notice for ``drain_notice`` seconds: ``GET /health`` answers 503 ``{"status":
"draining", ...}`` (a load balancer's health check that expects 200 takes the instance out),
new connections are refused, and the connections already made are served as before (a turn
in flight may finish). Then the drain proper (:meth:`~subagents.remote._app.ConnectionHub.drain`)
cancels the turns still in flight and ends the connections, and only then does the listener
close.

From the notice on, a request that cannot be served because of the drain (an ``initialize``,
a WebSocket upgrade, a request naming a connection the drain ended) is answered 503 with
``Retry-After: 1`` and, for a JSON-RPC request, a JSON-RPC error whose ``data`` says
``{"draining": true}``: the URL client reads it (:func:`is_draining_refusal`) and names the
drain as the cause (a run still starting there settles ``cancelled``), never a 404.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

import anyio

from ..protocol.acp_remote import CANCEL_REASON_META, DRAINING_METHOD
from ..protocol.jsonrpc import ErrorCode, JsonValue

__all__ = (
    "DEFAULT_DRAIN_NOTICE",
    "DRAINING_REASON",
    "RETRY_AFTER",
    "draining_answer",
    "draining_notification",
    "is_draining_refusal",
    "note_cancel_reason",
    "wait_notice",
)

DEFAULT_DRAIN_NOTICE: Final = 2.0
"""Seconds ``subagents serve --listen`` reports draining before it drains (``--drain-notice``):
a load balancer checking every second sees it at least once, twice mostly."""
DRAINING_REASON: Final = "the server is draining (shutting down): use another instance"
RETRY_AFTER: Final = (b"retry-after", b"1")


def draining_answer(request_id: JsonValue) -> dict[str, JsonValue]:
    """The JSON-RPC error answering a request refused because the server drains."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": int(ErrorCode.INTERNAL_ERROR),
            "message": DRAINING_REASON,
            "data": {"draining": True},
        },
    }


def draining_notification() -> str:
    """The :data:`~subagents.protocol.acp_remote.DRAINING_METHOD` notification, as text."""
    message = {"jsonrpc": "2.0", "method": DRAINING_METHOD, "params": {"reason": DRAINING_REASON}}
    return json.dumps(message, separators=(",", ":"))


def is_draining_refusal(status: int, body: bytes) -> bool:
    """Whether an HTTP answer is a draining server's refusal (503, a JSON-RPC error whose
    ``data`` says ``draining``, or a plain ``{"error": ...}`` naming the drain)."""
    if status != 503:
        return False
    try:
        value: JsonValue = json.loads(body)
    except ValueError:
        return False
    if not isinstance(value, dict):
        return False
    error = value.get("error")
    if isinstance(error, dict):
        data = error.get("data")
        return isinstance(data, dict) and data.get("draining") is True
    return error == DRAINING_REASON


def note_cancel_reason(message: Mapping[str, JsonValue], text: str, reason: str) -> str:
    """``text`` (the agent's ``message``), with ``reason`` in its ``_meta`` when it is the
    answer ``cancelled`` of a turn (the drain cancelled it: the client names the drain, not
    a bare "cancelled"); anything else unchanged."""
    result = message.get("result")
    if "method" in message or not isinstance(result, dict):
        return text
    if result.get("stopReason") != "cancelled":
        return text
    meta = result.get("_meta")
    noted: dict[str, JsonValue] = {**(meta if isinstance(meta, dict) else {})}
    noted[CANCEL_REASON_META] = reason
    answer = {**message, "result": {**result, "_meta": noted}}
    return json.dumps(answer, separators=(",", ":"), ensure_ascii=False)


async def wait_notice(notice: float) -> None:
    """Wait out the notice (nothing for ``0``): the listener stays open, ``/health`` says
    ``draining``, the connections go on."""
    if notice > 0:
        await anyio.sleep(notice)
