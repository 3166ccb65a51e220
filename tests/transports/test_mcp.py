"""The MCP client (``subagents.transports.mcp``) against real servers: the conformance suite's
stdio probe (a child process) and its loopback HTTP/SSE server.

Requirement (ACP session-setup.mdx, "MCP servers"): an agent connects to the servers the
client gives it, over stdio (which every agent MUST support) and, when it advertises them,
HTTP and SSE; every wait is bounded and a failure names its cause.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from subagents.conformance.mcp_http import serve_mcp_http
from subagents.protocol import acp
from subagents.transports.mcp import MAX_LINE, McpError, open_mcp
from tests._ports import closed_port

pytestmark = pytest.mark.anyio


def probe(marker: Path, name: str = "probe") -> acp.McpServerStdio:
    return acp.McpServerStdio(
        name=name,
        command=sys.executable,
        args=["-m", "subagents.conformance.mcp_probe", str(marker)],
        env=[],
    )


def stdio(name: str, *args: str) -> acp.McpServerStdio:
    return acp.McpServerStdio(name=name, command=sys.executable, args=list(args), env=[])


async def test_a_stdio_server_is_listed_called_and_stopped(tmp_path: Path) -> None:
    """stdio: the handshake lists the probe's tool (with its schema); a call answers its text;
    leaving the block stops the server (stdin closed, process reaped)."""
    marker = tmp_path / "marker"
    with anyio.fail_after(20):
        async with open_mcp(probe(marker)) as connection:
            assert [tool.name for tool in connection.tools] == ["probe_echo"]
            assert connection.tools[0].input_schema["type"] == "object"
            result = await connection.call_tool("probe_echo", {"text": "over stdio"})
            assert (result.text, result.is_error) == ("over stdio", False)
            with pytest.raises(McpError, match="tools/call was answered with an error"):
                await connection.call_tool("no_such_tool", {})
            # The connection is still usable after an error.
            assert (await connection.call_tool("probe_echo", {"text": "again"})).text == "again"
    assert marker.read_text() == "initialize\n"


async def test_http_and_sse_servers_are_listed_and_called() -> None:
    """http (streamable HTTP) and sse: the same handshake and tool call over both transports,
    with the entry's headers sent along; an isError result is reported as an error result."""
    async with serve_mcp_http() as server:
        entries: list[acp.McpServer] = [
            acp.HttpMcpServer(name="web", url=server.http_url, headers=[]),
            acp.SseMcpServer(
                name="events",
                url=server.sse_url,
                headers=[acp.HttpHeader(name="Authorization", value="Bearer t")],
            ),
        ]
        for entry in entries:
            with anyio.fail_after(20):
                async with open_mcp(entry) as connection:
                    assert [tool.name for tool in connection.tools] == ["echo"]
                    result = await connection.call_tool("echo", {"text": entry.name})
                    assert (result.text, result.is_error) == (entry.name, False)
                    refused = await connection.call_tool("echo", {})
                    assert refused.is_error
    assert server.methods.count("initialize") == 2
    assert server.methods.count("tools/call") == 4


async def test_failures_name_their_cause(tmp_path: Path) -> None:
    """Bad input gets a clear error: a missing command, a server that exits at once (with
    its exit status), one that never answers (bounded), one that writes garbage (named), an
    HTTP URL nobody serves."""
    cases: list[tuple[acp.McpServer, str]] = [
        (
            acp.McpServerStdio(name="missing", command=str(tmp_path / "nope"), args=[], env=[]),
            "nope",
        ),
        (stdio("quitter", "-c", "import sys; sys.exit(4)"), "status 4"),
        (stdio("silent", "-c", "import sys; sys.stdin.read()"), "no answer to initialize"),
        (
            stdio("garbage", "-c", "print('hello', flush=True); import sys; sys.stdin.read()"),
            "not JSON on stdout: 'hello'",
        ),
        (
            acp.HttpMcpServer(
                name="nobody", url=f"http://127.0.0.1:{closed_port()}/mcp", headers=[]
            ),
            "ConnectError",
        ),
    ]
    for server, cause in cases:
        # Only the silent server waits its bound out; the others fail on what they do, which
        # on a loaded machine can come after a second (a Python start).
        timeout = 1.0 if server.name == "silent" else 15.0
        with anyio.fail_after(30), pytest.raises(McpError) as failed:
            async with open_mcp(server, timeout=timeout):
                pytest.fail(f"{server.name} connected")
        assert cause in str(failed.value), (server.name, str(failed.value))


