"""Fuzzing of issue 10 (hypothesis): random byte streams and random JSON through the JSON-RPC
peer and the ACP client. Nothing raises out, nothing hangs (every run is bounded by
``anyio.fail_after``), every request gets exactly one answer, the connection keeps working
afterwards, and memory stays bounded. The framer's own properties (splits, arbitrary bytes,
its buffer bound) are in tests/protocol/test_framing_properties.py.

Hypothesis drives synchronous tests; each example runs its own event loop (``anyio.run``) on
the backend the test is parametrized with (asyncio and trio).
"""

from __future__ import annotations

import json
import math
import tracemalloc
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from subagents.protocol import JsonValue, MessageTooLargeError, RemoteProtocolError, acp
from subagents.protocol.acp import to_wire
from subagents.rpc import Peer, Router, open_peer
from subagents.transports.acp_client import connect_agent_over

BACKENDS = ["asyncio", "trio"]
BOUND = 20.0
"""Every example's bound (seconds): far above what one takes, so reaching it means a hang."""
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SENTINEL = "sentinel-after-the-fuzz"


# ------------------------------------------------------------------------------ in-memory bytes


class MemoryByteReceiveStream(anyio.abc.ByteReceiveStream):
    """A byte stream over a memory object stream of chunks (a chunk may be cut by
    ``max_bytes``)."""

    def __init__(self, inner: MemoryObjectReceiveStream[bytes]) -> None:
        self._inner = inner
        self._rest = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._rest:
            self._rest = await self._inner.receive()
        data, self._rest = self._rest[:max_bytes], self._rest[max_bytes:]
        return data

    async def aclose(self) -> None:
        self._inner.close()

    def close(self) -> None:
        self._inner.close()


class MemoryByteSendStream(anyio.abc.ByteSendStream):
    def __init__(self, inner: MemoryObjectSendStream[bytes]) -> None:
        self._inner = inner

    async def send(self, item: bytes) -> None:
        await self._inner.send(item)

    async def aclose(self) -> None:
        self._inner.close()

    def close(self) -> None:
        self._inner.close()


def byte_pipe(
    buffer: float = math.inf,
) -> tuple[MemoryByteSendStream, MemoryByteReceiveStream]:
    send, receive = anyio.create_memory_object_stream[bytes](buffer)
    return MemoryByteSendStream(send), MemoryByteReceiveStream(receive)


@contextmanager
def connection(
    buffer: float = math.inf,
) -> Iterator[tuple[MemoryByteReceiveStream, MemoryByteSendStream, Wire]]:
    """Both directions of a connection: the tested side's ends, and the wire at the far end.
    Every stream is closed on exit."""
    to_tested, tested_in = byte_pipe(buffer)
    tested_out, from_tested = byte_pipe()
    try:
        yield tested_in, tested_out, Wire(to_tested, from_tested)
    finally:
        for stream in (to_tested, tested_in, tested_out, from_tested):
            stream.close()


@dataclass
class Wire:
    """The far end of a connection under test: raw lines in, decoded lines out."""

    send: MemoryByteSendStream
    receive: MemoryByteReceiveStream
    buffer: bytes = b""
    read: list[Any] = field(default_factory=list[Any])

    async def write(self, data: bytes) -> None:
        await self.send.send(data)

    async def write_json(self, obj: JsonValue) -> None:
        await self.send.send(json.dumps(obj).encode() + b"\n")

    async def next(self) -> Any:
        """The next line, decoded (it must be JSON): ``None`` at the end of the stream."""
        while b"\n" not in self.buffer:
            try:
                self.buffer += await self.receive.receive()
            except anyio.EndOfStream:
                assert not self.buffer.strip(), self.buffer
                return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        decoded = json.loads(line)
        self.read.append(decoded)
        return decoded


def run(backend: str, test: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(BOUND):
            await test()

    anyio.run(bounded, backend=backend)


# ------------------------------------------------------------------------------ strategies

MAX_DIGITS = 4000
"""Integers stay below Python's 4300-digit conversion limit (a longer one is its own test below:
a parse error, not a crash)."""

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**MAX_DIGITS), max_value=10**MAX_DIGITS)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=25,
)
methods = st.sampled_from(["echo", "nope", "$/cancel_request", "session/update", ""]) | st.text(
    max_size=15
)
ids: st.SearchStrategy[JsonValue] = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.integers(min_value=10**300, max_value=10**MAX_DIGITS)
    | st.text(max_size=20)
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.none()
    | st.lists(st.integers(), max_size=2).map(list[JsonValue])
)


