"""The sans-IO protocol layer: JSON-RPC envelopes, NDJSON framing, and the ACP models.

Nothing here does I/O, starts a task or reads a clock, and importing it does not import anyio:
it turns bytes into typed messages and back, so it can be tested (and reused) without
processes or event loops. The ACP models live in :mod:`subagents.protocol.acp` and are
imported only when used; the Codex app-server models in :mod:`subagents.protocol.codex`; Claude
Code's options, stream-json events and control messages in :mod:`subagents.protocol.claude`;
the MCP client's messages in :mod:`subagents.protocol.mcp`. Every NDJSON dialect splits its
lines with :class:`~subagents.protocol.framing.LineSplitter`.
"""

from .errors import InvalidMessageError as InvalidMessageError
from .errors import LocalProtocolError as LocalProtocolError
from .errors import MessageTooLargeError as MessageTooLargeError
from .errors import ProtocolError as ProtocolError
from .errors import RemoteProtocolError as RemoteProtocolError
from .errors import ViolationKind as ViolationKind
from .framing import DEFAULT_MAX_MESSAGE_BYTES as DEFAULT_MAX_MESSAGE_BYTES
from .framing import END_OF_STREAM as END_OF_STREAM
from .framing import NEED_DATA as NEED_DATA
from .framing import FramerEvent as FramerEvent
from .framing import NdjsonFramer as NdjsonFramer
from .jsonrpc import JSONRPC_VERSION as JSONRPC_VERSION
from .jsonrpc import ErrorCode as ErrorCode
from .jsonrpc import ErrorObject as ErrorObject
from .jsonrpc import ErrorResponse as ErrorResponse
from .jsonrpc import JsonObject as JsonObject
from .jsonrpc import JsonValue as JsonValue
from .jsonrpc import Message as Message
from .jsonrpc import Notification as Notification
from .jsonrpc import Request as Request
from .jsonrpc import RequestId as RequestId
from .jsonrpc import Response as Response
from .jsonrpc import SuccessResponse as SuccessResponse
from .jsonrpc import decode_message as decode_message
from .jsonrpc import encode_message as encode_message
from .jsonrpc import message_to_json as message_to_json

__all__ = (
    "DEFAULT_MAX_MESSAGE_BYTES",
    "END_OF_STREAM",
    "JSONRPC_VERSION",
    "NEED_DATA",
    "ErrorCode",
    "ErrorObject",
    "ErrorResponse",
    "FramerEvent",
    "InvalidMessageError",
    "JsonObject",
    "JsonValue",
    "LocalProtocolError",
    "Message",
    "MessageTooLargeError",
    "NdjsonFramer",
    "Notification",
    "ProtocolError",
    "RemoteProtocolError",
    "Request",
    "RequestId",
    "Response",
    "SuccessResponse",
    "ViolationKind",
    "decode_message",
    "encode_message",
    "message_to_json",
)
