"""JSON-RPC 2.0 envelopes, sans-IO.

Four message shapes cross the wire: :class:`Request`, :class:`Notification`,
:class:`SuccessResponse` and :class:`ErrorResponse`. They are plain frozen dataclasses:
parameters and results stay JSON values here, and typed views (the ACP models) are built one
layer up, where the method is known.

:func:`decode_message` classifies one decoded JSON value and raises
:class:`~subagents.protocol.errors.InvalidMessageError` (carrying the JSON-RPC error code to
answer with and, when it could be read, the request id) for anything that is not a valid
message. :func:`encode_message` turns a message into one NDJSON line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final, TypeAlias, cast

from .errors import InvalidMessageError, LocalProtocolError

__all__ = (
    "JSONRPC_VERSION",
    "ErrorCode",
    "ErrorObject",
    "ErrorResponse",
    "JsonObject",
    "JsonValue",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "SuccessResponse",
    "decode_message",
    "encode_message",
    "message_to_json",
)

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""Any JSON value, as :func:`json.loads` returns it."""

JsonObject: TypeAlias = "dict[str, JsonValue]"
"""A JSON object."""

RequestId: TypeAlias = int | str
"""A request id. Each direction of a connection has its own id space."""

JSONRPC_VERSION: Final = "2.0"


class ErrorCode(IntEnum):
    """JSON-RPC 2.0 error codes, plus the ones ACP defines."""

    PARSE_ERROR = -32700
    """Invalid JSON was received (answered with ``id: null``)."""
    INVALID_REQUEST = -32600
    """The JSON is not a valid request object (also: batches, which ACP v1 does not use)."""
    METHOD_NOT_FOUND = -32601
    """The method does not exist or is not available."""
    INVALID_PARAMS = -32602
    """The parameters failed validation; ``data`` carries the validation errors."""
    INTERNAL_ERROR = -32603
    """The handler failed."""
    REQUEST_CANCELLED = -32800
    """ACP: the request was cancelled (``$/cancel_request`` or internal cancellation)."""
    AUTH_REQUIRED = -32000
    """ACP: authentication is required before this operation."""
    RESOURCE_NOT_FOUND = -32002
    """ACP: a resource (a file, a session) was not found."""


@dataclass(frozen=True, slots=True)
class ErrorObject:
    """The ``error`` member of an error response."""

    code: int
    message: str
    data: JsonValue = None
    has_data: bool = False
    """Whether ``data`` was present on the wire (``data: null`` and no ``data`` differ)."""

    @classmethod
    def of(cls, code: int, message: str, data: JsonValue = None) -> ErrorObject:
        """Build an error object; ``data`` is sent only when it is not ``None``."""
        return cls(code, message, data, data is not None)


@dataclass(frozen=True, slots=True)
class Request:
    """A call that expects a response with the same ``id``."""

    id: RequestId
    method: str
    params: JsonValue = None
    """An object or an array; ``None`` when absent."""


@dataclass(frozen=True, slots=True)
class Notification:
    """A call without an ``id``: it is never answered."""

    method: str
    params: JsonValue = None


@dataclass(frozen=True, slots=True)
class SuccessResponse:
    """The answer to a request that succeeded."""

    id: RequestId
    result: JsonValue


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """The answer to a request that failed; ``id`` is ``None`` when the request was unreadable."""

    id: RequestId | None
    error: ErrorObject


Response: TypeAlias = SuccessResponse | ErrorResponse
Message: TypeAlias = Request | Notification | SuccessResponse | ErrorResponse


def _valid_id(value: object) -> bool:
    # bool is an int subclass, and JSON true is not a valid id.
    return (type(value) is int) or isinstance(value, str)


