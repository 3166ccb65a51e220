"""A raw end of a connection, for tests that must see or send exact bytes."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.abc

from subagents.protocol import JsonValue
from subagents.rpc import Peer, Router, open_peer
from subagents.transports import open_pipe_pair


@dataclass
class Wire:
    """The far end of a peer under test: write raw lines, read decoded JSON lines."""

    receive: anyio.abc.ByteReceiveStream
    send: anyio.abc.ByteSendStream
    buffer: bytes = b""

    async def write(self, data: bytes) -> None:
        await self.send.send(data)

    async def write_json(self, obj: JsonValue) -> None:
        await self.send.send(json.dumps(obj).encode() + b"\n")

    async def read(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next line, decoded; it must be a JSON object."""
        with anyio.fail_after(timeout):
            while b"\n" not in self.buffer:
                self.buffer += await self.receive.receive()
        line, _, self.buffer = self.buffer.partition(b"\n")
        decoded = json.loads(line)
        assert isinstance(decoded, dict), line
        return cast(dict[str, Any], decoded)

    async def close(self) -> None:
        await self.send.aclose()


@asynccontextmanager
async def peer_and_wire(
    router: Router | None = None, **options: object
) -> AsyncGenerator[tuple[Peer, Wire], None]:
    peer_in, wire_out = await open_pipe_pair()
    wire_in, peer_out = await open_pipe_pair()
    wire = Wire(wire_in, wire_out)
    try:
        async with open_peer(peer_in, peer_out, router=router, **options) as peer:  # type: ignore[arg-type]
            yield peer, wire
    finally:
        with anyio.CancelScope(shield=True):
            await wire.receive.aclose()
            await wire.send.aclose()
            await peer_in.aclose()


@asynccontextmanager
async def two_peers(
    router_a: Router | None = None, router_b: Router | None = None
) -> AsyncGenerator[tuple[Peer, Peer], None]:
    a_in, b_out = await open_pipe_pair()
    b_in, a_out = await open_pipe_pair()
    try:
        async with (
            open_peer(a_in, a_out, router=router_a, name="a") as a,
            open_peer(b_in, b_out, router=router_b, name="b") as b,
        ):
            yield a, b
    finally:
        with anyio.CancelScope(shield=True):
            await a_in.aclose()
            await b_in.aclose()
