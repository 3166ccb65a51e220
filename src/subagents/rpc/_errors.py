"""Errors of the JSON-RPC peer."""

from __future__ import annotations

from typing import final

from ..protocol.jsonrpc import ErrorCode, ErrorObject, JsonValue

__all__ = ("ConnectionClosedError", "RPCError")


class RPCError(Exception):
    """A JSON-RPC error: the peer answered with one, or a handler raises one to answer with it.

    Raise it from a request handler to send exactly this error; any other exception becomes
    ``-32603 Internal error``.
    """

    def __init__(self, code: int, message: str, data: JsonValue = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data

    @property
    def error(self) -> ErrorObject:
        """The wire form of this error."""
        return ErrorObject.of(self.code, self.message, self.data)

    @classmethod
    def from_error(cls, error: ErrorObject) -> RPCError:
        """The exception for an error received from the peer."""
        return cls(error.code, error.message, error.data)

    @classmethod
    def method_not_found(cls, method: str) -> RPCError:
        return cls(ErrorCode.METHOD_NOT_FOUND, "Method not found", {"method": method})

    @classmethod
    def invalid_params(cls, data: JsonValue = None) -> RPCError:
        return cls(ErrorCode.INVALID_PARAMS, "Invalid params", data)

    @classmethod
    def internal_error(cls, data: JsonValue = None) -> RPCError:
        return cls(ErrorCode.INTERNAL_ERROR, "Internal error", data)

    @classmethod
    def request_cancelled(cls) -> RPCError:
        return cls(ErrorCode.REQUEST_CANCELLED, "Request cancelled")

    @classmethod
    def auth_required(cls, data: JsonValue = None) -> RPCError:
        return cls(ErrorCode.AUTH_REQUIRED, "Authentication required", data)

    @classmethod
    def resource_not_found(cls, data: JsonValue = None) -> RPCError:
        return cls(ErrorCode.RESOURCE_NOT_FOUND, "Resource not found", data)

    def __repr__(self) -> str:
        return f"RPCError(code={self.code}, message={self.message!r}, data={self.data!r})"


@final
class ConnectionClosedError(Exception):
    """The connection closed before an answer came, or a call was made after it closed.

    ``reason`` says why (end of stream, closed locally, or what the transport reported, such
    as a child's exit status and the tail of its stderr).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