@st.composite
def rpc_shaped(draw: st.DrawFn) -> dict[str, JsonValue]:
    """An object shaped like a JSON-RPC message, each field present or not, of the right
    type or not."""
    obj: dict[str, JsonValue] = {}
    if draw(st.booleans()):
        obj["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "1.0", 2.0]) | json_scalars)
    if draw(st.booleans()):
        obj["id"] = draw(ids)
    if draw(st.booleans()):
        obj["method"] = draw(methods | json_scalars)
    for key in ("params", "result", "error"):
        if draw(st.integers(0, 3)) == 0:
            obj[key] = draw(json_values)
    if draw(st.integers(0, 4)) == 0:
        obj["error"] = {"code": draw(json_scalars), "message": draw(json_scalars)}
    if draw(st.integers(0, 4)) == 0:
        obj[draw(st.text(max_size=8))] = draw(json_values)
    return obj


def encoded(value: JsonValue) -> bytes:
    return json.dumps(value).encode()


# Either well within the recursion limit or far beyond it: near the limit, whether json.loads
# succeeds depends on how deep the caller's stack already is.
nested_arrays = (st.integers(min_value=1, max_value=200) | st.integers(5_000, 20_000)).map(
    lambda n: b"[" * n + b"]" * n
)
lines = st.one_of(
    st.binary(max_size=120),
    json_values.map(encoded),
    rpc_shaped().map(encoded),
    rpc_shaped().map(encoded),
    nested_arrays,
    st.builds(
        lambda n: b'{"jsonrpc":"2.0","id":1,"method":"echo","params":' + n + b"}", nested_arrays
    ),
)


def expected_answer_id(line: bytes) -> tuple[bool, JsonValue]:
    """Whether JSON-RPC asks for an answer to ``line`` with a readable id (an object with a
    ``method`` and an integer or string ``id``), and that id."""
    try:
        obj = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False, None
    if not isinstance(obj, dict) or "method" not in obj:
        return False, None
    request_id = obj.get("id")
    if type(request_id) is int or isinstance(request_id, str):
        return True, request_id
    return False, None


def id_key(value: JsonValue) -> str:
    return json.dumps(value)


# ------------------------------------------------------------------------------ the peer


@asynccontextmanager
async def peer_under_test(
    router: Router | None = None, **options: Any
) -> AsyncGenerator[tuple[Peer, Wire, list[RemoteProtocolError]], None]:
    errors: list[RemoteProtocolError] = []
    with connection() as (peer_in, peer_out, wire):
        async with open_peer(
            peer_in, peer_out, router=router, on_protocol_error=errors.append, **options
        ) as peer:
            yield peer, wire, errors
        # The peer closed its end: read what it wrote last (answers of requests in progress).
        while await wire.next() is not None:
            pass


def fuzz_router() -> Router:
    router = Router()

    async def echo(params: JsonValue) -> JsonValue:
        return {"ok": True}

    router.on_request("echo", echo)
    return router


def check_responses(read: list[Any], stream: bytes) -> None:
    """Every line the peer wrote is a JSON-RPC response, and each request line with a readable
    id got exactly one (the sentinel included)."""
    answered: Counter[str] = Counter()
    for message in read:
        assert isinstance(message, dict), message
        assert message.get("jsonrpc") == "2.0", message
        assert "id" in message, message
        assert ("result" in message) != ("error" in message), message
        if message["id"] is not None:
            answered[id_key(message["id"])] += 1
    expected: Counter[str] = Counter()
    for line in stream.split(b"\n"):
        wanted, request_id = expected_answer_id(line)
        if wanted:
            expected[id_key(request_id)] += 1
    assert answered == expected


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(st.lists(lines, max_size=12), st.lists(st.integers(min_value=1, max_value=64), max_size=6))
def test_the_peer_survives_any_input_and_answers_every_request_once(
    backend: str, fuzz: list[bytes], cuts: list[int]
) -> None:
    """Issue 10 / fuzzing: random lines (bytes, JSON values, JSON-RPC-shaped objects of wrong
    types, huge ids, deep arrays), in random chunks, into a peer: nothing raises out of it,
    each request line with a readable id gets exactly one answer (responses, notifications
    and unreadable lines get none with an id: JSON-RPC answers those with ``id: null`` or not
    at all), and it still answers a valid request afterwards."""
    sentinel = encoded({"jsonrpc": "2.0", "id": SENTINEL, "method": "echo", "params": {}})
    stream = b"\n".join([*fuzz, sentinel]) + b"\n"
    # A line ending in the middle of the fuzz must not glue onto the next one.
    chunks: list[bytes] = []
    position = 0
    for cut in cuts:
        chunks.append(stream[position : position + cut])
        position += cut
    chunks.append(stream[position:])

    async def scenario() -> None:
        async with peer_under_test(fuzz_router()) as (peer, wire, _errors):
            for chunk in chunks:
                if chunk:
                    await wire.write(chunk)
            while True:
                message = await wire.next()
                assert message is not None, "the stream ended before the sentinel's answer"
                if message.get("id") == SENTINEL:
                    assert message.get("result") == {"ok": True}
                    break
            assert not peer.closed
        check_responses(wire.read, stream)

    run(backend, scenario)


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(st.lists(rpc_shaped().map(encoded), min_size=1, max_size=8))
def test_the_peer_survives_input_that_ends_anywhere(backend: str, fuzz: list[bytes]) -> None:
    """Issue 10 / fuzzing: random JSON-RPC-shaped lines, the last one cut short, then the end
    of the stream: the peer reports the end (pending calls fail, nothing raises out) and
    every request line before it got its one answer."""
    stream = b"\n".join(fuzz)
    stream = stream[: max(len(stream) - 3, 0)]

    async def scenario() -> None:
        async with peer_under_test(fuzz_router()) as (peer, wire, _errors):
            await wire.write(stream)
            await wire.send.aclose()
            await peer.wait_closed()
            assert peer.closed
        check_responses(wire.read, stream + b"\n")

    run(backend, scenario)


@pytest.mark.parametrize("backend", BACKENDS)
def test_megabytes_of_garbage_without_a_newline_keep_the_peer_s_memory_bounded(
    backend: str,
) -> None:
    """Issue 10 / fuzzing, memory stays bounded: 48 MiB without a newline, fed in 1 MiB
    chunks to a peer whose limit is 1 MiB: its framer never holds much more than the limit,
    the memory allocated meanwhile stays a few MiB (tracemalloc), then the oversized line is
    reported once (naming its size) and the next request is answered."""
    limit = 1 << 20
    chunk = b"x" * (1 << 20)
    chunks = 48
    held: list[int] = []
    peak = 0

    async def scenario() -> None:
        errors: list[RemoteProtocolError] = []
        # Unbuffered: a send returns once the peer took the chunk.
        with connection(buffer=0) as (peer_in, peer_out, wire):
            await feed(peer_in, peer_out, wire, errors)
        (too_large,) = errors
        assert isinstance(too_large, MessageTooLargeError)
        assert too_large.size >= chunks * len(chunk)
        assert too_large.method == "huge"

    async def feed(
        peer_in: MemoryByteReceiveStream,
        peer_out: MemoryByteSendStream,
        wire: Wire,
        errors: list[RemoteProtocolError],
    ) -> None:
        nonlocal peak
        async with open_peer(
            peer_in,
            peer_out,
            router=fuzz_router(),
            max_message_bytes=limit,
            on_protocol_error=errors.append,
        ) as peer:
            framer = peer._framer  # pyright: ignore[reportPrivateUsage]
            tracemalloc.start()
            try:
                baseline = tracemalloc.get_traced_memory()[0]
                await wire.write(b'{"jsonrpc":"2.0","method":"huge","params":"')
                for _ in range(chunks):
                    await wire.write(chunk)
                    held.append(framer.buffered_bytes)
                await wire.write(b'"}\n')
                peak = tracemalloc.get_traced_memory()[1] - baseline
            finally:
                tracemalloc.stop()
            await wire.write_json({"jsonrpc": "2.0", "id": SENTINEL, "method": "echo"})
            answer = await wire.next()
            assert answer == {"jsonrpc": "2.0", "id": SENTINEL, "result": {"ok": True}}

    run(backend, scenario)
    assert max(held) <= limit + 1
    assert peak < 8 * limit, f"{peak} bytes allocated while streaming {chunks} MiB"


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_integer_of_5000_digits_is_a_parse_error_not_a_crash(backend: str) -> None:
    """Issue 10 / fuzzing: a line holding an integer longer than Python converts by default
    (4300 digits) is one bad line, answered and reported; the peer goes on."""

    async def scenario() -> None:
        async with peer_under_test(fuzz_router()) as (_peer, wire, errors):
            await wire.write(b'{"jsonrpc":"2.0","id":' + b"7" * 5000 + b',"method":"echo"}\n')
            await wire.write_json({"jsonrpc": "2.0", "id": SENTINEL, "method": "echo"})
            while (message := await wire.next()) is not None:
                if message.get("id") == SENTINEL:
                    break
            assert message is not None
            assert len(errors) == 1

    run(backend, scenario)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"nope"}',
        b'{"jsonrpc":"1.0","id":"\\ud800","method":"echo"}',
        b'{"jsonrpc":"2.0","id":"\\udfff","method":"echo"}',
    ],
    ids=["unknown-method", "invalid-request", "handled-request"],
)
def test_a_request_id_with_a_lone_surrogate_does_not_tear_the_peer_down(
    backend: str, line: bytes
) -> None:
    """Issue 10 / fuzzing: a request whose id is a string holding a lone surrogate (valid
    JSON, not encodable as UTF-8) does not bring the peer down: it is answered with that very
    id (escaped on the wire), and the next request is answered."""
    surrogate = json.loads(line)["id"]

    async def scenario() -> None:
        async with peer_under_test(fuzz_router()) as (_peer, wire, _errors):
            await wire.write(line + b"\n")
            await wire.write_json({"jsonrpc": "2.0", "id": SENTINEL, "method": "echo"})
            ids: list[object] = []
            while (message := await wire.next()) is not None:
                ids.append(message.get("id"))
                if message.get("id") == SENTINEL:
                    break
            assert message is not None
            assert ids == [surrogate, SENTINEL]

    run(backend, scenario)


