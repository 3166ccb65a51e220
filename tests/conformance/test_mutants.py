"""Self-test of the conformance suite (issue 5 "Self-test"): the suite catches each defect.

Every mutant in :mod:`mutant_agent` is the reference agent with one deliberate defect. Run
through ``subagents conformance`` against its target requirement plus every mandatory one, it
must fail the target (with the expected message) and pass every other mandatory requirement:
a check that misses its defect, or blames the wrong requirement, fails here.

The runs are independent CLI processes; they start together (a few at a time) when the module's
first test asks, and each test waits for its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from subagents.conformance.requirements import REQUIREMENTS, Tier

from .conftest import Run, run_conformance
from .mutant_agent import MUTANTS

MUTANT_AGENT = Path(__file__).with_name("mutant_agent.py")
MANDATORY = [r.id for r in REQUIREMENTS.values() if r.tier is Tier.MANDATORY]
PARALLEL_RUNS = min(8, (os.cpu_count() or 2) + (0 if "PYTEST_XDIST_WORKER" in os.environ else 1))
"""CLI runs at once (each already runs four checks at a time); one fewer beside other xdist
workers: on two cores, three runs beside two busy workers once left an MCP server's start
past the suite's 15 s bound (a load artefact, not a defect of the mutant)."""
RUN_TIMEOUT = 150.0

JUDGED_AREAS = sorted({r.area for r in REQUIREMENTS.values() if r.tier is not Tier.INFORMATIONAL})
"""Areas with a mandatory, capability or advisory requirement."""
LEFT_OUT = {
    "TIMING": "ACP-TIMING-001 only fails when an answer misses the suite's timeouts, and then "
    "every check waiting for that answer fails too: no single-defect mutant exists",
}
"""Areas without a mutant, and why."""


def _run(name: str, tmp: Path) -> Run:
    target = MUTANTS[name].target
    only = [target, *(i for i in MANDATORY if i != target)]
    options = [arg for requirement in only for arg in ("--only", requirement)]
    options += MUTANTS[name].options
    return run_conformance(
        tmp,
        [sys.executable, str(MUTANT_AGENT), name],
        *options,
        "--jobs",
        "4",
        timeout=RUN_TIMEOUT,
    )


@pytest.fixture(scope="module")
def mutant_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Run]]]:
    """The suite's run against each mutant whose test is selected, started in the background."""
    selected: list[str] = [
        str(item.callspec.params["name"])
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == test_mutant_fails_only_its_target.__name__
    ]
    pool = ThreadPoolExecutor(max_workers=PARALLEL_RUNS, thread_name_prefix="mutant-run")
    try:
        yield {
            name: pool.submit(_run, name, tmp_path_factory.mktemp(name, numbered=True))
            for name in selected
        }
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.timeout(RUN_TIMEOUT + 60)  # waits for its run, which may queue behind others
@pytest.mark.parametrize("name", list(MUTANTS), ids=list(MUTANTS))
def test_mutant_fails_only_its_target(name: str, mutant_runs: dict[str, Future[Run]]) -> None:
    """Self-test (issue 5): the suite fails the mutant's target requirement (``Mutant.target``)
    with the expected message, passes every other mandatory requirement (or is blocked by the
    target, a precondition it judges), and exits 1 when the target is mandatory or capability
    (a verdict), 0 when it is advisory (a warning)."""
    mutant = MUTANTS[name]
    run = mutant_runs[name].result(timeout=RUN_TIMEOUT + 30)
    assert run.report, f"no report\n{run.stdout}\n{run.stderr}"
    results = run.by_id
    target = results[mutant.target]
    assert target["status"] == "fail", f"{mutant.target} should fail ({mutant.defect}): {target}"
    assert mutant.expect in target["message"], target["message"]
    collateral = {
        i: f"{results[i]['status']}: {results[i]['message']}"
        for i in MANDATORY
        if i != mutant.target
        and results[i]["status"] != "pass"
        # blocked by the target's failure (a precondition it judges): not a second failure
        and not (results[i]["status"] == "blocked" and results[i]["blocked_by"] == mutant.target)
    }
    assert not collateral, f"{name} also fails mandatory requirements: {collateral}"
    judged = REQUIREMENTS[mutant.target].tier in (Tier.MANDATORY, Tier.CAPABILITY)
    assert run.returncode == (1 if judged else 0), run.stdout[-3000:] + run.stderr[-3000:]


def test_there_are_enough_mutants() -> None:
    """Self-test (issue 5): at least 25 single-defect mutants."""
    assert len(MUTANTS) >= 25


def test_every_judged_area_has_a_mutant() -> None:
    """Self-test (issue 5): every area with a mandatory, capability or advisory requirement
    has at least one mutant, except those in LEFT_OUT (each with its reason)."""
    covered = {REQUIREMENTS[m.target].area for m in MUTANTS.values()}
    missing = [area for area in JUDGED_AREAS if area not in covered and area not in LEFT_OUT]
    assert not missing, f"areas without a mutant: {missing}"
    assert set(LEFT_OUT) <= set(JUDGED_AREAS) - covered
    assert {
        "TRANSPORT", "JSONRPC", "INIT", "SCHEMA", "SESSION", "PATHS", "MCP", "LOAD", "RESUME",
        "LIST", "DELETE", "CLOSE", "PROMPT", "PROMPTCAP", "META", "CANCEL", "CLIENTCAP",
        "TERMINAL", "PLAN", "PERMISSION", "MODES", "CONFIG", "EXT", "AUTH", "ERROR", "SHUTDOWN",
    } <= covered  # fmt: skip


def test_every_mutant_targets_a_judged_requirement() -> None:
    """Self-test (issue 5): each mutant names a registered requirement that is judged (not
    informational), describes its defect and the failure message it expects."""
    for name, mutant in MUTANTS.items():
        assert mutant.target in REQUIREMENTS, name
        assert REQUIREMENTS[mutant.target].tier is not Tier.INFORMATIONAL, name
        assert mutant.defect, name
        assert "\n" not in mutant.defect, name
        assert mutant.expect, name


def test_the_mutant_agent_rejects_an_unknown_name() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, str(MUTANT_AGENT), "no-such-mutant"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ},
    )
    assert done.returncode == 2
    assert "usage: mutant_agent.py NAME" in done.stderr
