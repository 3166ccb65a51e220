"""What the HTTP adapters share: one streamed POST with bounded retries and cancellation.

:func:`stream_sse` sends a JSON body, and feeds the server-sent events of a ``2xx`` answer to
a sink until the sink says the stream is complete. It

- retries 429, 500, 502, 503, 504, 529 and connection failures, at most ``max_retries``
  extra attempts, with exponential backoff and jitter (a ``retry-after`` header is honoured,
  capped at :attr:`RetrySettings.retry_after_cap`); an ``x-should-retry`` header, when the
  server sends one, decides instead of the status; it never retries once an event reached
  the sink (text may already have been shown);
- maps failures to :class:`LlmError`: ``http`` (a non-2xx answer, with the API's name, the
  status and the upstream error message), ``timeout`` (an httpx timeout), ``connection``,
  ``protocol`` (a stream that ends before its terminal event, or a bad event);
- runs under the call's :class:`CancelSignal`: when it fires, the response and connection
  are closed and :class:`LlmCancelled` is raised (backoff sleeps are cancelled too).
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Final, TypeAlias, cast, final

import anyio
import anyio.lowlevel
import httpx

from ..._generators import finish
from ...cancel import CancelSignal
from ...protocol.jsonrpc import JsonValue
from ._sse import SSEDecoder, SSEEvent
from .types import LlmCancelled, LlmError

__all__ = (
    "RETRYABLE_STATUSES",
    "EventSink",
    "RetrySettings",
    "Sleep",
    "backoff_delay",
    "event_json",
    "int_fields",
    "parse_retry_after",
    "stream_sse",
    "upstream_message",
)

RETRYABLE_STATUSES: Final = frozenset({429, 500, 502, 503, 504, 529})

Sleep: TypeAlias = Callable[[float], Awaitable[None]]
EventSink: TypeAlias = Callable[[SSEEvent], bool]
"""Takes one event; returns ``True`` once it saw the stream's terminal event. May raise
:class:`LlmError` (an ``error`` event, a malformed one)."""

_CLOSE_GRACE: Final = 5.0
"""Seconds a response or client gets to close, shielded from cancellation."""

_DRAIN_GRACE: Final = 1.0
"""Seconds the rest of a complete stream may take to arrive (so the connection can be
reused) before it is abandoned."""


@final
@dataclass(frozen=True, slots=True)
class RetrySettings:
    """How :func:`stream_sse` retries: ``max_retries`` extra attempts, sleeping with
    ``sleep`` (injectable for tests) between them."""

    max_retries: int = 2
    sleep: Sleep = anyio.sleep
    base_delay: float = 0.5
    max_delay: float = 8.0
    retry_after_cap: float = 10.0
    rng: random.Random = field(default_factory=random.Random)


def backoff_delay(attempt: int, retry_after: float | None, settings: RetrySettings) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): the server's
    ``retry-after`` capped at ``retry_after_cap``, else exponential backoff with jitter (a
    random fraction between half and all of ``base_delay * 2**(attempt-1)``, at most
    ``max_delay``)."""
    if retry_after is not None:
        return max(0.0, min(retry_after, settings.retry_after_cap))
    ceiling = min(settings.max_delay, settings.base_delay * 2 ** (attempt - 1))
    return ceiling * (0.5 + settings.rng.random() / 2)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date); ``None``
    when absent or unreadable."""
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def upstream_message(body: bytes) -> str:
    """The error message in an API's JSON error body (``{"error": {"message": ...}}``, or
    ``{"message": ...}``), else the body's text (shortened)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        data = cast(dict[str, Any], data)
        error = data.get("error")
        if isinstance(error, dict):
            error = cast(dict[str, Any], error)
            message = error.get("message")
            kind = error.get("type")
            if isinstance(message, str) and message:
                return f"{message} ({kind})" if isinstance(kind, str) and kind else message
        elif isinstance(error, str) and error:
            return error
        message = data.get("message")
        if isinstance(message, str) and message:
            return message
    if not text:
        return "(empty body)"
    return text if len(text) <= 500 else text[:500] + "..."


def _should_retry(response: httpx.Response) -> bool:
    hint = response.headers.get("x-should-retry")
    if hint == "true":
        return True
    if hint == "false":
        return False
    return response.status_code in RETRYABLE_STATUSES


@final
@dataclass(slots=True)
class _Attempt:
    """What one attempt left behind: did an event reach the sink; a server's retry-after."""

    delivered: bool = False
    retry_after: float | None = None


