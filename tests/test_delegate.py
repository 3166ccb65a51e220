"""``subagents.delegate``: one call streams a delegation (issue 19, point 5: a small facade).

Through a registry name or a provider, on the run contract: progress events, then one
outcome event; every child process is reaped when the loop ends, is closed early or is
cancelled; an unknown name raises as ``subagents run`` does; ``import subagents`` stays light.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

import subagents
from subagents import DelegationEvent, DelegationOutcome
from subagents.providers.acp import AcpProvider
from subagents.testing.leaks import assert_no_leak, descendants, snapshot

README = Path(__file__).resolve().parents[1] / "README.md"
REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]

pytestmark = pytest.mark.anyio


async def test_a_registry_name_streams_progress_then_the_completed_outcome() -> None:
    """Issue 19 (5): ``async for event in subagents.delegate("reference", ...)`` streams the
    reference agent's progress events and ends with one outcome event carrying its answer;
    no child process is left."""
    before = snapshot()
    events: list[DelegationEvent] = []
    with anyio.fail_after(30):
        async for event in subagents.delegate("reference", "stream 3"):
            events.append(event)
    *progress, last = events
    assert [e.text for e in progress if e.kind == "text"] == ["1 ", "2 ", "3 "]
    assert all(e.kind != "outcome" for e in progress)
    assert isinstance(last, DelegationOutcome)
    assert last.agent == "reference"
    assert last.status == "completed"
    assert last.output == "1 2 3 "
    assert last.outcome.child_id.startswith("reference:")
    assert not last.timed_out
    assert_no_leak(before)


async def test_a_provider_instance_is_the_callers_and_the_delegation_owns_its_run() -> None:
    """Issue 19 (5): an open provider works too; the delegation disposes its run (the child
    process is gone) and leaves the provider open for the next one."""
    async with AcpProvider(REFERENCE, name="mine") as provider:
        for prompt in ("hello", "again"):
            with anyio.fail_after(30):
                events = [event async for event in subagents.delegate(provider, prompt)]
            last = events[-1]
            assert isinstance(last, DelegationOutcome)
            assert (last.agent, last.status, last.output) == ("mine", "completed", prompt)
            assert any(e.kind == "text" and e.text == prompt for e in events)
            assert descendants() == set()


async def test_closing_the_stream_early_reaps_the_child_process() -> None:
    """Issue 19 (5): a consumer that stops iterating early and closes the generator
    (``aclosing``) leaves no child process: the run is disposed and the provider closed
    before ``aclose()`` returns."""
    before = snapshot()
    with anyio.fail_after(30):
        async with aclosing(subagents.delegate("reference", "slow 600")) as events:
            async for event in events:
                assert event.kind == "text"
                assert len(descendants()) == 1  # the agent process is running
                break
    assert_no_leak(before)
    assert descendants() == set()


async def test_a_break_inside_async_with_reaps_the_child_process() -> None:
    """Issue 19 (5): ``async with subagents.delegate(...) as events`` around the loop makes a
    bare ``break`` safe: leaving the block disposes of the run and reaps the child, in the
    consumer's task (no ResourceWarning: warnings are errors in this suite)."""
    before = snapshot()
    with anyio.fail_after(30):
        async with subagents.delegate("reference", "slow 600") as events:
            async for event in events:
                assert event.kind == "text"
                break
        assert descendants() == set()
    assert_no_leak(before)


async def test_a_cancelled_consumer_leaves_no_child_process() -> None:
    """Issue 19 (5): cancelling the consumer while it waits for the next event disposes the
    run and reaps the child; the cancellation propagates as usual."""
    before = snapshot()
    seen: list[DelegationEvent] = []
    with anyio.move_on_after(1.5) as scope:
        async for event in subagents.delegate("reference", "slow 600"):
            seen.append(event)
    assert scope.cancelled_caught
    assert seen  # it was streaming when cancelled
    assert_no_leak(before)


