"""``subagents conformance [options] -- AGENT COMMAND...`` (or ``"AGENT COMMAND" [options]``,
quoted as the pytest plugin's ``--acp-agent`` takes it): the suite from a terminal or CI.
``--list`` and ``--explain ID`` tell what the requirements check, with no agent.

The agent command runs as the user's shell would run it: in the current directory (or
``--cwd``), so ``-- python my_agent.py`` works from the agent's own directory; only each ACP
session's ``cwd`` is a private directory per check. See :data:`EXIT_STATUSES`.

``subagents conformance [options] URL`` judges an agent served at a URL (``http(s)://``,
``ws(s)://``) through ``subagents bridge URL`` (:mod:`subagents.conformance.remote`): the
suite runs the bridge as the agent command; the process-level requirements then judge the
bridge, which the report and the terminal output say.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

import anyio

from .bridge import add_url_options

if TYPE_CHECKING:
    from ..conformance.remote import ThroughBridge

__all__ = ("EXIT_STATUSES", "add_parser", "run")

EXIT_STATUSES = """\
exit status:
  0    conformant: no mandatory (or advertised capability) requirement failed outside the
       baseline; the verdict line names the mandatory requirements that could not be judged
  1    non-conformant (with --strict also: a mandatory requirement could not be judged)
  2    bad usage: unknown option or requirement id, unreadable baseline, no agent command
  3    blocked by authentication: the agent wants a login (pass --auth-method ID)
  4    could not start: the agent command did not start, exited, or did not answer
       initialize within --startup-timeout (nothing else is run); for a URL: the bridge
       could not connect (unreachable, the token refused: its stderr says which)
  130  interrupted (every agent process was stopped)
