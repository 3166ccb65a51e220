"""Checks that judge the same exchange share one agent process (issue 16, point 3: fast).

The transport, schema, stderr, initialize-result, session, prompt and shutdown checks all judge
an ordinary exchange; the load and resume checks each judge one reopened session. Each such
exchange runs once per run (once more only for the retry of an inconclusive attempt), and its
checks run one after the other in one job, so a run starts far fewer agent processes.

The pooled checks (issue 17: the test command's time is mostly agent processes started) run
one after the other on one initialized process per client configuration, each judging only its
own lines; one that fails there is judged again alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from subagents.conformance.framework import (
    CHECKS,
    DISRUPTIVE,
    LONG,
    POOLED,
    SHARES,
    AgentPool,
    CheckContext,
    Options,
    Probe,
    SharedExchanges,
)
from subagents.conformance.requirements import REQUIREMENTS
from subagents.conformance.runner import Status, batches, run_check, run_suite
from subagents.conformance.wire import ClientSide

pytestmark = pytest.mark.anyio

BASIC = sorted(i for i, key in SHARES.items() if key == "basic")
LOAD = sorted(i for i, key in SHARES.items() if key == "session/load")


def _counting_reference(tmp_path: Path) -> tuple[tuple[str, ...], Path]:
    """The reference agent behind a script that appends a line to a file at each start."""
    starts = tmp_path / "starts"
    script = tmp_path / "counting-agent.sh"
    script.write_text(
        f'#!/bin/sh\necho started >> "{starts}"\nexec "{sys.executable}" -m '
        "subagents.agents.reference\n"
    )
    script.chmod(0o755)
    return (str(script),), starts


def test_checks_that_share_an_exchange_form_one_batch_started_first() -> None:
    """Every check of a shared exchange is in the same batch, and so is every pooled check; the
    batches of several checks and the long checks come before the short ones, which keep the
    registry's order."""
    jobs = batches(REQUIREMENTS.values())
    for key in set(SHARES.values()):
        holding = [b for b in jobs if any(SHARES.get(r.id) == key for r in b)]
        assert len(holding) == 1
        assert {r.id for r in holding[0]} == {i for i, k in SHARES.items() if k == key}
    pooled = [b for b in jobs if any(r.id in POOLED for r in b)]
    assert len(pooled) == 1
    assert {r.id for r in pooled[0]} == POOLED
    # the disruptive ones (malformed input) after every other pooled check
    order = [r.id in DISRUPTIVE for r in pooled[0]]
    assert order == sorted(order)
    assert DISRUPTIVE <= POOLED
    assert len(DISRUPTIVE) == 3
    several = LONG | set(SHARES) | POOLED
    first_short = next(n for n, b in enumerate(jobs) if not any(r.id in several for r in b))
    assert all(len(b) == 1 and b[0].id not in several for b in jobs[first_short:])
    short = [b[0].id for b in jobs[first_short:]]
    assert short == [i for i in REQUIREMENTS if i not in several]
    assert len(BASIC) >= 10


async def test_a_shared_exchange_is_made_once_per_attempt() -> None:
    """Concurrent askers of one key get what the first ``make`` returned; the retry of an
    inconclusive attempt (attempt 2) gets a fresh one."""
    shared = SharedExchanges()
    made: list[int] = []

    async def make() -> int:
        made.append(len(made))
        await anyio.sleep(0.01)
        return len(made)

    got: list[int] = []

    async def ask(attempt: int) -> None:
        got.append(await shared.get("basic", attempt, make))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(ask, 1)
    assert got == [1, 1, 1]
    assert await shared.get("basic", 2, make) == 2
    assert made == [0, 1]


async def test_one_shared_exchange_does_not_wait_for_another() -> None:
    """While one key's exchange is being made, another key's is made and handed out."""
    shared = SharedExchanges()
    release = anyio.Event()

    async def slow() -> str:
        await release.wait()
        return "load"

    async def fast() -> str:
        return "basic"

    async with anyio.create_task_group() as tg:
        tg.start_soon(shared.get, "session/load", 1, slow)
        await anyio.lowlevel.checkpoint()
        with anyio.fail_after(5):
            assert await shared.get("basic", 1, fast) == "basic"
        release.set()


async def test_the_ordinary_exchange_checks_start_one_agent_process(tmp_path: Path) -> None:
    """The checks of the ordinary exchange (transport, schema, initialize result, session,
    prompt, stderr, shutdown) judge the reference agent with one process beside the probe,
    and ACP-SHUTDOWN-003 with one of its own (it needs an MCP server); all of them pass."""
    command, starts = _counting_reference(tmp_path)
    only = [i for i in BASIC if i != "ACP-SHUTDOWN-003"]
    report = await run_suite(Options(command=command, cwd=tmp_path), only=only)
    assert {r.requirement.id: r.status for r in report.results} == {
        i: Status.INFO if REQUIREMENTS[i].tier.value == "informational" else Status.PASS
        for i in only
    }
    assert starts.read_text().count("started") == 2  # the probe, the shared exchange


