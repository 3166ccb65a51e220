"""``subagents demo``: one delegation through every provider that works offline, side by side.

The same task goes through:

- ``reference``: the reference ACP agent, a child process over stdio (``AcpProvider``);
- ``spawn``: a fresh in-process child on the embedded offline model (``SpawnProvider``);
- ``fork``: an in-process child seeded with its parent's finished turn (``ForkProvider``);
- ``codex``: the real ``codex app-server`` (``CodexProvider``) against the bundled fake OpenAI
  Responses API on 127.0.0.1, when the binary is installed (``scripts/setup``);
- ``claude-code``: the real ``claude`` CLI (``ClaudeCodeProvider``) against the bundled fake
  Anthropic Messages API on 127.0.0.1, when installed;

each child's text streamed live, then a table of outcome, time to first output and total time,
and one cancellation (a slow turn of the reference agent, cancelled by the signal). No key and
no network: the fake model servers run in this process on loopback and stop with it.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio

__all__ = ("add_parser", "run")

TASK = "Say hello to the team."
ROWS = ("reference", "spawn", "fork", "codex", "claude-code")
"""The demo's rows, in order (what ``--only`` takes)."""
MAX_CANCEL_AFTER = 30.0
"""The longest ``--cancel-after``: the slow turn ends by itself after a minute."""


