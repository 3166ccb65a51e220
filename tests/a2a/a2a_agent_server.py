"""An A2A agent served by the official ``a2a-sdk`` (its JSON-RPC and agent card routes in a
Starlette app under Hypercorn), around a scripted ``AgentExecutor``, for the tests of
``A2AProvider``: ``python a2a_agent_server.py [--token T]``.

It binds 127.0.0.1 on a free port, prints ``PORT <n>`` on stdout once it listens, and serves
until killed. The SDK's server side runs on asyncio: the tests of both anyio backends start it
in a subprocess. ``--token T``: a request to the JSON-RPC route without
``Authorization: Bearer T`` is answered 401 (the card stays public).

The executor answers a message by its first line's first word (``WORDS``: the rest of
that line):

- ``message WORDS``: a plain agent message ``WORDS`` (no task);
- ``slow``: a task, ``working`` with the text ``started``, then nothing until cancelled
  (``tasks/cancel`` -> ``canceled``);
- ``fail`` / ``reject``: a task that ends ``failed`` / ``rejected`` with a status message;
- ``input`` / ``auth``: a task that stops ``input-required`` / ``auth-required``;
- ``die``: a task, one artifact chunk ``partial``, then nothing: the test kills the server
  process once the chunk has reached its client;
- ``drop``: a task, an artifact chunk ``before``; the server then ends that response (its SSE
  stream) early without ending the task, which goes on: an appended chunk `` after`` half a
  second later, then ``completed`` (a client that resubscribes sees them);
- ``recall``: a task whose artifact is the earlier messages of the same context (``contextId``),
  joined by `` | `` (``nothing`` for none);
- ``status WORDS``: a task whose ``working`` status messages carry the words, then an
  artifact ``done``, ``completed``;
- ``data``: a task whose artifact comes in two chunks: the text ``the answer`` and a data part
  ``{"draft": true}``, then an appended data part ``{"answer": 42, "schema": S, "prompt": P}``
  (``S``: the message's metadata ``outputSchema``, null without; ``P``: the message's whole
  text), then ``completed``;
- ``baddata``: a task whose artifact is a data part ``{"answer": "forty-two"}``, ``completed``;
- ``json WORDS``: a task whose artifact's text is ``WORDS``, ``completed``;
- ``datamessage``: a plain agent message: the text ``here`` and a data part ``{"answer": 5}``;
- anything else: a task whose text artifact streams one chunk per word of the message
  (joined by spaces: the artifact's text is the message), then ``completed``.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from typing import Any

from a2a.helpers import (
    get_message_text,
    new_data_part,
    new_message,
    new_task_from_user_message,
    new_text_message,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Role,
    TaskState,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse

Scope = dict[str, Any]


class ScriptedExecutor(AgentExecutor):
    """Answers each message by its first word (see the module docstring)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}
        """Context id -> the messages received in it, in order."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        text = get_message_text(context.message)
        word, _, rest = text.split("\n", 1)[0].partition(" ")
        earlier = list(self.seen.get(context.context_id or "", []))
        self.seen.setdefault(context.context_id or "", []).append(text)
        if word == "message":
            await event_queue.enqueue_event(new_text_message(rest, role=Role.ROLE_AGENT))
            return
        if word == "datamessage":
            parts = [Part(text="here"), new_data_part({"answer": 5})]
            await event_queue.enqueue_event(new_message(parts, role=Role.ROLE_AGENT))
            return
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if word == "slow":
            await updater.update_status(
                TaskState.TASK_STATE_WORKING,
                message=updater.new_agent_message([Part(text="started")]),
            )
            await asyncio.Event().wait()  # until cancelled
        elif word == "fail":
            await updater.failed(updater.new_agent_message([Part(text="it broke")]))
        elif word == "reject":
            await updater.reject(updater.new_agent_message([Part(text="not my job")]))
        elif word == "input":
            await updater.requires_input(updater.new_agent_message([Part(text="which file?")]))
        elif word == "auth":
            await updater.requires_auth(updater.new_agent_message([Part(text="log in first")]))
        elif word == "die":
            await updater.add_artifact([Part(text="partial")], artifact_id="out")
            await asyncio.sleep(3600)  # killed by the test once its client has the chunk
        elif word == "drop":
            await updater.add_artifact([Part(text="before")], artifact_id="out")
            await asyncio.sleep(0.5)
            await updater.add_artifact([Part(text=" after")], artifact_id="out", append=True)
            await updater.complete()
        elif word == "recall":
            recalled = " | ".join(earlier) or "nothing"
            await updater.add_artifact([Part(text=recalled)], artifact_id="out")
            await updater.complete()
        elif word == "status":
            for item in rest.split():
                await updater.update_status(
                    TaskState.TASK_STATE_WORKING,
                    message=updater.new_agent_message([Part(text=item)]),
                )
            await updater.add_artifact([Part(text="done")], artifact_id="out")
            await updater.complete()
        elif word == "data":
            metadata = MessageToDict(context.message.metadata)
            schema = metadata.get("outputSchema")
            first = [Part(text="the answer"), new_data_part({"draft": True})]
            await updater.add_artifact(first, artifact_id="out")
            last = new_data_part({"answer": 42, "schema": schema, "prompt": text})
            await updater.add_artifact([last], artifact_id="out", append=True)
            await updater.complete()
        elif word == "baddata":
            bad = new_data_part({"answer": "forty-two"})
            await updater.add_artifact([bad], artifact_id="out")
            await updater.complete()
        elif word == "json":
            await updater.add_artifact([Part(text=rest)], artifact_id="out")
            await updater.complete()
        else:
            words = text.split(" ")
            for index, item in enumerate(words):
                chunk = item if index == 0 else f" {item}"
                await updater.add_artifact(
                    [Part(text=chunk)],
                    artifact_id="out",
                    name="answer",
                    append=index > 0,
                    last_chunk=index == len(words) - 1,
                )
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        assert task is not None
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.cancel()


def card(port: int) -> AgentCard:
    return AgentCard(
        name="scripted",
        description="A scripted A2A agent for the tests",
        version="1.2.3",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/a2a",
                protocol_binding="JSONRPC",
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="echo", name="Echo", description="Echoes the message", tags=["test"]),
            AgentSkill(id="fail", name="Fail", description="Fails", tags=["test"]),
        ],
    )


class Gate:
    """Answers 401 to a JSON-RPC request without the bearer token; ends the response to a
    ``drop`` message after its third event (the task, ``working``, the first chunk)."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if self.token is not None and scope["type"] == "http" and scope["path"] == "/a2a":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {self.token}".encode():
                await PlainTextResponse("unauthorized", 401)(scope, receive, send)
                return
        body = bytearray()

        async def peek() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        events = 0
        cut = False

        async def cutting(message: Any) -> None:
            nonlocal events, cut
            if cut:
                return
            dropping = b'"text":"drop"' in body and b"SendStreamingMessage" in body
            await send(message)
            if dropping and message["type"] == "http.response.body" and message.get("body"):
                events += 1
                if events == 3:
                    cut = True
                    await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app(scope, peek, cutting)


async def main() -> None:
    import hypercorn.asyncio
    from hypercorn.config import Config

    parser = argparse.ArgumentParser()
    parser.add_argument("--token")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.set_inheritable(True)
    port: int = sock.getsockname()[1]
    agent_card = card(port)
    handler = DefaultRequestHandler(
        agent_executor=ScriptedExecutor(), task_store=InMemoryTaskStore(), agent_card=agent_card
    )
    routes = [*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, "/a2a")]
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 0.5
    app = Gate(Starlette(routes=routes), args.token)
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()
    await hypercorn.asyncio.serve(app, config)  # pyright: ignore[reportArgumentType]


if __name__ == "__main__":
    asyncio.run(main())
