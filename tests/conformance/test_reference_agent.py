"""The reference agent is the conforming fixture: it passes every requirement, and the reports
(terminal, JSON, JUnit) say so in forms tools can read."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import junitparser
import pytest

from subagents.conformance.requirements import REQUIREMENTS, Tier

from .conftest import REFERENCE, Run, run_conformance

# The module's first test also pays for its module fixture (a whole conformance run, which
# takes minutes on a loaded machine): the default 60 s bound would cut it.
pytestmark = pytest.mark.timeout(300)

MUTANT_AGENT = Path(__file__).with_name("mutant_agent.py")

REPORT_SCHEMA = json.loads(
    resources.files("subagents.conformance").joinpath("report.schema.json").read_text()
)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    tmp = tmp_path_factory.mktemp("reference")
    run = run_conformance(tmp, REFERENCE, "--allow-logout", "--junit", str(tmp / "report.xml"))
    return run, tmp


def test_reference_agent_passes_every_requirement(full_run: tuple[Run, Path]) -> None:
    """Done means (issue 5): `subagents conformance -- python -m <reference agent>` passes
    everything (only the --auth-method gate stays closed: it advertises no auth; see
    test_an_agent_requiring_auth_passes_with_auth_method for that gate open)."""
    run, _ = full_run
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.report["verdict"] == "conformant"
    for item in run.report["requirements"]:
        tier = REQUIREMENTS[item["id"]].tier
        if item["id"] == "ACP-AUTH-003":
            assert item["status"] == "n/a"
        elif tier is Tier.INFORMATIONAL:
            assert item["status"] == "info", item
            assert item["message"], item
        else:
            assert item["status"] == "pass", item
    assert "verdict: CONFORMANT" in run.stdout
    # How soon a cancel was honoured is recorded for the agent's author (not judged).
    assert any(n.startswith("answered cancelled ") for n in run.by_id["ACP-CANCEL-001"]["notes"])
    print(f"reference agent suite: {run.report['duration']:.1f} s")  # recorded, not asserted


def test_json_report_validates_against_its_schema(full_run: tuple[Run, Path]) -> None:
    """Done means: the JSON report validates (against report.schema.json)."""
    run, _ = full_run
    jsonschema.validate(run.report, REPORT_SCHEMA)
    assert [r["id"] for r in run.report["requirements"]] == list(REQUIREMENTS)
    assert all(r["citation"].startswith("docs/protocol/v1/") for r in run.report["requirements"])


def test_junit_report_is_read_by_a_junit_parser(full_run: tuple[Run, Path]) -> None:
    """Done means: the JUnit report parses with a JUnit XML parser (junitparser), one case per
    requirement, grouped by area, with no failure for the conforming agent."""
    _, tmp = full_run
    xml = junitparser.JUnitXml.fromfile(str(tmp / "report.xml"))
    cases = [case for suite in xml for case in suite]
    assert len(cases) == len(REQUIREMENTS)
    assert {case.name.split(" ")[0] for case in cases} == set(REQUIREMENTS)
    assert not [
        case for case in cases if any(isinstance(r, junitparser.Failure) for r in case.result)
    ]
    suites = {suite.name for suite in xml}
    assert "ACP-INIT" in suites
    assert "ACP-CANCEL" in suites


def test_terminal_report_groups_by_area_and_counts_per_tier(full_run: tuple[Run, Path]) -> None:
    run, _ = full_run
    lines = run.stdout.splitlines()
    assert "INIT" in lines
    assert "CANCEL" in lines
    header = next(line.split() for line in lines if line.startswith("tier "))
    table = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("mandatory ")}
    mandatory = sum(1 for r in REQUIREMENTS.values() if r.tier is Tier.MANDATORY)
    counts = dict(zip(header[1:], table["mandatory"], strict=True))
    assert counts["pass"] == str(mandatory)
    assert all(value == "0" for status, value in counts.items() if status != "pass")


def test_a_stale_baseline_entry_is_reported(tmp_path: Path) -> None:
    """--baseline: an entry expected to fail that now passes is reported as stale, and does not
    fail the run."""
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"expected_failures": {"ACP-INIT-002": "old bug"}}))
    run = run_conformance(
        tmp_path, REFERENCE, "--baseline", str(baseline), "--only", "ACP-INIT-002"
    )
    assert run.returncode == 0
    assert run.report["stale_baseline"] == ["ACP-INIT-002"]
    assert "stale baseline entries (expected to fail, now pass): ACP-INIT-002" in run.stdout
    assert "XPASS" in run.stdout


def test_an_intermittent_baseline_entry_may_pass_or_fail(tmp_path: Path) -> None:
    """--baseline: an intermittent entry (a race in the agent) is an expected failure when it
    fails, is not stale when it passes, and --write-baseline keeps it."""
    baseline = tmp_path / "baseline.json"
    baseline.write_text(
        json.dumps(
            {"expected_failures": {}, "intermittent_failures": {"ACP-CANCEL-002": "late chunks"}}
        )
    )
    rewritten = tmp_path / "rewritten.json"
    passing = run_conformance(
        tmp_path,
        REFERENCE,
        *("--baseline", str(baseline), "--write-baseline", str(rewritten)),
        *("--only", "ACP-CANCEL-002"),
    )
    assert passing.returncode == 0, passing.stdout
    assert passing.status("ACP-CANCEL-002") == "pass"
    assert passing.report["stale_baseline"] == []
    assert passing.by_id["ACP-CANCEL-002"]["intermittent"] is True
    assert json.loads(rewritten.read_text())["intermittent_failures"] == {
        "ACP-CANCEL-002": "late chunks"
    }
    failing = run_conformance(
        tmp_path,
        [sys.executable, str(MUTANT_AGENT), "update-after-cancel"],
        *("--baseline", str(baseline), "--only", "ACP-CANCEL-002"),
    )
    assert failing.returncode == 0, failing.stdout
    assert failing.status("ACP-CANCEL-002") == "fail"
    assert "XFAIL ACP-CANCEL-002" in failing.stdout


def test_a_requirement_cannot_be_both_expected_and_intermittent(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(
        json.dumps(
            {
                "expected_failures": {"ACP-CANCEL-002": "a"},
                "intermittent_failures": {"ACP-CANCEL-002": "b"},
            }
        )
    )
    run = run_conformance(tmp_path, REFERENCE, "--baseline", str(baseline))
    assert run.returncode == 2
    assert "both as expected and as intermittent: ACP-CANCEL-002" in run.stderr


def test_a_bad_baseline_is_a_usage_error(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"expected_failures": {"ACP-NOPE-001": "?"}}))
    run = run_conformance(tmp_path, REFERENCE, "--baseline", str(baseline))
    assert run.returncode == 2
    assert "unknown requirement(s) ACP-NOPE-001" in run.stderr


def test_an_agent_that_cannot_start_is_one_answer_with_the_cause(tmp_path: Path) -> None:
    """Issue 16 point 2: could-not-start is one answer (exit 4), no requirement is run."""
    run = run_conformance(tmp_path, ["/nonexistent/agent-binary"], "--only", "ACP-INIT-001")
    assert run.returncode == 4
    assert "cannot start" in run.report["probe_error"]
    assert "cannot start" in run.report["start_failure"]["cause"]
    assert run.report["requirements"] == []


def test_authentication_blocks_are_a_verdict_not_a_pile_of_failures(tmp_path: Path) -> None:
    """Auth (issue 5): an agent that needs authentication before session/new gets a clear
    "blocked by auth" verdict; with --auth-method the same checks pass, and so do
    authenticate-then-session/new (ACP-AUTH-003) and, with --allow-logout, logout
    (ACP-AUTH-004)."""
    env = {"SUBAGENTS_REFERENCE_REQUIRE_AUTH": "reference-token"}
    only = ["--only", "ACP-SESSION-001", "--only", "ACP-PROMPT-001", "--only", "ACP-AUTH-003"]
    blocked = run_conformance(tmp_path, REFERENCE, *only, env=env)
    assert blocked.returncode == 3, blocked.stdout
    assert blocked.report["verdict"] == "blocked by authentication"
    assert blocked.report["auth_required"] is True
    assert blocked.status("ACP-SESSION-001") == "blocked"
    assert blocked.status("ACP-PROMPT-001") == "blocked"
    assert "pass --auth-method" in " ".join(blocked.stdout.split())  # wrapped to 100 columns
    authed = run_conformance(
        tmp_path,
        REFERENCE,
        *only,
        "--only",
        "ACP-AUTH-004",
        "--auth-method",
        "reference-token",
        "--allow-logout",
        env=env,
    )
    assert authed.returncode == 0, authed.stdout
    checked = ("ACP-SESSION-001", "ACP-PROMPT-001", "ACP-AUTH-003", "ACP-AUTH-004")
    assert {authed.status(i) for i in checked} == {"pass"}


def test_a_failure_reports_the_transcript_and_the_stderr_tail_in_a_valid_report(
    tmp_path: Path,
) -> None:
    """Reports (issue 5): a failing requirement's JSON entry carries the transcript (what the
    suite sent, what came back) and the agent's stderr tail, and the report still validates
    against report.schema.json."""
    crashing = [
        sys.executable,
        "-c",
        "import json, sys\n"
        "sys.stderr.write('fatal: no model configured\\n')\n"
        "for line in sys.stdin:\n"
        "    message = json.loads(line)\n"
        "    if message.get('method') != 'initialize':\n"
        "        sys.exit(3)\n"
        "    result = {'protocolVersion': '1', 'agentCapabilities': {}}\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': message['id'], 'result': result}),"
        " flush=True)\n",
    ]
    run = run_conformance(tmp_path, crashing, "--only", "ACP-INIT-001", "--only", "ACP-INIT-002")
    assert run.returncode == 1, run.stdout
    jsonschema.validate(run.report, REPORT_SCHEMA)
    failed = run.by_id["ACP-INIT-001"]
    assert failed["status"] == "fail"
    assert "fatal: no model configured" in failed["stderr_tail"]
    sent = [entry for entry in failed["transcript"] if entry["from"] == "client"]
    assert sent
    assert '"method":"initialize"' in sent[0]["text"].replace(" ", "")
