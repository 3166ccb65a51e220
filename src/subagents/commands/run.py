"""``subagents run AGENT [PROMPT]``: one delegation through any configured agent, live.

The agent is a registry entry (``subagents agents`` lists them; ``--config FILE`` adds
files). The prompt is the argument, or all of stdin (``-`` or no argument). The child's text
streams to stdout as it arrives; tool calls, plans and thoughts are one-line notes on stderr;
the outcome ends it (``[completed in 1.2 s]``). ``--json`` prints one JSON object per line
instead (``started``, ``progress``, ``permission``, ``outcome``, or ``error``).

``--json`` progress lines (stable): ``{"event": "progress", "kind": K, "text": T, "data":
D}``, one per event of the progress vocabulary. ``kind`` is ``text``, ``thought``,
``tool_call``, ``tool_result``, ``plan``, ``usage``, ``other`` or ``child``; ``text`` is the
event for people (a text or thought chunk as is, a tool call's title, a tool result's output
excerpt, the plan's ``[status] entry`` lines); ``data`` by kind: ``{"message_id"}`` or
``null`` (text, thought), ``{"id", "title", "tool_kind", "status", "input"}`` (tool_call),
``{"id", "status", "output"}`` (tool_result), ``{"entries": [{"content", "status"}],
"explanation"}`` (plan), ``{"input_tokens", "output_tokens", "total_tokens", "context_used",
"context_size", "cost_usd", "reported"}`` (usage), the event's data (other), and
``{"tool_call_id", "event"}`` (child: a delegated child's event, in this same format, under
the tool call that runs it).

Permissions: ``--yes`` allows every request, ``--deny`` denies them all; otherwise the
entry's ``permission``, where ``ask`` asks on the terminal (and denies when there is none).

The first Ctrl-C cancels the child's turn (the run's signal); a second one stops the child at
once. ``--timeout`` (or the entry's ``timeout``) cancels the turn when it runs out; a cancelled
turn that has not ended ``--stop-grace`` seconds later (10 by default) is abandoned and the agent
stopped;
``--first-event-timeout`` (or the entry's ``first_event_timeout``, 120 s by default) ends the
run when the agent has sent nothing by then, naming the cause and what to do. The known ways a
built-in cannot reach its model end the run within seconds, with one line naming the cause
(``needs credentials``, ``not logged in``, ``no network``) and a hint: Codex's ``account/read``
is asked before the turn, and its "waiting for network" retry notice ends it. Codex and Claude
agents keep their state in the user's own ``~/.codex`` or ``~/.claude`` when it exists, else in
a private temporary directory (nothing is created in the home directory).

Exit status: 0 completed, 1 failed (or could not start, or cannot reach its model: no
credentials, not logged in, no network), 2 bad usage, unknown agent or bad configuration, 124
timed out (``--timeout``, or no first event within ``--first-event-timeout``), 130 cancelled.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO, final

import anyio

from .._exception_groups import first_leaf
from ..config import AgentSpec, ConfigError, Permission, load_agents
from ..providers._readiness import NotReady, agent_home, classify, offline_notice
from ..providers.contract import (
    CancelSignal,
    OtherProgress,
    ProgressEvent,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    SubagentRun,
    child_id_of,
)
from ._common import (
    DEBUG_HINT,
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    error_line,
    unknown_agents,
)
from ._run_console import Console, format_seconds
from ._run_permissions import Permissions

if TYPE_CHECKING:
    from ..providers.factory import ManagedProvider

__all__ = ("RunOptions", "add_parser", "run", "run_async")

INTERRUPTED: Final = "interrupted (Ctrl-C)"
STOP_GRACE: Final = 10.0
"""Seconds the child has to end its turn once cancelled before it is stopped outright (the
default of ``--stop-grace``)."""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        "run",
        help="run one delegation through a configured agent and stream it",
        description=(
            "Run PROMPT through the agent AGENT (a registry entry: see `subagents agents`). "
            "The agent's text streams to stdout; tool calls, plans and the outcome are noted "
            "on stderr. Ctrl-C cancels the turn; a second Ctrl-C stops the agent. Exit status: "
            "0 completed, 1 failed (also: needs credentials, not logged in, no network), "
            "2 usage or configuration error, 124 timed out (--timeout, or no first event "
            "within --first-event-timeout), 130 cancelled."
        ),
    )
    parser.add_argument("agent", metavar="AGENT", help="the agent's name in the registry")
    parser.add_argument(
        "prompt",
        metavar="PROMPT",
        nargs="?",
        help="the task (omitted or '-': read it from stdin)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        action="append",
        default=[],
        help="a registry file read after the default ones (repeatable)",
    )
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument("-y", "--yes", action="store_true", help="allow every permission request")
    policy.add_argument("--deny", action="store_true", help="deny every permission request")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per line on stdout (started, progress, permission, "
        "outcome or error)",
    )
    parser.add_argument("--model", metavar="NAME", help="the model (overrides the entry's)")
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        help="cancel the turn after this long (overrides the entry's timeout; 0: no limit)",
    )
    parser.add_argument(
        "--first-event-timeout",
        metavar="SECONDS",
        type=float,
        help="end the run when the agent sent nothing this long after the start (overrides "
        "the entry's first_event_timeout, 120 by default; 0: no limit)",
    )
    parser.add_argument(
        "--stop-grace",
        metavar="SECONDS",
        type=float,
        help="how long a cancelled turn (Ctrl-C, --timeout) has to end before the agent is "
        f"stopped outright ({STOP_GRACE:g} by default)",
    )
    parser.add_argument(
        "--cwd", metavar="DIR", help="the agent's working directory (overrides the entry's)"
    )
    return parser


@final
@dataclass(frozen=True, slots=True)
class RunOptions:
    """A checked ``subagents run`` invocation."""

    spec: AgentSpec
    prompt: str
    policy: Permission
    why: str
    """Where the permission policy comes from, for notes."""
    interactive: bool
    """Whether an ``ask`` policy may ask on the terminal."""
    json_mode: bool = False
    timeout: float | None = None
    first_event_timeout: float | None = None
    stop_grace: float = STOP_GRACE
    """Seconds a cancelled turn has to end before the agent is stopped outright."""


class _UsageError(Exception):
    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


_PROMPT_HINT: Final = (
    'subagents run AGENT "your task"  or  echo "your task" | subagents run AGENT -'
)


def _read_prompt(argument: str | None) -> tuple[str, bool]:
    """The prompt and whether it came from stdin."""
    if argument is not None and argument != "-":
        return argument, False
    stdin: TextIO | None = sys.stdin
    if stdin is None or stdin.closed:
        raise _UsageError("USAGE", "no prompt: give PROMPT, or pipe it on stdin", hint=_PROMPT_HINT)
    if _isatty(stdin):
        raise _UsageError(
            "USAGE",
            "no prompt: give PROMPT, or pipe it on stdin (stdin is a terminal)",
            hint=_PROMPT_HINT,
        )
    return stdin.read(), True


def _options(args: argparse.Namespace) -> RunOptions:
    extra = [Path(p) for p in args.config]
    try:
        agents = load_agents(extra)
    except ConfigError as exc:
        raise _UsageError("CONFIG_ERROR", f"bad configuration: {exc}", hint=exc.hint) from exc
    name: str = args.agent
    spec = agents.get(name)
    if spec is None:
        message, hint = unknown_agents([name], agents, [str(p) for p in args.config])
        raise _UsageError("UNKNOWN_AGENT", message, hint=hint)
    timeout = args.timeout if args.timeout is not None else spec.timeout
    if timeout is not None and (timeout != timeout or timeout < 0):
        raise _UsageError(
            "USAGE",
            f"--timeout: expected seconds >= 0, not {args.timeout}",
            hint="--timeout 300 allows five minutes; --timeout 0 sets no limit",
        )
    first_arg: float | None = getattr(args, "first_event_timeout", None)
    first_event = first_arg if first_arg is not None else spec.first_event_timeout
    if first_event is not None and (first_event != first_event or first_event < 0):
        raise _UsageError(
            "USAGE",
            f"--first-event-timeout: expected seconds >= 0, not {first_arg}",
            hint="--first-event-timeout 300 waits five minutes; 0 sets no limit",
        )
    stop_grace: float | None = getattr(args, "stop_grace", None)
    if stop_grace is not None and not 0 <= stop_grace < float("inf"):
        raise _UsageError(
            "USAGE",
            f"--stop-grace: expected seconds >= 0, not {stop_grace}",
            hint="--stop-grace 2 stops an agent 2 s after its turn was cancelled",
        )
    if args.cwd is not None:
        cwd = Path(args.cwd).expanduser()
        if not cwd.is_dir():
            raise _UsageError(
                "USAGE",
                f"--cwd: {args.cwd} is not a directory",
                hint="give an existing directory (mkdir it first)",
            )
        spec = replace(spec, cwd=str(cwd.resolve()))
    if args.model:
        spec = spec.with_overrides(model=args.model)
    prompt, from_stdin = _read_prompt(args.prompt)
    if not prompt.strip():
        raise _UsageError("USAGE", "the prompt is empty", hint=_PROMPT_HINT)
    policy: Permission
    if args.yes:
        policy, why = "allow", "--yes"
    elif args.deny:
        policy, why = "deny", "--deny"
    else:
        policy = spec.permission
        where = "the default" if spec.source == "built-in" else f"from {spec.source}"
        why = f'permission = "{policy}", {where}'
    interactive = policy == "ask" and not from_stdin and _isatty(sys.stdin) and _isatty(sys.stdout)
    return RunOptions(
        spec=spec,
        prompt=prompt,
        policy=policy,
        why=why,
        interactive=interactive,
        json_mode=bool(args.json),
        timeout=timeout or None,
        first_event_timeout=first_event or None,
        stop_grace=STOP_GRACE if stop_grace is None else stop_grace,
    )


def run(args: argparse.Namespace) -> int:
    """``subagents run``: the exit status (see the module docstring)."""
    try:
        return _run(args)
    except KeyboardInterrupt:  # before the Ctrl-C handler is in place (reading stdin, say)
        return EXIT_CANCELLED


def _run(args: argparse.Namespace) -> int:
    debug = bool(getattr(args, "debug", False))
    try:
        options = _options(args)
    except _UsageError as exc:
        if args.json:
            error: dict[str, str] = {"event": "error", "code": exc.code, "message": exc.message}
            if exc.hint:
                error["hint"] = exc.hint
            Console(sys.stdout, sys.stderr, json_mode=True).event(error)
        error_line("run", exc.message, hint=exc.hint, exc=exc.__cause__ or exc, debug=debug)
        return EXIT_USAGE
    try:
        return anyio.run(run_async, options, sys.stdout, sys.stderr, debug)
    except Exception as exc:
        if isinstance(first_leaf(exc), BrokenPipeError):
            # Whoever read our output went away (`| head -1`): stop quietly, like other tools
            # (the child was disposed on the way out); no second error at interpreter exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
        error_line(
            "run",
            f"{options.spec.name}: unexpected error: {first_leaf(exc)}",
            hint=DEBUG_HINT if not debug else None,
            exc=exc,
            debug=debug,
        )
        return EXIT_FAILED


EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for a writer whose reader went away."""


