"""MCP messages a client sends and reads: the handshake, the tool list, a tool's result, and
server-sent events. Pure functions over decoded JSON (no I/O); nothing here raises on odd
input."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast, final

from ..jsonrpc import JsonValue

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

PROTOCOL_VERSION: Final = "2025-06-18"
"""The MCP protocol version this client asks for."""
CANCELLED_METHOD: Final = "notifications/cancelled"
"""The notification that takes a request back, either way (params ``{"requestId": id}``)."""


@final
@dataclass(frozen=True, slots=True)
class McpTool:
    """A tool an MCP server offers."""

    name: str
    description: str
    input_schema: Mapping[str, JsonValue]


@final
@dataclass(frozen=True, slots=True)
class McpToolResult:
    """What a ``tools/call`` gave: its text content joined (other content described), and
    whether the server reports it as an error."""

    text: str
    is_error: bool = False


def initialize_params(client_name: str, client_version: str) -> dict[str, Any]:
    """The ``initialize`` request's params: this protocol version, no client capabilities."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": client_name, "version": client_version},
    }


def parse_tools(listed: Mapping[str, Any]) -> tuple[McpTool, ...] | None:
    """The tools of a ``tools/list`` result (entries without a name skipped, a missing
    schema read as ``{"type": "object"}``); ``None`` when it has no ``tools`` list."""
    tools = listed.get("tools")
    if not isinstance(tools, list):
        return None
    found: list[McpTool] = []
    for entry in cast(list[object], tools):
        if not isinstance(entry, dict):
            continue
        tool = cast(dict[str, Any], entry)
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            continue
        schema = tool.get("inputSchema")
        description = tool.get("description")
        found.append(
            McpTool(
                name,
                description if isinstance(description, str) else "",
                cast(dict[str, JsonValue], schema)
                if isinstance(schema, dict)
                else {"type": "object"},
            )
        )
    return tuple(found)


def tool_result(result: Mapping[str, Any]) -> McpToolResult:
    """A ``tools/call`` result: its text content joined by newlines (a resource's text, other
    content described as ``[kind mimeType]``; the structured content as JSON when there is
    nothing else), and whether ``isError`` is true."""
    parts: list[str] = []
    content = result.get("content")
    for block in cast(list[object], content) if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        item = cast(dict[str, Any], block)
        kind = item.get("type")
        if kind == "text" and isinstance(item.get("text"), str):
            parts.append(cast(str, item["text"]))
        elif kind == "resource" and isinstance(item.get("resource"), dict):
            resource = cast(dict[str, Any], item["resource"])
            text = resource.get("text")
            parts.append(text if isinstance(text, str) else f"[resource {resource.get('uri')}]")
        else:
            parts.append(f"[{kind} {item.get('mimeType', '')}]".replace(" ]", "]"))
    if not parts and "structuredContent" in result:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return McpToolResult("\n".join(parts), result.get("isError") is True)


def sse_events(text: str) -> list[tuple[str, str]]:
    """``(event, data)`` of each complete server-sent event in ``text``."""
    events: list[tuple[str, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", list[str]()
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if data:
            events.append((name, "\n".join(data)))
    return events