async def test_the_load_checks_share_one_reopened_session(tmp_path: Path) -> None:
    """ACP-LOAD-001..003 judge one session made by a first process and loaded by a second:
    three processes in all with the probe, not seven."""
    command, starts = _counting_reference(tmp_path)
    report = await run_suite(Options(command=command, cwd=tmp_path), only=LOAD)
    assert [r.status for r in report.results] == [Status.PASS] * len(LOAD)
    assert len(LOAD) == 3
    assert starts.read_text().count("started") == 3


async def test_the_load_and_resume_checks_reopen_sessions_one_process_made(
    tmp_path: Path,
) -> None:
    """The load and the resume checks reopen two sessions made by one first process (one
    each), each in a new process of its own: four processes with the probe, not five; each
    reopened the session it was given (the resume checks never see the loaded one)."""
    command, starts = _counting_reference(tmp_path)
    resume = sorted(i for i, key in SHARES.items() if key == "session/resume")
    assert len(resume) == 2
    options = Options(command=command, cwd=tmp_path)
    report = await run_suite(options, only=[*LOAD, *resume], transcripts="all")
    assert [r.status for r in report.results] == [Status.PASS] * (len(LOAD) + len(resume))
    assert starts.read_text().count("started") == 4
    results = {r.requirement.id: r for r in report.results}
    reopened: dict[str, set[str]] = {}
    for method, requirement_id in (("session/load", LOAD[0]), ("session/resume", resume[0])):
        sent = [json.loads(e["text"]) for e in results[requirement_id].transcript if "text" in e]
        reopened[method] = {
            m["params"]["sessionId"] for m in sent if m.get("method") == method and "id" in m
        }
    assert all(len(ids) == 1 for ids in reopened.values()), reopened
    assert reopened["session/load"] != reopened["session/resume"]


POOLED_IDS = sorted(POOLED)

_STALL_AFTER_CLOSE = """
import json, subprocess, sys, threading

child = subprocess.Popen(
    [sys.executable, "-m", "subagents.agents.reference"], stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
)
closes = set()
stalled = threading.Event()

def to_agent():
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message.get("method") == "session/close":
            closes.add(message["id"])
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()

threading.Thread(target=to_agent, daemon=True).start()
for line in child.stdout:
    if stalled.is_set():
        continue
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    message = json.loads(line)
    if "method" not in message and message.get("id") in closes:
        stalled.set()
child.wait()
"""


def _expected(requirement_id: str) -> Status:
    """The reference agent's status for a requirement run without --auth-method."""
    if requirement_id == "ACP-AUTH-003":  # gated on --auth-method
        return Status.NOT_APPLICABLE
    if REQUIREMENTS[requirement_id].tier.value == "informational":
        return Status.INFO
    return Status.PASS


async def test_the_pooled_checks_share_one_initialized_agent_process(tmp_path: Path) -> None:
    """Issue 17 (test time): the pooled checks (session methods, modes, config options,
    content blocks, error answers, client capabilities, HTTP and SSE MCP servers, malformed
    input, ...) judge the reference agent on one initialized process per client configuration
    (the probe's own process for the default client, and one offering everything for the
    terminal and path checks), each in a directory of its own, and all of them pass; only the
    offered half of each client-capability check has a process of its own."""
    command, starts = _counting_reference(tmp_path)
    report = await run_suite(Options(command=command, cwd=tmp_path), only=POOLED_IDS)
    assert {r.requirement.id: r.status for r in report.results} == {
        i: _expected(i) for i in POOLED_IDS
    }
    assert not any(note for r in report.results for note in r.notes if "shared" in note)
    assert len(POOLED_IDS) >= 25
    offered = sum(1 for i in POOLED_IDS if i.startswith("ACP-CLIENTCAP-"))
    assert offered == 3
    # the probe's process (shared for the default client), the other client's, the offered
    # halves
    assert starts.read_text().count("started") == 1 + 1 + offered


_STALL_AFTER_GARBAGE = """
import json, subprocess, sys, threading

child = subprocess.Popen(
    [sys.executable, "-m", "subagents.agents.reference"], stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
)
stalled = threading.Event()

def to_agent():
    for line in sys.stdin.buffer:
        try:
            json.loads(line)
        except ValueError:
            stalled.set()  # never answers again
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()

threading.Thread(target=to_agent, daemon=True).start()
for line in child.stdout:
    if not stalled.is_set():
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
child.wait()
"""


