"""``ClaudeCodeProvider``: the Claude Code CLI (``claude``, stream-json) as a subagent.

start = spawn the CLI + ``initialize`` + send the prompt as a user message; the run is
published once the turn's ``system/init`` names the session (the child id is
``"<provider name>:<session id>"``). A run is one turn on a fresh CLI process. Live progress
comes from the stream, mapped onto the progress vocabulary by :class:`ClaudeCodeProgress`:
text and thinking deltas -> text and thought, ``tool_use`` blocks -> tool calls, the
``tool_result`` blocks of the user messages -> their tool results, the result -> usage.

How a run ends:

- a ``success`` result -> ``completed`` with the result text (and its usage);
- the signal sends the ``interrupt`` control request; the turn's result -> ``cancelled``;
- an error result (an API error ends as ``success`` with ``is_error``; ``error_max_turns``,
  ...) -> ``failed`` (kind ``turn``) with the CLI's message;
- the CLI exits mid-turn -> ``failed`` (kind ``infrastructure``) naming the exit status and
  the stderr tail;
- ``dispose()`` of a running turn interrupts it (bounded), closes stdin, then the process
  layer's shutdown ladder runs; it settles the run ``cancelled``.

Capabilities, advertised honestly:

- ``persona``: **on**. It becomes the CLI's system prompt (``--system-prompt``, replacing
  ``options.system_prompt``): the CLI sends it to the model as the system prompt.
- ``tool_filter``: **on**, enforced twice. ``--tools`` makes only the filter's built-in tools
  exist for the session (the model is not offered the others, and the CLI refuses a call to
  one: "No such tool available", subagents of the CLI included); and a ``PreToolUse`` hook
  (matching every tool) denies each call whose tool is not in the filter, whatever the
  permission mode or policy says (MCP tools and anything the CLI adds later included). The
  hook never *allows*: a tool in the filter still goes through the permission policy. Limits:
  the filter is by tool name (``Bash`` in the filter means any command; narrow it with the
  permission policy); a cold resume (:meth:`ClaudeCodeProvider.resume_continuable`) re-applies
  the filter only when this provider instance started the child (it is kept in memory, not
  in the session file). ``--allowedTools`` is not used for it: it only pre-approves tools.
- ``output_schema`` and ``depth_limit``: **off** (not applied by the CLI's stream-json mode).
  The service rejects such requests before a process is spawned, and :meth:`start` does too.

Continuable: :meth:`ClaudeCodeProvider.prepare_continuable` keeps the CLI process open and
runs each later message as a new turn of the same session;
:meth:`ClaudeCodeProvider.resume_continuable` starts a new process with ``--resume <session
id>`` (it needs the same ``config_dir`` and ``cwd``: sessions persist there).

The provider owns the runs' tasks: use it as ``async with ClaudeCodeProvider(...) as
provider``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import replace
from typing import Final, cast, final

import anyio

from ..protocol.jsonrpc import JsonObject, JsonValue
from ..transports import TurnOverflowError
from ..transports.claude_code import (
    ClaudeAssistantMessage,
    ClaudeConfigError,
    ClaudeConnection,
    ClaudeConnectionError,
    ClaudeControlError,
    ClaudeHook,
    ClaudeLineTooLongError,
    ClaudeOptions,
    ClaudePermissionPolicy,
    ClaudeResult,
    ClaudeStartupError,
    ClaudeStreamEvent,
    ClaudeSystemInit,
    ClaudeTurn,
    ClaudeUserMessage,
    connect_claude,
)
from ..transports.process import ProcessStartError
from ._child_run import Asker, ChildConversation, ChildProvider, ChildRun
from .contract import (
    CancelSignal,
    ChildProgress,
    ProgressEvent,
    SubagentCapabilities,
    SubagentOutcome,
    SubagentRequest,
    TextProgress,
    ThoughtProgress,
    ToolCallProgress,
    ToolKind,
    ToolResultProgress,
    UsageProgress,
)
from .progress import ProgressFeed

__all__ = (
    "ClaudeCodeConversation",
    "ClaudeCodeProgress",
    "ClaudeCodeProvider",
    "ClaudeCodeRun",
    "run_claude_turn",
    "tool_filter_hook",
)

_INTERRUPT_GRACE: Final = 3.0
"""How long ``dispose()`` lets an interrupted turn end and its CLI exit on its own."""
_DISPOSE_BOUND: Final = 20.0
"""Bound on waiting for a run's task (interrupt, stdin closed, then the ladder) to finish."""

