"""``subagents serve``: the in-process runtime as an ACP agent over stdio.

With no options the model is the embedded offline one (no key, no network). Examples::

    subagents serve                                   # offline model, sessions in memory
    subagents serve --sessions ~/.subagents/sessions  # sessions persisted: load/resume later
    subagents serve --adapter anthropic --model claude-sonnet-4-6        # ANTHROPIC_API_KEY
    subagents serve --adapter openai --base-url http://127.0.0.1:8080/v1 --model local
    subagents conformance -- subagents serve          # the runtime is a conformant ACP agent
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from ..harness.llm.types import LlmAdapter
    from ..harness.runtime import AgentRuntime

__all__ = ("add_parser", "make_adapter", "make_runtime", "run")

ADAPTERS = ("offline", "anthropic", "openai")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to the ``subagents`` command's subparsers."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="serve the in-process runtime as an ACP agent over stdio",
        description=(
            "Serve the in-process agent runtime as an ACP agent over stdin/stdout: each ACP "
            "session is a root session whose agents can delegate to in-process subagents "
            "(spawn or fork). With no options the model is the embedded offline one."
        ),
    )
    parser.add_argument(
        "--adapter", choices=ADAPTERS, default="offline", help="the model API (default: offline)"
    )
    parser.add_argument("--model", help="the model name (required by anthropic and openai)")
    parser.add_argument("--base-url", help="the API's base URL (local servers work)")
    parser.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding the key (default: ANTHROPIC_API_KEY or "
        "OPENAI_API_KEY)",
    )
    parser.add_argument("--system", help="the agents' system prompt")
    parser.add_argument(
        "--max-steps", type=int, default=32, help="model calls per turn at most (default: 32)"
    )
    parser.add_argument(
        "--delegate-to",
        choices=("spawn", "fork"),
        default="spawn",
        help="what the agents' subagent tool starts (default: spawn)",
    )
    parser.add_argument(
        "--sessions", type=Path, metavar="DIR", help="persist sessions here (JSONL per session)"
    )
    parser.add_argument(
        "--snapshots", type=Path, metavar="DIR", help="record or replay model snapshots here"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--record", action="store_true", help="with --snapshots: record")
    mode.add_argument("--replay", action="store_true", help="with --snapshots: replay")
    parser.add_argument(
        "--tick",
        type=float,
        default=0.1,
        help="offline model: seconds between the chunks of a 'slow' answer (default: 0.1)",
    )
    return parser


class ServeConfigError(Exception):
    """The options do not make a runtime (the message says what to change)."""


def make_adapter(args: argparse.Namespace) -> LlmAdapter | None:
    """The model adapter the options name (``None`` when snapshots replay)."""
    from ..harness.llm.select import AdapterConfigError, make_adapter

    if args.snapshots is not None and args.replay:
        return None
    try:
        return make_adapter(
            args.adapter,
            model=args.model,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            tick=args.tick,
        )
    except AdapterConfigError as exc:
        raise ServeConfigError(f"--adapter {args.adapter}: {exc}") from exc


def make_runtime(args: argparse.Namespace) -> AgentRuntime:
    from ..harness.runtime import AgentRuntime, AgentSettings
    from ..harness.session import SessionStore
    from ..harness.snapshots import SnapshotStore

    if (args.record or args.replay) and args.snapshots is None:
        raise ServeConfigError("--record and --replay need --snapshots DIR")
    if args.snapshots is not None and not (args.record or args.replay):
        raise ServeConfigError("--snapshots needs --record or --replay")
    if args.max_steps < 1:
        raise ServeConfigError("--max-steps must be at least 1")
    snapshots = None
    if args.snapshots is not None:
        snapshots = SnapshotStore(args.snapshots, "replay" if args.replay else "record")
    return AgentRuntime(
        make_adapter(args),
        sessions=SessionStore(args.sessions),
        settings=AgentSettings(system=args.system, max_steps=args.max_steps),
        snapshots=snapshots,
    )


def run(args: argparse.Namespace) -> int:
    """Serve until stdin ends; 2 on bad options (one line on stderr saying why)."""
    from ..agents.runtime_agent import serve_runtime

    try:
        runtime = make_runtime(args)
    except (ServeConfigError, ValueError) as exc:
        sys.stderr.write(f"subagents serve: {exc}\n")
        return 2
    try:
        anyio.run(functools.partial(serve_runtime, lambda: runtime, delegate_to=args.delegate_to))
    except KeyboardInterrupt:
        return 130
    return 0
