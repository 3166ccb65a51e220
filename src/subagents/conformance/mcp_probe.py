"""A tiny stdio MCP server for the conformance suite: proof that an agent connected to it.

Run it as ``python -m subagents.conformance.mcp_probe [--linger SECONDS] MARKER_FILE`` (or as
a script, ``python -I path/to/mcp_probe.py ...``: it needs nothing but the standard library). It
appends its process id to ``MARKER_FILE.pid`` as it starts and writes the value of the
environment variable ``SUBAGENTS_CONFORMANCE_PROBE_TOKEN`` it was started with to
``MARKER_FILE.env`` (empty when unset: proof of the ``env`` its client gave it), then reads
newline-delimited JSON-RPC 2.0 on stdin and answers on stdout:

``initialize``
    Appends the line ``initialize`` to ``MARKER_FILE`` (created if missing), then answers with
    an MCP initialize result: ``protocolVersion`` echoing the client's (``2025-06-18`` when it
    sent none), ``capabilities`` ``{"tools": {}}``, ``serverInfo``
    ``{"name": "subagents-mcp-probe", "version": "1"}``.
``tools/list``
    One tool, ``probe_echo``, whose input is an object with a string ``text``.
``tools/call``
    ``probe_echo`` answers one text content block with its ``text`` argument; any other tool
    is ``-32602``.
``ping``
    An empty result.

Any other request is ``-32601``; notifications (``notifications/initialized`` included) and
responses are ignored; a line that is not JSON is answered ``-32700``. It exits with status 0
at the end of stdin, or, with ``--linger``, that many seconds later (a stubborn server that
outlives its stdin: only a signal ends it sooner). Only the standard library is imported, so
it starts fast.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Final

__all__ = ("SERVER_NAME", "TOKEN_VARIABLE", "TOOL_NAME", "handle", "main")

SERVER_NAME: Final = "subagents-mcp-probe"
TOKEN_VARIABLE: Final = "SUBAGENTS_CONFORMANCE_PROBE_TOKEN"
"""The environment variable whose value the probe records (see the module docstring)."""
TOOL_NAME: Final = "probe_echo"
DEFAULT_PROTOCOL_VERSION: Final = "2025-06-18"

_TOOL: Final[dict[str, Any]] = {
    "name": TOOL_NAME,
    "description": "Echo the given text back.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to echo."}},
        "required": ["text"],
    },
}


class _Error(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _params(msg: dict[str, Any]) -> dict[str, Any]:
    params = msg.get("params")
    return params if isinstance(params, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _result(method: str, params: dict[str, Any], marker: str) -> dict[str, Any]:
    if method == "initialize":
        with open(marker, "a", encoding="utf-8") as f:
            f.write("initialize\n")
        version = params.get("protocolVersion")
        return {
            "protocolVersion": version if isinstance(version, str) else DEFAULT_PROTOCOL_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": SERVER_NAME, "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [_TOOL]}
    if method == "tools/call":
        if params.get("name") != TOOL_NAME:
            raise _Error(-32602, f"Unknown tool: {params.get('name')!r}")
        arguments = params.get("arguments")
        text = arguments.get("text") if isinstance(arguments, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(text, str):
            raise _Error(-32602, "probe_echo needs a string argument 'text'")
        return {"content": [{"type": "text", "text": text}], "isError": False}
    raise _Error(-32601, f"Method not found: {method!r}")


def handle(line: bytes, marker: str) -> dict[str, Any] | None:
    """The answer to one input line, or ``None`` when it needs none (a notification)."""
    try:
        msg: object = json.loads(line)
    except ValueError:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    if not isinstance(msg, dict):
        error = {"code": -32600, "message": "Invalid request"}
        return {"jsonrpc": "2.0", "id": None, "error": error}
    request: dict[str, Any] = msg  # pyright: ignore[reportUnknownVariableType]
    method = request.get("method")
    if "id" not in request or not isinstance(method, str):
        return None  # a notification, or a response to nothing we asked
    try:
        result = _result(method, _params(request), marker)
    except _Error as exc:
        error = {"code": exc.code, "message": exc.message}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main(argv: list[str] | None = None) -> int:
    """Serve stdin/stdout until stdin ends; the exit status."""
    args = sys.argv[1:] if argv is None else argv
    linger = 0.0
    if len(args) == 3 and args[0] == "--linger":
        try:
            linger = float(args[1])
        except ValueError:
            linger = -1.0
        args = args[2:]
    if len(args) != 1 or linger < 0:
        sys.stderr.write(
            "usage: python -m subagents.conformance.mcp_probe [--linger SECONDS] MARKER_FILE\n"
        )
        return 2
    marker = args[0]
    with open(marker + ".env", "w", encoding="utf-8") as env_file:
        env_file.write(os.environ.get(TOKEN_VARIABLE, ""))
    with open(marker + ".pid", "a", encoding="ascii") as pid_file:
        pid_file.write(f"{os.getpid()}\n")
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    for line in stdin:
        if not line.strip():
            continue
        answer = handle(line, marker)
        if answer is not None:
            stdout.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
            stdout.flush()
    if linger:
        time.sleep(linger)
    return 0


if __name__ == "__main__":
    sys.exit(main())
