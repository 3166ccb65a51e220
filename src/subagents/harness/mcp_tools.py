"""MCP server tools as agent-loop tools.

:class:`McpServerTool` wraps one tool of a connected MCP server
(:class:`~subagents.transports.mcp.McpConnection`) as a :class:`~subagents.harness.tools.Tool`:
the model sees it as ``mcp__<server>__<tool>`` (see :func:`mcp_tool_name`) with the server's
description and input schema; a call is a ``tools/call`` bounded by ``timeout`` and by the
execution's cancel signal. A result the server marks ``isError``, a failed call and a
cancelled one are error results the model sees; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, final

from ..cancel import CancelSignal
from ..protocol import JsonValue
from ..transports.mcp import McpConnection, McpError, McpTool
from .tools import ToolResult, ToolSpec

__all__ = ("TOOL_TIMEOUT", "McpServerTool", "mcp_tool_name")

TOOL_TIMEOUT: Final = 300.0
"""Default bound (seconds) on one MCP tool call."""

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME: Final = 64


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, with characters model APIs refuse in tool names replaced by
    ``_`` and cut to 64 characters."""
    return _UNSAFE.sub("_", f"mcp__{server}__{tool}")[:_MAX_NAME]


@final
class McpServerTool:
    """One tool of a connected MCP server, callable by the agent loop."""

    def __init__(
        self, connection: McpConnection, tool: McpTool, *, timeout: float = TOOL_TIMEOUT
    ) -> None:
        self.connection = connection
        self.tool = tool
        self.timeout = timeout
        self._spec = ToolSpec(
            mcp_tool_name(connection.name, tool.name),
            tool.description or f"The tool {tool.name} of the MCP server {connection.name}.",
            tool.input_schema,
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        where = f"MCP tool {self.tool.name} of {self.connection.name}"
        with cancel.linked_scope() as scope:
            try:
                result = await self.connection.call_tool(
                    self.tool.name, arguments, timeout=self.timeout
                )
            except McpError as exc:
                return ToolResult.error(f"{where} failed: {exc}")
        if scope.cancelled_caught:
            return ToolResult.error(f"{where} was cancelled: {cancel.reason}")
        if result.is_error:
            return ToolResult.error(result.text or f"{where} reported an error")
        return ToolResult(result.text)