def _cancel_after(text: str) -> float:
    """``--cancel-after``: seconds, more than 0 and at most :data:`MAX_CANCEL_AFTER`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {text!r}") from None
    if not 0 < value <= MAX_CANCEL_AFTER:
        raise argparse.ArgumentTypeError(
            f"expected seconds more than 0 and at most {MAX_CANCEL_AFTER:g}, not {text}"
        )
    return value


@dataclass
class Row:
    name: str
    provider: str
    status: str
    first_output: float | None = None
    total: float | None = None
    output: str = ""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        "demo",
        help="one delegation through every offline provider, side by side (no key, no network)",
        description=(
            "Run the same delegation through the reference ACP agent, the in-process spawn and "
            "fork runtimes, and Codex and Claude Code when installed (against bundled fake "
            "model servers on 127.0.0.1), streaming each, then compare outcome, time to first "
            "output and total time; then cancel a slow turn. Needs no key and no network."
        ),
    )
    parser.add_argument(
        "--cancel-after",
        type=_cancel_after,
        default=0.6,
        metavar="SECONDS",
        help="how long the slow turn runs before it is cancelled (default: 0.6; at most "
        f"{MAX_CANCEL_AFTER:g})",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=ROWS,
        metavar="NAME",
        help=f"run only these rows (repeatable): {', '.join(ROWS)}",
    )
    return parser


@dataclass
class Entry:
    """One row's provider (open), or why it is skipped; ``runtime`` makes a fork's parent."""

    kind: str
    provider: Any = None
    skipped: str | None = None
    runtime: Any = None


@asynccontextmanager
async def _providers(root: Path) -> AsyncGenerator[dict[str, Entry], None]:
    """Every provider of the demo, open, by row name."""
    import sys

    from ..fake_model_servers import anthropic_messages, openai_responses
    from ..fake_model_servers._http import serve
    from ..harness.llm.offline import OfflineModel
    from ..harness.runtime import AgentRuntime
    from ..npm_agents import install_hint
    from ..providers.acp import AcpProvider
    from ..providers.fork import ForkProvider
    from ..providers.spawn import SpawnProvider

    work = root / "work"
    work.mkdir()
    rows: dict[str, Entry] = {}
    async with AsyncExitStack() as stack:
        reference = AcpProvider(
            [sys.executable, "-m", "subagents.agents.reference"], name="reference", cwd=work
        )
        rows["reference"] = Entry("acp", await stack.enter_async_context(reference))
        runtime = AgentRuntime(OfflineModel())
        rows["spawn"] = Entry("spawn", await stack.enter_async_context(SpawnProvider(runtime)))
        fork = await stack.enter_async_context(ForkProvider(runtime))
        rows["fork"] = Entry("fork", fork, runtime=runtime)
        codex = openai_responses.codex_command()
        if codex is None:
            rows["codex"] = Entry("codex", skipped=f"not installed ({install_hint('codex')})")
        else:
            from ..providers.codex import CodexProvider

            server = stack.enter_context(serve(openai_responses.ResponsesHandler))
            env = openai_responses.codex_home(root / "codex", server)
            provider = CodexProvider(codex, name="codex", env=env, cwd=work)
            rows["codex"] = Entry("codex", await stack.enter_async_context(provider))
        claude = anthropic_messages.claude_cli_path()
        if claude is None:
            rows["claude-code"] = Entry(
                "claude-code", skipped=f"not installed ({install_hint('claude-code')})"
            )
        else:
            from ..providers.claude_code import ClaudeCodeProvider
            from ..transports.claude_code import ClaudeOptions

            server = stack.enter_context(serve(anthropic_messages.AnthropicMessagesHandler))
            env = anthropic_messages.claude_env(root / "claude", server)
            options = ClaudeOptions(model="claude-fake-model", config_dir=env["CLAUDE_CONFIG_DIR"])
            provider = ClaudeCodeProvider(claude, options, name="claude-code", env=env, cwd=work)
            rows["claude-code"] = Entry("claude-code", await stack.enter_async_context(provider))
        yield rows


async def _delegate(name: str, entry: Entry, say: Callable[[str], None]) -> Row:
    from ..providers import CancelSignal, SubagentError, SubagentRequest

    provider = entry.provider
    parent: str | None = None
    if entry.runtime is not None:  # fork: a parent with one finished turn
        agent = entry.runtime.root_agent(key="demo-parent")
        await agent.run("The team meets on Mondays.", cancel=CancelSignal())
        parent = agent.id
    row = Row(name, entry.kind, "")
    say(f"\n▶ {name}: ")
    started = time.perf_counter()
    try:
        with anyio.fail_after(120):
            run = await provider.start(
                SubagentRequest(TASK, parent_session=parent), cancel=CancelSignal()
            )
            async with run:
                feed = run.progress()
                if feed is not None:
                    async for event in feed:
                        if event.kind == "text" and event.text:
                            if row.first_output is None:
                                row.first_output = time.perf_counter() - started
                            say(event.text)
                outcome = await run.result()
    except SubagentError as exc:
        row.status = f"could not start: {exc.message}"
        say(f"[{row.status}]\n")
        return row
    except TimeoutError:
        row.status = "timed out (120 s)"
        say(f"[{row.status}]\n")
        return row
    row.total = time.perf_counter() - started
    row.status = outcome.status
    if outcome.status != "completed":
        row.status += f" ({outcome.failure_kind or ''}: {outcome.message})"
    row.output = str(outcome.output or "")
    say(f"\n  [{row.status} in {row.total * 1000:.0f} ms]\n")
    return row


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:,.0f}"


def _table(rows: list[Row], out: TextIO) -> None:
    headers = ("agent", "provider", "outcome", "first output ms", "total ms", "output")
    cells = [
        (
            r.name,
            r.provider,
            r.status,
            _ms(r.first_output),
            _ms(r.total),
            (r.output[:40] + "…") if len(r.output) > 40 else r.output,
        )
        for r in rows
    ]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]
    numeric = {3, 4}

    def line(values: tuple[str, ...]) -> str:
        parts = [
            v.rjust(widths[i]) if i in numeric else v.ljust(widths[i]) for i, v in enumerate(values)
        ]
        return "  ".join(parts).rstrip()

    out.write("\n" + line(headers) + "\n")
    out.write(line(tuple("-" * w for w in widths)) + "\n")
    for row in cells:
        out.write(line(row) + "\n")


async def _cancel_demo(provider: Any, after: float, say: Callable[[str], None]) -> str:
    from ..providers import CancelSignal, SubagentRequest

    signal = CancelSignal()
    say(f"\n▶ reference, a slow turn cancelled after {after:g} s: ")
    with anyio.fail_after(60):
        async with await provider.start(SubagentRequest("slow"), cancel=signal) as run:

            async def cancel_soon() -> None:
                await anyio.sleep(after)
                say(" [cancel] ")
                signal.cancel("cancelled by the demo")

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_soon)
                feed = run.progress()
                if feed is not None:
                    async for event in feed:
                        if event.kind == "text":
                            say(event.text.strip() + " ")
            outcome = await run.result()
    say(f"\n  [{outcome.status}: {outcome.message}]\n")
    return outcome.status


async def _demo(out: TextIO, cancel_after: float, only: list[str] | None) -> int:
    def say(text: str) -> None:
        out.write(text)
        out.flush()

    say(f"One delegation through every offline provider: {TASK!r}\n")
    results: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="subagents-demo-") as tmp:
        async with _providers(Path(tmp)) as providers:
            for name, entry in providers.items():
                if only and name not in only:
                    continue
                if entry.skipped is not None:
                    results.append(Row(name, entry.kind, f"skipped: {entry.skipped}"))
                    say(f"\n▶ {name}: [skipped: {entry.skipped}]\n")
                    continue
                results.append(await _delegate(name, entry, say))
            _table(results, out)
            cancelled = "cancelled"
            if not only or "reference" in only:
                cancelled = await _cancel_demo(providers["reference"].provider, cancel_after, say)
    ran = [r for r in results if not r.status.startswith("skipped")]
    ok = all(r.status == "completed" for r in ran) and cancelled == "cancelled"
    say(f"\n{'all delegations settled as expected' if ok else 'some delegations failed'}\n")
    return 0 if ok else 1


def run(args: argparse.Namespace) -> int:
    import sys

    from .._exception_groups import first_leaf
    from ._common import DEBUG_HINT, EXIT_CANCELLED, EXIT_FAILED, error_line

    debug = bool(getattr(args, "debug", False))
    try:
        return anyio.run(_demo, sys.stdout, args.cancel_after, args.only)
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except Exception as exc:
        leaf = first_leaf(exc)
        error_line(
            "demo",
            f"unexpected error: {type(leaf).__name__}: {leaf}",
            hint=None if debug else DEBUG_HINT,
            exc=exc,
            debug=debug,
        )
        return EXIT_FAILED