@final
class _Stops:
    """What ended the run early: the signal's reason, a timeout, a hard stop."""

    def __init__(self) -> None:
        self.timed_out = False
        self.hard = anyio.CancelScope()
        """Cancelled to stop the child at once (second Ctrl-C, or the grace ran out)."""
        self.hard_reason = ""
        self.first_event = anyio.Event()
        """Set by the agent's first event (or the end of the run)."""
        self.started = False
        """Whether the agent answered its handshake (``initialize``): the run was started."""
        self.not_ready: NotReady | None = None
        """Why the agent cannot reach its model, when that ended the run."""

    def stop(self, reason: str) -> None:
        if not self.hard.cancel_called:
            self.hard_reason = reason
            self.hard.cancel()


async def _watch_interrupts(
    cancel: CancelSignal,
    stops: _Stops,
    console: Console,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            if not cancel.cancelled:
                cancel.cancel(INTERRUPTED)
                console.line("cancelling... (Ctrl-C again to stop the agent)")
            else:
                console.line("stopping the agent...")
                stops.stop(f"{cancel.reason}; the agent was stopped (Ctrl-C again)")
                return


async def _time_out(seconds: float, cancel: CancelSignal, stops: _Stops) -> None:
    await anyio.sleep(seconds)
    if not cancel.cancelled:
        stops.timed_out = True
        cancel.cancel(f"timed out after {format_seconds(seconds)} s")


async def _first_event_deadline(
    seconds: float, spec: AgentSpec, cancel: CancelSignal, stops: _Stops
) -> None:
    with anyio.move_on_after(seconds):
        await stops.first_event.wait()
        return
    if not cancel.cancelled:
        stops.timed_out = True
        cancel.cancel(_first_event_reason(spec, seconds, started=stops.started))


_PROTOCOLS: Final = {
    "acp": "ACP",
    "a2a": "A2A",
    "codex": "Codex's app-server protocol",
    "claude-code": "Claude Code's stream-json",
}
"""What each out-of-process kind of agent speaks, for the first-event hint."""


def _first_event_reason(spec: AgentSpec, seconds: float, *, started: bool) -> str:
    """Why a run got no first event, by how far the agent got: an agent that never answered
    ``initialize`` never started speaking its protocol (a wrong command, one waiting for input
    or a login); one that did but sent nothing on the prompt waits on its model."""
    said = f"{spec.name} sent nothing within {format_seconds(seconds)} s of the start"
    wait = "or wait longer with --first-event-timeout"
    if started:
        return (
            f"{said}: it answered `initialize` but nothing came on the prompt; check that it "
            f"can reach its model (`subagents agents --probe {spec.name}`), {wait}"
        )
    protocol = _PROTOCOLS.get(spec.provider, "its protocol")
    if spec.agent_urls:
        kind = "an A2A" if spec.provider == "a2a" else "an ACP"
        check = f"check that the server at {spec.agent_urls[0]} serves {kind} agent"
    elif spec.command:
        check = f"run `{shlex.join(spec.command)}` by hand and read its stderr"
    else:
        check = "rerun with --debug"
    return (
        f"{said}: it never answered `initialize`, so it did not start speaking {protocol} "
        f"(a wrong command? waiting for input or a login?); {check}, {wait}"
    )


async def _not_ready(spec: AgentSpec) -> NotReady | None:
    """Codex's own account query before the turn (a run without credentials would retry
    for minutes); None when it is fine or cannot be asked. No reachability check: a run
    without network ends on Codex's own "waiting for network" notice instead."""
    if spec.provider != "codex":
        return None
    from ..providers.probe import probe_agent

    result = await probe_agent(spec, min(spec.startup_timeout, 30.0), network=False)
    return result.not_ready


async def _stop_after_grace(
    grace: float, cancel: CancelSignal, stops: _Stops, console: Console
) -> None:
    await cancel.wait()
    await anyio.sleep(grace)
    console.note(
        f"the agent did not end its turn {format_seconds(grace)} s after "
        "the cancellation; stopping it"
    )
    stops.stop(f"{cancel.reason}; the agent did not stop in time and was stopped")


def _start_hint(spec: AgentSpec, exc: BaseException) -> str | None:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, FileNotFoundError | PermissionError) or (
            isinstance(cause, OSError) and "No such file" in str(cause)
        ):
            from ..providers.probe import missing_command

            missing = missing_command(spec)
            if missing is not None:
                return f"{missing[0]}: {missing[1]}"
        cause = cause.__cause__
    known = classify(spec, f"{exc} {exc.__cause__ or ''}")
    if known is not None:
        return known.hint
    if spec.agent_urls and "(HTTP 401)" in str(exc):
        variable = f"${spec.token_env}" if spec.token_env else "the variable token_env names"
        return f"give the server's token: set token_env in the entry, and {variable}"
    if spec.url is not None:
        serve = "serve --a2a" if spec.provider == "a2a" else "serve --listen"
        return (
            f"check that the server at {spec.url} runs (subagents {serve}) and the "
            "entry's url and token_env, or rerun with --debug"
        )
    if spec.urls:
        return (
            f"check that the servers at {', '.join(spec.urls)} run (subagents serve --listen) "
            "and the entry's urls and token_env (`subagents agents --probe "
            f"{spec.name}` checks each), or rerun with --debug"
        )
    if "auth" in str(exc).lower():
        return f"{spec.name} needs credentials: log in with it, or set its API key"
    if spec.command:
        return f"check the entry's command ({' '.join(spec.command)}), or rerun with --debug"
    return "rerun with --debug for details"


