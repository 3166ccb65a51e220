"""The server-sent-events parser: lines in any ending, multi-line data, comments, chunking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagents.harness.llm._sse import SSEDecoder, SSEEvent


def parse(*chunks: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


def test_an_event_has_its_name_and_data_and_defaults_to_message() -> None:
    """`event:` names the event; without it the type is `message`."""
    assert parse(b"event: ping\ndata: {}\n\ndata: x\n\n") == [
        SSEEvent("ping", "{}"),
        SSEEvent("message", "x"),
    ]


def test_multi_line_data_is_joined_with_newlines() -> None:
    """Several `data:` lines of one event join with `\\n`; one leading space is dropped."""
    assert parse(b"data: a\ndata:b\ndata:  c\ndata\n\n") == [SSEEvent(data="a\nb\n c\n")]


def test_comments_and_unknown_fields_are_ignored() -> None:
    """Lines starting with `:` and unknown field names do not make or change events."""
    assert parse(b": keep-alive\n\nfoo: bar\ndata: x\n: more\n\n") == [SSEEvent(data="x")]


def test_a_blank_line_without_data_dispatches_nothing() -> None:
    """An `event:` without `data:` is dropped at the blank line."""
    assert parse(b"event: lonely\n\n\n\ndata: y\n\n") == [SSEEvent(data="y")]


@pytest.mark.parametrize("ending", [b"\r\n", b"\r", b"\n"])
def test_every_line_ending_is_understood(ending: bytes) -> None:
    """CRLF, CR and LF all end lines."""
    stream = ending.join([b"event: e", b"data: 1", b"", b"data: 2", b"", b""])
    assert parse(stream) == [SSEEvent("e", "1"), SSEEvent(data="2")]


def test_a_crlf_split_across_chunks_is_one_line_end() -> None:
    """A CR at the end of one chunk and the LF starting the next make one line end."""
    assert parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [SSEEvent(data="a\nb")]


def test_a_final_event_without_a_blank_line_is_dispatched_at_close() -> None:
    """A stream that ends right after its last `data:` line (no newline either) still
    delivers that event."""
    assert parse(b"data: first\n\ndata: last") == [SSEEvent(data="first"), SSEEvent(data="last")]
    assert parse(b"data: last\n") == [SSEEvent(data="last")]


def test_a_character_split_across_chunks_is_decoded_whole() -> None:
    """UTF-8 is decoded incrementally."""
    raw = "data: héllo ✓\n\n".encode()
    assert parse(*(raw[i : i + 1] for i in range(len(raw)))) == [SSEEvent(data="héllo ✓")]


def test_id_and_retry_fields_are_kept() -> None:
    """`id:` persists across events; `retry:` must be digits."""
    assert parse(b"id: 7\nretry: 150\ndata: a\n\nretry: x\ndata: b\n\n") == [
        SSEEvent(data="a", id="7", retry=150),
        SSEEvent(data="b", id="7"),
    ]


def test_lines_can_be_fed_one_at_a_time() -> None:
    """`feed_line` takes lines without their endings; the blank line dispatches."""
    decoder = SSEDecoder()
    assert decoder.feed_line("event: x") is None
    assert decoder.feed_line("data: 1") is None
    assert decoder.feed_line("") == SSEEvent("x", "1")


def test_a_closed_decoder_refuses_more_input() -> None:
    """Feeding after `close` is a programming error."""
    decoder = SSEDecoder()
    decoder.close()
    with pytest.raises(ValueError, match="closed"):
        decoder.feed(b"data: x\n\n")
    assert decoder.close() == []


_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12
)
_events = st.lists(
    st.tuples(
        st.text(st.characters(min_codepoint=97, max_codepoint=122), max_size=6),
        st.lists(_text, min_size=1, max_size=3),
    ),
    max_size=6,
)


@given(
    events=_events,
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
    comments=st.booleans(),
    trailing_blank=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_any_chunking_of_a_valid_stream_gives_the_same_events(
    events: list[tuple[str, list[str]]],
    ending: str,
    comments: bool,
    trailing_blank: bool,
    cuts: list[int],
) -> None:
    """Splitting the bytes of a stream anywhere (inside a CRLF or a UTF-8 character
    included) changes nothing: the events are the ones written."""
    lines: list[str] = []
    for name, data in events:
        if comments:
            lines.append(": note")
        if name:
            lines.append(f"event: {name}")
        lines.extend(f"data: {line}" for line in data)
        lines.append("")
    if lines and not trailing_blank:
        lines.pop()
    raw = "".join(line + ending for line in lines).encode()
    points = sorted({cut % (len(raw) + 1) for cut in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    expected = [SSEEvent(name or "message", "\n".join(data)) for name, data in events]
    assert parse(*chunks) == expected
    assert parse(raw) == expected
