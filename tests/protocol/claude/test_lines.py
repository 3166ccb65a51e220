"""Claude Code stdout lines, read with the project's one line splitter, without a process
(issue 18 point 1)."""

from __future__ import annotations

import json
import subprocess
import sys

from subagents.protocol.claude import (
    DEFAULT_MAX_LINE_BYTES,
    ClaudeResult,
    SkippedLine,
    decode_line,
    is_result_head,
    parse_event,
)
from subagents.protocol.framing import END_OF_STREAM, NEED_DATA, LineSplitter, OversizedLine
from subagents.protocol.jsonrpc import JsonObject


def read_stdout(chunks: list[bytes], limit: int) -> list[JsonObject | SkippedLine | OversizedLine]:
    """What the client's reader sees: the splitter's lines, decoded (blank lines dropped)."""
    lines = LineSplitter(max_line_bytes=limit)
    seen: list[JsonObject | SkippedLine | OversizedLine] = []
    for chunk in [*chunks, b""]:
        lines.receive_data(chunk)
        while (line := lines.next_line()) is not NEED_DATA and line is not END_OF_STREAM:
            if isinstance(line, OversizedLine):
                seen.append(line)
            elif (decoded := decode_line(line)) is not None:
                seen.append(decoded)
    return seen


def test_a_json_object_line_is_decoded_and_blank_lines_are_nothing() -> None:
    """Issue 18 point 1: a stream-json line (an object, no JSON-RPC envelope) is decoded;
    surrounding whitespace and ``\\r`` are accepted; a blank line is not a message."""
    assert decode_line(b' {"type":"result","subtype":"success"}\r') == {
        "type": "result",
        "subtype": "success",
    }
    assert decode_line(bytearray(b"  \r")) is None
    assert decode_line(b"") is None


def test_a_line_not_starting_with_a_brace_is_skipped_as_not_json() -> None:
    """Issue 18 point 1: the CLI's stray output (not starting with ``{``) is skipped quietly,
    its start kept for the log; a JSON array or string is no message either."""
    for line in (b"Warning: something odd", b'["type","result"]', b'"text"'):
        skipped = decode_line(line)
        assert skipped == SkippedLine("not_json", "", line)


def test_a_malformed_object_line_is_skipped_as_unreadable_with_the_reason() -> None:
    """Issue 18 point 1: a line starting with ``{`` that is not valid JSON (truncated,
    invalid UTF-8, nested too deeply) is skipped, never fatal, with why."""
    truncated = decode_line(b'{"type":"assistant","message":')
    assert isinstance(truncated, SkippedLine)
    assert truncated.kind == "unreadable"
    assert "Expecting value" in truncated.detail
    bad_utf8 = decode_line(b'{"type":"\xff"}')
    assert isinstance(bad_utf8, SkippedLine)
    assert bad_utf8.kind == "unreadable"
    deep = decode_line(b'{"a":' * 200_000 + b"1" + b"}" * 200_000)
    assert isinstance(deep, SkippedLine)
    assert deep.kind == "unreadable"
    assert deep.detail
    assert len(deep.start) == 200


def test_only_a_result_lines_head_reads_as_a_result() -> None:
    """Issue 18 point 1: an oversized line's first bytes tell whether it was the result that
    ends the turn."""
    assert is_result_head(b'{"type":"result","subtype":"success","result":"xxxx')
    assert is_result_head(b' { "type" : "result"')
    assert not is_result_head(b'{"type":"assistant","message":{"content":"result"')
    assert not is_result_head(b'{"subtype":"success","type":"result"')  # not first: unknown
    assert not is_result_head(b"")


def test_the_default_line_limit_is_16_mib() -> None:
    """Issue 18 point 1 (from issue 7): the official SDK's 1 MiB breaks on long replies."""
    assert DEFAULT_MAX_LINE_BYTES == 16 * 1024 * 1024


def test_an_oversized_line_is_reported_once_and_the_lines_around_it_delivered() -> None:
    """Issue 18 point 1: the line splitter shared with the JSON-RPC framer skips a line over
    the limit while it streams in, reports its size and head once, and delivers every
    well-formed line before and after it, whatever the chunking."""
    before = {"type": "system", "subtype": "init", "session_id": "s"}
    big = {"type": "result", "subtype": "success", "result": "x" * 5000}
    after = {"type": "mystery_event"}
    data = b"".join(json.dumps(m).encode() + b"\n" for m in (before, big, after))
    big_size = len(json.dumps(big))
    for size in (1, 7, 100, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        first, oversized, last = read_stdout(chunks, limit=1000)
        assert (first, last) == (before, after)
        assert isinstance(oversized, OversizedLine)
        assert oversized.size == big_size
        assert is_result_head(oversized.head)


def test_a_partial_last_line_is_delivered_at_the_end_of_the_stream() -> None:
    """Issue 18 point 1: a CLI that dies mid-write leaves a last line without a newline:
    it is still read (and skipped if it is cut short)."""
    whole = b'{"type":"result","subtype":"success","is_error":false}'
    (message,) = read_stdout([whole], limit=1000)
    assert isinstance(message, dict)
    assert isinstance(parse_event(message)[0], ClaudeResult)
    (cut,) = read_stdout([whole[:20]], limit=1000)
    assert isinstance(cut, SkippedLine)
    assert cut.kind == "unreadable"


def test_importing_the_claude_dialect_does_not_import_anyio() -> None:
    """Issue 18 point 1 / DESIGN.md layers: ``protocol.claude`` is sans-IO."""
    code = (
        "import sys, subagents.protocol.claude\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('anyio', 'trio', 'asyncio'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
