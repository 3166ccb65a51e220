"""Property tests of the framer (hypothesis): splits, arbitrary bytes, bounded memory."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import from_json

from subagents.protocol import (
    END_OF_STREAM,
    NEED_DATA,
    FramerEvent,
    JsonValue,
    NdjsonFramer,
    Notification,
    Request,
    encode_message,
)

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
messages = st.builds(
    Request,
    st.integers(min_value=0) | st.text(max_size=10),
    st.text(min_size=1, max_size=20),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
) | st.builds(
    Notification,
    st.text(min_size=1, max_size=20),
    st.dictionaries(st.text(max_size=8), json_values),
)


def run(framer: NdjsonFramer, chunks: list[bytes]) -> list[FramerEvent]:
    events: list[FramerEvent] = []
    for chunk in [*chunks, b""]:
        framer.receive_data(chunk)
        while (event := framer.next_event()) is not NEED_DATA:
            if event is END_OF_STREAM:
                return events
            events.append(event)
    raise AssertionError("no END_OF_STREAM")


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, max_size=8), st.lists(st.integers(min_value=0), max_size=30))
def test_any_split_of_a_valid_stream_yields_the_same_messages(
    msgs: list[Request | Notification], cuts: list[int]
) -> None:
    """Framing: chunk boundaries never change what is delivered."""
    data = b"".join(encode_message(m) for m in msgs)
    assert run(NdjsonFramer(), split(data, cuts)) == msgs


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=300), max_size=20),
    st.integers(min_value=1, max_value=200),
)
def test_arbitrary_bytes_never_raise_and_never_grow_the_buffer_beyond_the_limit(
    chunks: list[bytes], limit: int
) -> None:
    """Bad input gets a clear error event, never an exception; memory stays bounded."""
    framer = NdjsonFramer(max_message_bytes=limit)
    for chunk in chunks:
        framer.receive_data(chunk)
        while (event := framer.next_event()) is not NEED_DATA:
            assert event is not END_OF_STREAM
        assert framer.buffered_bytes <= limit + 1
    framer.receive_eof()
    while (event := framer.next_event()) is not END_OF_STREAM:
        assert event is not NEED_DATA


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, min_size=1, max_size=6), st.binary(min_size=1, max_size=200), st.data())
def test_garbage_between_messages_costs_only_the_garbage_lines(
    msgs: list[Request | Notification], garbage: bytes, data: st.DataObject
) -> None:
    """Nothing is lost: every well-formed message around a bad line is still delivered."""
    garbage_line = garbage.replace(b"\n", b" ") + b"\n"
    position = data.draw(st.integers(min_value=0, max_value=len(msgs)))
    encoded = [encode_message(m) for m in msgs]
    stream = b"".join(encoded[:position]) + garbage_line + b"".join(encoded[position:])
    events = run(NdjsonFramer(), [stream])
    delivered = [e for e in events if isinstance(e, (Request, Notification))]
    assert delivered == msgs
    assert len(events) <= len(msgs) + 1


def _events_equal(a: list[FramerEvent], b: list[FramerEvent]) -> bool:
    def key(event: FramerEvent) -> object:
        if isinstance(event, Exception):
            return (type(event), str(event), vars(event))
        return repr(event)  # NaN is not equal to itself; its repr is

    return [key(e) for e in a] == [key(e) for e in b]


_EDGE_LINES = [
    b'{"jsonrpc":"2.0","method":"a","params":{"x":"\\ud800"}}',  # a lone surrogate
    b'{"jsonrpc":"2.0","method":"a","params":{"x":"a\x01b"}}',  # a raw control character
    b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"a"}',  # a byte-order mark
    b'{"jsonrpc":"2.0","method":"a","params":' + b"[" * 300 + b"]" * 300 + b"}",  # deep
    b'{"jsonrpc":"2.0","method":"a","params":{"x":"\xff"}}',  # invalid UTF-8
    b'{"jsonrpc":"2.0","method":"a","params":{"x":1,}}',  # a trailing comma
    b'{"jsonrpc":"2.0","method":"a","params":{"x":' + b"9" * 5000 + b"}}",  # digit limit
    b'{"jsonrpc":"2.0","method":"a","params":{"x":NaN,"y":1e400,"z":-0.0}}',
    b'{"jsonrpc":"2.0","method":"a","params":{"x":1,"x":2}}',  # a duplicate key
    b'{"jsonrpc":"2.0","method":"a"} trailing',
    b"   ",
    b"\r",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(messages, max_size=6),
    st.lists(st.binary(max_size=60) | st.sampled_from(_EDGE_LINES), max_size=6),
    st.randoms(use_true_random=False),
)
def test_a_fast_json_parser_changes_no_event(
    valid: list[Notification | Request], bad: list[bytes], rnd: random.Random
) -> None:
    """A framer given ``json_loads`` (the typed endpoints' ``pydantic_core.from_json``) yields
    exactly the events of the standard framer: the same messages, and for every line the fast
    parser refuses (lone surrogates, control characters, a BOM, deep nesting, invalid UTF-8,
    digit limits...) the same error, because such a line is parsed again the standard way
    (issue 17: a faster hot path, the wire behaviour unchanged)."""
    lines = [encode_message(m).rstrip(b"\n") for m in valid] + [
        line.replace(b"\n", b" ") for line in bad
    ]
    rnd.shuffle(lines)
    data = b"\n".join(lines) + b"\n"
    standard = run(NdjsonFramer(max_message_bytes=4096), [data])
    fast = run(NdjsonFramer(max_message_bytes=4096, json_loads=from_json), [data])
    assert _events_equal(standard, fast)
    # Every valid message within the limit is delivered (a bigger one is an oversize error).
    fitting = [m for m in valid if len(encode_message(m)) <= 4000]
    assert sum(1 for e in fast if isinstance(e, (Notification, Request))) >= len(fitting)
