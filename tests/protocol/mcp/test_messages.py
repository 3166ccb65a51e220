"""MCP messages a client reads, without a server (issue 18 point 1: the dialect's messages
are sans-IO; ACP session-setup.mdx, "MCP servers", for what an agent does with them)."""

from __future__ import annotations

from subagents.protocol.mcp import (
    PROTOCOL_VERSION,
    McpTool,
    McpToolResult,
    initialize_params,
    parse_tools,
    sse_events,
    tool_result,
)


def test_initialize_asks_for_this_protocol_version_and_offers_no_capabilities() -> None:
    """The handshake: protocolVersion, empty capabilities, the client's name and version."""
    assert initialize_params("subagents", "1.0") == {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "subagents", "version": "1.0"},
    }


def test_the_tool_list_keeps_named_tools_and_defaults_their_schema() -> None:
    """tools/list: entries without a name (or not objects) are skipped; a missing schema is
    an empty object schema; no tools list at all is None (the caller's error)."""
    listed = {
        "tools": [
            {"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}},
            {"name": "bare"},
            {"description": "nameless"},
            "junk",
        ]
    }
    assert parse_tools(listed) == (
        McpTool("echo", "Echo", {"type": "object"}),
        McpTool("bare", "", {"type": "object"}),
    )
    assert parse_tools({}) is None


def test_a_tool_result_is_its_text_with_other_content_described() -> None:
    """tools/call: text blocks joined, a resource's text, other blocks named by kind and
    type, structured content when nothing else, and isError."""
    result = {
        "content": [
            {"type": "text", "text": "one"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "two"}},
            {"type": "resource", "resource": {"uri": "file:///b"}},
            {"type": "image", "mimeType": "image/png", "data": "..."},
            {"type": "audio"},
        ],
        "isError": True,
    }
    assert tool_result(result) == McpToolResult(
        "one\ntwo\n[resource file:///b]\n[image image/png]\n[audio]", True
    )
    assert tool_result({"structuredContent": {"n": 1}}) == McpToolResult('{"n": 1}')


def test_server_sent_events_are_split_into_name_and_data() -> None:
    """SSE: blocks split on a blank line (CRLF accepted), data lines joined, the event name
    defaulting to message; a block without data is nothing."""
    text = 'event: endpoint\r\ndata: /post?s=1\r\n\r\ndata: {"a":\ndata: 1}\n\n: comment\n\n'
    assert sse_events(text) == [("endpoint", "/post?s=1"), ("message", '{"a":\n1}')]
