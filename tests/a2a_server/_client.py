"""The official A2A SDK's client, for the ``serve --a2a`` tests (the untyped surface, kept here).

:func:`a2a_client` makes a streaming JSON-RPC client from the server's agent card (with a
bearer token when given); :func:`send` sends one text message and collects what streams back
into a :class:`Turn`; :func:`get_task` and :func:`cancel` ask about a task by id.
"""

from __future__ import annotations

import ssl
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ("Turn", "a2a_client", "cancel", "get_task", "send")

TERMINAL = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
}


@dataclass
class Turn:
    """What one streamed message brought back."""

    task_id: str = ""
    context_id: str = ""
    chunks: list[str] = field(default_factory=list[str])
    """The text of each artifact update, in order."""
    states: list[str] = field(default_factory=list[str])
    """Each status update's state name (``TASK_STATE_WORKING``...)."""
    final_message: str = ""
    """The text of the last status update's message."""
    notes: list[str] = field(default_factory=list[str])
    """The text of every status update's message."""
    data: list[Any] = field(default_factory=list[Any])
    """The data parts of the artifact updates (as JSON values)."""

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    @property
    def final(self) -> str:
        return self.states[-1] if self.states else ""


@asynccontextmanager
async def a2a_client(
    url: str, token: str | None = None, *, verify: ssl.SSLContext | bool = True
) -> AsyncIterator[Any]:
    """A streaming SDK client for the agent at ``url`` (its card fetched from there);
    ``verify``: how its HTTP client checks an ``https://`` server (a context trusting the
    test's certificate)."""
    from a2a.client import ClientConfig, create_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=30.0, verify=verify) as http:
        client = await create_client(url, ClientConfig(streaming=True, httpx_client=http))
        try:
            yield client
        finally:
            await client.close()


def _json(value: Any) -> Any:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(value)


def _state_name(state: int) -> str:
    from a2a.types import TaskState

    return TaskState.Name(state)  # pyright: ignore[reportUnknownMemberType]


async def send(
    client: Any,
    text: str,
    *,
    context_id: str | None = None,
    on_chunk: Callable[[Turn], Awaitable[None]] | None = None,
    metadata: dict[str, Any] | None = None,
) -> Turn:
    """Send ``text`` (in ``context_id`` when given, with the message's ``metadata`` when
    given) and collect the streamed events until the stream ends; ``on_chunk`` is awaited
    after each artifact update."""
    from a2a.types import Message, Part, Role, SendMessageRequest

    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)])
    if context_id is not None:
        message.context_id = context_id
    if metadata is not None:
        message.metadata.update(metadata)
    turn = Turn()
    async for event in client.send_message(SendMessageRequest(message=message)):
        if event.HasField("task"):
            turn.task_id, turn.context_id = event.task.id, event.task.context_id
        elif event.HasField("status_update"):
            update = event.status_update
            turn.task_id, turn.context_id = update.task_id, update.context_id
            turn.states.append(_state_name(update.status.state))
            turn.final_message = "".join(p.text for p in update.status.message.parts)
            turn.notes.append(turn.final_message)
        elif event.HasField("artifact_update"):
            parts = event.artifact_update.artifact.parts
            turn.chunks.append("".join(p.text for p in parts))
            turn.data.extend(_json(p.data) for p in parts if p.HasField("data"))
            if on_chunk is not None:
                await on_chunk(turn)
        elif event.HasField("message"):
            turn.chunks.append("".join(p.text for p in event.message.parts))
    return turn


async def cancel(client: Any, task_id: str) -> str:
    """``tasks/cancel``; the task's state name afterwards."""
    from a2a.types import CancelTaskRequest

    task = await client.cancel_task(CancelTaskRequest(id=task_id))
    return _state_name(task.status.state)


async def get_task(client: Any, task_id: str) -> str:
    """``GetTask``; the task's state name (the SDK's ``TaskNotFoundError`` when unknown)."""
    from a2a.types import GetTaskRequest

    task = await client.get_task(GetTaskRequest(id=task_id))
    return _state_name(task.status.state)