_CHATTY_SERVER = """
import json, pathlib, sys, threading, time
go, wrote = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def chatter():
    while not go.exists():
        time.sleep(0.01)
    print("between requests", flush=True)
    wrote.touch()
threading.Thread(target=chatter, daemon=True).start()
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue  # a notification, or the client's answer to the bad line (a parse error)
    result = {
        "initialize": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "chatty", "version": "1"}},
        "tools/list": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]},
    }.get(message["method"], {"content": [{"type": "text", "text": "ok"}]})
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


async def test_a_bad_line_while_no_request_waits_fails_the_next_request(tmp_path: Path) -> None:
    """A line that is not JSON, written while no request waits (here between requests, once
    told to; also a server that writes before it is asked), is not lost: the next request
    fails naming it, whether the line is read before that request is sent or while it waits."""
    go, wrote = tmp_path / "go", tmp_path / "wrote"
    server = stdio("chatty", "-c", _CHATTY_SERVER, str(go), str(wrote))
    with anyio.fail_after(30):
        async with open_mcp(server, timeout=15.0) as connection:
            go.touch()
            while not wrote.exists():  # noqa: ASYNC110 (another process writes the file)
                await anyio.sleep(0.01)
            with pytest.raises(McpError, match="not JSON on stdout: 'between requests'"):
                await connection.call_tool("echo", {})
            # Said once: the connection goes on.
            assert (await connection.call_tool("echo", {})).text == "ok"


_AFTER_THE_ANSWER_SERVER = """
import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    result = {
        "initialize": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "late", "version": "1"}},
        "tools/list": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]},
    }.get(message["method"], {"content": [{"type": "text", "text": "ok"}]})
    answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n"
    if message["method"] == "tools/call" and message["params"]["arguments"].get("then"):
        answer += message["params"]["arguments"]["then"] + "\\n"
    os.write(1, answer.encode())  # the answer and what follows it in one write
"""


async def test_a_bad_line_right_after_an_answer_fails_the_next_request_not_that_one() -> None:
    """A line that is not JSON, written right after an answer (read with it, before the
    caller has resumed), does not fail the request that was answered: the call returns its
    result, the next request fails naming the line, and the one after works."""
    server = stdio("late", "-c", _AFTER_THE_ANSWER_SERVER)
    with anyio.fail_after(30):
        async with open_mcp(server, timeout=15.0) as connection:
            for _ in range(3):  # the same every time, not a race that sometimes goes right
                answered = await connection.call_tool("echo", {"then": "after the answer"})
                assert answered.text == "ok"
                with pytest.raises(McpError, match="not JSON on stdout: 'after the answer'"):
                    await connection.call_tool("echo", {})
                assert (await connection.call_tool("echo", {})).text == "ok"


async def test_a_line_over_the_limit_fails_the_request_naming_the_limit() -> None:
    """stdio lines are bounded (MAX_LINE): a longer one fails the request waiting with an
    McpError naming the limit (the line is skipped, never held whole)."""
    huge = stdio(
        "huge", "-c", "import sys; print('{' + 'x' * 4_200_000 + '}', flush=True); sys.stdin.read()"
    )
    with anyio.fail_after(20), pytest.raises(McpError) as failed:
        async with open_mcp(huge, timeout=10.0):
            pytest.fail("huge connected")
    assert f"a line longer than {MAX_LINE} bytes on stdout" in str(failed.value)


async def test_a_call_slower_than_its_bound_fails_and_the_connection_stays_usable(
    tmp_path: Path,
) -> None:
    """Every wait is bounded: a tools/call with no answer within its timeout is an McpError
    naming the bound, and the server is told with notifications/cancelled naming the
    request; later calls work. A request from the server is answered -32601 (this client
    offers nothing) and does not disturb the handshake."""
    slow = tmp_path / "slow_server.py"
    seen = tmp_path / "seen.jsonl"
    slow.write_text(
        "import json, sys\n"
        f"seen = open({str(seen)!r}, 'a')\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    seen.write(line); seen.flush()\n"
        "    if 'id' not in m or 'method' not in m: continue\n"
        "    if m['method'] == 'initialize':\n"
        "        ask = {'jsonrpc': '2.0', 'id': 'srv-1', 'method': 'roots/list'}\n"
        "        print(json.dumps(ask), flush=True)\n"
        "        r = {'protocolVersion': '2025-06-18', 'capabilities': {}, 'serverInfo': {}}\n"
        "    elif m['method'] == 'tools/list':\n"
        "        r = {'tools': [{'name': 'wait', 'inputSchema': {'type': 'object'}}]}\n"
        "    elif m['params']['arguments'].get('hang'):\n"
        "        continue\n"
        "    else:\n"
        "        r = {'content': [{'type': 'text', 'text': 'done'}]}\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n"
    )
    with anyio.fail_after(20):
        async with open_mcp(stdio("slow", str(slow))) as connection:
            with pytest.raises(McpError, match=r"no answer to tools/call within 0\.3 s"):
                await connection.call_tool("wait", {"hang": True}, timeout=0.3)
            assert (await connection.call_tool("wait", {})).text == "done"
    messages = [json.loads(line) for line in seen.read_text().splitlines()]
    hung = next(m for m in messages if m.get("params", {}).get("arguments") == {"hang": True})
    cancelled = [m for m in messages if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in cancelled] == [hung["id"]]
    (refused,) = [m for m in messages if m.get("id") == "srv-1"]
    assert refused["error"]["code"] == -32601


async def test_an_error_answer_is_an_error_and_not_announced_as_cancelled() -> None:
    """A request the server answers with a JSON-RPC error raises McpError with that error; it
    was answered, so no notifications/cancelled follows (only unanswered requests get one)."""
    async with serve_mcp_http() as server:
        entry = acp.HttpMcpServer(name="web", url=server.http_url, headers=[])
        with anyio.fail_after(20):
            async with open_mcp(entry) as connection:
                with pytest.raises(McpError, match="resources/list was answered with an error"):
                    await connection.request("resources/list", {})
    assert "resources/list" in server.methods
    assert "notifications/cancelled" not in server.methods
