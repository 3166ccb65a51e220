"""``protocol.acp_remote``: the sans-IO rules of ACP over Streamable HTTP (the RFD in
docs/spec/acp-streamable-http-websocket.mdx): SSE framing both ways, request scopes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagents.protocol.acp_remote import (
    CONNECTION_SCOPED_METHODS,
    RequestScopes,
    SseDecoder,
    encode_sse,
    session_id_of,
)


def test_an_encoded_event_decodes_to_the_same_data_whatever_the_chunking() -> None:
    """SSE: an event survives any split into chunks, multi-line data included."""
    payload = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"x": "a\nb"}})
    wire = encode_sse(payload) + encode_sse("line one\nline two", event="note")
    for size in (1, 2, 3, 7, len(wire)):
        decoder = SseDecoder()
        got = [e for i in range(0, len(wire), size) for e in decoder.feed(wire[i : i + size])]
        assert got == [("message", payload), ("note", "line one\nline two")]


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",))), max_size=5))
def test_any_text_round_trips(texts: list[str]) -> None:
    """Every text (line breaks of any kind normalised to LF) comes back as sent."""
    decoder = SseDecoder()
    sent = [t.replace("\r\n", "\n").replace("\r", "\n") for t in texts]
    wire = b"".join(encode_sse(t) for t in sent)
    assert [data for _, data in decoder.feed(wire)] == sent


def test_comments_crlf_and_cr_line_ends_follow_the_html_standard() -> None:
    """Comment lines are keep-alives; CRLF and CR end lines too; an event without data is
    dropped."""
    decoder = SseDecoder()
    wire = b": keep-alive\r\n\r\nevent: x\r\r" + b"data: a\rdata:b\r\n\r\n"
    assert list(decoder.feed(wire)) == [("message", "a\nb")]


def test_an_oversized_event_is_refused_by_name() -> None:
    """A bounded decoder names the bound instead of buffering without end."""
    decoder = SseDecoder(max_event_bytes=16)
    with pytest.raises(ValueError, match="longer than 16 bytes"):
        list(decoder.feed(b"data: " + b"x" * 32))


def test_session_id_of_reads_params_only() -> None:
    """The session a request or notification is about is its ``params.sessionId``."""
    assert session_id_of({"method": "session/prompt", "params": {"sessionId": "s1"}}) == "s1"
    assert session_id_of({"method": "session/new", "params": {"cwd": "/"}}) is None
    assert session_id_of({"id": 1, "result": {"sessionId": "s1"}}) is None
    assert "session/prompt" not in CONNECTION_SCOPED_METHODS
    assert {"initialize", "session/new", "session/load"} <= CONNECTION_SCOPED_METHODS


def test_request_scopes_match_ids_by_type_and_value() -> None:
    """``1`` and ``"1"`` are different JSON-RPC ids; an id is popped once."""
    scopes = RequestScopes()
    scopes.record(1, "s1")
    scopes.record("1", None)
    assert len(scopes) == 2
    assert scopes.pop(1) == (True, "s1")
    assert scopes.pop(1) == (False, None)
    assert scopes.pop("1") == (True, None)
    assert len(scopes) == 0


def test_request_scopes_list_what_is_in_flight_and_for_which_sessions() -> None:
    """The server's drain cancels every session with a request in flight, and answers each
    request the agent left unanswered: the scopes list them (ids keep their JSON type)."""
    scopes = RequestScopes()
    scopes.record(1, "s1")
    scopes.record("2", None)
    scopes.record(3, "s2")
    assert 1 in scopes
    assert "1" not in scopes
    assert scopes.in_flight() == [(1, "s1"), ("2", None), (3, "s2")]
    assert scopes.sessions() == {"s1", "s2"}
    assert scopes.peek(1) == (True, "s1")
    assert scopes.peek("1") == (False, None)
    scopes.pop(1)
    assert scopes.sessions() == {"s2"}
