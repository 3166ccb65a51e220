"""What a remote connection talks to: one agent per connection, as an NDJSON byte-stream pair.

- :func:`agent_command`: a stdio ACP agent command, spawned per remote connection through
  :func:`~subagents.transports.process.open_agent_process` (its own process group, the
  bounded shutdown ladder: the process is reaped when the connection ends);
- :func:`in_process_agent`: an :class:`~subagents.transports.acp_agent.Agent` made per
  connection and served with :func:`~subagents.transports.acp_agent.serve_agent_over` over an
  in-memory byte-stream pair;
- :func:`runtime_agent`: the in-process runtime (``subagents serve``), a fresh
  :class:`~subagents.harness.runtime.AgentRuntime` per connection (its own session space).
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, final

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

if TYPE_CHECKING:
    from ..harness.runtime import AgentRuntime
    from ..transports.acp_agent import Agent

__all__ = (
    "AgentBackend",
    "AgentLink",
    "CommandBackend",
    "InProcessBackend",
    "agent_command",
    "in_process_agent",
    "runtime_agent",
)

MEMORY_CHUNKS: Final = 64
"""Chunks an in-memory byte stream holds before its writer waits (backpressure)."""


@final
@dataclass(frozen=True, slots=True)
class AgentLink:
    """One connection's agent: write NDJSON to ``send``, read NDJSON from ``receive``."""

    send: anyio.abc.ByteSendStream
    receive: anyio.abc.ByteReceiveStream
    pid: int | None = None
    """The agent process's id (``None`` in process)."""


class AgentBackend(Protocol):
    """Starts one agent per remote connection; the agent is stopped when the block ends."""

    def open(self) -> AbstractAsyncContextManager[AgentLink]: ...

    def describe(self) -> str: ...


@final
@dataclass(frozen=True, slots=True)
class CommandBackend(AgentBackend):
    """A stdio ACP agent command, one process per remote connection."""

    command: tuple[str, ...]
    env: Mapping[str, str] | None = None
    inherit_env: bool = False
    cwd: str | os.PathLike[str] | None = None
    close_timeout: float = 2.0
    term_timeout: float = 2.0
    kill_timeout: float = 2.0

    @asynccontextmanager
    async def open(self) -> AsyncGenerator[AgentLink, None]:
        from ..transports.process import open_agent_process

        async with open_agent_process(
            self.command,
            env=self.env,
            inherit_env=self.inherit_env,
            cwd=self.cwd,
            close_timeout=self.close_timeout,
            term_timeout=self.term_timeout,
            kill_timeout=self.kill_timeout,
        ) as process:
            yield AgentLink(process.stdin, process.stdout, process.pid)

    def describe(self) -> str:
        return " ".join(self.command)


@final
@dataclass(frozen=True, slots=True)
class InProcessBackend(AgentBackend):
    """An in-process :class:`~subagents.transports.acp_agent.Agent`, one per connection."""

    make_agent: Callable[[], AbstractAsyncContextManager[Agent]]
    shutdown_grace: float = 2.0
    name: str = "in-process agent"

    @asynccontextmanager
    async def open(self) -> AsyncGenerator[AgentLink, None]:
        from ..transports.acp_agent import serve_agent_over

        to_agent_send, to_agent_receive = _memory_byte_pair()
        from_agent_send, from_agent_receive = _memory_byte_pair()
        served = anyio.Event()

        async def serve(agent: Agent) -> None:
            try:
                await serve_agent_over(
                    to_agent_receive,
                    from_agent_send,
                    agent,
                    shutdown_grace=self.shutdown_grace,
                    name="acp-remote",
                )
            finally:
                served.set()

        try:
            async with self.make_agent() as agent, anyio.create_task_group() as tg:
                tg.start_soon(serve, agent)
                try:
                    yield AgentLink(to_agent_send, from_agent_receive)
                finally:
                    # End of input: the agent drains (turns cancelled and answered), bounded.
                    with anyio.CancelScope(shield=True):
                        await to_agent_send.aclose()
                        with anyio.move_on_after(self.shutdown_grace + 1.0):
                            await served.wait()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                for stream in (to_agent_send, to_agent_receive, from_agent_send):
                    await stream.aclose()
                await from_agent_receive.aclose()

    def describe(self) -> str:
        return self.name


def agent_command(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
) -> CommandBackend:
    """A stdio ACP agent ``command`` spawned per remote connection (environment as in
    :func:`~subagents.transports.process.build_child_env`)."""
    if not command:
        raise ValueError("empty agent command")
    return CommandBackend(tuple(os.fspath(part) for part in command), env, inherit_env, cwd)


def in_process_agent(
    make_agent: Callable[[], AbstractAsyncContextManager[Agent]], *, shutdown_grace: float = 2.0
) -> InProcessBackend:
    """An agent made per remote connection by ``make_agent`` (an async context manager)."""
    return InProcessBackend(make_agent, shutdown_grace)


def runtime_agent(
    make_runtime: Callable[[], AgentRuntime], *, delegate_to: str = "spawn"
) -> InProcessBackend:
    """The in-process runtime, ``make_runtime()`` per remote connection (one session space
    each; a sessions directory shared by the runtimes makes ``session/load`` work across)."""

    def make_agent() -> AbstractAsyncContextManager[Agent]:
        from ..agents.runtime_agent import open_runtime_agent

        return open_runtime_agent(make_runtime(), delegate_to=delegate_to)

    return InProcessBackend(make_agent, name="subagents runtime")


# ------------------------------------------------------------------ in-memory byte streams


@final
class _MemoryByteSendStream(anyio.abc.ByteSendStream):
    atomic_send = True  # each send is handed over whole (no write lock needed)

    def __init__(self, inner: MemoryObjectSendStream[bytes]) -> None:
        self._inner = inner

    async def send(self, item: bytes) -> None:
        if item:
            await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()


@final
class _MemoryByteReceiveStream(anyio.abc.ByteReceiveStream):
    def __init__(self, inner: MemoryObjectReceiveStream[bytes]) -> None:
        self._inner = inner
        self._rest = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = self._rest or await self._inner.receive()
        self._rest = data[max_bytes:]
        return data[:max_bytes]

    async def aclose(self) -> None:
        await self._inner.aclose()


def _memory_byte_pair() -> tuple[_MemoryByteSendStream, _MemoryByteReceiveStream]:
    send, receive = anyio.create_memory_object_stream[bytes](MEMORY_CHUNKS)
    return _MemoryByteSendStream(send), _MemoryByteReceiveStream(receive)
