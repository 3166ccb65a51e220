"""The Claude Code client: drive the ``claude`` CLI over stream-json and its control protocol.

::

    options = ClaudeOptions(model="claude-sonnet-4-6", config_dir=scratch / ".claude")
    async with connect_claude(cli, options, env=env, permission_policy=my_policy) as conn:
        async with conn.turn("Say hello.") as turn:
            async for event in turn:                  # typed events, in order
                if isinstance(event, ClaudeStreamEvent) and event.text_delta:
                    print(event.text_delta, end="")
        result = turn.result                          # ClaudeResult(subtype, is_error, ...)

The wire is one JSON object per line both ways (the facts are in the project's research note
on the real CLI 2.1.332, ``claude.md``). What this client takes care of:

- the argv (:func:`build_claude_argv`) and the environment (:func:`build_claude_env`):
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` (the one switch that stops all outside
  traffic), ``CLAUDECODE`` removed (nested runs), ``IS_SANDBOX`` normalised to the only value
  the CLI accepts as root (``1``);
- the ``initialize`` control request first; a CLI that exits before answering raises
  :class:`ClaudeStartupError` naming the exit status and the stderr tail;
- control requests from the CLI are always answered: ``can_use_tool`` by the permission
  policy (default: deny; a policy that raises is a deny, logged with its traceback, as in
  every transport: issue 19), ``hook_callback`` by the hook
  registered under its id, anything else with an error; ``control_cancel_request`` drops the
  pending answer; control responses are matched to our requests by ``request_id``;
- stdout lines up to :data:`DEFAULT_MAX_LINE_BYTES` (16 MiB; the official SDK's 1 MiB breaks
  on long replies); a longer line fails the running turn with :class:`ClaudeLineTooLongError`
  naming its size; lines not starting with ``{`` are skipped; unknown message types and
  subtypes are delivered as :class:`ClaudeRawEvent`, never fatal. The lines come from the
  project's one line splitter (:class:`~subagents.protocol.framing.LineSplitter`); the event
  models and the line → event parsing are sans-IO, in :mod:`subagents.protocol.claude`
  (re-exported here);
- only JSON objects are ever written to stdin (a non-JSON line kills the CLI);
- cancellation is the ``interrupt`` control request (closing stdin does not end a turn);
  leaving a turn's block early interrupts it and waits (bounded) for its result;
- closing: interrupt if a turn runs, close stdin, wait, then the process layer's ladder
  (SIGTERM before SIGKILL: the CLI kills its tool children on SIGTERM, SIGKILL orphans them).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, final

import anyio
import anyio.abc

from ..protocol.claude import (
    DEFAULT_MAX_LINE_BYTES,
    ClaudeAssistantMessage,
    ClaudeEvent,
    ClaudeRawEvent,
    ClaudeResult,
    ClaudeStreamEvent,
    ClaudeSystemInit,
    ClaudeToolUse,
    ClaudeUserMessage,
    SkippedLine,
    decode_line,
    is_result_head,
    parse_event,
)
from ..protocol.claude import object_or_empty as _obj
from ..protocol.claude import str_or_none as _str
from ..protocol.framing import NEED_DATA, LineSplitter, OversizedLine
from ..protocol.jsonrpc import JsonObject, JsonValue
from ._policy import call_policy
from .process import (
    BASE_ENV_VARS,
    AgentProcess,
    exit_reason_for,
    exited_while_open,
    open_agent_process,
)

__all__ = (
    "DEFAULT_MAX_LINE_BYTES",
    "AllowTool",
    "ClaudeAssistantMessage",
    "ClaudeConfigError",
    "ClaudeConnection",
    "ClaudeConnectionError",
    "ClaudeControlError",
    "ClaudeEvent",
    "ClaudeHook",
    "ClaudeLineTooLongError",
    "ClaudeOptions",
    "ClaudePermissionPolicy",
    "ClaudeRawEvent",
    "ClaudeResult",
    "ClaudeStartupError",
    "ClaudeStreamEvent",
    "ClaudeSystemInit",
    "ClaudeToolUse",
    "ClaudeTurn",
    "ClaudeUserMessage",
    "DenyTool",
    "ToolPermissionRequest",
    "allow_tools_policy",
    "build_claude_argv",
    "build_claude_env",
    "connect_claude",
    "deny_tools_policy",
)

logger = logging.getLogger("subagents.claude")

CONTROL_TIMEOUT: float = 10.0
"""Seconds a control request (other than ``initialize``) may take to be answered."""
INTERRUPT_SETTLE_TIMEOUT: float = 10.0
"""Seconds to wait for a turn's result after interrupting it, when its block is left early."""
CANCELLED_EXIT_TIMEOUT: float = 1.0
"""The bound on that wait when the block is left by cancellation."""

