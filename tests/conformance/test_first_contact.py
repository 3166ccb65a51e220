"""An agent author's first run of ``subagents conformance`` (issue 16, points 1, 2, 4, 5).

Every run here is the real command in a subprocess, started in a temporary directory that is
not the checkout, with the agent named the way its author names it (a relative path).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import junitparser

import subagents
from subagents.conformance.requirements import SPEC_COMMIT
from subagents.conformance.runner import default_jobs
from subagents.examples import tiny_agent

from .conftest import Run, run_conformance

TINY_AGENT = Path(tiny_agent.__file__)
MUTANT_AGENT = Path(__file__).with_name("mutant_agent.py")
REPORT_SCHEMA = json.loads(
    resources.files("subagents.conformance").joinpath("report.schema.json").read_text()
)
MANDATORY_FEW = ("ACP-INIT-001", "ACP-SESSION-001", "ACP-PROMPT-001", "ACP-PROMPT-002")


def _only(*ids: str) -> list[str]:
    return [arg for requirement in ids for arg in ("--only", requirement)]


def _authors_directory(tmp_path: Path) -> Path:
    """A directory holding the author's agent script (and nothing of the checkout)."""
    directory = tmp_path / "my agent"
    directory.mkdir()
    shutil.copy(TINY_AGENT, directory / "tiny_agent.py")
    return directory


