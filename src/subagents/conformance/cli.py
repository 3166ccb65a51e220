"""``subagents conformance [options] -- AGENT COMMAND...``: the suite from a terminal or CI.

Exit status: 0 conformant (no mandatory or applicable capability requirement failed, outside
the baseline); 1 non-conformant; 2 bad usage (unknown option, unreadable baseline, no
command); 3 blocked by authentication (pass ``--auth-method``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import TextIO, cast

import anyio

__all__ = ("add_parser", "run")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
    parser = commands.add_parser(
        "conformance",
        help="run the ACP conformance suite against an agent command",
        description=(
            "Run every ACP conformance check against an agent binary (each check starts its own "
            "agent process) and report a verdict per requirement."
        ),
        epilog="example: subagents conformance --json report.json -- python -m my_agent --flag",
    )
    parser.add_argument("--json", metavar="FILE", help="write the JSON report here")
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report here")
    parser.add_argument(
        "--baseline", metavar="FILE", help="expected failures (JSON); stale entries are reported"
    )
    parser.add_argument(
        "--write-baseline", metavar="FILE", help="write this run's failures as a baseline"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=max(2, min(4, (os.cpu_count() or 2) * 2)),
        metavar="N",
        help="checks run at once (each has its own agent process; default: %(default)s)",
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
    parser.add_argument("--prompt", default="Hello", help="text of an ordinary prompt")
    parser.add_argument(
        "--cancel-prompt",
        default="slow",
        metavar="TEXT",
        help="a prompt the agent works on long enough to be cancelled (default: %(default)s)",
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
        help="bound on one check (default: %(default)s)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable for the agent (repeatable)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show details of passes too")
    parser.add_argument("agent", nargs=argparse.REMAINDER, help="-- then the agent command")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from .framework import Options
    from .report import load_baseline, render_terminal, to_json, to_junit, write_baseline
    from .requirements import REQUIREMENTS
    from .runner import RequirementResult, SuiteReport, run_suite

    out = out or cast(TextIO, sys.stdout)
    err = err or cast(TextIO, sys.stderr)
    command = list(args.agent)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        err.write("subagents conformance: give the agent command after --\n")
        return 2
    if len(command) == 1 and " " in command[0]:
        command = shlex.split(command[0])
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
        if unknown:
            err.write(f"subagents conformance: unknown requirement(s) {', '.join(unknown)}\n")
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
    if args.jobs < 1:
        err.write("subagents conformance: --jobs must be at least 1\n")
        return 2
    options = Options(
        command=tuple(command),
        env=env,
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
                    options, jobs=args.jobs, only=only, baseline=baseline, on_result=progress
                )
            )
            tg.cancel_scope.cancel()
        return found[0] if found else None

    report = anyio.run(suite)
    if report is None:
        err.write("\nsubagents conformance: interrupted; every agent process was stopped\n")
        return 130
    render_terminal(report, out, verbose=args.verbose)
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(report), indent=2) + "\n", encoding="utf-8")
    if args.junit:
        Path(args.junit).write_text(to_junit(report) + "\n", encoding="utf-8")
    if args.write_baseline:
        write_baseline(report, args.write_baseline)
    return report.exit_code