"""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``conformance`` to the ``subagents`` command's subparsers."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "conformance",
        help="run the ACP conformance suite against an agent command (or an agent URL)",
        description=(
            "Run every ACP conformance check against an agent binary (each check starts its own "
            "agent process) and report a verdict per requirement. Given one URL (http://, "
            "https://, ws://, wss://) instead of a command, judge the agent served there "
            "through `subagents bridge URL` (each check starts a bridge process): the "
            "process-level requirements (stdout purity, UTF-8, framing, exit on stdin close, "
            "no process left, stderr) then judge the bridge, not the remote agent."
        ),
        epilog=(
            "example, from your agent's directory:\n"
            "  subagents conformance --json report.json -- python my_agent.py --flag\n"
            "the same, the agent command quoted (as pytest --acp-agent takes it):\n"
            '  subagents conformance "python my_agent.py --flag" --json report.json\n'
            "what the suite checks, and one requirement whole (no agent needed):\n"
            "  subagents conformance --list\n"
            "  subagents conformance --explain ACP-MCP-001\n"
            "an agent served at a URL (through subagents bridge):\n"
            "  subagents conformance --token-env ACP_TOKEN https://build-box:8765/acp\n\n"
            + EXIT_STATUSES
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_arguments(parser)
    return parser


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="FILE", help="write the JSON report here")
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report here")
    parser.add_argument(
        "--junit-advisory-failures",
        action="store_true",
        help="write advisory failures as JUnit <failure>s (default: passes carrying the finding)",
    )
    parser.add_argument(
        "--transcripts",
        choices=("failures", "all", "none"),
        default="failures",
        help="which checks' transcripts the JSON report keeps (default: every check that did "
        "not pass)",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        help="the agent's working directory (default: the current one; relative paths in the "
        "agent command are taken from it)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="a mandatory requirement that could not be judged (skipped, not exercised, "
        "blocked, inconclusive) makes the agent non-conformant",
    )
    parser.add_argument(
        "--baseline", metavar="FILE", help="expected failures (JSON); stale entries are reported"
    )
    parser.add_argument(
        "--write-baseline", metavar="FILE", help="write this run's failures as a baseline"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="checks run at once (each has its own agent process; default: the cores this "
        "machine gives the suite)",
    )
    parser.add_argument("--auth-method", metavar="ID", help="authenticate with this method first")
    parser.add_argument(
        "--allow-logout",
        action="store_true",
        help="exercise logout when advertised (it may revoke the credentials the agent uses)",
    )
    parser.add_argument(
        "--only", action="append", metavar="ID", help="run only this requirement (repeatable)"
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list every requirement (id, tier, what the suite does to judge it) and exit; "
        "no agent is needed",
    )
    parser.add_argument(
        "--explain",
        metavar="ID",
        help="tell one requirement whole (what it requires, what the suite sends and expects, "
        "the spec citation, how to fix a failure) and exit; no agent is needed",
    )
    parser.add_argument("--prompt", default="Hello", help="text of an ordinary prompt")
    parser.add_argument(
        "--cancel-prompt",
        default="slow",
        metavar="TEXT",
        help="a prompt the agent works on long enough to be cancelled (default: %(default)s)",
    )
    for flag, default, what in (
        ("--fs-prompt", "fs", "makes the agent read and write files through the client"),
        ("--terminal-prompt", "terminal", "makes the agent run a command in a client terminal"),
        ("--tool-prompt", "tool", "makes the agent call a tool that asks for permission"),
        ("--plan-prompt", "plan", "makes the agent send a plan"),
        ("--elicitation-prompt", "elicit", "makes the agent ask the user (elicitation/create)"),
    ):
        parser.add_argument(
            flag,
            default=default,
            metavar="TEXT",
            help=f"a prompt that {what} (default: %(default)s)",
        )
    parser.add_argument(
        "--cancel-rounds",
        type=int,
        default=6,
        metavar="N",
        help="cancelled turns per cancel check, each cancelled at another moment "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="bound on each answer (default: %(default)s)",
    )
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="bound on the answer to initialize (default: %(default)s)",
    )
    parser.add_argument(
        "--check-timeout",
        type=float,
        default=90.0,
        metavar="SECONDS",
        help="bound on one check; twice it for the checks that start several agent processes "
        "or run many turns (default: %(default)s)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable for the agent (repeatable)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show details of passes too")
    remote = parser.add_argument_group(
        "an agent served at a URL (judged through subagents bridge; the process-level "
        "requirements judge the bridge)"
    )
    add_url_options(remote)
    parser.add_argument(
        "agent",
        nargs=argparse.REMAINDER,
        help='-- then the agent command; or the command quoted as one argument ("python '
        "my_agent.py\"); or the agent's URL",
    )


def _unwritable(target: str | None) -> str | None:
    """Why a report cannot be written to ``target`` (checked before the suite runs, not after
    minutes of it), or ``None``."""
    if not target:
        return None
    path = Path(target)
    if path.is_dir():
        return "is a directory"
    parent = path.parent
    if not parent.is_dir():
        return f"no such directory: {parent}"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write in {parent}"
    return None


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from ..conformance.framework import Options
    from ..conformance.report import (
        explain_requirement,
        load_baseline,
        render_requirements,
        render_terminal,
        report_width,
        to_json,
        to_junit,
        write_baseline,
    )
    from ..conformance.requirements import REQUIREMENTS
    from ..conformance.runner import RequirementResult, SuiteReport, run_suite

    out = out or cast(TextIO, sys.stdout)
    err = err or cast(TextIO, sys.stderr)
    if args.list:
        try:
            render_requirements(out)
            out.flush()
        except BrokenPipeError:  # `--list | head`: the reader has what it wanted
            _quiet_stdout(out)
        return 0
    if args.explain:
        found = REQUIREMENTS.get(args.explain.upper())
        if found is None:
            err.write(f"subagents conformance: {unknown_requirement(args.explain)}\n")
            return 2
        out.write(explain_requirement(found, width=report_width(out)))
        return 0
    resolved = agent_command(args, err)
    if isinstance(resolved, int):
        return resolved
    command = resolved
    bridge = _through_bridge(args, command, err)
    if isinstance(bridge, int):
        return bridge
    if bridge is not None:
        command = list(bridge[1])
    env: dict[str, str] = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            err.write(f"subagents conformance: --env wants NAME=VALUE, got {item!r}\n")
            return 2
        env[name] = value
    only = args.only
    if only:
        unknown = [i for i in only if i not in REQUIREMENTS]
        for requirement_id in unknown:
            err.write(f"subagents conformance: {unknown_requirement(requirement_id)}\n")
        if unknown:
            return 2
    baseline = None
    if args.baseline:
        try:
            baseline = load_baseline(args.baseline)
        except ValueError as exc:
            err.write(f"subagents conformance: {exc}\n")
            return 2
        unknown = sorted(set(baseline) - set(REQUIREMENTS))
        if unknown:
            err.write(
                "subagents conformance: the baseline names unknown requirement(s) "
                f"{', '.join(unknown)}\n"
            )
            return 2
    if args.jobs is not None and args.jobs < 1:
        err.write("subagents conformance: --jobs must be at least 1\n")
        return 2
    if args.cancel_rounds < 1:
        err.write("subagents conformance: --cancel-rounds must be at least 1\n")
        return 2
    for flag, seconds in (
        ("--timeout", args.timeout),
        ("--startup-timeout", args.startup_timeout),
        ("--check-timeout", args.check_timeout),
    ):
        if not math.isfinite(seconds) or seconds <= 0:
            err.write(f"subagents conformance: {flag} must be seconds > 0, not {seconds}\n")
            return 2
    for flag, target in (
        ("--json", args.json),
        ("--junit", args.junit),
        ("--write-baseline", args.write_baseline),
    ):
        problem = _unwritable(target)
        if problem is not None:
            err.write(f"subagents conformance: {flag} {target}: {problem}\n")
            return 2
    cwd = Path(args.cwd) if args.cwd else Path.cwd()
    if not cwd.is_dir():
        err.write(f"subagents conformance: --cwd {args.cwd}: no such directory\n")
        return 2
    options = Options(
        command=tuple(command),
        env=env,
        cwd=cwd.resolve(),
        fs_prompt=args.fs_prompt,
        terminal_prompt=args.terminal_prompt,
        tool_prompt=args.tool_prompt,
        plan_prompt=args.plan_prompt,
        elicitation_prompt=args.elicitation_prompt,
        cancel_rounds=args.cancel_rounds,
        timeout=args.timeout,
        startup_timeout=args.startup_timeout,
        check_timeout=args.check_timeout,
        auth_method=args.auth_method,
        allow_logout=args.allow_logout,
        prompt=args.prompt,
        cancel_prompt=args.cancel_prompt,
    )
    interactive = err.isatty()

    def progress(result: RequirementResult, done: int, total: int) -> None:
        if not interactive:
            return
        width = 30
        filled = width * done // total
        err.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
            f"{result.requirement.id:28} {result.status.value:7}"
        )
        if done == total:
            err.write("\r" + " " * (width + 50) + "\r")
        err.flush()

    async def suite() -> SuiteReport | None:
        # SIGTERM / SIGINT cancel the run: every agent process still running gets its shutdown
        # ladder (its whole process group is stopped) before the command exits.
        found: list[SuiteReport] = []
        async with anyio.create_task_group() as tg:

            async def stop_on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(stop_on_signal)
            found.append(
                await run_suite(
                    options,
                    jobs=args.jobs,
                    only=only,
                    baseline=baseline,
                    on_result=progress,
                    strict=args.strict,
                    transcripts=args.transcripts,
                )
            )
            tg.cancel_scope.cancel()
        return found[0] if found else None

    report = anyio.run(suite)
    if report is None:
        err.write("\nsubagents conformance: interrupted; every agent process was stopped\n")
        return 130
    written = [name for name in (args.json, args.junit) if name]
    hint = (
        f"transcripts of the failures: {' and '.join(written)}"
        if written
        else "rerun with --json FILE (or --junit FILE) for the transcripts of the failures"
    )
    if bridge is not None:
        report.bridge = bridge[0]
    render_terminal(report, out, verbose=args.verbose, transcript_hint=hint)
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(report), indent=2) + "\n", encoding="utf-8")
    if args.junit:
        junit = to_junit(report, advisory_failures=args.junit_advisory_failures)
        Path(args.junit).write_text(junit + "\n", encoding="utf-8")
    if args.write_baseline:
        if report.start_failure is not None:
            err.write("subagents conformance: the agent did not start; no baseline written\n")
        else:
            write_baseline(report, args.write_baseline)
    return report.exit_code


def agent_command(args: argparse.Namespace, err: TextIO) -> list[str] | int:
    """The agent command (or URL) of ``args``, named either way the suite takes it: after
    ``--`` (``-- python my_agent.py``), or as one quoted argument (``"python my_agent.py"``,
    as the pytest plugin's ``--acp-agent`` takes it), which is split as a shell would split it
    unless it is an existing file; options after a quoted command (or a URL) are the suite's
    own, parsed into ``args``. An exit status (2) for bad usage."""
    command = list(args.agent)
    after_dashes = bool(command) and command[0] == "--"
    if after_dashes:
        command = command[1:]
    if not command:
        err.write(
            "subagents conformance: give the agent command after -- (or quoted as one "
            'argument: "python my_agent.py")\n'
        )
        return 2
    first, rest = command[0], command[1:]
    quoted = any(c.isspace() for c in first) and not (Path(args.cwd or ".") / first).exists()
    if after_dashes or not (quoted or _is_url(first)):
        return shlex.split(first) if quoted and not rest else command
    if rest:
        # `"python my_agent.py" --only X`: the REMAINDER positional took the options too.
        args.agent = list[str]()
        _options_parser().parse_args(rest, namespace=args)
        extra = [str(word) for word in args.agent]
        if extra:
            err.write(
                "subagents conformance: one agent only: after a quoted agent command only "
                f"options may follow, not {shlex.join(extra)!r} (or give the command after "
                "--)\n"
            )
            return 2
        args.agent = [first]
    return shlex.split(first) if quoted else [first]


def _quiet_stdout(out: TextIO) -> None:
    """After a broken pipe on stdout, point it at /dev/null (the interpreter's own flush at
    exit would fail again and print a traceback)."""
    if out is sys.stdout:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def unknown_requirement(requirement_id: str) -> str:
    """``unknown requirement ACP-INTI-003; did you mean ACP-INIT-003? ...``: one line."""
    from ..conformance.requirements import REQUIREMENTS

    close = difflib.get_close_matches(requirement_id.upper(), list(REQUIREMENTS), n=1)
    guess = f"; did you mean {close[0]}?" if close else ""
    return (
        f"unknown requirement {requirement_id}{guess} "
        "(subagents conformance --list shows every one)"
    )


def _is_url(text: str) -> bool:
    from ..protocol.acp_remote import is_agent_url

    return is_agent_url(text)


class _OptionsParser(argparse.ArgumentParser):
    """The ``conformance`` options alone (those after a quoted agent), whose usage errors are
    one line and a hint, as the ``subagents`` command's own parsers' are."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}\n  hint: `{self.prog} --help` shows the usage\n")