def _exit_status(outcome: SubagentOutcome, stops: _Stops) -> int:
    if outcome.status == "completed":
        return 0
    if outcome.status == "failed":
        return EXIT_FAILED
    return EXIT_TIMEOUT if stops.timed_out else EXIT_CANCELLED


async def run_async(options: RunOptions, out: TextIO, err: TextIO, debug: bool = False) -> int:
    """Run the delegation of ``options``, rendering it on ``out``/``err``; the exit status.

    Must run in the main thread (it handles SIGINT)."""
    with agent_home(options.spec) as spec:
        return await _run_async(replace(options, spec=spec), out, err, debug)


def _report_not_ready(spec: AgentSpec, not_ready: NotReady, console: Console, debug: bool) -> int:
    said = f" ({not_ready.detail})" if not_ready.detail else ""
    message = f"{spec.name} cannot take a prompt: {not_ready.cause}{said}"
    code = not_ready.cause.upper().replace(" ", "_")
    console.event({"event": "error", "code": code, "message": message, "hint": not_ready.hint})
    error_line("run", message, hint=not_ready.hint, debug=debug)
    return EXIT_FAILED


async def _run_async(options: RunOptions, out: TextIO, err: TextIO, debug: bool) -> int:
    from ..providers.factory import BuildContext, UnknownProviderKind, build_provider

    console = Console(out, err, json_mode=options.json_mode)
    cancel = CancelSignal()
    stops = _Stops()
    permissions = Permissions(
        console,
        policy=options.policy,
        why=options.why,
        interactive=options.interactive,
        cancel=cancel,
    )
    spec = options.spec
    try:
        # Every request comes to ``permissions``, which applies the effective policy.
        provider = build_provider(
            spec.with_overrides(permission="ask"), BuildContext(ask=permissions)
        )
    except (ConfigError, UnknownProviderKind) as exc:
        console.event({"event": "error", "code": "CONFIG_ERROR", "message": str(exc)})
        hint = (
            exc.hint
            if isinstance(exc, ConfigError)
            else f"fix the provider of agents.{spec.name} ({spec.source}), or install the "
            "plugin that provides it"
        )
        error_line("run", f"bad configuration: {exc}", hint=hint, exc=exc, debug=debug)
        return EXIT_USAGE
    async with anyio.create_task_group() as tg:
        await tg.start(_watch_interrupts, cancel, stops, console)
        if options.timeout:
            tg.start_soon(_time_out, options.timeout, cancel, stops)
        tg.start_soon(_stop_after_grace, options.stop_grace, cancel, stops, console)
        if options.first_event_timeout:
            tg.start_soon(_first_event_deadline, options.first_event_timeout, spec, cancel, stops)
        try:
            not_ready = await _not_ready(spec)
            if not_ready is not None:
                return _report_not_ready(spec, not_ready, console, debug)
            return await _delegate(provider, options, console, permissions, cancel, stops, debug)
        finally:
            tg.cancel_scope.cancel()
    raise AssertionError("unreachable")  # pragma: no cover