def decode_message(obj: JsonValue, *, require_version: bool = True) -> Message:
    """Classify one decoded JSON value as a JSON-RPC message.

    ``require_version=False`` accepts messages without ``"jsonrpc": "2.0"`` (the Codex
    app-server dialect omits it); a wrong version is refused either way.

    Raises :class:`InvalidMessageError` with ``code`` set to the error to answer with.
    """
    if not isinstance(obj, dict):
        if isinstance(obj, list):
            raise InvalidMessageError(
                ErrorCode.INVALID_REQUEST,
                "batch (JSON array) received: JSON-RPC batches are not part of ACP v1",
                kind="batch",
            )
        raise InvalidMessageError(
            ErrorCode.INVALID_REQUEST,
            f"message is a JSON {_json_type(obj)}, not an object",
            kind="not_an_object",
        )
    raw_id = obj.get("id", _MISSING)
    has_id = raw_id is not _MISSING
    request_id: RequestId | None = raw_id if has_id and _valid_id(raw_id) else None  # type: ignore[assignment]
    version = obj.get("jsonrpc", _MISSING)
    if version is _MISSING:
        if require_version:
            raise _invalid('missing "jsonrpc": "2.0"', obj, request_id)
    elif version != JSONRPC_VERSION:
        raise _invalid(f'"jsonrpc" must be "2.0", got {version!r}', obj, request_id)

    method = obj.get("method", _MISSING)
    if method is not _MISSING:
        if not isinstance(method, str):
            raise _invalid('"method" must be a string', obj, request_id)
        params = obj.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            raise _invalid('"params" must be an object or an array', obj, request_id)
        if not has_id:
            return Notification(method, params)
        if request_id is None:
            raise _invalid('"id" must be an integer or a string', obj, None)
        return Request(request_id, method, params)

    # A response.
    if not has_id:
        raise _invalid('message has neither "method" nor "id"', obj, None)
    if raw_id is not None and request_id is None:
        raise _invalid('"id" must be an integer, a string or null', obj, None)
    has_result = "result" in obj
    error = obj.get("error", _MISSING)
    if has_result == (error is not _MISSING):
        raise _invalid('a response must have exactly one of "result" and "error"', obj, None)
    if has_result:
        if request_id is None:
            raise _invalid('a success response must have a non-null "id"', obj, None)
        return SuccessResponse(request_id, obj["result"])
    if not isinstance(error, dict):
        raise _invalid('"error" must be an object', obj, None)
    code = error.get("code")
    message = error.get("message")
    if type(code) is not int or not isinstance(message, str):
        raise _invalid('"error" needs an integer "code" and a string "message"', obj, None)
    has_data = "data" in error
    return ErrorResponse(request_id, ErrorObject(code, message, error.get("data"), has_data))


class _Missing:
    __slots__ = ()


_MISSING: Final = _Missing()


def _invalid(reason: str, obj: dict[str, JsonValue], request_id: RequestId | None) -> Exception:
    # Only a request can be answered: a response or a notification never is.
    answerable = "method" in obj and request_id is not None
    return InvalidMessageError(
        ErrorCode.INVALID_REQUEST,
        f"invalid JSON-RPC message: {reason}",
        kind="invalid_envelope",
        request_id=request_id if answerable else None,
        answerable=answerable,
    )


def _json_type(obj: JsonValue) -> str:
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "boolean"
    if isinstance(obj, (int, float)):
        return "number"
    if isinstance(obj, str):
        return "string"
    return "array" if isinstance(obj, list) else "object"


def message_to_json(message: Message, *, include_version: bool = True) -> JsonObject:
    """The JSON object for ``message`` (``include_version=False`` omits ``"jsonrpc"``)."""
    out: JsonObject = {"jsonrpc": JSONRPC_VERSION} if include_version else {}
    if isinstance(message, Request):
        out["id"] = message.id
        out["method"] = message.method
        if message.params is not None:
            out["params"] = message.params
    elif isinstance(message, Notification):
        out["method"] = message.method
        if message.params is not None:
            out["params"] = message.params
    elif isinstance(message, SuccessResponse):
        out["id"] = message.id
        out["result"] = message.result
    else:
        out["id"] = message.id
        err: JsonObject = {"code": message.error.code, "message": message.error.message}
        if message.error.has_data:
            err["data"] = message.error.data
        out["error"] = err
    return out


_encoder: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ascii_encoder: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


class _Encode:
    """``_encoder.encode`` for a JSON object, with the C encoder that ``JSONEncoder`` builds
    anew on every call made once and kept (a third of the cost of a small message). Same
    output, same errors: the circular-reference markers are checked as ``JSONEncoder`` does,
    and the encoder is made again after a failure (a failure can leave markers behind)."""

    __slots__ = ("_encode",)

    def __init__(self) -> None:
        self._encode = self._make()

    @staticmethod
    def _make() -> Callable[[object, int], Sequence[str]] | None:
        make = getattr(json.encoder, "c_make_encoder", None)
        if make is None:  # pragma: no cover - CPython has the C accelerator
            return None
        return cast(
            "Callable[[object, int], Sequence[str]]",
            make(
                {},
                _encoder.default,
                json.encoder.encode_basestring,
                None,
                _encoder.key_separator,
                _encoder.item_separator,
                False,
                False,
                False,
            ),
        )

    def __call__(self, data: JsonObject) -> str:
        encode = self._encode
        if encode is None:  # pragma: no cover - CPython has the C accelerator
            return _encoder.encode(data)
        try:
            return "".join(encode(data, 0))
        except BaseException:
            self._encode = self._make()
            raise


_encode: Final = _Encode()


def encode_message(message: Message, *, include_version: bool = True) -> bytes:
    """One NDJSON line (UTF-8, compact, newline-terminated) for ``message``.

    Raises :class:`LocalProtocolError` when the payload is not JSON-serialisable (including
    NaN and infinities, which JSON cannot carry).
    """
    data = message_to_json(message, include_version=include_version)
    try:
        text = _encode(data)
    except (TypeError, ValueError) as exc:
        raise LocalProtocolError(f"cannot encode {type(message).__name__}: {exc}") from exc
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate (legal in a JSON string, not in UTF-8; say, in an id a peer sent):
        # escape every non-ASCII character, which is valid JSON and keeps the value exact.
        return _ascii_encoder.encode(data).encode("ascii") + b"\n"
