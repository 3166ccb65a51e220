"""The ``subagents`` command.

``subagents demo`` runs a delegation end to end on the embedded reference agent (offline: no
key, no network): it spawns the agent over stdio, prompts it, streams its reply and updates to
the terminal, cancels a slow turn, and shows each outcome.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

import anyio

from . import __version__

if TYPE_CHECKING:
    from .transports.acp_client import PromptTurn

__all__ = ("main",)

REFERENCE_AGENT = (sys.executable, "-m", "subagents.agents.reference")


def _describe(update: object) -> str | None:
    """A one-line rendering of a session update (None for message chunks: printed inline)."""
    from .protocol import acp

    if isinstance(update, acp.AgentMessageChunkSessionUpdate | acp.AgentThoughtChunkSessionUpdate):
        return None
    if isinstance(update, acp.PlanSessionUpdate):
        steps = ", ".join(f"{e.content} [{e.status}]" for e in update.entries)
        return f"plan: {steps}"
    if isinstance(update, acp.ToolCallSessionUpdate):
        return f"tool call {update.tool_call_id}: {update.title} [{update.status or 'pending'}]"
    if isinstance(update, acp.ToolCallUpdateSessionUpdate):
        return f"tool call {update.tool_call_id}: [{update.status or 'updated'}]"
    kind = getattr(update, "session_update", type(update).__name__)
    return f"{kind}"


async def _demo(out: TextIO, agent_command: Sequence[str], slow_cancel_after: float) -> int:
    from .protocol import acp
    from .transports.acp_client import connect_agent

    def say(text: str) -> None:
        out.write(text)
        out.flush()

    from .transports.acp_client import reject_policy

    async def announced_reject(
        request: acp.RequestPermissionRequest,
    ) -> acp.RequestPermissionOutcome:
        options = ", ".join(f"{o.name} ({o.kind})" for o in request.options)
        outcome = await reject_policy(request)
        chosen = getattr(outcome, "option_id", "cancelled")
        what = request.tool_call.title or request.tool_call.tool_call_id
        say(f"  ? permission asked for {what}: {options} -> {chosen}\n")
        return outcome

    async with connect_agent(
        agent_command, name="reference", permission_policy=announced_reject
    ) as agent:
        info = agent.agent_info
        say(
            f"connected to {info.name if info else 'agent'} {info.version if info else ''} "
            f"(ACP v{agent.protocol_version}, pid "
            f"{agent.process.pid if agent.process else '-'})\n"
        )
        session = await agent.new_session()
        say(f"session {session.session_id}\n")
        statuses: list[str] = []
        for prompt in ("stream 5", "plan", "tool", "slow"):
            say(f"\n> {prompt}\n")
            async with session.prompt(prompt) as turn:
                if prompt == "slow":

                    async def cancel_soon() -> None:
                        await anyio.sleep(slow_cancel_after)
                        say(" [cancelling the turn] ")
                        await session.cancel()

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(cancel_soon)
                        await _stream(turn, say, sep=" ")  # the ticks are separate chunks
                else:
                    await _stream(turn, say)
                result = await turn.result()
            say(f"[outcome: {result.stop_reason}]\n")
            statuses.append(result.stop_reason)
    say(f"\ndone: {len(statuses)} turns, outcomes {', '.join(statuses)}\n")
    return 0 if statuses[-1] == "cancelled" else 1


async def _stream(turn: PromptTurn, say: Callable[[str], None], sep: str = "") -> None:
    from .protocol import acp as acp_models

    at_line_start = True
    async for update in turn:
        if isinstance(update, acp_models.AgentMessageChunkSessionUpdate) and isinstance(
            update.content, acp_models.TextContentBlock
        ):
            say(update.content.text + sep)
            at_line_start = update.content.text.endswith("\n")
            continue
        line = _describe(update)
        if line is not None:
            say(f"{'' if at_line_start else chr(10)}  · {line}\n")
            at_line_start = True
    if not at_line_start:
        say("\n")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``subagents`` command."""
    parser = argparse.ArgumentParser(
        prog="subagents", description="A toolkit for out-of-process agents (ACP)."
    )
    parser.add_argument("-V", "--version", action="version", version=f"subagents {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run a delegation end to end on the embedded reference agent (offline)",
        description=(
            "Spawn the reference ACP agent, prompt it, stream its reply and updates, cancel a "
            "slow turn, and show each outcome. Needs no key and no network."
        ),
    )
    demo.add_argument(
        "--cancel-after",
        type=float,
        default=0.6,
        metavar="SECONDS",
        help="how long the slow turn runs before it is cancelled (default: 0.6)",
    )
    from .agents import serve_cli
    from .conformance import cli as conformance_cli

    conformance_cli.add_parser(commands)
    serve_cli.add_parser(commands)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "conformance":
        try:
            return conformance_cli.run(args)
        except KeyboardInterrupt:
            return 130
    if args.command == "serve":
        return serve_cli.run(args)
    if args.command == "demo":
        try:
            return anyio.run(_demo, sys.stdout, REFERENCE_AGENT, args.cancel_after)
        except KeyboardInterrupt:
            return 130
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