# ------------------------------------------------------------------------------ the ACP client

SESSION = "fuzz-session"


def valid_updates() -> list[dict[str, JsonValue]]:
    """One well-formed update of each common kind, as on the wire."""
    models: list[Any] = [
        acp.AgentMessageChunkSessionUpdate(content=acp.TextContentBlock(text="hello")),
        acp.AgentThoughtChunkSessionUpdate(content=acp.TextContentBlock(text="hmm")),
        acp.UserMessageChunkSessionUpdate(content=acp.TextContentBlock(text="hi")),
        acp.ToolCallSessionUpdate(
            tool_call_id="call-1", title="Run", kind="execute", status="pending"
        ),
        acp.ToolCallUpdateSessionUpdate(tool_call_id="call-1", status="completed"),
        acp.PlanSessionUpdate(
            entries=[acp.PlanEntry(content="step", priority="high", status="pending")]
        ),
    ]
    return [to_wire(model) for model in models]


VALID_UPDATES = valid_updates()


@st.composite
def mutated_update(draw: st.DrawFn) -> JsonValue:
    """A valid update, then a few random mutations: a field removed, retyped or added, the
    ``sessionUpdate`` kind changed, a nested field broken."""
    update: dict[str, JsonValue] = json.loads(json.dumps(draw(st.sampled_from(VALID_UPDATES))))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        keys = sorted(update)
        action = draw(st.sampled_from(["remove", "retype", "add", "kind", "nested"]))
        if action == "remove" and keys:
            del update[draw(st.sampled_from(keys))]
        elif action == "retype" and keys:
            update[draw(st.sampled_from(keys))] = draw(json_values)
        elif action == "add":
            update[draw(st.text(max_size=10))] = draw(json_values)
        elif action == "kind":
            update["sessionUpdate"] = draw(
                st.sampled_from(["agent_message_chunk", "tool_call", "plan"])
                | st.text(max_size=20)
                | json_scalars
            )
        elif action == "nested":
            content = update.get("content")
            if isinstance(content, dict):
                content[draw(st.sampled_from(["type", "text", "extra"]))] = draw(json_values)
    return update