def _in(directory: Path, tmp_path: Path, agent: list[str], *options: str) -> Run:
    """``run_conformance`` started in ``directory`` (the report still lands in tmp_path)."""
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "subagents.cli", "conformance", "--json", str(report)]
    done = subprocess.run(
        [*command, *options, "--", *agent],
        capture_output=True,
        text=True,
        cwd=directory,
        timeout=240,
        # `python` is this interpreter, as in the author's activated virtual environment.
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    return Run(done.returncode, done.stdout, done.stderr, data)


def test_a_relative_agent_path_is_taken_from_the_callers_directory(tmp_path: Path) -> None:
    """Point 1: `subagents conformance -- python tiny_agent.py` run from the agent's own
    directory starts the agent there (the relative path works) and passes; the report names
    the directory and the agent from its initialize answer."""
    directory = _authors_directory(tmp_path)
    run = _in(directory, tmp_path, ["python", "tiny_agent.py"], *_only(*MANDATORY_FEW))
    assert run.returncode == 0, run.stdout + run.stderr
    assert {run.status(i) for i in MANDATORY_FEW} == {"pass"}, run.stdout
    agent = run.report["agent"]
    assert agent["cwd"] == str(directory.resolve())
    assert agent["command"] == ["python", "tiny_agent.py"]
    assert agent["name"] == "tiny-echo"
    assert f"in: {directory.resolve()}" in run.stdout


def test_cwd_names_the_agents_directory_from_elsewhere(tmp_path: Path) -> None:
    """Point 1: `--cwd DIR` runs the agent in DIR, so its relative paths mean what they mean
    there, whatever directory the suite is started from."""
    directory = _authors_directory(tmp_path)
    run = run_conformance(
        tmp_path,
        [sys.executable, "tiny_agent.py"],
        "--cwd",
        str(directory),
        *_only("ACP-INIT-001", "ACP-SESSION-001"),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.report["agent"]["cwd"] == str(directory.resolve())
    missing = run_conformance(tmp_path, [sys.executable, "x.py"], "--cwd", str(tmp_path / "no"))
    assert missing.returncode == 2
    assert "no such directory" in missing.stderr


def _assert_one_answer(run: Run) -> dict[str, object]:
    """The could-not-start shape: exit 4, no requirement judged or listed, one block."""
    assert run.returncode == 4, run.stdout + run.stderr
    jsonschema.validate(run.report, REPORT_SCHEMA)
    assert run.report["verdict"] == "could not start"
    assert run.report["requirements"] == []
    assert "FAIL" not in run.stdout
    assert run.stdout.count("the agent could not be started") == 1
    assert "verdict: COULD NOT START" in run.stdout
    failure = run.report["start_failure"]
    assert isinstance(failure, dict)
    assert failure["hint"]
    return failure


def test_a_missing_agent_is_one_answer_with_a_hint(tmp_path: Path) -> None:
    """Point 2: a command that does not exist gets one block (cause, hint naming the directory
    a relative path was taken from) and exit status 4; nothing else runs."""
    failure = _assert_one_answer(run_conformance(tmp_path, ["./my_agent.py"]))
    assert "No such file" in str(failure["cause"])
    assert str(tmp_path.resolve() / "my_agent.py") in str(failure["hint"])


def test_an_agent_that_exits_at_once_is_one_answer_with_its_stderr(tmp_path: Path) -> None:
    """Point 2: an agent that dies before answering initialize: its exit status and stderr
    tail in the one block, exit status 4."""
    crashing = [sys.executable, "-c", "import sys; sys.exit('fatal: no model configured')"]
    run = run_conformance(tmp_path, crashing)
    failure = _assert_one_answer(run)
    assert failure["exit_status"] == "exited with status 1"
    assert "fatal: no model configured" in str(failure["stderr_tail"])
    assert "fatal: no model configured" in run.stdout


def test_an_agent_that_never_answers_initialize_is_one_answer(tmp_path: Path) -> None:
    """Point 2: an agent that stays silent past --startup-timeout: one block whose hint says it
    wrote nothing to stdout, exit status 4, in about the start-up timeout (not once per
    check)."""
    silent = [sys.executable, "-c", "import time; time.sleep(60)"]
    failure = _assert_one_answer(run_conformance(tmp_path, silent, "--startup-timeout", "1"))
    assert "did not answer initialize within 1 s" in str(failure["cause"])
    assert "wrote nothing to stdout" in str(failure["hint"])


def test_an_agent_that_logs_to_stdout_is_told_so(tmp_path: Path) -> None:
    """Point 2: a banner on stdout instead of an answer: the hint says stdout is for ACP."""
    banner = "import time; print('Agent ready!', flush=True); time.sleep(60)"
    chatty = [sys.executable, "-c", banner]
    run = run_conformance(tmp_path, chatty, "--startup-timeout", "1")
    failure = _assert_one_answer(run)
    assert "not JSON-RPC messages" in str(failure["hint"])
    assert failure["stdout_lines"] == ["Agent ready!"]


def test_the_exit_statuses_are_documented_in_help(tmp_path: Path) -> None:
    """Point 2: `--help` lists every exit status the command uses."""
    done = subprocess.run(
        [sys.executable, "-m", "subagents.cli", "conformance", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0
    for status in ("0 ", "1 ", "2 ", "3 ", "4 ", "130"):
        assert f"\n  {status}" in done.stdout, status
    assert "could not start" in done.stdout


def test_the_verdict_line_names_the_mandatory_requirements_not_judged(tmp_path: Path) -> None:
    """Point 4: an agent whose cancel check could not be exercised (an echo answers at once) is
    conformant, and the verdict line counts and names the unjudged mandatory requirement;
    with --strict it is non-conformant."""
    directory = _authors_directory(tmp_path)
    agent = [sys.executable, "tiny_agent.py"]
    options = ("--cwd", str(directory), *_only("ACP-INIT-001", "ACP-CANCEL-001"))
    run = run_conformance(tmp_path, agent, *options)
    assert run.returncode == 0, run.stdout
    assert run.report["unjudged"] == ["ACP-CANCEL-001"]
    verdict = next(line for line in run.stdout.splitlines() if line.startswith("verdict:"))
    assert verdict.startswith("verdict: CONFORMANT")
    assert "1 mandatory requirement not judged: ACP-CANCEL-001 (" in verdict
    strict = run_conformance(tmp_path, agent, *options, "--strict")
    assert strict.returncode == 1, strict.stdout
    assert strict.report["verdict"] == "non-conformant"
    assert "--strict" in strict.stdout


def test_an_advisory_failure_is_a_junit_pass_carrying_the_finding(tmp_path: Path) -> None:
    """Point 4: in JUnit an advisory failure is a passing case with the finding in its
    properties and system-out (CI agrees with the CONFORMANT verdict); with
    --junit-advisory-failures it is a <failure>. An agent without agentInfo is not called
    "None"."""
    agent = [sys.executable, str(MUTANT_AGENT), "no-agent-info"]
    xml_path = tmp_path / "report.xml"
    run = run_conformance(tmp_path, agent, "--junit", str(xml_path), *_only("ACP-INIT-004"))
    assert run.returncode == 0, run.stdout
    assert run.status("ACP-INIT-004") == "fail"
    assert "None" not in run.stdout.splitlines()[1]
    assert run.report["agent"]["name"] is None
    (case,) = [case for suite in junitparser.JUnitXml.fromfile(str(xml_path)) for case in suite]
    assert case.is_passed
    assert "no agentInfo" in (case.system_out or "")
    assert b'name="finding"' in xml_path.read_bytes()
    strict_xml = tmp_path / "strict.xml"
    run_conformance(
        tmp_path,
        agent,
        "--junit",
        str(strict_xml),
        "--junit-advisory-failures",
        *_only("ACP-INIT-004"),
    )
    (case,) = [case for suite in junitparser.JUnitXml.fromfile(str(strict_xml)) for case in suite]
    assert any(isinstance(result, junitparser.Failure) for result in case.result)


def test_a_failure_line_cites_the_spec_and_shows_the_exchange(tmp_path: Path) -> None:
    """Point 4: the console failure line carries the citation, one line of what was sent and
    what came back, and says where the transcript is."""
    agent = [sys.executable, str(MUTANT_AGENT), "float-protocol-version"]
    run = run_conformance(tmp_path, agent, *_only("ACP-INIT-001"))
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "FAIL  ACP-INIT-001" in line)
    # Each of them wrapped to 100 columns (issue 35), its continuation lines indented.
    block = [line.strip() for line in lines[at + 1 :]]
    cites = next(i for i, line in enumerate(block) if line.startswith("cites "))
    sent = next(i for i, line in enumerate(block) if line.startswith("sent initialize {"))
    assert block[cites].startswith("cites docs/protocol/v1/initialization.mdx")
    assert cites < sent
    assert '-> got {"result": {"protocolVersion": 1.0' in " ".join(block[sent : sent + 4])
    assert f"transcripts of the failures: {tmp_path / 'report.json'}" in run.stdout


def test_the_json_report_says_which_suite_which_spec_and_when(tmp_path: Path) -> None:
    """Point 5: suite version, spec version and commit, a timestamp, the agent as an object;
    --transcripts all keeps the transcript of passing checks too."""
    directory = _authors_directory(tmp_path)
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    run = run_conformance(
        tmp_path,
        [sys.executable, "tiny_agent.py"],
        "--cwd",
        str(directory),
        "--transcripts",
        "all",
        *_only("ACP-INIT-001"),
    )
    jsonschema.validate(run.report, REPORT_SCHEMA)
    report = run.report
    assert report["format"] == "subagents-acp-conformance/2"
    assert report["suite_version"] == subagents.__version__
    assert report["spec"] == {"protocol_version": 1, "commit": SPEC_COMMIT}
    assert datetime.datetime.fromisoformat(report["started_at"]) >= before
    assert report["agent"]["name"] == "tiny-echo"
    (entry,) = report["requirements"]
    assert entry["status"] == "pass"
    assert any('"method": "initialize"' in line.get("text", "") for line in entry["transcript"])
    plain = run_conformance(
        tmp_path, [sys.executable, "tiny_agent.py"], "--cwd", str(directory), *_only("ACP-INIT-001")
    )
    assert "transcript" not in plain.report["requirements"][0]


_SLOW_AFTER_THE_PROBE = r"""
import json, os, sys, time
counter = os.environ["COUNTER"]
with open(counter, "a") as f:
    f.write("x")
first = os.path.getsize(counter) == 1
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, answer = message["method"], None
    if method == "initialize":
        answer = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    elif method == "session/new":
        if not first:
            time.sleep(30)
        answer = {"sessionId": "s1"}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}), flush=True)
"""


def test_a_set_up_step_that_times_out_is_inconclusive_not_a_failure(tmp_path: Path) -> None:
    """Point 8 ("load is not a finding"): when session/new answers the probe but then times out
    in a check (a loaded machine), the check is retried once and reported inconclusive, not a
    failure of the requirement; the verdict line counts it as unjudged."""
    agent = [sys.executable, "-c", _SLOW_AFTER_THE_PROBE]
    run = run_conformance(
        tmp_path,
        agent,
        "--timeout",
        "1",
        *_only("ACP-PROMPT-001"),
        env={"COUNTER": str(tmp_path / "starts")},
    )
    assert run.returncode == 0, run.stdout
    result = run.by_id["ACP-PROMPT-001"]
    assert result["status"] == "inconclusive", result
    assert result["attempts"] == 2
    assert "session/new" in result["message"]
    assert run.report["unjudged"] == ["ACP-PROMPT-001"]


def test_jobs_default_to_the_cores_of_the_machine() -> None:
    """Point 8: --jobs never defaults above the machine's cores."""
    assert 1 <= default_jobs() <= (os.cpu_count() or 1)


_RAW_AGENT = r"""
import json, os, sys, time
mode = sys.argv[1]
counter = os.environ["COUNTER"]
with open(counter, "a") as f:
    f.write("x")
first = os.path.getsize(counter) == 1
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if mode == "drops-string-ids" and isinstance(message["id"], str):
        continue
    method, answer = message["method"], {}
    if method == "initialize":
        if mode == "slow-after-the-probe" and not first:
            time.sleep(30)
        answer = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    elif method == "session/new":
        answer = {"sessionId": "s1"}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}), flush=True)
"""


def test_an_unanswered_string_id_is_told_apart_from_a_slow_start(tmp_path: Path) -> None:
    """Point 8 ("load is not a finding") and ACP-JSONRPC-001: an initialize with a string id
    that gets no answer is a failure when the same initialize with an integer id is answered
    (the agent drops string ids), and inconclusive when that one goes unanswered too (the
    agent is slow to start right now), never a finding about ids."""
    only = _only("ACP-JSONRPC-001")
    drops = run_conformance(
        tmp_path,
        [sys.executable, "-c", _RAW_AGENT, "drops-string-ids"],
        "--startup-timeout",
        "2",
        *only,
        env={"COUNTER": str(tmp_path / "drops")},
    )
    result = drops.by_id["ACP-JSONRPC-001"]
    assert result["status"] == "fail", result
    assert "while the same initialize with an integer id was answered" in result["message"]
    slow = run_conformance(
        tmp_path,
        [sys.executable, "-c", _RAW_AGENT, "slow-after-the-probe"],
        "--startup-timeout",
        "1",
        *only,
        env={"COUNTER": str(tmp_path / "slow")},
    )
    result = slow.by_id["ACP-JSONRPC-001"]
    assert result["status"] == "inconclusive", result
    assert result["attempts"] == 2
    assert slow.returncode == 0, slow.stdout
