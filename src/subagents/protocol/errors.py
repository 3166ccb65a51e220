"""Errors of the sans-IO protocol layer.

Whose fault it is shows in the name (the h11 way): :class:`LocalProtocolError` means we tried
to send something invalid (a programming error on our side); :class:`RemoteProtocolError` means
the peer sent something invalid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from .jsonrpc import RequestId

__all__ = (
    "InvalidMessageError",
    "LocalProtocolError",
    "MessageTooLargeError",
    "ProtocolError",
    "RemoteProtocolError",
    "ViolationKind",
)

ViolationKind: TypeAlias = Literal[
    "invalid_utf8",
    "invalid_json",
    "not_an_object",
    "batch",
    "invalid_envelope",
    "too_large",
]
"""What was wrong with one line a peer sent."""


class ProtocolError(Exception):
    """Base class of every protocol-layer error."""


class LocalProtocolError(ProtocolError):
    """We tried to send something that is not a valid message."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something that is not a valid message.

    ``code`` is the JSON-RPC error code that answers it; ``answerable`` says whether an error
    response should be sent at all, and ``request_id`` is the id to answer (``None`` means
    ``id: null``). Requests can be answered; responses and notifications never are, but
    unreadable lines (parse errors, batches) are answered with ``id: null`` as JSON-RPC asks.
    """

    def __init__(
        self,
        code: int,
        message: str,
        *,
        kind: ViolationKind,
        request_id: RequestId | None = None,
        answerable: bool = True,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.kind: ViolationKind = kind
        self.request_id = request_id
        self.answerable = answerable

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code}, kind={self.kind!r}, "
            f"request_id={self.request_id!r}, message={self.message!r})"
        )


class InvalidMessageError(RemoteProtocolError):
    """A line was not valid UTF-8, not valid JSON, or not a valid JSON-RPC message."""


class MessageTooLargeError(RemoteProtocolError):
    """A line was longer than the framer's limit; it was skipped, the stream goes on.

    ``size`` is the line's length in bytes (without the newline) and ``limit`` the limit.
    When the start of the line showed it, ``request_id`` is the id and ``method`` the method
    of the skipped message, and ``is_response`` tells whether it was a response, so the
    waiting request can fail at once instead of waiting for an answer that was dropped.
    """

    def __init__(
        self,
        message: str,
        *,
        size: int,
        limit: int,
        request_id: RequestId | None,
        method: str | None,
        is_response: bool,
        answerable: bool,
    ) -> None:
        from .jsonrpc import ErrorCode

        super().__init__(
            ErrorCode.INVALID_REQUEST,
            message,
            kind="too_large",
            request_id=request_id,
            answerable=answerable,
        )
        self.size = size
        self.limit = limit
        self.method = method
        self.is_response = is_response
