"""A2A bench server: the official ``a2a-sdk``'s server (its request handler, in-memory task
store, JSON-RPC and agent-card routes in a Starlette app under Hypercorn, as
``tests/a2a/a2a_agent_server.py`` and ``subagents.remote.a2a_server`` build it) around a
minimal executor, for ``bench/a2a.py``.

    python a2a_server.py [--chunks N]

Binds 127.0.0.1 on a free port, prints ``PORT <n>`` on stdout once it listens, and serves
until stdin closes (or SIGTERM).

Every message gets a task that streams, with no wait between events: the task, its
``working`` status, ``N`` (default 1) text chunks of one artifact (the first is
:data:`FIRST`, each further one :data:`MORE`, appended), then ``completed``. No model, no
work: what is timed is the client and the wire.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import sys
from typing import Final

from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT
from starlette.applications import Starlette

FIRST: Final = "hello from the bench agent"
MORE: Final = " and more"


class BenchExecutor(AgentExecutor):
    """Task, ``working``, ``chunks`` artifact chunks, ``completed`` (see the module)."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        for index in range(self.chunks):
            await updater.add_artifact(
                [Part(text=FIRST if index == 0 else MORE)],
                artifact_id="out",
                name="answer",
                append=index > 0,
                last_chunk=index == self.chunks - 1,
            )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        assert task is not None
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def card(port: int) -> AgentCard:
    return AgentCard(
        name="bench",
        description="The A2A bench's agent: one streamed answer, no work",
        version="1.0.0",
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
        skills=[AgentSkill(id="answer", name="Answer", description="Answers", tags=["bench"])],
    )


async def _stdin_closed() -> None:
    """Returns when stdin reaches EOF (the orchestrator closed it, or died)."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.buffer.read)


async def serve(chunks: int) -> None:
    import hypercorn.asyncio
    from hypercorn.config import Config

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    port: int = sock.getsockname()[1]
    agent_card = card(port)
    handler = DefaultRequestHandler(
        agent_executor=BenchExecutor(chunks), task_store=InMemoryTaskStore(), agent_card=agent_card
    )
    routes = [*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, "/a2a")]
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 0.5
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    closed = asyncio.ensure_future(_stdin_closed())
    closed.add_done_callback(lambda _: stop.set())
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()
    await hypercorn.asyncio.serve(
        Starlette(routes=routes),  # pyright: ignore[reportArgumentType]
        config,
        shutdown_trigger=stop.wait,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=1)
    args = ap.parse_args()
    asyncio.run(serve(args.chunks))


if __name__ == "__main__":
    main()
