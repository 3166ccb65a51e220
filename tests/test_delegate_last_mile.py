"""``subagents.delegate``, the last mile (issue 35, part B): what most users write just works.

A bare ``break`` (or ``return``, or an exception) out of ``async for event in delegate(...)``
ends clean on asyncio and trio; ``permission`` is checked; ``stop_grace`` bounds how long a
stuck child costs; what a child streamed survives a hard stop (in ``delegate`` and in
``subagents run``).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

import subagents
from subagents import DelegationEvent, DelegationOutcome
from subagents.commands.run import RunOptions, run_async
from subagents.config import load_agents
from subagents.providers import SubagentError, SubagentErrorCode, TextProgress
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.testing.leaks import assert_no_leak, descendants, snapshot

STUBBORN = [sys.executable, str(Path(__file__).parent / "commands" / "stubborn_agent.py")]

# A script that stops iterating a registry delegation early, without `async with` or
# `aclose()`, then lets the event loop end; it prints the processes left below it.
_EARLY_EXIT = textwrap.dedent(
    """\
    import json, sys

    import subagents
    import subagents._delegate, subagents.providers.acp, subagents.providers.factory
    from subagents.testing.leaks import descendants

    backend, how = sys.argv[1], sys.argv[2]


    class Stop(Exception):
        pass


    async def consume() -> None:
        async for event in subagents.delegate("reference", "slow 600"):
            assert event.kind == "text"
            assert descendants(), "the agent process runs"
            if how == "break":
                break
            if how == "return":
                return
            raise Stop("from the loop body")


    async def main() -> None:
        if backend == "asyncio":  # -X dev logs a step slower than 0.1 s: a loaded machine's
            import asyncio

            asyncio.get_running_loop().slow_callback_duration = 60
        try:
            await consume()
        except Stop:
            pass


    if backend == "asyncio":
        import asyncio

        asyncio.run(main())
    else:
        import trio

        trio.run(main)
    print(json.dumps(sorted(descendants())))
    """
)


@pytest.mark.parametrize("how", ["break", "return", "raise"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_leaving_the_loop_early_without_async_with_ends_clean(backend: str, how: str) -> None:
    """Issue 35 (B1): a bare ``break``, a ``return`` from inside the loop, or an exception
    raised in the loop body, out of ``async for event in subagents.delegate("reference",
    ...)`` with no ``async with``: the program ends with nothing on stderr (no traceback, no
    warning, under ``-X dev -W error::ResourceWarning``) and no child process survives the
    event loop."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "dev",
            "-W",
            "error::ResourceWarning",
            "-c",
            _EARLY_EXIT,
            backend,
            how,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == []


def test_an_unknown_permission_raises_value_error_naming_the_allowed_values() -> None:
    """Issue 35 (B2): ``delegate(permission="maybe")`` raises ``ValueError`` naming the
    allowed values (it was accepted, and acted as deny)."""
    with pytest.raises(ValueError, match=r"permission: .*'ask'.*'allow'.*'deny'.*'maybe'"):
        subagents.delegate("reference", "hello", permission="maybe")  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("grace", [-1.0, float("nan")])
def test_a_bad_stop_grace_raises_value_error(grace: float) -> None:
    """Issue 35 (B3): ``stop_grace`` is seconds >= 0; a negative or NaN one is refused."""
    with pytest.raises(ValueError, match="stop_grace"):
        subagents.delegate("reference", "hello", stop_grace=grace)