@st.composite
def update_params(draw: st.DrawFn) -> JsonValue:
    """``session/update`` params: mostly for the session, with a valid, mutated or random
    update; sometimes random JSON as the whole params."""
    choice = draw(st.integers(min_value=0, max_value=9))
    if choice == 0:
        return draw(json_values)
    if choice == 1:
        return {"sessionId": draw(st.text(max_size=5) | json_scalars), "update": draw(json_values)}
    update = draw(st.sampled_from(VALID_UPDATES) | mutated_update() | json_values)
    params: dict[str, JsonValue] = {"sessionId": SESSION, "update": update}
    if draw(st.integers(0, 5)) == 0:
        params[draw(st.text(max_size=8))] = draw(json_values)
    return params


def classify(params: JsonValue) -> tuple[str, JsonValue]:
    """What the client must do with a ``session/update`` whose params are ``params``:
    ``("deliver", update)``, ``("report", None)`` (invalid: a protocol error), or
    ``("ignore", None)`` (valid, for another session: logged and dropped)."""
    try:
        note = acp.SessionNotification.model_validate(params)
    except ValidationError:
        return "report", None
    if note.session_id != SESSION:
        return "ignore", None
    return "deliver", to_wire(note)["update"]


async def fake_agent_turn(wire: Wire, notes: list[JsonValue]) -> None:
    """Play the agent by hand: initialize, session/new, then during the prompt every
    ``session/update`` in ``notes``, then the end of the turn."""
    while (message := await wire.next()) is not None:
        method = message.get("method")
        if method == "initialize":
            await wire.write_json(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
                }
            )
        elif method == "session/new":
            await wire.write_json(
                {"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": SESSION}}
            )
        elif method == "session/prompt":
            for params in notes:
                await wire.write(
                    json.dumps(
                        {"jsonrpc": "2.0", "method": "session/update", "params": params}
                    ).encode()
                    + b"\n"
                )
            await wire.write_json(
                {"jsonrpc": "2.0", "id": message["id"], "result": {"stopReason": "end_turn"}}
            )


