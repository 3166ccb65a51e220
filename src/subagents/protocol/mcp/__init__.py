"""MCP (Model Context Protocol), the client's side, sans-IO: the handshake's params, the tool
list, a tool's result, server-sent events.

MCP is JSON-RPC 2.0; the envelopes and the framing are :mod:`subagents.protocol.jsonrpc` and
:mod:`subagents.protocol.framing`, the correlation and cancellation (``notifications/
cancelled``) the peer's (:mod:`subagents.rpc`). The client that connects to servers over
stdio, HTTP and SSE is :mod:`subagents.transports.mcp`. Nothing here does I/O or imports
anyio.
"""

from __future__ import annotations

from ._messages import CANCELLED_METHOD as CANCELLED_METHOD
from ._messages import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._messages import McpTool as McpTool
from ._messages import McpToolResult as McpToolResult
from ._messages import initialize_params as initialize_params
from ._messages import parse_tools as parse_tools
from ._messages import sse_events as sse_events
from ._messages import tool_result as tool_result

__all__ = (
    "CANCELLED_METHOD",
    "PROTOCOL_VERSION",
    "McpTool",
    "McpToolResult",
    "initialize_params",
    "parse_tools",
    "sse_events",
    "tool_result",
)