_CAPABILITIES: Final = SubagentCapabilities(persona=True, tool_filter=True)

_FAILURES: Final = (
    ProcessStartError,
    ClaudeStartupError,
    ClaudeConnectionError,
    ClaudeControlError,
    ClaudeConfigError,
)
"""What a start (or a live connection) can fail with."""


def tool_filter_hook(allowed: Sequence[str]) -> ClaudeHook:
    """A ``PreToolUse`` hook (every tool) that denies calls to tools outside ``allowed`` and
    leaves the others to the permission policy (it never allows)."""
    names = frozenset(allowed)

    async def check(hook_input: JsonObject) -> JsonObject:
        tool = hook_input.get("tool_name")
        if isinstance(tool, str) and tool in names:
            return {"continue": True}
        return {
            "continue": True,
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": f"{tool} is outside this subagent's tool filter",
            },
        }

    return ClaudeHook("PreToolUse", check)


_TOOL_KINDS: Final[Mapping[str, ToolKind]] = {
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Read": "read",
    "NotebookRead": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Grep": "search",
    "Glob": "search",
    "LS": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "Task": "think",
    "Agent": "think",
    "TodoWrite": "think",
    "ExitPlanMode": "switch_mode",
}
"""The kind of the CLI's built-in tools (the others are ``other``)."""