async def test_a_disruptive_check_that_leaves_the_agent_mute_gets_the_next_a_new_process(
    tmp_path: Path,
) -> None:
    """The malformed-input checks run on the shared process after every other pooled check;
    one after which the agent no longer answers session/new drops that process, so the next
    check gets a new one (and records what the agent does, not the earlier check's damage)."""
    script = tmp_path / "stalls_after_garbage.py"
    script.write_text(_STALL_AFTER_GARBAGE)
    starts = tmp_path / "starts"
    wrapper = tmp_path / "counting.sh"
    wrapper.write_text(
        f'#!/bin/sh\necho started >> "{starts}"\nexec "{sys.executable}" "{script}"\n'
    )
    wrapper.chmod(0o755)
    only = ["ACP-INFO-PARSE-001", "ACP-INFO-INVALIDREQ-001", "ACP-META-001"]
    order = [r.id for r in batches(REQUIREMENTS[i] for i in only)[0]]
    assert order == ["ACP-META-001", "ACP-INFO-PARSE-001", "ACP-INFO-INVALIDREQ-001"]
    options = Options(command=(str(wrapper),), cwd=tmp_path, timeout=2.0)
    report = await run_suite(options, only=only)
    results = {r.requirement.id: r for r in report.results}
    assert results["ACP-META-001"].status is Status.PASS
    assert "then no answer to session/new" in results["ACP-INFO-PARSE-001"].message
    invalid = results["ACP-INFO-INVALIDREQ-001"].message
    assert invalid.endswith("then session/new works"), invalid
    # the probe's process (shared until the malformed line), then a new one
    assert starts.read_text().count("started") == 2


async def test_a_pooled_check_failed_by_an_earlier_checks_damage_is_judged_alone(
    tmp_path: Path,
) -> None:
    """An agent that stops answering once it has answered a session/close passes
    ACP-CLOSE-001; the pooled checks after it time out on the shared process, and are judged
    again each on a process of its own, where they pass: the verdict is theirs alone (with a
    note of what the shared process did), not the earlier check's damage."""
    script = tmp_path / "stalls_after_close.py"
    script.write_text(_STALL_AFTER_CLOSE)
    after = ["ACP-MODES-001", "ACP-CONFIG-001"]
    only = ["ACP-CLOSE-001", *after]
    assert [r.id for r in batches(REQUIREMENTS[i] for i in only)[0]] == only  # in this order
    options = Options(command=(sys.executable, str(script)), cwd=tmp_path, timeout=2.0)
    report = await run_suite(options, only=only)
    results = {r.requirement.id: r for r in report.results}
    assert {i: r.status for i, r in results.items()} == dict.fromkeys(only, Status.PASS)
    assert results["ACP-CLOSE-001"].notes == []
    first = results[after[0]].notes
    assert len(first) == 1
    assert first[0].startswith("on the run's shared agent process (")
    assert "no answer" in first[0]


async def test_a_pooled_failure_a_fresh_process_confirms_keeps_the_shared_process(
    tmp_path: Path,
) -> None:
    """A pooled check that fails on the shared process (here ACP-META-001 against a mutant
    that refuses ``_meta``) is judged again on a process of its own; when that one fails the
    same way, the failure is the agent's answer to the check, not damage: the shared process
    stays for the checks after it (two processes in all, not three)."""
    starts = tmp_path / "starts"
    wrapper = tmp_path / "counting.sh"
    mutant = Path(__file__).with_name("mutant_agent.py")
    wrapper.write_text(
        f'#!/bin/sh\necho started >> "{starts}"\nexec "{sys.executable}" "{mutant}" refuses-meta\n'
    )
    wrapper.chmod(0o755)
    only = ["ACP-META-001", "ACP-INFO-UNKNOWNSESSION-001"]
    assert [r.id for r in batches(REQUIREMENTS[i] for i in only)[0]] == only  # in this order
    report = await run_suite(Options(command=(str(wrapper),), cwd=tmp_path), only=only)
    results = {r.requirement.id: r for r in report.results}
    assert results["ACP-META-001"].status is Status.FAIL
    assert results["ACP-META-001"].notes == []  # the same verdict both times
    assert results["ACP-INFO-UNKNOWNSESSION-001"].status is Status.INFO
    assert starts.read_text().count("started") == 2  # the probe's (shared), the re-run's


async def test_a_pooled_check_the_agent_did_not_exercise_stands_without_a_second_process(
    tmp_path: Path,
) -> None:
    """A pooled check that was not exercised (here ACP-PLAN-001, given a --plan-prompt the
    reference agent answers without a plan) is not judged again alone: an agent that did not
    do what it was asked is no sign of an earlier check's damage, and a second process per
    such check would cost real agents a start each."""
    command, starts = _counting_reference(tmp_path)
    options = Options(command=command, cwd=tmp_path, plan_prompt="Hello")
    report = await run_suite(options, only=["ACP-PLAN-001", "ACP-META-001"])
    statuses = {r.requirement.id: r.status for r in report.results}
    assert statuses == {"ACP-PLAN-001": Status.NOT_EXERCISED, "ACP-META-001": Status.PASS}
    assert starts.read_text().count("started") == 1  # the probe's, shared by both checks


