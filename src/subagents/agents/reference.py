"""The reference ACP agent: conforming, offline, with a scripted "model".

Run it as ``python -m subagents.agents.reference``; it speaks ACP v1 over stdin/stdout and
exits (status 0) when stdin ends. It is built on :mod:`subagents.transports.acp_agent` and is
the fixture that client, provider and conformance tests drive, so it starts fast (nothing is
imported beyond the endpoint; the child-process module or httpx only once an MCP server is
given) and every behaviour is chosen by the prompt.

Scenarios
---------
The first word of the prompt's text (case-insensitive) picks the scenario; anything else is
``echo``.

``echo`` (default)
    One ``agent_message_chunk`` with the prompt's text (all of it, keyword included; other
    blocks are described, never read or decoded: ``[resource_link NAME URI]``, an embedded
    resource's text or ``[resource URI]``, ``[image MIME]``, ``[audio MIME]``), then
    ``end_turn``.
``stream [N [MS]]``
    N ``agent_message_chunk`` updates (default 5) sharing one ``messageId``, texts
    ``"1 "``, ``"2 "``, ..., MS milliseconds apart (default 0), then ``end_turn``.
``think``
    One ``agent_thought_chunk``, then one ``agent_message_chunk``, then ``end_turn``.
``plan``
    A three-entry ``plan``, sent complete four times as the entries progress (pending →
    in_progress → completed), then a message and ``end_turn``.
``tool``
    A ``tool_call`` (``call_N``, status ``pending``), then ``session/request_permission`` with
    the options ``allow`` (allow_once) and ``reject`` (reject_once). Allowed: a
    ``tool_call_update`` ``in_progress``, then ``completed`` with text content, a message and
    ``end_turn``. Rejected: ``tool_call_update`` ``failed``, a message and ``end_turn``.
    Outcome ``cancelled``, or a ``session/cancel`` while waiting: ``tool_call_update``
    ``failed`` and ``stopReason: "cancelled"``.
``slow [N]``
    An ``agent_message_chunk`` ``"tick i"`` every 100 ms, N ticks (default 600, one minute),
    then ``end_turn``. On ``session/cancel``: one last chunk ``"cancelled after i ticks"`` and
    ``stopReason: "cancelled"``.
``fs``
    With the client's ``fs.writeTextFile``: writes ``<cwd>/reference-agent.txt`` through
    ``fs/write_text_file`` (a ``tool_call`` of kind ``edit``); with ``fs.readTextFile``: reads
    it back through ``fs/read_text_file`` (kind ``read``) and says what it read. Without
    either it says the client does not offer file system access. ``end_turn``.
``terminal``
    With the client's ``terminal``: ``terminal/create`` running
    ``echo hello from the reference agent`` in the session cwd, ``terminal/wait_for_exit``,
    ``terminal/output``, ``terminal/release``, reported by a ``tool_call`` of kind
    ``execute`` (with the terminal as content) and a message. Without it, says the client does
    not offer terminals. ``end_turn``.
``elicit``
    With the client's ``elicitation.form``: ``elicitation/create`` (form mode, scoped to the
    session) asking for a name, then a message greeting it (accepted) or saying the user did
    not answer (declined, cancelled). Without it, says the client does not offer form
    elicitation. ``end_turn``.
``crash``
    Sends two message chunks, writes ``reference agent: crashing on purpose`` to stderr and
    exits at once with status 3, leaving the prompt unanswered.
``stderr [N]``
    Writes N bytes (default 1024) to stderr, then says so; ``end_turn``.
``print``
    Calls ``print()`` (which goes to stderr: stdout is reserved for the protocol), says so;
    ``end_turn``.
``stop REASON``
    Answers with the stop reason ``end_turn``, ``max_tokens``, ``max_turn_requests`` or
    ``refusal`` after one message.
``fail``
    The prompt is answered with a JSON-RPC error (``-32603``).
``mcp``
    One message naming the MCP servers of the session's last setup (``session/new``, ``load``
    or ``resume``) with their tools, ``MCP servers connected: NAME (tools: T1, T2).``, and
    those that failed, ``MCP servers that failed: NAME (REASON).``; or ``No MCP servers were
    given for this session.`` ``end_turn``.

Sessions
--------
Sessions live in memory for the life of the process and are also saved (a JSON file each:
history, title, mode and config values; after every turn and every mode or option change), so
another process can ``session/load`` or ``session/resume`` them (cold resume), as a real agent
keeps its sessions across restarts: in ``SUBAGENTS_REFERENCE_SESSION_DIR`` when set, else in a
private directory of the system's temporary directory
(``$TMPDIR/subagents-reference-agent-<uid>/sessions``, mode 0700; not used when another user
owns it; sessions there are kept for an hour, then pruned). ``session/delete`` removes the
file too; ``session/close`` only frees the session in the process (it is not active there
until ``session/load`` or ``session/resume``). Advertised and implemented: ``loadSession``
(replays the session's user and agent messages as ``user_message_chunk`` /
``agent_message_chunk`` before answering), ``sessionCapabilities`` ``list`` (optionally
filtered by ``cwd``; no pagination, so any ``cursor`` is invalid: ``-32602``), ``resume``
(no replay), ``close`` (cancels a running turn first) and ``delete`` (silent for unknown ids).
``session/new`` answers first and then sends an ``available_commands_update`` listing the
scenarios. An unknown session id is ``-32002`` (resource not found); a relative ``cwd`` is
``-32602``.

Modes and config options
------------------------
``session/new``, ``session/load`` and ``session/resume`` answer with ``modes`` (``ask`` and
``code``; a new session starts in ``code``) and ``configOptions``: one ``select`` option,
``verbosity``, values ``brief`` (the default) and ``full``. No ``boolean`` option is ever
sent. ``session/set_mode`` with an unknown mode id is ``-32602``; otherwise it sends a
``current_mode_update`` and answers ``{}``. ``session/set_config_option`` with an unknown
``configId`` or a value that is not one of the option's is ``-32602``; otherwise it sends a
``config_option_update`` and answers with the complete list of options. Both are stored with
the session; neither changes what a scenario does.

Prompt capabilities
-------------------
``image``, ``audio`` and ``embeddedContext`` (besides the baseline text and resource links).
None of them is read, decoded or fetched: the ``echo`` scenario describes them.

MCP servers
-----------
``mcpCapabilities``: ``http`` and ``sse`` true; stdio servers are supported, as every agent
must. For each entry of ``mcpServers`` (``session/new``, ``session/load``, ``session/resume``)
the agent connects: a stdio entry's command is started (its ``args``; an environment of the
usual base variables, ``PATH``, ``HOME``, ..., plus the entry's ``env``); an ``http`` entry is
spoken to as streamable HTTP (each message POSTed to its ``url`` with its ``headers``, the
answer read from the JSON or event-stream body); an ``sse`` entry's ``url`` is opened as an
event stream whose ``endpoint`` event names where to POST. Then MCP ``initialize`` (protocol
version ``2025-06-18``), ``notifications/initialized`` and ``tools/list`` (first page only);
the tool names are remembered (replacing those of the session's previous setup), and the
connection is closed (a stdio server's stdin closed and the process reaped, its process group
terminated if it lingers). Each step is bounded (5 s to start and per answer; the servers of
one request are connected concurrently). It has no model, so it never calls a tool: it
connects, lists the tools and disconnects. A server that cannot be reached or does not answer
does not fail the request: the reason goes to stderr and the ``mcp`` scenario reports it.

Authentication
--------------
None by default (``authMethods`` is empty). With ``SUBAGENTS_REFERENCE_REQUIRE_AUTH`` set to a
method id, ``authMethods`` lists that one method (kind ``agent``), and ``session/new``,
``session/load``, ``session/resume``, ``session/set_mode``, ``session/set_config_option`` and
``session/prompt`` are ``-32000`` (auth required) until ``authenticate`` with that id has
succeeded on the connection. ``authenticate`` with any other id is ``-32602``. ``logout`` is
advertised (``agentCapabilities.auth.logout``) and ends the connection's authentication.

Additional directories
----------------------
``sessionCapabilities.additionalDirectories`` is advertised: ``session/new`` takes extra
workspace roots, each of which must be absolute (``-32602`` otherwise); they are not used
otherwise (the agent touches no files).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal, cast, final

import anyio

from subagents import __version__
from subagents.agents._content import describe_block
from subagents.protocol import JsonValue, acp
from subagents.protocol.jsonrpc import ErrorCode
from subagents.rpc import RPCError
from subagents.transports.acp_agent import Agent, AgentTurn, ClientConnection, run_agent

if TYPE_CHECKING:
    from subagents.protocol.acp import (
        AgentCapabilities,
        AuthenticateRequest,
        AuthenticateResponse,
        CloseSessionRequest,
        CloseSessionResponse,
        DeleteSessionRequest,
        DeleteSessionResponse,
        InitializeRequest,
        InitializeResponse,
        ListSessionsRequest,
        ListSessionsResponse,
        LoadSessionRequest,
        LoadSessionResponse,
        LogoutRequest,
        LogoutResponse,
        McpServer,
        NewSessionRequest,
        NewSessionResponse,
        PlanEntryStatus,
        PromptRequest,
        PromptResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        SessionConfigOption,
        SessionModeState,
        SessionUpdate,
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
        SetSessionModeRequest,
        SetSessionModeResponse,
        StopReason,
        ToolCallStatus,
    )

__all__ = ("AUTH_ENV_VAR", "MODES", "SCENARIOS", "SESSION_DIR_ENV_VAR", "ReferenceAgent", "main")

SCENARIOS: Final[dict[str, str]] = {
    "echo": "Echo the prompt (the default)",
    "stream": "Stream N message chunks, MS ms apart (stream N [MS])",
    "think": "A thought chunk, then a message",
    "plan": "A plan whose entries progress",
    "tool": "A tool call that asks for permission",
    "slow": "Tick every 100 ms until cancelled (slow N)",
    "fs": "Write and read a file through the client",
    "terminal": "Run echo in a client terminal",
    "elicit": "Ask the user for a name through a form elicitation",
    "crash": "Exit abruptly mid-turn",
    "stderr": "Write N bytes to stderr (stderr N)",
    "print": "Call print() in agent code",
    "stop": "End with a given stop reason (stop REASON)",
    "fail": "Answer the prompt with a JSON-RPC error",
    "mcp": "List the MCP servers connected at session setup and their tools",
}
"""Scenario keywords and what they do (also sent as the session's available commands)."""

SESSION_DIR_ENV_VAR: Final = "SUBAGENTS_REFERENCE_SESSION_DIR"
"""Where sessions are saved (when set), so another process can load or resume them."""
AUTH_ENV_VAR: Final = "SUBAGENTS_REFERENCE_REQUIRE_AUTH"
"""When set (to an auth method id), sessions need ``authenticate`` with that id first."""

MODES: Final[dict[str, tuple[str, str]]] = {
    "ask": ("Ask", "Answer without changing anything (the scenarios run the same)"),
    "code": ("Code", "Write and run code (the scenarios run the same)"),
}
"""Session mode ids, their names and descriptions; a new session starts in ``code``."""
_DEFAULT_MODE: Final = "code"
_CONFIG_ID: Final = "verbosity"
_CONFIG_VALUES: Final[dict[str, str]] = {"brief": "Brief", "full": "Full"}
_CONFIG_DEFAULT: Final = "brief"

_MCP_TIMEOUT: Final = 5.0
"""How long an MCP server may take to start, and to answer each request."""

_TICK: Final = 0.1
_STOP_REASONS: Final = ("end_turn", "max_tokens", "max_turn_requests", "refusal")
_FILE_NAME: Final = "reference-agent.txt"
_CRASH_STATUS: Final = 3


def _default_dir() -> str | None:
    """``$TMPDIR/subagents-reference-agent-<uid>/sessions`` (made private), or ``None`` when
    it cannot be made or belongs to another user."""
    base = os.environ.get("TMPDIR") or os.environ.get("TEMP") or "/tmp"
    getuid = getattr(os, "getuid", None)
    uid = getuid() if getuid is not None else None
    root = os.path.join(base, f"subagents-reference-agent-{uid if uid is not None else 'user'}")
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        if uid is not None and os.stat(root).st_uid != uid:
            return None
    except OSError:
        return None
    return os.path.join(root, "sessions")


_KEEP: Final = 3600.0
"""How long sessions saved in the default directory are kept (seconds)."""


def _prune(directory: str) -> None:
    """Delete the sessions of ``directory`` older than :data:`_KEEP`, at most once per
    :data:`_KEEP` (a marker file's age says when it last happened): the default directory
    does not grow without bound, and a process start costs one ``stat``."""
    marker = os.path.join(directory, ".pruned")
    now = time.time()
    try:
        if now - os.stat(marker).st_mtime < _KEEP:
            return
    except OSError:
        pass
    try:
        with open(marker, "w", encoding="ascii"):
            pass
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.endswith((".json", ".tmp")) and now - entry.stat().st_mtime > _KEEP:
                    with contextlib.suppress(OSError):
                        os.remove(entry.path)
    except OSError:
        return


def _new_id() -> str:
    return os.urandom(16).hex()  # like uuid4().hex, without importing uuid (start-up time)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _int_arg(words: list[str], default: int) -> int:
    if len(words) > 1 and words[1].isdigit():
        return int(words[1])
    return default


_Role = Literal["user", "agent"]


def _history() -> list[tuple[_Role, str]]:
    return []


def _mcp_results() -> list[_McpResult]:
    return []


@dataclass(frozen=True)
class _McpResult:
    """What connecting to one MCP server gave: its tools, or why it failed."""

    name: str
    tools: tuple[str, ...] = ()
    error: str | None = None


@dataclass
class _Session:
    session_id: str
    cwd: str
    history: list[tuple[_Role, str]] = field(default_factory=_history)
    title: str | None = None
    updated_at: str = field(default_factory=_now)
    mode_id: str = _DEFAULT_MODE
    verbosity: str = _CONFIG_DEFAULT
    mcp: list[_McpResult] = field(default_factory=_mcp_results)
    """The MCP servers of the last session setup (new, load or resume); not saved."""

    def modes(self) -> SessionModeState:
        available = [
            acp.SessionMode(id=mode_id, name=name, description=description)
            for mode_id, (name, description) in MODES.items()
        ]
        return acp.SessionModeState(current_mode_id=self.mode_id, available_modes=available)

    def config_options(self) -> list[SessionConfigOption]:
        values = [
            acp.SessionConfigSelectOption(value=value, name=name)
            for value, name in _CONFIG_VALUES.items()
        ]
        options: list[SessionConfigOption] = [
            acp.SelectSessionConfigOption(
                id=_CONFIG_ID,
                name="Verbosity",
                description="How much the agent says (stored and reported only)",
                current_value=self.verbosity,
                options=values,
            )
        ]
        return options


# ----------------------------------------------------------------------------------- MCP


async def _connect(server: McpServer) -> _McpResult:
    """Connect to one server, list its tools, disconnect; never raises (but cancellation)."""
    from subagents.transports.mcp import McpError, open_mcp

    try:
        async with open_mcp(server, timeout=_MCP_TIMEOUT) as connection:
            tools = tuple(tool.name for tool in connection.tools)
    except McpError as exc:
        error = str(exc) or type(exc).__name__
        sys.stderr.write(f"reference agent: MCP server {server.name!r} skipped: {error}\n")
        sys.stderr.flush()
        return _McpResult(server.name, error=error)
    return _McpResult(server.name, tools)


async def _connect_mcp(servers: Sequence[McpServer]) -> list[_McpResult]:
    """Connect to every server at once (each bounded); one result per server, in order."""
    results: list[_McpResult | None] = [None] * len(servers)

    async def connect(index: int, server: McpServer) -> None:
        results[index] = await _connect(server)

    async with anyio.create_task_group() as tg:
        for index, server in enumerate(servers):
            tg.start_soon(connect, index, server)
    return [result for result in results if result is not None]


@final
class _Run:
    """One prompt turn of the scripted model."""

    def __init__(self, agent: ReferenceAgent, session: _Session, turn: AgentTurn) -> None:
        self.agent = agent
        self.session = session
        self.turn = turn

    async def update(self, update: SessionUpdate) -> None:
        await self.turn.send_update(update)

    async def say(self, text: str, *, message_id: str | None = None) -> None:
        chunk = acp.AgentMessageChunkSessionUpdate(content=acp.TextContentBlock(text=text))
        if message_id is not None:
            chunk.message_id = message_id
        await self.update(chunk)
        self.session.history.append(("agent", text))

    async def tool_update(
        self, tool_call_id: str, status: ToolCallStatus, text: str | None = None
    ) -> None:
        update = acp.ToolCallUpdateSessionUpdate(tool_call_id=tool_call_id, status=status)
        if text is not None:
            block = acp.TextContentBlock(text=text)
            update.content = [acp.ContentToolCallContent(content=block)]
        await self.update(update)

    # ------------------------------------------------------------------ scenarios

    async def echo(self, text: str) -> StopReason:
        await self.say(text)
        return "end_turn"

    async def stream(self, count: int, interval_ms: int = 0) -> StopReason:
        message_id = _new_id()
        for i in range(1, count + 1):
            await self.say(f"{i} ", message_id=message_id)
            if interval_ms:
                await anyio.sleep(interval_ms / 1000)
        return "end_turn"

    async def think(self, text: str) -> StopReason:
        thought = acp.TextContentBlock(text=f"Thinking about {text!r}.")
        await self.update(acp.AgentThoughtChunkSessionUpdate(content=thought))
        await self.say("Done thinking.")
        return "end_turn"

    async def plan(self) -> StopReason:
        steps = ("Read the prompt", "Think about it", "Answer")
        statuses: list[PlanEntryStatus] = ["pending"] * len(steps)
        for done in range(len(steps) + 1):
            for i in range(len(steps)):
                statuses[i] = "completed" if i < done else "in_progress" if i == done else "pending"
            entries = [
                acp.PlanEntry(content=step, priority="medium", status=status)
                for step, status in zip(steps, statuses, strict=True)
            ]
            # agent-plan.mdx: every update carries the complete list.
            await self.update(acp.PlanSessionUpdate(entries=entries))
        await self.say("The plan is complete.")
        return "end_turn"

    async def tool(self) -> StopReason:
        tool_call_id = self.agent.next_tool_call_id()
        await self.update(
            acp.ToolCallSessionUpdate(
                tool_call_id=tool_call_id,
                title="Run the reference tool",
                kind="execute",
                status="pending",
                raw_input={"command": "reference-tool"},
            )
        )
        options = [
            acp.PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
            acp.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        try:
            answer = await self.turn.request_permission(
                acp.ToolCallUpdate(tool_call_id=tool_call_id), options
            )
        except anyio.get_cancelled_exc_class():
            await self.tool_update(tool_call_id, "failed")
            raise
        outcome = answer.outcome
        if isinstance(outcome, acp.CancelledRequestPermissionOutcome):
            await self.tool_update(tool_call_id, "failed")
            return "cancelled"
        if outcome.option_id == "allow":
            await self.tool_update(tool_call_id, "in_progress")
            await self.tool_update(tool_call_id, "completed", "The reference tool ran.")
            await self.say("The tool ran.")
        else:
            await self.tool_update(tool_call_id, "failed", "Permission denied.")
            await self.say(f"Permission denied (option {outcome.option_id!r}).")
        return "end_turn"

    async def slow(self, ticks: int) -> StopReason:
        done = 0
        try:
            for i in range(ticks):
                await self.say(f"tick {i}")
                done = i + 1
                await anyio.sleep(_TICK)
        except anyio.get_cancelled_exc_class():
            await self.say(f"cancelled after {done} ticks")
            raise
        return "end_turn"

    async def fs(self) -> StopReason:
        conn = self.turn.connection
        path = os.path.join(self.session.cwd, _FILE_NAME)
        if not (conn.can_write_text_file or conn.can_read_text_file):
            await self.say(
                "The client does not offer file system access (fs.readTextFile / fs.writeTextFile)."
            )
            return "end_turn"
        if conn.can_write_text_file:
            content = f"written by the reference agent in session {self.session.session_id}\n"
            await self.file_step("edit", f"Write {path}", path, lambda: self.write(path, content))
        if conn.can_read_text_file:
            await self.file_step("read", f"Read {path}", path, lambda: self.read(path))
        return "end_turn"

    async def write(self, path: str, content: str) -> str:
        await self.turn.write_text_file(path, content)
        return f"Wrote {len(content)} characters to {path}."

    async def read(self, path: str) -> str:
        content = await self.turn.read_text_file(path)
        return f"Read {path}: {content!r}"

    async def file_step(
        self,
        kind: Literal["read", "edit"],
        title: str,
        path: str,
        operation: Callable[[], Awaitable[str]],
    ) -> None:
        tool_call_id = self.agent.next_tool_call_id()
        await self.update(
            acp.ToolCallSessionUpdate(
                tool_call_id=tool_call_id,
                title=title,
                kind=kind,
                status="in_progress",
                locations=[acp.ToolCallLocation(path=path)],
            )
        )
        try:
            report = await operation()
        except RPCError as exc:
            await self.tool_update(tool_call_id, "failed", exc.message)
            await self.say(f"{title} failed: {exc.message} (code {exc.code})")
            return
        await self.tool_update(tool_call_id, "completed", report)
        await self.say(report)

    async def terminal(self) -> StopReason:
        conn = self.turn.connection
        if not conn.can_use_terminal:
            await self.say("The client does not offer terminals (terminal).")
            return "end_turn"
        tool_call_id = self.agent.next_tool_call_id()
        await self.update(
            acp.ToolCallSessionUpdate(
                tool_call_id=tool_call_id,
                title="echo hello from the reference agent",
                kind="execute",
                status="pending",
            )
        )
        async with self.turn.open_terminal(
            "echo", args=["hello from the reference agent"], cwd=self.session.cwd
        ) as terminal:
            await self.update(
                acp.ToolCallUpdateSessionUpdate(
                    tool_call_id=tool_call_id,
                    status="in_progress",
                    content=[acp.TerminalToolCallContent(terminal_id=terminal.terminal_id)],
                )
            )
            exit_status = await terminal.wait_for_exit()
            output = await terminal.output()
        status: ToolCallStatus = "completed" if exit_status.exit_code == 0 else "failed"
        await self.tool_update(tool_call_id, status)
        await self.say(
            f"The terminal printed {output.output!r} (exit code {exit_status.exit_code})."
        )
        return "end_turn"

    async def elicit(self) -> StopReason:
        capabilities = self.turn.connection.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if elicitation is None or elicitation.form is None:
            await self.say("The client does not offer form elicitation (elicitation.form).")
            return "end_turn"
        params: JsonValue = {
            "sessionId": self.session.session_id,
            "mode": "form",
            "message": "What should the reference agent call you?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "title": "Your name"}},
                "required": ["name"],
            },
        }
        try:
            answer = await self.turn.connection.request("elicitation/create", params)
        except RPCError as exc:
            await self.say(f"Asking for a name failed: {exc.message} (code {exc.code})")
            return "end_turn"
        action = answer.get("action") if isinstance(answer, dict) else None
        content = answer.get("content") if isinstance(answer, dict) else None
        name = content.get("name") if isinstance(content, dict) else None
        if action == "accept" and isinstance(name, str):
            await self.say(f"Hello, {name}.")
        else:
            await self.say(f"No name given (the elicitation was answered {action!r}).")
        return "end_turn"

    async def crash(self) -> StopReason:
        await self.say("About to crash.")
        await self.say("Crashing now.")
        os.write(2, b"reference agent: crashing on purpose (scenario 'crash')\n")
        os._exit(_CRASH_STATUS)

    async def stderr(self, count: int) -> StopReason:
        line = b"reference agent stderr filler " + b"x" * 49 + b"\n"  # 80 bytes
        data = (line * (count // len(line) + 1))[:count]
        view = memoryview(data)
        while view:
            written = os.write(2, view)
            view = view[written:]
        await self.say(f"Wrote {count} bytes to stderr.")
        return "end_turn"

    async def print_(self) -> StopReason:
        print("reference agent: print() from agent code")
        sys.stdout.flush()
        await self.say("Printed a line with print(); it went to stderr, not to the protocol.")
        return "end_turn"

    async def mcp(self) -> StopReason:
        servers = self.session.mcp
        if not servers:
            await self.say("No MCP servers were given for this session.")
            return "end_turn"
        connected = [
            f"{server.name} (tools: {', '.join(server.tools) or 'none'})"
            for server in servers
            if server.error is None
        ]
        failed = [f"{server.name} ({server.error})" for server in servers if server.error]
        parts: list[str] = []
        if connected:
            parts.append("MCP servers connected: " + "; ".join(connected) + ".")
        if failed:
            parts.append("MCP servers that failed: " + "; ".join(failed) + ".")
        await self.say(" ".join(parts))
        return "end_turn"

    async def stop(self, words: list[str]) -> StopReason:
        reason = words[1] if len(words) > 1 else ""
        for candidate in _STOP_REASONS:
            if candidate == reason:
                await self.say(f"Stopping with {candidate}.")
                return candidate
        return await self.echo(" ".join(words))


@final
class ReferenceAgent(Agent):
    """The reference agent; see the module docstring for its scenarios."""

    agent_name = "subagents-reference-agent"
    agent_title = "subagents reference agent"
    agent_version = __version__

    def __init__(self, session_dir: str | None = None, auth_method: str | None = None) -> None:
        self.sessions: dict[str, _Session] = {}
        self._tool_calls = itertools.count(1)
        chosen = session_dir or os.environ.get(SESSION_DIR_ENV_VAR) or None
        self._expiring = chosen is None
        """Sessions are in the default directory: those older than :data:`_KEEP` are pruned."""
        self.session_dir = chosen or _default_dir()
        """Where sessions are saved (one JSON file each), so a new process can load them;
        ``None`` keeps them in memory only (no usable default directory)."""
        self.auth_method = auth_method or os.environ.get(AUTH_ENV_VAR) or None
        """The auth method id sessions need (``authenticate`` first); ``None``: no auth."""
        self._authenticated: weakref.WeakSet[ClientConnection] = weakref.WeakSet()
        self._closed: set[str] = set()
        """Sessions closed in this process: only session/load or session/resume reopen them."""

    def _save(self, session: _Session) -> None:
        if self.session_dir is None:
            return
        import json
        import tempfile

        os.makedirs(self.session_dir, mode=0o700, exist_ok=True)
        if self._expiring:
            self._expiring = False  # once per process at most
            _prune(self.session_dir)
        path = os.path.join(self.session_dir, f"{session.session_id}.json")
        data = {
            "sessionId": session.session_id,
            "cwd": session.cwd,
            "history": [[role, text] for role, text in session.history],
            "title": session.title,
            "updatedAt": session.updated_at,
            "modeId": session.mode_id,
            "config": {_CONFIG_ID: session.verbosity},
        }
        # A temporary name of this process's own: two processes saving one session id at once
        # (an agent with fixed ids, as a conformance mutant has) must not replace each other's.
        fd, tmp = tempfile.mkstemp(".tmp", f".{session.session_id}.", self.session_dir)
        try:
            with open(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _load(self, session_id: str) -> _Session | None:
        if self.session_dir is None or not session_id.isalnum():
            return None
        import json

        path = os.path.join(self.session_dir, f"{session_id}.json")
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return None
        history: list[tuple[_Role, str]] = [
            ("user" if role == "user" else "agent", str(text)) for role, text in data["history"]
        ]
        session = _Session(session_id, str(data["cwd"]), history, data.get("title"))
        # Files saved before modes and config options existed have neither: the defaults.
        mode_id = data.get("modeId")
        if isinstance(mode_id, str) and mode_id in MODES:
            session.mode_id = mode_id
        config = data.get("config")
        if isinstance(config, dict):
            verbosity = cast("dict[str, object]", config).get(_CONFIG_ID)
            if isinstance(verbosity, str) and verbosity in _CONFIG_VALUES:
                session.verbosity = verbosity
        self.sessions[session_id] = session
        return session

    def next_tool_call_id(self) -> str:
        return f"call_{next(self._tool_calls)}"

    def capabilities(self, params: InitializeRequest) -> AgentCapabilities:
        capabilities = super().capabilities(params)
        capabilities.prompt_capabilities = acp.PromptCapabilities(
            image=True, audio=True, embedded_context=True
        )
        # session-setup.mdx: every agent MUST support stdio MCP servers; HTTP and SSE too here.
        capabilities.mcp_capabilities = acp.McpCapabilities(http=True, sse=True)
        sessions = capabilities.session_capabilities or acp.SessionCapabilities()
        sessions.additional_directories = acp.SessionAdditionalDirectoriesCapabilities()
        capabilities.session_capabilities = sessions
        return capabilities

    async def initialize(
        self, params: InitializeRequest, conn: ClientConnection
    ) -> InitializeResponse:
        response = await super().initialize(params, conn)
        if self.auth_method is not None:
            response.auth_methods = [
                acp.AuthMethodAgent(
                    id=self.auth_method,
                    name="Reference token",
                    description="Test authentication: authenticate with this method id, "
                    "nothing else is needed",
                )
            ]
        return response

    async def authenticate(
        self, params: AuthenticateRequest, conn: ClientConnection
    ) -> AuthenticateResponse:
        if self.auth_method is None or params.method_id != self.auth_method:
            offered: list[JsonValue] = [] if self.auth_method is None else [self.auth_method]
            raise RPCError.invalid_params(
                {"methodId": params.method_id, "reason": "unknown auth method", "offered": offered}
            )
        self._authenticated.add(conn)
        return acp.AuthenticateResponse()

    async def logout(self, params: LogoutRequest, conn: ClientConnection) -> LogoutResponse:
        self._authenticated.discard(conn)
        return acp.LogoutResponse()

    def _check_auth(self, conn: ClientConnection) -> None:
        if self.auth_method is None or conn in self._authenticated:
            return
        raise RPCError(
            ErrorCode.AUTH_REQUIRED,
            f"Authentication required: call authenticate with methodId {self.auth_method!r} first",
            {"authMethods": [self.auth_method]},
        )

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None and session_id not in self._closed:  # closed: load or resume first
            session = self._load(session_id)
        if session is None:
            raise RPCError.resource_not_found({"sessionId": session_id})
        return session

    @staticmethod
    def _check_cwd(cwd: str) -> None:
        if not os.path.isabs(cwd):
            raise RPCError.invalid_params({"cwd": "must be an absolute path", "value": cwd})

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        self._check_auth(conn)
        self._check_cwd(params.cwd)
        for directory in params.additional_directories or ():
            if not os.path.isabs(directory):
                raise RPCError.invalid_params(
                    {"additionalDirectories": "each must be an absolute path", "value": directory}
                )
        mcp = await _connect_mcp(params.mcp_servers)
        session = _Session(_new_id(), params.cwd, mcp=mcp)
        self.sessions[session.session_id] = session
        self._save(session)
        commands = [
            acp.AvailableCommand(name=name, description=description)
            for name, description in SCENARIOS.items()
        ]
        # Held by the endpoint until the session/new response is written.
        await conn.send_update(
            session.session_id,
            acp.AvailableCommandsUpdateSessionUpdate(available_commands=commands),
        )
        return acp.NewSessionResponse(
            session_id=session.session_id,
            modes=session.modes(),
            config_options=session.config_options(),
        )

    async def load_session(
        self, params: LoadSessionRequest, conn: ClientConnection
    ) -> LoadSessionResponse:
        self._check_auth(conn)
        self._check_cwd(params.cwd)
        self._closed.discard(params.session_id)
        session = self._session(params.session_id)
        session.cwd = params.cwd
        session.mcp = await _connect_mcp(params.mcp_servers)
        # session-setup.mdx: replay the whole conversation, then answer.
        for role, text in session.history:
            block = acp.TextContentBlock(text=text)
            update: SessionUpdate = (
                acp.UserMessageChunkSessionUpdate(content=block)
                if role == "user"
                else acp.AgentMessageChunkSessionUpdate(content=block)
            )
            await conn.send_update(session.session_id, update)
        return acp.LoadSessionResponse(
            modes=session.modes(), config_options=session.config_options()
        )

    async def resume_session(
        self, params: ResumeSessionRequest, conn: ClientConnection
    ) -> ResumeSessionResponse:
        self._check_auth(conn)
        self._check_cwd(params.cwd)
        self._closed.discard(params.session_id)
        session = self._session(params.session_id)
        session.cwd = params.cwd
        session.mcp = await _connect_mcp(params.mcp_servers or [])
        return acp.ResumeSessionResponse(
            modes=session.modes(), config_options=session.config_options()
        )

    async def set_session_mode(
        self, params: SetSessionModeRequest, conn: ClientConnection
    ) -> SetSessionModeResponse:
        self._check_auth(conn)
        session = self._session(params.session_id)
        if params.mode_id not in MODES:
            raise RPCError.invalid_params(
                {"modeId": params.mode_id, "reason": "unknown mode", "availableModes": list(MODES)}
            )
        session.mode_id = params.mode_id
        self._save(session)
        await conn.send_update(
            session.session_id, acp.CurrentModeUpdateSessionUpdate(current_mode_id=session.mode_id)
        )
        return acp.SetSessionModeResponse()

    async def set_session_config_option(
        self, params: SetSessionConfigOptionRequest, conn: ClientConnection
    ) -> SetSessionConfigOptionResponse:
        self._check_auth(conn)
        session = self._session(params.session_id)
        if params.config_id != _CONFIG_ID:
            raise RPCError.invalid_params(
                {"configId": params.config_id, "reason": "unknown config option"}
            )
        value = params.value
        if not isinstance(value, str) or value not in _CONFIG_VALUES:
            raise RPCError.invalid_params(
                {
                    "configId": params.config_id,
                    "value": value,
                    "reason": "not one of the option's values",
                    "values": list(_CONFIG_VALUES),
                }
            )
        session.verbosity = value
        self._save(session)
        options = session.config_options()
        await conn.send_update(
            session.session_id, acp.ConfigOptionUpdateSessionUpdate(config_options=options)
        )
        return acp.SetSessionConfigOptionResponse(config_options=session.config_options())

    async def list_sessions(
        self, params: ListSessionsRequest, conn: ClientConnection
    ) -> ListSessionsResponse:
        if params.cursor is not None:
            raise RPCError.invalid_params({"cursor": "invalid cursor (no pagination)"})
        infos: list[acp.SessionInfo] = []
        for session in self.sessions.values():
            if params.cwd is not None and session.cwd != params.cwd:
                continue
            info = acp.SessionInfo(
                session_id=session.session_id, cwd=session.cwd, updated_at=session.updated_at
            )
            if session.title is not None:
                info.title = session.title
            infos.append(info)
        return acp.ListSessionsResponse(sessions=infos)

    async def close_session(
        self, params: CloseSessionRequest, conn: ClientConnection
    ) -> CloseSessionResponse:
        self._session(params.session_id)
        del self.sessions[params.session_id]
        self._closed.add(params.session_id)
        return acp.CloseSessionResponse()

    async def delete_session(
        self, params: DeleteSessionRequest, conn: ClientConnection
    ) -> DeleteSessionResponse:
        # session-delete.mdx: deleting an unknown session SHOULD succeed silently.
        self.sessions.pop(params.session_id, None)
        if self.session_dir is not None and params.session_id.isalnum():
            with contextlib.suppress(OSError):
                os.remove(os.path.join(self.session_dir, f"{params.session_id}.json"))
        return acp.DeleteSessionResponse()

    async def prompt(self, params: PromptRequest, turn: AgentTurn) -> PromptResponse | StopReason:
        self._check_auth(turn.connection)
        session = self._session(params.session_id)
        text = "".join(describe_block(block) for block in params.prompt)
        session.history.append(("user", text))
        session.updated_at = _now()
        if session.title is None:
            session.title = text[:60]
        try:
            return await self._prompt(session, text, turn)
        finally:
            self._save(session)

    async def _prompt(
        self, session: _Session, text: str, turn: AgentTurn
    ) -> PromptResponse | StopReason:
        run = _Run(self, session, turn)
        words = text.split()
        keyword = words[0].lower() if words else ""
        if keyword == "stream":
            interval = int(words[2]) if len(words) > 2 and words[2].isdigit() else 0
            return await run.stream(_int_arg(words, 5), interval)
        if keyword == "think":
            return await run.think(text)
        if keyword == "plan":
            return await run.plan()
        if keyword == "tool":
            return await run.tool()
        if keyword == "slow":
            return await run.slow(_int_arg(words, 600))
        if keyword == "fs":
            return await run.fs()
        if keyword == "terminal":
            return await run.terminal()
        if keyword == "elicit":
            return await run.elicit()
        if keyword == "crash":
            return await run.crash()
        if keyword == "stderr":
            return await run.stderr(_int_arg(words, 1024))
        if keyword == "print":
            return await run.print_()
        if keyword == "stop":
            return await run.stop(words)
        if keyword == "mcp":
            return await run.mcp()
        if keyword == "fail":
            raise RuntimeError("the reference agent failed on purpose (scenario 'fail')")
        return await run.echo(text)


def main() -> None:
    """Serve the reference agent over stdio until stdin ends."""
    run_agent(ReferenceAgent())


if __name__ == "__main__":
    main()