async def test_the_timeout_cancels_the_turn_and_the_outcome_says_so() -> None:
    """Issue 19 (5): ``timeout`` fires the run's cancellation signal: the outcome is
    ``cancelled`` with the reason, and ``timed_out`` is set."""
    with anyio.fail_after(30):
        events = [e async for e in subagents.delegate("reference", "slow 600", timeout=0.5)]
    last = events[-1]
    assert isinstance(last, DelegationOutcome)
    assert last.status == "cancelled"
    assert last.timed_out
    assert last.outcome.message == "timed out after 0.5 s"


async def test_the_callers_signal_cancels_the_turn() -> None:
    """Issue 19 (5): one cancellation signal, the caller's: fired mid-turn, the run settles
    ``cancelled`` with its reason (not a timeout)."""
    cancel = subagents.CancelSignal()
    last: DelegationEvent | None = None
    with anyio.fail_after(30):
        async for event in subagents.delegate("reference", "slow 600", cancel=cancel):
            cancel.cancel("enough")
            last = event
    assert isinstance(last, DelegationOutcome)
    assert (last.status, last.outcome.message, last.timed_out) == ("cancelled", "enough", False)


def test_an_unknown_name_raises_with_did_you_mean_and_a_hint() -> None:
    """Issue 19 (5): an unknown agent name raises what ``subagents run`` says (``did you
    mean``), with the hint as the error's ``hint`` and as a note of its traceback."""
    with pytest.raises(subagents.UnknownAgent) as caught:
        subagents.delegate("refrence", "hello")
    error = caught.value
    assert str(error) == "no agent named 'refrence' (did you mean 'reference'?)"
    assert "subagents agents" in error.hint
    assert error.__notes__ == [f"hint: {error.hint}"]
    assert isinstance(error, subagents.ConfigError)
    assert isinstance(error, LookupError)


async def test_a_config_file_adds_agents(tmp_path: Path) -> None:
    """Issue 19 (5): ``config`` files are read after the default ones, as ``--config``."""
    registry = tmp_path / "agents.toml"
    command = json.dumps(REFERENCE)
    registry.write_text(f'[agents.echo]\nprovider = "acp"\ncommand = {command}\n')
    with anyio.fail_after(30):
        events = [e async for e in subagents.delegate("echo", "hi", config=registry)]
    assert isinstance(events[-1], DelegationOutcome)
    assert (events[-1].agent, events[-1].output) == ("echo", "hi")


def test_registry_options_are_refused_for_a_provider_instance() -> None:
    """Issue 19 (5): ``cwd``, ``config``, ``permission``, ``model`` configure a registry
    entry; given with a provider instance they are an error, not silently ignored."""
    provider = AcpProvider(REFERENCE)
    with pytest.raises(TypeError, match="cwd, model: only for a registry name"):
        subagents.delegate(provider, "hi", cwd="/", model="m")


def test_import_subagents_loads_no_pydantic_and_no_transports() -> None:
    """Issue 19 (5): the top-level exports are lazy: ``import subagents`` loads neither
    pydantic nor the transports nor the providers, and the first use of a name does."""
    code = textwrap.dedent(
        """\
        import json, sys
        import subagents
        before = sorted(m for m in sys.modules if m.startswith(("subagents", "pydantic")))
        subagents.delegate
        after = "subagents._delegate" in sys.modules
        print(json.dumps([before, after, "typing" in sys.modules]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    before, loaded, _typing = json.loads(done.stdout)
    assert before == ["subagents"]
    assert loaded


def test_the_readme_snippet_streams_a_delegation() -> None:
    """Issue 19 (5): the README's "From Python" example runs as written (≤ 10 non-blank lines) and
    prints the reference agent's answer, then the outcome."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    [example] = [b for b in blocks if "subagents.delegate(" in b]
    assert len([line for line in example.splitlines() if line.strip()]) <= 10
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n[completed]\n"
