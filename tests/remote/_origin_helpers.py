"""Helpers of the issue-34 server tests: a backend counting the agents it starts, a server with
the Origin and Host options (127.0.0.1, port 0)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from subagents.remote import (
    AgentBackend,
    AgentLink,
    RemoteServer,
    agent_command,
    serve_acp_http,
)
from tests.remote._server_helpers import REFERENCE


@dataclass
class CountingBackend:
    """The reference agent, counting the agents started."""

    inner: AgentBackend = field(default_factory=lambda: agent_command(REFERENCE))
    started: int = 0

    @asynccontextmanager
    async def open(self) -> AsyncGenerator[AgentLink, None]:
        self.started += 1
        async with self.inner.open() as link:
            yield link

    def describe(self) -> str:
        return self.inner.describe()


@asynccontextmanager
async def serving(
    backend: AgentBackend,
    *,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
) -> AsyncGenerator[RemoteServer, None]:
    async with serve_acp_http(
        backend, port=0, allowed_origins=allowed_origins, allowed_hosts=allowed_hosts
    ) as server:
        yield server
