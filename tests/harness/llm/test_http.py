"""The retry helpers the HTTP adapters share: backoff, retry-after, upstream messages."""

from __future__ import annotations

import random

from subagents.harness.llm._http import (
    RetrySettings,
    backoff_delay,
    parse_retry_after,
    upstream_message,
)


def test_backoff_grows_exponentially_with_jitter_up_to_a_ceiling() -> None:
    """Attempt n waits between half and all of `base * 2**(n-1)`, never above `max_delay`."""
    settings = RetrySettings(base_delay=0.5, max_delay=8.0, rng=random.Random(7))
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (5, 8.0), (9, 8.0)]:
        delays = [backoff_delay(attempt, None, settings) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    """A server's delay is used as is up to the cap; negative values become zero."""
    settings = RetrySettings(retry_after_cap=10.0)
    assert backoff_delay(1, 3.0, settings) == 3.0
    assert backoff_delay(1, 3600.0, settings) == 10.0
    assert backoff_delay(1, -1.0, settings) == 0.0


def test_retry_after_headers_are_read_in_seconds_milliseconds_or_dates() -> None:
    """`retry-after-ms` first, then `retry-after` as seconds or an HTTP date; junk is none."""
    assert parse_retry_after({"Retry-After": "4"}) == 4.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Mon, 01 Jan 2001 00:00:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_upstream_messages_are_taken_from_json_error_bodies_or_the_text() -> None:
    """Anthropic and OpenAI error bodies give their message (and type); others their text."""
    anthropic = b'{"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}'
    assert upstream_message(anthropic) == "Busy (overloaded_error)"
    assert upstream_message(b'{"error": {"message": "Bad key"}}') == "Bad key"
    assert upstream_message(b'{"error": "plain"}') == "plain"
    assert upstream_message(b"<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>"
    assert upstream_message(b"") == "(empty body)"
    assert upstream_message(b"x" * 600).endswith("...")