async def stream_sse(
    *,
    api: str,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, JsonValue],
    sink: EventSink,
    terminal: str,
    cancel: CancelSignal,
    client: httpx.AsyncClient | None,
    timeout: float,
    retry: RetrySettings,
) -> None:
    """POST ``body`` to ``url`` and feed the answer's events to ``sink`` until it returns
    ``True`` (see the module documentation). ``terminal`` names the event the stream must end
    with (for the error message when it does not)."""
    if cancel.cancelled:
        raise LlmCancelled(cancel.reason or "cancelled")
    with cancel.linked_scope() as scope:
        if client is None:
            owned = httpx.AsyncClient()
            try:
                await _with_retries(api, url, headers, body, sink, terminal, owned, timeout, retry)
            finally:
                with anyio.move_on_after(_CLOSE_GRACE, shield=True):
                    await owned.aclose()
        else:
            await _with_retries(api, url, headers, body, sink, terminal, client, timeout, retry)
        return
    # Only the signal's cancellation gets here; an enclosing scope's, if any, wins.
    assert scope.cancelled_caught
    await anyio.lowlevel.checkpoint_if_cancelled()
    raise LlmCancelled(cancel.reason or "cancelled")


async def _with_retries(
    api: str,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, JsonValue],
    sink: EventSink,
    terminal: str,
    client: httpx.AsyncClient,
    timeout: float,
    retry: RetrySettings,
) -> None:
    attempt = 0
    while True:
        attempt += 1
        state = _Attempt()
        try:
            await _attempt(api, url, headers, body, sink, terminal, client, timeout, state)
        except LlmError as error:
            error.attempts = attempt
            if not error.retryable or state.delivered or attempt > retry.max_retries:
                raise
            await retry.sleep(backoff_delay(attempt, state.retry_after, retry))
        else:
            return


async def _attempt(
    api: str,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, JsonValue],
    sink: EventSink,
    terminal: str,
    client: httpx.AsyncClient,
    timeout: float,
    state: _Attempt,
) -> None:
    request = client.build_request(
        "POST", url, headers=dict(headers), json=body, timeout=httpx.Timeout(timeout)
    )
    try:
        response = await client.send(request, stream=True)
    except httpx.TimeoutException as error:
        raise LlmError(
            "timeout", f"{api}: no answer within {timeout:g} s ({type(error).__name__})"
        ) from error
    except httpx.TransportError as error:
        raise LlmError(
            "connection", f"{api}: connection failed: {_describe(error)}", retryable=True
        ) from error
    try:
        if not response.is_success:
            raw = await response.aread()
            state.retry_after = parse_retry_after(response.headers)
            status = response.status_code
            raise LlmError(
                "http",
                f"{api} returned HTTP {status}: {upstream_message(raw)}",
                status=status,
                retryable=_should_retry(response),
            )
        decoder = SSEDecoder()
        chunks = cast(AsyncGenerator[bytes], response.aiter_bytes())
        complete = False
        try:
            async for chunk in chunks:
                for event in decoder.feed(chunk):
                    state.delivered = True
                    if sink(event):
                        complete = True
                        return
        finally:
            await finish(chunks, _DRAIN_GRACE if complete else 0.0)
        for event in decoder.close():
            state.delivered = True
            if sink(event):
                return
        content_type = response.headers.get("content-type", "no content type")
        raise LlmError(
            "protocol",
            f"{api}: the stream ended before {terminal} (content type {content_type})",
        )
    except httpx.TimeoutException as error:
        raise LlmError(
            "timeout",
            f"{api}: the stream stalled for more than {timeout:g} s ({type(error).__name__})",
        ) from error
    except httpx.TransportError as error:
        raise LlmError(
            "connection",
            f"{api}: the connection broke while reading the answer: {_describe(error)}",
            retryable=True,
        ) from error
    finally:
        with anyio.move_on_after(_CLOSE_GRACE, shield=True):
            await response.aclose()


def _describe(error: Exception) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def event_json(api: str, event: SSEEvent) -> dict[str, Any]:
    """The JSON object in an event's data, or :class:`LlmError` ``protocol`` naming the
    cause."""
    try:
        data: Any = json.loads(event.data)
    except ValueError as error:
        raise LlmError(
            "protocol", f"{api}: bad JSON in a {event.event!r} event: {error}: {event.data[:200]!r}"
        ) from error
    if not isinstance(data, dict):
        raise LlmError("protocol", f"{api}: a {event.event!r} event's data is not a JSON object")
    return cast(dict[str, Any], data)


def int_fields(data: Any) -> dict[str, int]:
    """The integer fields of a JSON object (usage counters), others left out."""
    if not isinstance(data, dict):
        return {}
    return {
        str(key): value
        for key, value in cast(dict[Any, Any], data).items()
        if isinstance(value, int) and not isinstance(value, bool)
    }
