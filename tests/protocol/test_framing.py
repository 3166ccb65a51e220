"""The NDJSON framer: bytes in any chunking, messages out, and every bad line reported."""

from __future__ import annotations

import json

import pytest

from subagents.protocol import (
    END_OF_STREAM,
    NEED_DATA,
    ErrorCode,
    FramerEvent,
    InvalidMessageError,
    MessageTooLargeError,
    NdjsonFramer,
    Notification,
    Request,
    SuccessResponse,
)


def drain(framer: NdjsonFramer) -> list[FramerEvent]:
    events: list[FramerEvent] = []
    while (event := framer.next_event()) is not NEED_DATA:
        events.append(event)
        if event is END_OF_STREAM:
            break
    return events


def feed(data: bytes, *, eof: bool = True, limit: int = 1024) -> list[FramerEvent]:
    framer = NdjsonFramer(max_message_bytes=limit)
    framer.receive_data(data)
    if eof:
        framer.receive_eof()
    return drain(framer)


REQ = b'{"jsonrpc":"2.0","id":1,"method":"a","params":{}}\n'
NOTE = b'{"jsonrpc":"2.0","method":"n"}\n'


def test_several_messages_in_one_chunk_come_out_in_order() -> None:
    """ACP transports: newline-delimited messages; one chunk may hold many."""
    events = feed(REQ + NOTE + REQ)
    assert events == [Request(1, "a", {}), Notification("n"), Request(1, "a", {}), END_OF_STREAM]


def test_a_message_split_across_chunks_is_reassembled() -> None:
    """Chunks may split a message anywhere, even inside a multi-byte character."""
    data = '{"jsonrpc":"2.0","method":"n","params":{"t":"é🌍"}}\n'.encode()
    framer = NdjsonFramer()
    events: list[FramerEvent] = []
    for i in range(len(data)):
        framer.receive_data(data[i : i + 1])
        events += drain(framer)
    assert events == [Notification("n", {"t": "é🌍"})]


def test_crlf_line_ends_and_blank_lines_are_accepted() -> None:
    """Tolerant reading: CRLF and empty or whitespace-only lines between messages."""
    events = feed(b"\n\r\n   \n" + REQ.replace(b"\n", b"\r\n") + b"\n\t\n" + NOTE)
    assert events == [Request(1, "a", {}), Notification("n"), END_OF_STREAM]


def test_a_last_line_without_newline_is_delivered_at_eof() -> None:
    """A final message without its newline is not lost (typescript-sdk PR #119)."""
    assert feed(REQ + NOTE.rstrip(b"\n")) == [Request(1, "a", {}), Notification("n"), END_OF_STREAM]


def test_a_partial_line_waits_for_more_data_until_eof() -> None:
    """Without EOF, an unterminated line is held, not parsed early."""
    framer = NdjsonFramer()
    framer.receive_data(NOTE.rstrip(b"\n"))
    assert framer.next_event() is NEED_DATA
    framer.receive_data(b"\n")
    assert framer.next_event() == Notification("n")


def _single_error(data: bytes) -> InvalidMessageError:
    events = feed(data + NOTE)
    assert len(events) == 3, events
    assert events[1:] == [Notification("n"), END_OF_STREAM], "the stream must go on"
    error = events[0]
    assert isinstance(error, InvalidMessageError)
    return error


def test_invalid_utf8_is_a_parse_error_and_the_stream_goes_on() -> None:
    """ACP transports: messages MUST be UTF-8; anything else is -32700."""
    error = _single_error(b'{"jsonrpc":"2.0","method":"\xff\xfe"}\n')
    assert (error.code, error.kind) == (ErrorCode.PARSE_ERROR, "invalid_utf8")
    assert "not valid UTF-8" in error.message


def test_invalid_json_is_a_parse_error_and_the_stream_goes_on() -> None:
    """JSON-RPC 2.0: invalid JSON is answered with -32700 and id null."""
    error = _single_error(b'{"this is not json\n')
    assert (error.code, error.kind) == (ErrorCode.PARSE_ERROR, "invalid_json")
    assert error.request_id is None
    assert error.answerable


@pytest.mark.parametrize("line", [b"5", b'"text"', b"null", b"true"])
def test_json_that_is_not_an_object_is_an_invalid_request(line: bytes) -> None:
    """JSON-RPC 2.0: a valid JSON value that is not an object is -32600."""
    error = _single_error(line + b"\n")
    assert (error.code, error.kind) == (ErrorCode.INVALID_REQUEST, "not_an_object")