async def _delegate(
    provider: ManagedProvider,
    options: RunOptions,
    console: Console,
    permissions: Permissions,
    cancel: CancelSignal,
    stops: _Stops,
    debug: bool,
) -> int:
    from ..providers.fork import ForkProvider
    from ..providers.progress import ProgressFeed, StreamedText, stopped_outcome

    spec = options.spec
    started = anyio.current_time()
    outcome: SubagentOutcome | None = None
    child_id = ""
    child: SubagentRun | None = None
    streamed = False
    text = StreamedText()
    async with provider:
        with stops.hard:
            parent: str | None = None
            if isinstance(provider, ForkProvider):
                parent = provider.runtime.root_agent().id
            request = SubagentRequest(
                options.prompt, description=f"subagents run {spec.name}", parent_session=parent
            )
            try:
                child = await provider.start(request, cancel=cancel)
                stops.started = True
            except SubagentError as exc:
                if exc.code is not SubagentErrorCode.CANCELLED:
                    cause = exc.__cause__
                    message = str(cause) if cause is not None else exc.message
                    console.event({"event": "error", "code": exc.code.value, "message": message})
                    error_line(
                        "run",
                        f"{spec.name} could not start: {message}",
                        hint=_start_hint(spec, exc),
                        exc=exc,
                        debug=debug,
                    )
                    return EXIT_FAILED
                outcome = SubagentOutcome.cancelled("", cancel.reason or "cancelled")
            else:
                async with child:
                    child_id = child_id_of(child)
                    console.event({"event": "started", "agent": spec.name, "child_id": child_id})
                    events = child.progress()
                    if isinstance(events, ProgressFeed):
                        permissions.progress = events
                    if events is not None:
                        async for event in events:
                            streamed = streamed or (event.kind == "text" and bool(event.text))
                            text.add(event)
                            console.progress(event)
                            _first_event(spec, event, cancel, stops)
                    outcome = await child.result()
    if outcome is None:  # stopped outright: what it streamed survives
        outcome = await stopped_outcome(child, child_id, stops.hard_reason or "stopped", text.text)
    elif outcome.status == "completed" and not streamed and outcome.output is not None:
        # Nothing came live: show the result itself.
        console.progress_text(outcome.output)
    not_ready = stops.not_ready
    if not_ready is None and outcome.status == "failed" and outcome.message:
        not_ready = classify(spec, outcome.message)
    if not_ready is None or options.json_mode:
        console.outcome(outcome, anyio.current_time() - started)
    if not_ready is not None:  # its line says the outcome's message once, as its cause
        console.fresh_line()
        return _report_not_ready(spec, not_ready, console, debug)
    return _exit_status(outcome, stops)


def _first_event(
    spec: AgentSpec, event: ProgressEvent, cancel: CancelSignal, stops: _Stops
) -> None:
    """Note the agent's first event; end the run on a notice that it has no network. A retry
    notice is no sign of life."""
    offline = offline_notice(spec, event)
    if offline is not None:
        if stops.not_ready is None and not cancel.cancelled:
            stops.not_ready = offline
            cancel.cancel(offline.line(spec.name))
        return
    if isinstance(event, OtherProgress) and (event.data or {}).get("will_retry") is True:
        return
    stops.first_event.set()
