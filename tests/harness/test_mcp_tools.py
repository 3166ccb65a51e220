"""MCP server tools as agent-loop tools (``subagents.harness.mcp_tools``), against the
loopback MCP server of the conformance suite."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from subagents.conformance.mcp_http import serve_mcp_http
from subagents.harness.mcp_tools import McpServerTool, mcp_tool_name
from subagents.protocol import acp
from subagents.providers.contract import CancelSignal
from subagents.transports.mcp import McpTool, open_mcp

pytestmark = pytest.mark.anyio


def test_tool_names_are_prefixed_safe_and_short() -> None:
    """Model APIs take tool names of [A-Za-z0-9_-]{1,64}: the server and tool names are
    joined as mcp__<server>__<tool>, other characters become _, and the name is cut at 64."""
    assert mcp_tool_name("files", "read") == "mcp__files__read"
    assert mcp_tool_name("my server", "read.file/v2") == "mcp__my_server__read_file_v2"
    assert len(mcp_tool_name("s" * 50, "t" * 50)) == 64


async def test_a_call_answers_and_an_error_result_is_an_error() -> None:
    """The tool's spec is the server's (description, input schema); a call's text is the
    result; a result the server marks isError is an error result the model sees."""
    async with serve_mcp_http() as server:
        entry = acp.HttpMcpServer(name="web", url=server.http_url, headers=[])
        with anyio.fail_after(20):
            async with open_mcp(entry) as connection:
                tool = McpServerTool(connection, connection.tools[0])
                assert tool.spec.name == "mcp__web__echo"
                assert tool.spec.description == "Answers its text argument."
                assert tool.spec.input_schema["required"] == ["text"]
                ok = await tool.execute({"text": "hi"}, cancel=CancelSignal())
                refused = await tool.execute({}, cancel=CancelSignal())
    assert (ok.content, ok.is_error) == ("hi", False)
    assert refused.is_error
    assert "echo needs a string text" in refused.content


async def test_a_failed_or_cancelled_call_is_an_error_result_not_an_exception(
    tmp_path: Path,
) -> None:
    """A tools/call the server answers with a JSON-RPC error (the stdio probe, for a tool it
    does not have) and one whose signal fires are error results naming the tool and the
    cause; nothing raises into the loop."""
    probe = acp.McpServerStdio(
        name="probe",
        command=sys.executable,
        args=["-m", "subagents.conformance.mcp_probe", str(tmp_path / "marker")],
        env=[],
    )
    with anyio.fail_after(20):
        async with open_mcp(probe) as connection:
            ghost = McpServerTool(connection, McpTool("ghost", "", {"type": "object"}))
            failed = await ghost.execute({}, cancel=CancelSignal())
            signal = CancelSignal()
            signal.cancel("the user pressed stop")
            echo = McpServerTool(connection, connection.tools[0])
            cancelled = await echo.execute({"text": "late"}, cancel=signal)
    assert failed.is_error
    assert "MCP tool ghost of probe failed: tools/call was answered with an error" in (
        failed.content
    )
    assert cancelled.is_error
    assert "cancelled: the user pressed stop" in cancelled.content
