"""``subagents agents install [NAME ...]``: the built-in npm agents, at their pinned versions.

Runs ``npm install --prefix DIR --save-exact PACKAGE@VERSION ...`` (the versions of the pin
list ``scripts/setup`` installs, :func:`~subagents.npm_agents.pinned_versions`) into
:func:`~subagents.npm_agents.npm_prefix`, where the built-ins look for them, bounded
by ``--timeout`` (npm and its children are killed then). npm's output goes to stderr; stdout
gets one ``installed NAME ...`` line per agent.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from typing import Any

from ._common import EXIT_FAILED, EXIT_TIMEOUT, EXIT_USAGE, error_line, unknown_agents

__all__ = ("EPILOG", "add_parser", "run")

EPILOG = (
    "Exit status: 0 when every agent is installed; 1 when npm or node is missing, npm fails "
    "or the agent is still missing afterwards; 2 for an unknown NAME or a bad argument; "
    "124 when npm did not finish within --timeout; 130 when interrupted."
)

_NODE_HINT = (
    "install node >= 20 and npm (https://nodejs.org, or your system's package manager), "
    "then rerun `subagents agents install`"
)


def add_parser(actions: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = actions.add_parser(
        "install",
        help="install the built-in npm agents (pinned versions) into a per-user directory",
        description=(
            "Install the npm packages of the built-in agents codex, claude-code, codex-acp and "
            "claude-agent-acp (all of them, or the NAMEs) at their pinned versions with "
            "`npm install --prefix DIR`, where DIR is $SUBAGENTS_NPM_PREFIX if set, else "
            "$XDG_DATA_HOME/subagents/npm (~/.local/share/subagents/npm; in a checkout, its "
            ".cache/npm when that exists). The built-ins are looked up there when they are "
            "not on PATH. Needs node >= 20 and npm, and the package registry."
        ),
        epilog=EPILOG,
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="the agents (default: all)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="bound on npm (default: 900)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from ..npm_agents import (
        BUILTIN_NPM_AGENTS,
        PinListError,
        npm_file,
        npm_prefix,
        pinned_versions,
    )

    names: list[str] = list(dict.fromkeys(args.names)) or list(BUILTIN_NPM_AGENTS)
    unknown = [name for name in names if name not in BUILTIN_NPM_AGENTS]
    if unknown:
        message, _ = unknown_agents(unknown, BUILTIN_NPM_AGENTS)
        error_line(
            "agents install",
            message.replace("no agent named", "no npm agent named"),
            hint=f"the installable agents are {', '.join(BUILTIN_NPM_AGENTS)}; "
            "other agents are installed their own way",
        )
        return EXIT_USAGE
    if not args.timeout > 0:
        error_line(
            "agents install",
            "--timeout must be a positive number of seconds",
            hint="--timeout 900 (the default)",
        )
        return EXIT_USAGE
    npm = shutil.which("npm")
    missing = [tool for tool in ("npm", "node") if shutil.which(tool) is None]
    if npm is None or missing:
        error_line("agents install", f"{' and '.join(missing)} not found on PATH", hint=_NODE_HINT)
        return EXIT_FAILED
    try:
        pins = pinned_versions()
    except PinListError as exc:
        error_line(
            "agents install",
            str(exc),
            hint="reinstall the subagents package, or install the agents with npm yourself",
        )
        return EXIT_FAILED
    packages = [BUILTIN_NPM_AGENTS[name][0] for name in names]
    unpinned = [package for package in packages if package not in pins]
    if unpinned:
        error_line(
            "agents install",
            f"no pinned version for {', '.join(unpinned)}",
            hint="reinstall the subagents package (its pin list is incomplete)",
        )
        return EXIT_FAILED
    prefix = npm_prefix()
    specs = [f"{package}@{pins[package]}" for package in packages]
    argv = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        "--save-exact",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        *specs,
    ]
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        error_line(
            "agents install",
            f"{prefix}: cannot create it: {exc.strerror or exc}",
            hint="set SUBAGENTS_NPM_PREFIX to a directory you can write to",
        )
        return EXIT_FAILED
    sys.stderr.write(f"installing {', '.join(specs)} into {prefix}\n")
    sys.stderr.flush()
    status = _run_bounded(argv, args.timeout)
    if status is None:
        error_line(
            "agents install",
            f"npm did not finish within {args.timeout:g} s (stopped)",
            hint="check the network and the npm registry, or rerun with a larger --timeout",
        )
        return EXIT_TIMEOUT
    if status != 0:
        error_line(
            "agents install",
            f"npm install failed (exit status {status}); its output is above",
            hint="check the network and the npm registry (npm config get registry), then rerun",
        )
        return EXIT_FAILED
    absent = [name for name in names if npm_file(BUILTIN_NPM_AGENTS[name][1]) is None]
    if absent:
        error_line(
            "agents install",
            f"npm finished but {', '.join(absent)} is still missing under {prefix}",
            hint="check npm's output above (is this platform supported by the package?)",
        )
        return EXIT_FAILED
    for name, spec in zip(names, specs, strict=True):
        found = npm_file(BUILTIN_NPM_AGENTS[name][1])
        sys.stdout.write(f"installed {name} ({spec}): {found}\n")
    sys.stdout.flush()
    _next_steps(names)
    return 0


def _next_steps(names: list[str]) -> None:
    """What to do next, on stderr: how to log each agent in (by the installed CLI's path:
    the prefix is not on PATH), and the probe that says whether they can take a prompt."""
    from ..config import builtin_agents
    from ..providers._readiness import login_hint

    agents = builtin_agents()
    for name in names:
        hint = login_hint(agents[name])
        if hint is not None:
            sys.stderr.write(f"  {name}: {hint}\n")
    sys.stderr.write(
        f"then `subagents agents --probe {' '.join(names)}` says whether they can take a prompt\n"
    )
    sys.stderr.flush()


def _run_bounded(argv: list[str], timeout: float) -> int | None:
    """Run ``argv`` (stdout to our stderr) in its own process group; its exit status, or
    ``None`` when it ran past ``timeout`` seconds (then the whole group is killed)."""
    try:
        output: int | None = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        output = None
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=output, start_new_session=True
    )
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return None
    except BaseException:
        _kill_group(process)
        raise


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()