@pytest.mark.parametrize("backend", BACKENDS)
@SETTINGS
@given(st.lists(update_params(), max_size=15))
def test_the_acp_client_delivers_valid_updates_and_reports_the_rest(
    backend: str, notes: list[JsonValue]
) -> None:
    """Issue 10 / fuzzing: random ``session/update`` params during a prompt turn (random
    JSON, and valid updates mutated: fields removed, retyped or added, unknown
    ``sessionUpdate`` kinds): the client never crashes, each invalid one is reported to
    ``on_protocol_error`` and skipped, each valid one is delivered in order (extra fields
    included), one for another session is dropped, and the turn ends when the agent
    answers."""
    expected = [classify(params) for params in notes]

    async def scenario() -> None:
        errors: list[RemoteProtocolError] = []
        delivered: list[JsonValue] = []
        with connection() as (client_in, client_out, wire):
            await converse(client_in, client_out, wire, errors, delivered)
        assert delivered == [update for what, update in expected if what == "deliver"]
        assert len(errors) == sum(what == "report" for what, _ in expected)

    async def converse(
        client_in: MemoryByteReceiveStream,
        client_out: MemoryByteSendStream,
        wire: Wire,
        errors: list[RemoteProtocolError],
        delivered: list[JsonValue],
    ) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(fake_agent_turn, wire, notes)
            async with connect_agent_over(
                client_in, client_out, on_protocol_error=errors.append, initialize_timeout=BOUND
            ) as agent:
                session = await agent.new_session("/")
                async with session.prompt("go") as turn:
                    async for update in turn:
                        delivered.append(to_wire(update))
                assert turn.stop_reason == "end_turn"
            await wire.send.aclose()

    run(backend, scenario)