def _stubborn_config(tmp_path: Path) -> Path:
    """A registry file with ``stubborn``: an ACP agent that streams ticks and ignores
    ``session/cancel``."""
    path = tmp_path / "stubborn.toml"
    path.write_text(
        f'[agents.stubborn]\nprovider = "acp"\ncommand = {json.dumps(STUBBORN)}\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.anyio
async def test_a_stuck_child_is_stopped_after_stop_grace_and_keeps_what_it_streamed(
    tmp_path: Path,
) -> None:
    """Issue 35 (B3, B4): a child that ignores the cancel is stopped ``stop_grace`` seconds
    after the timeout (not the default 10), and its outcome keeps the text it streamed
    (``output`` and ``partial_output``), however it was stopped."""
    events: list[DelegationEvent] = []
    with anyio.fail_after(8):  # well under timeout + the default grace of 10 s
        async for event in subagents.delegate(
            "stubborn", "go", config=_stubborn_config(tmp_path), timeout=0.5, stop_grace=0.5
        ):
            events.append(event)
    last = events[-1]
    assert isinstance(last, DelegationOutcome)
    assert (last.status, last.timed_out) == ("cancelled", True)
    assert last.outcome.message == (
        "timed out after 0.5 s; the agent did not stop in time and was stopped"
    )
    assert isinstance(last.output, str)
    assert last.output.startswith("tick 1 tick 2 ")
    assert last.outcome.partial_output == last.output


@pytest.mark.anyio
async def test_subagents_run_keeps_what_a_stopped_child_streamed(tmp_path: Path) -> None:
    """Issue 35 (B4): ``subagents run --timeout`` on a child that ignores the cancel: the
    child is stopped after ``--stop-grace`` and the outcome's ``output`` is the text it
    streamed (it was ``null``)."""
    spec = load_agents([_stubborn_config(tmp_path)])["stubborn"]
    options = RunOptions(
        spec=spec,
        prompt="go",
        policy="deny",
        why="test",
        interactive=False,
        json_mode=True,
        timeout=0.5,
        stop_grace=0.5,
    )
    out, err = io.StringIO(), io.StringIO()
    with anyio.fail_after(20):
        status = await run_async(options, out, err)
    assert status == 124
    outcome = [json.loads(line) for line in out.getvalue().splitlines()][-1]
    assert outcome["event"] == "outcome"
    assert outcome["status"] == "cancelled"
    assert "was stopped" in outcome["message"]
    assert isinstance(outcome["output"], str)
    assert outcome["output"].startswith("tick 1 tick 2 ")


def test_the_docs_show_one_import_path_for_cancel_signal() -> None:
    """Issue 35 (B7): ``CancelSignal`` has one documented import path, ``from subagents
    import CancelSignal``: every README code block that imports it imports it from there;
    the other paths (``subagents.cancel``, ``subagents.providers``,
    ``subagents.providers.contract``) still give the same class."""
    import re

    import subagents.cancel
    import subagents.providers
    import subagents.providers.contract

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    imports = [
        line.strip()
        for block in re.findall(r"```python\n(.*?)```", readme, re.S)
        for line in block.splitlines()
        if "import" in line and "CancelSignal" in line
    ]
    assert imports
    assert all(line == "from subagents import CancelSignal" for line in imports), imports
    assert (
        subagents.CancelSignal
        is subagents.cancel.CancelSignal
        is subagents.providers.CancelSignal
        is subagents.providers.contract.CancelSignal
    )


@pytest.mark.anyio
async def test_a_bare_break_reaps_the_child_while_the_program_goes_on() -> None:
    """Issue 35 (B1): after a bare ``break`` (the delegation dropped, not closed), the run is
    disposed and the child reaped in the background at once, not only when the event loop
    ends: the delegation's task ends by itself while the program goes on, and nothing of it
    is left."""
    before = snapshot()
    events = subagents.delegate("reference", "slow 600")
    host = events._host  # pyright: ignore[reportPrivateUsage]  # to wait for its end
    async for event in events:
        assert event.kind == "text"
        assert descendants(), "the agent process runs"
        break
    del events  # the consumer lets go of it, as a loop over delegate(...) itself does
    with anyio.fail_after(30):
        await host.wait()
    assert descendants() == set()
    assert_no_leak(before)


@pytest.mark.anyio
async def test_a_delegation_closed_before_it_is_iterated_starts_nothing() -> None:
    """Issue 35 (B1): ``aclose()`` before the first event: nothing is started, and iterating
    afterwards yields nothing."""
    before = snapshot()
    events = subagents.delegate("reference", "slow 600")
    await events.aclose()
    assert [event async for event in events] == []
    assert_no_leak(before)


def _stuck_provider() -> ScriptedProvider:
    """A provider whose run streams, never ends its turn, and whose disposal fails (it says
    that something of the child survived)."""
    failure = SubagentError(SubagentErrorCode.DISPOSE_INCOMPLETE, "the child survived")
    script = Script(progress=[TextProgress("a")], turn_hangs=True, dispose_raises=failure)
    return ScriptedProvider({"go": script})


@pytest.mark.anyio
async def test_aclose_raises_what_failed_in_the_clean_up() -> None:
    """Issue 35 (B1): ``aclose()`` after an early stop raises what failed while the run was
    disposed (here ``DISPOSE_INCOMPLETE``): never a silent return with the child running."""
    async with _stuck_provider() as provider:
        events = subagents.delegate(provider, "go")
        with anyio.fail_after(10):
            assert (await anext(events)).kind == "text"
            with pytest.raises(SubagentError) as caught:
                await events.aclose()
    assert caught.value.code is SubagentErrorCode.DISPOSE_INCOMPLETE


@pytest.mark.anyio
async def test_a_clean_up_failure_after_a_bare_break_is_logged_not_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 35 (B1): after a bare ``break``, nobody waits for the clean-up; what fails in it
    is logged (``subagents.delegate``), and the event loop goes on (a trio system task that
    raised would end the whole run)."""
    async with _stuck_provider() as provider:
        events = subagents.delegate(provider, "go")
        host = events._host  # pyright: ignore[reportPrivateUsage]  # to wait for its end
        async for event in events:
            assert event.kind == "text"
            break
        del events
        with anyio.fail_after(10):
            await host.wait()
    [record] = [r for r in caplog.records if r.name == "subagents.delegate"]
    assert "the clean-up failed" in record.getMessage()
    assert isinstance(record.exc_info, tuple)
    assert "the child survived" in str(record.exc_info[1])