def test_an_array_is_refused_as_a_batch() -> None:
    """ACP v1 uses no batches; an array is one -32600 with id null (TS SDK behaviour)."""
    error = _single_error(b"[" + REQ.rstrip(b"\n") + b"]\n")
    assert (error.code, error.kind) == (ErrorCode.INVALID_REQUEST, "batch")
    assert error.request_id is None
    assert "batch" in error.message


def test_an_oversized_line_is_skipped_with_a_clear_error_and_the_stream_goes_on() -> None:
    """Explicit maximum message size: the one line is rejected, not the connection."""
    big = b'{"jsonrpc":"2.0","id":9,"method":"big","params":{"x":"' + b"a" * 5000 + b'"}}\n'
    events = feed(REQ + big + NOTE, limit=1000)
    assert events[0] == Request(1, "a", {})
    error = events[1]
    assert isinstance(error, MessageTooLargeError)
    assert error.size == len(big) - 1
    assert error.limit == 1000
    assert "exceeds the limit of 1000 bytes" in error.message
    assert (error.request_id, error.method, error.answerable) == (9, "big", True)
    assert events[2:] == [Notification("n"), END_OF_STREAM]


def test_an_oversized_response_names_the_request_it_answers() -> None:
    """So the waiting caller fails at once instead of waiting for a dropped answer."""
    big = b'{"jsonrpc":"2.0","id":"r-4","result":{"text":"' + b"x" * 5000 + b'"}}\n'
    (error, end) = feed(big, limit=100)
    assert isinstance(error, MessageTooLargeError)
    assert (error.request_id, error.is_response, error.answerable) == ("r-4", True, False)
    assert end is END_OF_STREAM


def test_an_oversized_line_streamed_in_small_chunks_is_never_held_whole() -> None:
    """The framer never buffers more than the limit, however the line arrives."""
    framer = NdjsonFramer(max_message_bytes=100)
    framer.receive_data(b'{"jsonrpc":"2.0","method":"n","params":"')
    peak = 0
    for _ in range(1000):
        framer.receive_data(b"z" * 37)
        assert drain(framer) == []
        peak = max(peak, framer.buffered_bytes)
    framer.receive_data(b'"}\n' + NOTE)
    events = drain(framer)
    assert peak <= 101
    assert isinstance(events[0], MessageTooLargeError)
    assert events[0].size == 40 + 37000 + 2
    assert events[1:] == [Notification("n")]


def test_a_line_of_exactly_the_limit_is_delivered() -> None:
    """The limit is inclusive: a line of max_message_bytes bytes is a message."""
    line = json.dumps({"jsonrpc": "2.0", "id": 3, "result": "x" * 50}).encode()
    events = feed(line + b"\n", limit=len(line))
    assert events == [SuccessResponse(3, "x" * 50), END_OF_STREAM]
    too_small = feed(line + b"\n", limit=len(line) - 1)
    assert isinstance(too_small[0], MessageTooLargeError)


def test_the_default_limit_is_64_mib_and_configurable() -> None:
    """Default 64 MiB (the acp-tck harness's value); the limit is an explicit parameter."""
    assert NdjsonFramer().max_message_bytes == 64 * 1024 * 1024
    assert NdjsonFramer(max_message_bytes=10).max_message_bytes == 10
    with pytest.raises(ValueError, match="positive"):
        NdjsonFramer(max_message_bytes=0)


def test_an_oversized_unterminated_line_at_eof_is_reported() -> None:
    """EOF in the middle of an oversized line still gives its error, then the end."""
    events = feed(b'{"id":1,"result":"' + b"q" * 500, limit=100)
    assert isinstance(events[0], MessageTooLargeError)
    assert events[1] is END_OF_STREAM


def test_deeply_nested_json_is_a_parse_error_not_a_crash() -> None:
    """A hostile peer cannot crash the reader with recursion."""
    events = feed(b"[" * 100_000 + b"]" * 100_000 + b"\n" + NOTE, limit=10**6)
    error = events[0]
    assert isinstance(error, InvalidMessageError)
    assert error.code == ErrorCode.PARSE_ERROR
    assert events[1:] == [Notification("n"), END_OF_STREAM]