async def test_pooled_checks_blocked_by_authentication_stand_without_a_second_process(
    tmp_path: Path,
) -> None:
    """An agent that wants authentication the run was not given blocks every pooled check;
    that is no sign of an earlier check's damage (no pooled check logs out), so none is judged
    again on a process of its own: one process in all, the probe's."""
    command, starts = _counting_reference(tmp_path)
    options = Options(
        command=command, cwd=tmp_path, env={"SUBAGENTS_REFERENCE_REQUIRE_AUTH": "token"}
    )
    report = await run_suite(options, only=["ACP-META-001", "ACP-LIST-001"])
    assert report.auth_required
    for result in report.results:
        assert result.status is Status.BLOCKED, result
        assert result.blocked_by == "authentication"
        assert result.notes == []
    assert starts.read_text().count("started") == 1


async def test_the_pool_keeps_one_process_per_client_and_replaces_one_that_ended(
    tmp_path: Path,
) -> None:
    """AgentPool: the first check to ask initializes the process (its lines count from 0),
    later ones get it as it is (their lines count from where they started); another client
    configuration gets a process of its own; a process that has exited is replaced; leaving
    the pool's block stops every process it started."""
    options = Options(
        command=(sys.executable, "-m", "subagents.agents.reference"),
        cwd=tmp_path,
        workdir=tmp_path,
    )
    ctx = CheckContext(REQUIREMENTS["ACP-META-001"], options, Probe(init={}))
    async with AgentPool(options) as pool:
        wire, since = await pool.acquire(ctx, ClientSide())
        assert since == 0
        assert any('"initialize"' in line.raw.decode() for line in wire.lines)
        again, later = await pool.acquire(ctx, ClientSide())
        assert again is wire
        assert later == len(wire.lines) > 0
        other, _ = await pool.acquire(ctx, ClientSide(terminal=True))
        assert other is not wire
        await wire.close_stdin()
        assert await wire.wait_exit(10) is not None
        fresh, since = await pool.acquire(ctx, ClientSide())
        assert fresh is not wire
        assert since == 0
    assert pool.processes == 3
    assert other.process.exit is not None
    assert fresh.process.exit is not None


async def test_a_session_result_gate_the_probe_could_not_judge_runs_its_check(
    tmp_path: Path,
) -> None:
    """A gate on the probe's session/new result (modes, configOptions) is "not advertised"
    only when the probe got a result without it: when the probe's session/new failed (timed
    out on a loaded machine: the test command's CI once judged the reference agent's modes
    n/a), the check runs and judges the session it opens itself."""
    options = Options(
        command=(sys.executable, "-m", "subagents.agents.reference"),
        cwd=tmp_path,
        workdir=tmp_path,
    )
    failed = Probe(init={"protocolVersion": 1}, error="session/new: no answer within 15 s")
    without = Probe(init={"protocolVersion": 1}, session={"sessionId": "s"})
    for requirement_id in ("ACP-MODES-001", "ACP-CONFIG-002"):
        requirement = REQUIREMENTS[requirement_id]
        judged = await run_check(requirement, options, failed)
        assert judged.status is Status.PASS, judged.message
        unadvertised = await run_check(requirement, options, without)
        assert unadvertised.status is Status.NOT_APPLICABLE
        assert unadvertised.message.startswith("not advertised: session/new result: ")


async def test_a_long_check_is_bounded_by_twice_the_check_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Never hang, but do not fail a slow machine: every check ends at its bound with a failure
    naming it, and a long check (several agent processes or many turns: reopening a session
    starts two and runs three turns, each with its own answer bound) gets twice
    ``--check-timeout`` (a CI run at twice this machine's load failed opencode's load check at
    90 s, half of it spent starting the first process)."""

    async def hangs(ctx: CheckContext) -> None:
        await anyio.sleep_forever()

    options = Options(command=("unused",), cwd=tmp_path, workdir=tmp_path, check_timeout=0.05)
    probe = Probe(init={"protocolVersion": 1}, session={"sessionId": "s"})
    for requirement_id, bound in (("ACP-META-001", 0.05), ("ACP-CANCEL-001", 0.1)):
        assert (requirement_id in LONG) == (bound == 0.1)
        assert options.check_bound(requirement_id) == bound
        monkeypatch.setitem(CHECKS, requirement_id, hangs)
        result = await run_check(REQUIREMENTS[requirement_id], options, probe)
        assert result.status is Status.FAIL
        assert result.message == f"the check did not finish within {bound:g} s"
        assert result.duration >= bound