def _options_parser() -> argparse.ArgumentParser:
    parser = _OptionsParser(prog="subagents conformance")
    _add_arguments(parser)
    return parser


def _through_bridge(
    args: argparse.Namespace, command: list[str], err: TextIO
) -> tuple[ThroughBridge, tuple[str, ...]] | int | None:
    """For an agent URL: what the report says, and the bridge command the suite runs; ``None``
    for an agent command; an exit status (2) for bad usage."""
    from ..conformance.remote import ThroughBridge, bridge_command
    from ..protocol.acp_remote import agent_url, is_agent_url
    from .bridge import parse_headers

    if not (len(command) == 1 and is_agent_url(command[0])):
        if args.token_env or args.header or args.transport != "auto":
            err.write(
                "subagents conformance: --token-env, --transport and --header are for an agent "
                "URL (give the URL instead of a command)\n"
            )
            return 2
        return None
    try:
        url = agent_url(command[0])
        parse_headers(args.header)
    except ValueError as exc:
        err.write(f"subagents conformance: {exc}\n")
        return 2
    if args.transport == "http" and url.lower().startswith(("ws://", "wss://")):
        err.write(f"subagents conformance: --transport http needs an http(s) URL, not {url}\n")
        return 2
    if args.token_env and not os.environ.get(args.token_env):
        err.write(
            f"subagents conformance: --token-env {args.token_env}: the variable is not set "
            "(or empty)\n"
        )
        return 2
    bridge = bridge_command(
        url, token_env=args.token_env, transport=args.transport, headers=args.header
    )
    return ThroughBridge(url, args.transport), bridge