def _result_text(content: JsonValue) -> str:
    """A ``tool_result`` block's content as text (a string, or its text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
        return "\n".join(cast("list[str]", texts))
    return ""


def _usage_progress(result: ClaudeResult) -> UsageProgress:
    usage = result.usage
    counts = [usage.get(name) for name in ("input_tokens", "output_tokens")]
    inputs, outputs = (
        c if isinstance(c, int) and not isinstance(c, bool) else None for c in counts
    )
    return UsageProgress(
        input_tokens=inputs,
        output_tokens=outputs,
        cost_usd=result.total_cost_usd,
        data=dict(usage),
    )


@final
class ClaudeCodeProgress:
    """Maps the CLI's stream onto the progress vocabulary.

    Text deltas (``stream_event``, ``--include-partial-messages``) -> text; thinking deltas ->
    thought; each ``tool_use`` block of an assistant message -> a tool call (its id, the
    tool's name as title, its kind for the built-in tools, ``pending``: permission and
    execution follow, its input); each ``tool_result`` block of a user message -> the tool
    result of that id (``failed`` when ``is_error``; a result whose call was not seen is
    announced first); the turn's ``result`` -> usage (its token counts and cost). What the
    CLI's own subagents do (lines with a ``parent_tool_use_id``) is child progress of that
    tool call.
    """

    def __init__(self) -> None:
        self._calls: set[str] = set()

    def map(self, event: object) -> list[ProgressEvent]:
        if isinstance(event, ClaudeStreamEvent):
            return self._nested(event.parent_tool_use_id, self._delta(event))
        if isinstance(event, ClaudeAssistantMessage):
            calls: list[ProgressEvent] = []
            for use in event.tool_uses:
                self._calls.add(use.id)
                kind: ToolKind = _TOOL_KINDS.get(use.name, "other")
                calls.append(ToolCallProgress(use.id, use.name, kind, "pending", use.input))
            return self._nested(event.parent_tool_use_id, calls)
        if isinstance(event, ClaudeUserMessage) and isinstance(event.content, list):
            results: list[ProgressEvent] = []
            for block in event.content:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str):
                    continue
                if call_id not in self._calls:
                    self._calls.add(call_id)
                    results.append(ToolCallProgress(call_id, call_id))
                status = "failed" if block.get("is_error") is True else "completed"
                results.append(
                    ToolResultProgress(call_id, status, _result_text(block.get("content")))
                )
            return self._nested(event.parent_tool_use_id, results)
        if isinstance(event, ClaudeResult):
            return [_usage_progress(event)]
        return []

    @staticmethod
    def _delta(event: ClaudeStreamEvent) -> list[ProgressEvent]:
        text = event.text_delta
        if text is not None:
            return [TextProgress(text)]
        raw = event.event
        delta = raw.get("delta")
        if raw.get("type") == "content_block_delta" and isinstance(delta, dict):
            thinking = delta.get("thinking")
            if delta.get("type") == "thinking_delta" and isinstance(thinking, str):
                return [ThoughtProgress(thinking)]
        return []

    @staticmethod
    def _nested(parent: str | None, events: list[ProgressEvent]) -> list[ProgressEvent]:
        if parent is None:
            return events
        return [ChildProgress(parent, event) for event in events]


def _outcome(child_id: str, result: ClaudeResult, cancel: CancelSignal) -> SubagentOutcome:
    usage: dict[str, JsonValue] = dict(result.usage)
    if result.total_cost_usd is not None:
        usage["total_cost_usd"] = result.total_cost_usd
    if cancel.cancelled and (result.is_error or result.subtype != "success"):
        return SubagentOutcome.cancelled(child_id, cancel.reason or "cancelled")
    if result.subtype == "success" and not result.is_error:
        return SubagentOutcome.completed(child_id, result.result or "", usage=usage)
    if result.subtype == "error_during_execution" and result.terminal_reason == "aborted_streaming":
        return SubagentOutcome.cancelled(child_id, "the turn was interrupted")
    message = result.result or "; ".join(result.errors) or f"the turn ended: {result.subtype}"
    return SubagentOutcome.failed(child_id, "turn", message)


async def run_claude_turn(
    connection: ClaudeConnection,
    turn: ClaudeTurn,
    child_id: Callable[[], str],
    cancel: CancelSignal,
    feed: ProgressFeed | None = None,
    *,
    on_session: Callable[[str], None] | None = None,
) -> SubagentOutcome:
    """Read ``turn`` to its result and map its end to an outcome (see the module docstring).

    ``on_session`` is called with the session id when ``system/init`` arrives; the signal
    interrupts the turn (``turn.cancel()``). A lost connection raises
    :class:`ClaudeConnectionError`."""

    async def forward_cancel() -> None:
        await cancel.wait()
        with suppress(ClaudeControlError, ClaudeConnectionError, TimeoutError):
            await turn.cancel()

    seen_session = False
    failure: Exception | None = None
    mapper = ClaudeCodeProgress()
    async with anyio.create_task_group() as tg:
        tg.start_soon(forward_cancel)
        try:
            async for event in turn:
                if isinstance(event, ClaudeSystemInit) and not seen_session:
                    seen_session = True
                    if on_session is not None:
                        on_session(event.session_id)
                if feed is not None:
                    for progress in mapper.map(event):
                        feed.push(progress)
        except (ClaudeLineTooLongError, ClaudeConnectionError, TurnOverflowError) as exc:
            failure = exc  # raised below, not wrapped in an ExceptionGroup
        tg.cancel_scope.cancel()
    if isinstance(failure, ClaudeConnectionError):
        raise failure
    if failure is not None:
        if not seen_session and on_session is not None:
            on_session(connection.session_id or "")
        return SubagentOutcome.failed(child_id(), "turn", str(failure), failure)
    result = await turn.result()  # read to the end above: it is there
    if not seen_session and on_session is not None:
        on_session(result.session_id or connection.session_id or "")
    return _outcome(child_id(), result, cancel)


@final
class ClaudeCodeRun(ChildRun["ClaudeCodeProvider"]):
    """A published Claude Code child: one CLI process, one turn."""

    _dispose_bound = _DISPOSE_BOUND
    _failures = _FAILURES

    session_id: str = ""
    """The CLI session's id, once published."""
    _connection: ClaudeConnection | None = None

    def _child_key(self) -> str:
        # The connection's reader learns the session id from ``system/init`` before it hands
        # on what follows (a permission request may come before the turn's reader sees init).
        if not self.session_id and self._connection is not None:
            return self._connection.session_id or ""
        return self.session_id

    def _on_session(self, session_id: str) -> None:
        self.session_id = session_id
        self._publish()

    async def _stop_turn(self) -> None:
        # The run's signal (fired by dispose() just before) interrupts the turn: the CLI
        # answers with its result and the run's task leaves by itself, closing stdin. Its
        # scope is cancelled only after this grace: cancelled first, it would take the
        # connection's reader with it, and the interrupted turn would wait (bounded) for a
        # result nobody reads, then the CLI, still in its turn, for the stdin close timeout.
        # Before the turn was sent (a start cancelled midway) there is nothing to interrupt:
        # waiting would only delay the stop.
        connection = self._connection
        if connection is None or not connection.turn_running:
            return
        with anyio.move_on_after(_INTERRUPT_GRACE):
            await self._finished.wait()

    async def _run(
        self, provider: ClaudeCodeProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        tool_filter = request.tool_filter

        def on_session(session_id: str) -> None:
            if tool_filter is not None and session_id:
                provider.remember_tool_filter(session_id, tool_filter)
            self._on_session(session_id)

        async with provider.connect(
            persona=request.persona, tool_filter=tool_filter, asker=self.asker
        ) as conn:
            self._connection = conn
            self._track_process(conn.process)
            async with conn.turn(request.prompt) as turn:
                outcome = await run_claude_turn(
                    conn, turn, lambda: self.child_id, cancel, self._feed, on_session=on_session
                )
            await self._conclude(outcome)


@final
class ClaudeCodeConversation(ChildConversation):
    """A continuable Claude Code child: one CLI process, kept open; each :meth:`send` is a new
    turn of its session. Cold resume starts a new process with ``--resume <session id>``."""

    _dispose_bound = _DISPOSE_BOUND

    def __init__(
        self,
        provider: ClaudeCodeProvider,
        resume_id: str | None,
        persona: str | None = None,
        tool_filter: Sequence[str] | None = None,
        child_id: str | None = None,
    ) -> None:
        super().__init__(provider.name, child_id, dispose_bound=provider.dispose_timeout)
        self._provider = provider
        self._resume_id = resume_id
        self._persona = persona
        self._tool_filter = tool_filter
        self.session_id = resume_id or ""

    def _child_key(self) -> str:
        return self.session_id

    def _on_session(self, session_id: str) -> None:
        if session_id:
            self.session_id = session_id
            if self._tool_filter is not None:
                self._provider.remember_tool_filter(session_id, self._tool_filter)

    async def _converse(self) -> None:
        provider = self._provider
        async with provider.connect(
            persona=self._persona,
            resume=self._resume_id,
            tool_filter=self._tool_filter,
            asker=self.asker,
        ) as connection:
            self._track_process(connection.process)

            async def turn(
                message: str, cancel: CancelSignal, feed: ProgressFeed
            ) -> SubagentOutcome:
                if cancel.cancelled:
                    return SubagentOutcome.cancelled(self.child_id, cancel.reason or "cancelled")
                try:
                    async with connection.turn(message) as claude_turn:
                        return await run_claude_turn(
                            connection,
                            claude_turn,
                            lambda: self.child_id,
                            cancel,
                            feed,
                            on_session=self._on_session,
                        )
                except ClaudeConnectionError as exc:
                    return SubagentOutcome.failed(self.child_id, "infrastructure", str(exc), exc)

            await self._serve(turn)

    def _not_opened(self) -> str:
        return f"claude {os.fspath(self._provider.cli)!r} did not start"


@final
class ClaudeCodeProvider(ChildProvider):
    """Runs children as ``claude`` CLI processes at ``cli`` with ``options``.

    ``env``/``inherit_env``/``cwd``: the child's environment and directory (see
    :func:`~subagents.transports.claude_code.build_claude_env`). ``permission_policy``
    answers the CLI's ``can_use_tool`` requests (``None``: no prompt tool; whatever asks is
    denied). ``startup_timeout`` bounds spawn + ``initialize``.
    """

    _what = "ClaudeCodeProvider"

    def __init__(
        self,
        cli: str | os.PathLike[str],
        options: ClaudeOptions,
        *,
        name: str = "claude-code",
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        permission_policy: ClaudePermissionPolicy | None = None,
        startup_timeout: float = 60.0,
        progress_capacity: int = 256,
        dispose_timeout: float | None = None,
    ) -> None:
        super().__init__(name, dispose_timeout=dispose_timeout)
        self.cli = cli
        self.options = options
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.inherit_env = inherit_env
        self.permission_policy = permission_policy
        self.startup_timeout = startup_timeout
        self._progress_capacity = progress_capacity
        self._tool_filters: dict[str, tuple[str, ...]] = {}

    @property
    def capabilities(self) -> SubagentCapabilities:
        return _CAPABILITIES

    def remember_tool_filter(self, session_id: str, tool_filter: Sequence[str]) -> None:
        """Keep the tool filter a child was started with, for a cold resume of its session."""
        self._tool_filters[session_id] = tuple(tool_filter)

    def options_for(
        self,
        *,
        persona: str | None = None,
        resume: str | None = None,
        tool_filter: Sequence[str] | None = None,
    ) -> ClaudeOptions:
        """This provider's options with ``persona`` as the system prompt, ``resume``, and
        ``tool_filter`` narrowing ``--tools`` (to the filter, or to its intersection with the
        options' own ``tools``)."""
        options = self.options
        if persona is not None:
            options = replace(options, system_prompt=persona)
        if resume is not None:
            options = replace(options, resume=resume)
        if tool_filter is not None:
            own = options.tools
            tools = [t for t in tool_filter if own is None or t in own]
            options = replace(options, tools=tuple(dict.fromkeys(tools)))
        return options

    @asynccontextmanager
    async def connect(
        self,
        *,
        persona: str | None = None,
        resume: str | None = None,
        tool_filter: Sequence[str] | None = None,
        asker: Asker | None = None,
    ) -> AsyncGenerator[ClaudeConnection, None]:
        """Spawn the CLI and ``initialize`` it; on exit: interrupt, stdin closed, the ladder.
        A ``tool_filter`` (or, on ``resume``, the one remembered for that session) is enforced
        by ``--tools`` and :func:`tool_filter_hook`."""
        if tool_filter is None and resume is not None:
            tool_filter = self._tool_filters.get(resume)
        hooks = [tool_filter_hook(tool_filter)] if tool_filter is not None else []
        async with connect_claude(
            self.cli,
            self.options_for(persona=persona, resume=resume, tool_filter=tool_filter),
            env=self.env,
            inherit_env=self.inherit_env,
            cwd=self.cwd,
            permission_policy=(
                None
                if self.permission_policy is None
                else self._policy_for(self.permission_policy, asker)
            ),
            hooks=hooks,
            startup_timeout=self.startup_timeout,
            name=self._name,
        ) as connection:
            yield connection

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> ClaudeCodeRun:
        self._check_request(request, cancel)
        run = self._new_run(ClaudeCodeRun, request)
        return await self._start_run(run, request, cancel, what=f"claude {os.fspath(self.cli)!r}")

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> ClaudeCodeConversation:
        """Start a child whose CLI stays open; ``request`` is its first turn (its outcome is
        ``conversation.outcomes[0]``)."""
        self._check_request(request, cancel)
        child_id = self._child_id(request)
        conversation = await self._open_conversation(
            lambda: ClaudeCodeConversation(
                self, None, request.persona, request.tool_filter, child_id
            ),
            cancel,
        )
        await conversation.send(request.prompt, cancel=cancel)
        return conversation

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> ClaudeCodeConversation:
        """Cold-resume session ``remote_id`` (or the child of that id this provider started)
        in a new CLI process with ``--resume`` (the session must be in this provider's config
        dir, same cwd)."""
        self._check_request(SubagentRequest(""), cancel)
        child, session_id = self._resume_ids(remote_id, child_id)
        return await self._open_conversation(
            lambda: ClaudeCodeConversation(self, session_id, child_id=child), cancel
        )