_READ_CHUNK: Final = 65536
_STREAM_ENDED: Final = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)
_TRUTHY: Final = frozenset({"1", "yes", "true", "on", "y"})
_BYPASS_MODES: Final = frozenset({"bypassPermissions"})

PermissionMode: TypeAlias = Literal[
    "default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"
]


# ---------------------------------------------------------------- errors


class ClaudeStartupError(Exception):
    """The CLI did not answer ``initialize``: it exited, timed out or answered an error."""


class ClaudeConnectionError(Exception):
    """The CLI's stdout ended (it exited, usually): names the exit status and stderr tail."""


class ClaudeControlError(Exception):
    """The CLI answered one of our control requests with an error."""

    def __init__(self, subtype: str, message: str, error_code: str | None = None) -> None:
        super().__init__(f"{subtype}: {message}" + (f" ({error_code})" if error_code else ""))
        self.subtype = subtype
        self.message = message
        self.error_code = error_code


class ClaudeLineTooLongError(Exception):
    """A stdout line was longer than the limit; it was skipped (its content is lost)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"claude wrote a stdout line of {size} bytes, over the limit of {limit} bytes "
            "(raise max_line_bytes); the line was skipped"
        )
        self.size = size
        self.limit = limit


class ClaudeConfigError(ValueError):
    """The options cannot work (for instance a bypass mode as root outside a sandbox)."""


# ---------------------------------------------------------------- options, argv, environment


@final
@dataclass(frozen=True, slots=True)
class ClaudeOptions:
    """What the CLI is started with. ``model`` is always passed: the default differs per
    CLI version."""

    model: str
    system_prompt: str | None = None
    """``None`` passes ``--system-prompt ""`` (the CLI's one-line minimal prompt)."""
    append_system_prompt: str | None = None
    tools: Sequence[str] | None = None
    """``--tools``: the built-in tools that exist for the session at all (``()``: none;
    ``None`` omits the flag: the CLI's default set). Unknown names are ignored by the CLI."""
    allowed_tools: Sequence[str] = ()
    """``--allowedTools``: pre-approved tools (they run without asking); not a filter."""
    disallowed_tools: Sequence[str] = ()
    max_turns: int | None = None
    permission_mode: PermissionMode | None = None
    include_partial_messages: bool = True
    """``--include-partial-messages``: token streaming as :class:`ClaudeStreamEvent`."""
    resume: str | None = None
    """A session id to continue (``--resume=ID``; the same config dir and cwd are needed)."""
    fork_session: bool = False
    """With ``resume``: continue into a new session id (``--fork-session``)."""
    config_dir: str | os.PathLike[str] | None = None
    """A private ``CLAUDE_CONFIG_DIR`` (sessions, settings): reproducible runs."""
    setting_sources: Sequence[str] | None = ()
    """``--setting-sources=...``; the default ``()`` loads no user/project/local settings
    (reproducible); ``None`` omits the flag (the CLI's own default)."""
    strict_mcp_config: bool = True
    """``--strict-mcp-config``: ignore MCP servers configured outside these options."""
    extra_args: Sequence[str] = ()
    """Appended to the argv as given."""


def build_claude_argv(
    cli: str | os.PathLike[str], options: ClaudeOptions, *, permission_prompt: bool = False
) -> list[str]:
    """The CLI's argv. ``permission_prompt`` adds ``--permission-prompt-tool stdio`` (tool
    permissions asked over the control protocol, answered by the permission policy). Values
    that may start with a dash use the ``--flag=value`` form, so they cannot become flags."""
    argv = [
        os.fspath(cli),
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
        f"--model={options.model}",
        f"--system-prompt={options.system_prompt or ''}",
    ]
    if options.append_system_prompt:
        argv.append(f"--append-system-prompt={options.append_system_prompt}")
    if options.tools is not None:
        argv.append(f"--tools={','.join(options.tools)}")
    if options.allowed_tools:
        argv.append(f"--allowedTools={','.join(options.allowed_tools)}")
    if options.disallowed_tools:
        argv.append(f"--disallowedTools={','.join(options.disallowed_tools)}")
    if options.max_turns is not None:
        if options.max_turns < 1:
            raise ClaudeConfigError("max_turns must be at least 1")
        argv.append(f"--max-turns={options.max_turns}")
    if options.permission_mode is not None:
        argv.append(f"--permission-mode={options.permission_mode}")
    if permission_prompt:
        argv += ["--permission-prompt-tool", "stdio"]
    if options.include_partial_messages:
        argv.append("--include-partial-messages")
    if options.resume is not None:
        argv.append(f"--resume={options.resume}")
    if options.fork_session:
        if options.resume is None:
            raise ClaudeConfigError("fork_session needs resume (the session to fork)")
        argv.append("--fork-session")
    if options.setting_sources is not None:
        argv.append(f"--setting-sources={','.join(options.setting_sources)}")
    if options.strict_mcp_config:
        argv.append("--strict-mcp-config")
    argv += list(options.extra_args)
    return argv


def build_claude_env(
    options: ClaudeOptions,
    env: Mapping[str, str] | None = None,
    *,
    inherit_env: bool = False,
    parent: Mapping[str, str] | None = None,
    is_root: bool | None = None,
) -> dict[str, str]:
    """The CLI's environment: the process layer's base (or the whole ``parent`` with
    ``inherit_env``), then ``env``, then these rules:

    - ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` (no telemetry, update check or error
      reporting traffic; without it the CLI resolves ``api.anthropic.com`` even offline);
    - ``CLAUDE_CONFIG_DIR`` from ``options.config_dir``;
    - ``CLAUDECODE`` removed (the CLI refuses to nest otherwise);
    - ``IS_SANDBOX``: as root the CLI accepts bypass modes only with exactly ``1``; a truthy
      value (``yes``, ``true``) is normalised to ``1``, anything else removed. A bypass mode
      as root without a sandbox raises :class:`ClaudeConfigError` (the CLI would exit 1).
    """
    source = os.environ if parent is None else parent
    if inherit_env:
        result = dict(source)
    else:
        result = {name: source[name] for name in BASE_ENV_VARS if name in source}
        if "IS_SANDBOX" in source:
            result["IS_SANDBOX"] = source["IS_SANDBOX"]
    if env:
        result.update(env)
    result["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    if options.config_dir is not None:
        result["CLAUDE_CONFIG_DIR"] = os.fspath(options.config_dir)
    result.pop("CLAUDECODE", None)
    sandbox = result.pop("IS_SANDBOX", "").strip().lower() in _TRUTHY
    if sandbox:
        result["IS_SANDBOX"] = "1"
    root = (os.geteuid() == 0) if is_root is None else is_root
    if root and not sandbox and options.permission_mode in _BYPASS_MODES:
        raise ClaudeConfigError(
            f"permission_mode {options.permission_mode!r} is refused by the CLI as root "
            "unless IS_SANDBOX=1 (run as another user, or in a sandbox that sets IS_SANDBOX)"
        )
    return result


# ---------------------------------------------------------------- permissions and hooks


@final
@dataclass(frozen=True, slots=True)
class ToolPermissionRequest:
    """A ``can_use_tool`` control request: may the agent run this tool with this input?"""

    tool_name: str
    input: JsonObject
    tool_use_id: str | None
    description: str | None
    raw: JsonObject
    """The whole request (``permission_suggestions``, ``blocked_path``, ... kept)."""


@final
@dataclass(frozen=True, slots=True)
class AllowTool:
    """Run the tool, with ``updated_input`` instead of the input asked for when given."""

    updated_input: JsonObject | None = None


@final
@dataclass(frozen=True, slots=True)
class DenyTool:
    """Refuse the tool; the agent sees ``message``. ``interrupt`` also ends the turn."""

    message: str = "denied by policy"
    interrupt: bool = False


ClaudePermissionPolicy: TypeAlias = Callable[
    [ToolPermissionRequest], Awaitable[AllowTool | DenyTool]
]
"""``async def policy(request) -> AllowTool | DenyTool``."""


def _tool_asked(label: str, request: ToolPermissionRequest) -> str:
    """The permission asked for, as a log names it."""
    return f"claude {label!r}: can_use_tool {request.tool_name!r} (tool use {request.tool_use_id})"


async def deny_tools_policy(request: ToolPermissionRequest) -> AllowTool | DenyTool:
    """The default: deny every tool that asks for permission."""
    return DenyTool(f"{request.tool_name} is not allowed here")


async def allow_tools_policy(request: ToolPermissionRequest) -> AllowTool | DenyTool:
    """Allow every tool that asks for permission, with its input unchanged."""
    return AllowTool()


HookCallback: TypeAlias = Callable[[JsonObject], Awaitable[JsonObject]]


@final
@dataclass(frozen=True, slots=True)
class ClaudeHook:
    """A hook registered in ``initialize``: ``callback(input)`` answers each ``hook_callback``
    for ``event`` (``PreToolUse``, ...) whose tool matches ``matcher`` (``None``: all)."""

    event: str
    callback: HookCallback
    matcher: str | None = None
    timeout: float | None = None


# ---------------------------------------------------------------- turns


@final
class ClaudeTurn:
    """One user message and the events up to and including its :class:`ClaudeResult`.

    Iterate it for the events; :attr:`result` is set once the result line has arrived.
    Made by :meth:`ClaudeConnection.turn`.
    """

    def __init__(self, connection: ClaudeConnection) -> None:
        self._connection = connection
        self._queue: deque[ClaudeEvent | BaseException] = deque()
        self._wakeup = anyio.Event()
        self.result: ClaudeResult | None = None
        """The result, once it arrived."""
        self._done = False  # the result (or an error) has been queued for the reader
        self._error: BaseException | None = None
        self._settled = anyio.Event()  # the CLI is done with this turn (result seen, or lost)

    @property
    def done(self) -> bool:
        """The turn ended: its result arrived, or it failed."""
        return self._done

    @property
    def settled(self) -> bool:
        """The CLI finished the turn (its result line was read), or the connection is lost."""
        return self._settled.is_set()

    def _push(self, item: ClaudeEvent) -> None:
        if isinstance(item, ClaudeResult):
            self._settled.set()
        if self._done:
            return  # the turn failed already: what follows is read and dropped
        self._queue.append(item)
        if isinstance(item, ClaudeResult):
            self.result = item
            self._done = True
        self._wakeup.set()

    def _fail(self, exc: BaseException, *, settled: bool = False) -> None:
        if settled:
            self._settled.set()
        if not self._done:
            self._done = True
            self._error = exc
            self._queue.append(exc)
            self._wakeup.set()

    def __aiter__(self) -> ClaudeTurn:
        return self

    async def __anext__(self) -> ClaudeEvent:
        while not self._queue:
            if self._done:  # everything was read already
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            await self._wakeup.wait()
            self._wakeup = anyio.Event()
        item = self._queue.popleft()
        if isinstance(item, BaseException):
            raise item
        return item

    async def wait(self) -> ClaudeResult:
        """Read the remaining events; the result."""
        async for _ in self:
            pass
        assert self.result is not None
        return self.result


# ---------------------------------------------------------------- the connection


@final
class ClaudeConnection:
    """A running CLI, initialized. Made by :func:`connect_claude`; one turn at a time."""

    def __init__(
        self,
        process: AgentProcess,
        tg: anyio.abc.TaskGroup,
        policy: ClaudePermissionPolicy | None,
        hooks: Mapping[str, HookCallback],
        max_line_bytes: int,
        label: str,
    ) -> None:
        self.process = process
        self._tg = tg
        self._policy = policy
        self._hooks = hooks
        self._max_line_bytes = max_line_bytes
        self._label = label
        self._send_lock = anyio.Lock()
        self._turn_lock = anyio.Lock()
        self._counter = 0
        self._pending: dict[str, tuple[anyio.Event, list[JsonObject | BaseException]]] = {}
        self._handlers: dict[str, anyio.CancelScope] = {}
        self._turn: ClaudeTurn | None = None
        self._closed_event = anyio.Event()
        self._lost: BaseException | None = None
        self.init_response: JsonObject = {}
        """The ``initialize`` answer (``pid``, ``claude_code_version``, ``models``, ...)."""
        self.session_id: str | None = None
        """The session id of the latest ``system/init`` (``None`` before the first turn)."""
        self.line_errors: list[ClaudeLineTooLongError] = []
        """Oversized lines skipped while no turn ran."""

    # -- the _Closable protocol of the process layer

    @property
    def closed(self) -> bool:
        return self._closed_event.is_set()

    async def wait_closed(self) -> None:
        await self._closed_event.wait()

    @property
    def turn_running(self) -> bool:
        """A turn was sent and the CLI has not finished it."""
        return self._turn is not None and not self._turn.settled

    # -- writing

    async def _send(self, message: JsonObject) -> None:
        # json.dumps of a dict is one line of JSON (newlines in strings are escaped;
        # allow_nan=False refuses the NaN/Infinity the CLI's parser would reject).
        data = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        if self._lost is not None:
            raise ClaudeConnectionError(str(self._lost))
        async with self._send_lock:
            try:
                await self.process.stdin.send(data.encode("utf-8") + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise ClaudeConnectionError(f"claude {self._label!r}: stdin is closed") from exc

    async def control(
        self, subtype: str, timeout: float = CONTROL_TIMEOUT, **fields: JsonValue
    ) -> JsonObject:
        """Send a control request (``interrupt``, ``set_model``, ...); its ``response``.

        Raises :class:`ClaudeControlError` when the CLI answers an error,
        :class:`ClaudeConnectionError` when it exits first, ``TimeoutError`` after
        ``timeout`` seconds.
        """
        self._counter += 1
        request_id = f"req_{self._counter}_{secrets.token_hex(4)}"
        request: JsonObject = {"subtype": subtype, **fields}
        event = anyio.Event()
        slot: list[JsonObject | BaseException] = []
        self._pending[request_id] = (event, slot)
        try:
            await self._send(
                {"type": "control_request", "request_id": request_id, "request": request}
            )
            with anyio.fail_after(timeout):
                await event.wait()
        finally:
            self._pending.pop(request_id, None)
        answer = slot[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def interrupt(self) -> None:
        """Interrupt the running turn (the ``interrupt`` control request); the turn then ends
        with a result (``error_during_execution``) and the process stays usable."""
        await self.control("interrupt")

    async def close_stdin(self) -> None:
        async with self._send_lock:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.process.stdin.aclose()

    # -- turns

    @asynccontextmanager
    async def turn(self, prompt: str | Sequence[JsonObject]) -> AsyncGenerator[ClaudeTurn, None]:
        """Send a user message; yield its :class:`ClaudeTurn`. Leaving the block before the
        result interrupts the turn and waits (bounded) for its result."""
        async with self._turn_lock:
            turn = ClaudeTurn(self)
            if self._lost is not None:
                raise ClaudeConnectionError(str(self._lost))
            self._turn = turn
            content: JsonValue = prompt if isinstance(prompt, str) else list(prompt)
            try:
                await self._send(
                    {
                        "type": "user",
                        "message": {"role": "user", "content": content},
                        "parent_tool_use_id": None,
                        "session_id": "default",
                    }
                )
                try:
                    yield turn
                except BaseException as exc:
                    if not turn.settled:
                        cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
                        await self._abandon(turn, cancelled=cancelled)
                    raise
                if not turn.settled:
                    await self._abandon(turn, cancelled=False)
            finally:
                self._turn = None

    async def query(self, prompt: str | Sequence[JsonObject]) -> ClaudeResult:
        """Run one turn to its result."""
        async with self.turn(prompt) as turn:
            return await turn.wait()

    async def _abandon(self, turn: ClaudeTurn, *, cancelled: bool) -> None:
        bound = CANCELLED_EXIT_TIMEOUT if cancelled else INTERRUPT_SETTLE_TIMEOUT
        with anyio.CancelScope(shield=True), anyio.move_on_after(bound):
            if self._lost is None:
                with suppress(ClaudeControlError, ClaudeConnectionError, TimeoutError):
                    await self.control("interrupt", timeout=bound)
            await turn._settled.wait()  # pyright: ignore[reportPrivateUsage]

    # -- reading

    async def _read(self) -> None:
        lines = LineSplitter(max_line_bytes=self._max_line_bytes)
        stdout = self.process.stdout
        try:
            while True:
                line = lines.next_line()
                if isinstance(line, bytearray):
                    self._dispatch_line(line)
                elif isinstance(line, OversizedLine):
                    self._on_oversized(line)
                elif line is NEED_DATA:
                    try:
                        lines.receive_data(await stdout.receive(_READ_CHUNK))
                    except _STREAM_ENDED:
                        lines.receive_eof()
                else:  # END_OF_STREAM
                    return
        finally:
            self._closed_event.set()

    def _on_oversized(self, line: OversizedLine) -> None:
        error = ClaudeLineTooLongError(line.size, self._max_line_bytes)
        logger.warning("%s", error)
        if self._turn is not None and not self._turn.settled:
            # A lost result line still ends the turn (the CLI is idle then).
            self._turn._fail(error, settled=is_result_head(line.head))  # pyright: ignore[reportPrivateUsage]
        else:
            self.line_errors.append(error)

    def _dispatch_line(self, line: bytearray) -> None:
        message = decode_line(line)
        if message is None:
            return
        if isinstance(message, SkippedLine):
            if message.kind == "not_json":
                logger.debug(
                    "claude %r: skipped a non-JSON stdout line: %r", self._label, message.start
                )
            else:
                logger.warning(
                    "claude %r: skipped an unreadable stdout line: %s", self._label, message.detail
                )
            return
        kind = message.get("type")
        if kind == "control_response":
            self._on_control_response(_obj(message.get("response")))
        elif kind == "control_request":
            request_id = _str(message.get("request_id")) or str(message.get("request_id"))
            scope = anyio.CancelScope()
            self._handlers[request_id] = scope
            self._tg.start_soon(self._answer, request_id, _obj(message.get("request")), scope)
        elif kind == "control_cancel_request":
            scope = self._handlers.pop(str(message.get("request_id")), None)
            if scope is not None:
                scope.cancel()
        else:
            events = parse_event(message)
            for event in events:
                if isinstance(event, ClaudeSystemInit):
                    self.session_id = event.session_id
            if self._turn is not None and not self._turn.settled:
                for event in events:
                    self._turn._push(event)  # pyright: ignore[reportPrivateUsage]
            else:
                logger.debug("claude %r: event outside a turn: %s", self._label, kind)

    def _on_control_response(self, response: JsonObject) -> None:
        request_id = _str(response.get("request_id"))
        pending = self._pending.get(request_id) if request_id is not None else None
        if pending is None:
            logger.debug("claude %r: control response for no request: %r", self._label, request_id)
            return
        event, slot = pending
        if response.get("subtype") == "error":
            slot.append(
                ClaudeControlError(
                    "control request",
                    _str(response.get("error")) or "error",
                    _str(response.get("error_code")),
                )
            )
        else:
            slot.append(_obj(response.get("response")))
        event.set()

    async def _answer(self, request_id: str, request: JsonObject, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                body = await self._handle(request)
                answer: JsonObject = {
                    "subtype": "success",
                    "request_id": request_id,
                    "response": body,
                }
            except Exception as exc:  # every request gets an answer
                logger.debug("claude %r: control request failed: %r", self._label, exc)
                answer = {
                    "subtype": "error",
                    "request_id": request_id,
                    "error": str(exc) or repr(exc),
                }
            if self._handlers.pop(request_id, None) is None:
                return  # cancelled by control_cancel_request meanwhile
            with suppress(ClaudeConnectionError):
                await self._send({"type": "control_response", "response": answer})

    async def _handle(self, request: JsonObject) -> JsonObject:
        subtype = _str(request.get("subtype"))
        if subtype == "can_use_tool":
            return await self._can_use_tool(request)
        if subtype == "hook_callback":
            callback_id = _str(request.get("callback_id")) or ""
            callback = self._hooks.get(callback_id)
            if callback is None:
                raise LookupError(f"no hook registered as {callback_id!r}")
            return await callback(_obj(request.get("input")))
        raise NotImplementedError(f"unsupported control request subtype: {subtype}")

    async def _can_use_tool(self, request: JsonObject) -> JsonObject:
        tool_input = _obj(request.get("input"))
        asked = ToolPermissionRequest(
            tool_name=_str(request.get("tool_name")) or "",
            input=tool_input,
            tool_use_id=_str(request.get("tool_use_id")),
            description=_str(request.get("description")),
            raw=request,
        )
        policy = self._policy or deny_tools_policy
        decision = await call_policy(
            policy, asked, logger=logger, asked=_tool_asked(self._label, asked)
        )
        if decision is None:  # it raised, logged: a policy that raises is a deny
            decision = DenyTool("permission policy failed")
        if isinstance(decision, AllowTool):
            updated = decision.updated_input if decision.updated_input is not None else tool_input
            return {"behavior": "allow", "updatedInput": updated}
        if not isinstance(decision, DenyTool):  # pyright: ignore[reportUnnecessaryIsInstance]
            decision = DenyTool(f"permission policy returned {decision!r}")
        answer: JsonObject = {"behavior": "deny", "message": decision.message}
        if decision.interrupt:
            answer["interrupt"] = True
        return answer

    def _connection_lost(self, reason: str) -> None:
        if self._lost is None:
            self._lost = ClaudeConnectionError(reason)
        for event, slot in list(self._pending.values()):
            if not slot:
                slot.append(ClaudeConnectionError(reason))
                event.set()
        if self._turn is not None:
            self._turn._fail(ClaudeConnectionError(reason), settled=True)  # pyright: ignore[reportPrivateUsage]


# ---------------------------------------------------------------- connect


@asynccontextmanager
async def connect_claude(
    cli: str | os.PathLike[str],
    options: ClaudeOptions,
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    permission_policy: ClaudePermissionPolicy | None = None,
    hooks: Sequence[ClaudeHook] = (),
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    startup_timeout: float = 60.0,
    close_timeout: float = 5.0,
    term_timeout: float = 5.0,
    kill_timeout: float = 2.0,
    name: str | None = None,
) -> AsyncGenerator[ClaudeConnection, None]:
    """Start the CLI at ``cli`` with ``options``, send ``initialize``, and stop it on exit.

    With a ``permission_policy`` the CLI asks before running tools (``can_use_tool``,
    answered by the policy); without one, no prompt tool is passed and whatever still asks
    is denied. ``hooks`` are registered in ``initialize``. Raises :class:`ClaudeStartupError`
    when the CLI exits, refuses or stays silent (``startup_timeout``) before answering
    ``initialize``; the message names the exit status and the stderr tail.
    """
    if max_line_bytes < 1:
        raise ValueError("max_line_bytes must be positive")
    label = name or "claude"
    argv = build_claude_argv(cli, options, permission_prompt=permission_policy is not None)
    child_env = build_claude_env(options, env, inherit_env=inherit_env)
    callbacks: dict[str, HookCallback] = {}
    hook_config: dict[str, JsonValue] = {}
    for index, hook in enumerate(hooks):
        callback_id = f"hook_{index}"
        callbacks[callback_id] = hook.callback
        matcher: JsonObject = {"matcher": hook.matcher, "hookCallbackIds": [callback_id]}
        if hook.timeout is not None:
            matcher["timeout"] = hook.timeout
        entries = hook_config.setdefault(hook.event, [])
        assert isinstance(entries, list)
        entries.append(matcher)
    raised: BaseException | None = None
    async with open_agent_process(
        argv,
        env=child_env,
        cwd=cwd,
        start_timeout=startup_timeout,
        close_timeout=close_timeout,
        term_timeout=term_timeout,
        kill_timeout=kill_timeout,
        name=label,
    ) as process:
        exit_reason = exit_reason_for(process, f"claude {label!r}")
        async with anyio.create_task_group() as tg:
            connection = ClaudeConnection(
                process, tg, permission_policy, callbacks, max_line_bytes, label
            )

            async def watch() -> None:
                async with anyio.create_task_group() as inner:

                    async def on_exit() -> None:
                        await exited_while_open(process, lambda: connection)
                        inner.cancel_scope.cancel()

                    async def on_eof() -> None:
                        await connection._read()  # pyright: ignore[reportPrivateUsage]
                        inner.cancel_scope.cancel()

                    inner.start_soon(on_exit)
                    inner.start_soon(on_eof)
                reason = f"claude {label!r} closed its stdout"
                with anyio.move_on_after(2.0):
                    reason = await exit_reason()
                connection._connection_lost(reason)  # pyright: ignore[reportPrivateUsage]

            tg.start_soon(watch)
            try:
                try:
                    connection.init_response = await connection.control(
                        "initialize",
                        timeout=startup_timeout,
                        hooks=hook_config if hook_config else None,
                    )
                except TimeoutError as exc:
                    raise ClaudeStartupError(
                        f"claude {label!r} did not answer initialize within {startup_timeout} s;"
                        f" stderr tail: {process.stderr_tail()[-2000:]!r}"
                    ) from exc
                except ClaudeConnectionError as exc:
                    raise ClaudeStartupError(
                        f"claude exited before answering initialize: {exc}"
                    ) from exc
                except ClaudeControlError as exc:
                    raise ClaudeStartupError(f"claude refused initialize: {exc}") from exc
                yield connection
            except BaseException as exc:
                raised = exc
            finally:
                with anyio.CancelScope(shield=True):
                    if connection.turn_running and connection._lost is None:  # pyright: ignore[reportPrivateUsage]
                        with anyio.move_on_after(CANCELLED_EXIT_TIMEOUT):
                            with suppress(Exception):
                                await connection.interrupt()
                    await connection.close_stdin()
                tg.cancel_scope.cancel()
    if raised is not None:  # re-raised as itself, not wrapped in an ExceptionGroup
        raise raised
