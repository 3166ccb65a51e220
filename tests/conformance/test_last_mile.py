"""Issue 35, part D ("the last mile"): the conformance suite as an agent author meets it.

Whole findings in every report, what a requirement checks (``--list``, ``--explain``), a
did-you-mean for an unknown id, the agent named the same way on the command line and in the
pytest plugin.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from subagents.commands import conformance as command
from subagents.conformance.report import render_terminal, to_json, to_junit
from subagents.conformance.requirements import REQUIREMENTS
from subagents.conformance.runner import AgentIdentity, RequirementResult, Status, SuiteReport

FIX = "use --cancel-prompt TEXT to name a prompt the agent works on for longer"
LONG_FINDING = (
    "the agent answered every cancelled prompt before the suite could cancel it (six turns, "
    "each cancelled at another moment: right after the prompt, at its first update, after it), "
    "so nothing was cancelled and the requirement could not be judged; refuse it with a "
    f"longer turn or {FIX}"
)


def _report(message: str) -> SuiteReport:
    failing = RequirementResult(REQUIREMENTS["ACP-CANCEL-001"], Status.FAIL, message)
    passing = RequirementResult(REQUIREMENTS["ACP-INIT-001"], Status.PASS)
    command = ("python", "my_agent.py")
    agent = AgentIdentity(command, "/home/me/src/my-agent", "my-agent", "1.0")
    return SuiteReport(
        command, [passing, failing], 1.0, agent=agent, started_at="2026-12-06T05:00:00Z"
    )


def _unwrapped(text: str) -> str:
    return " ".join(text.split())


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_finding_is_printed_whole_wrapped_to_100_columns_when_not_a_terminal() -> None:
    """Issue 35: a finding was cut at 160 characters with no mark, dropping its fix ("use
    --cancel-prompt ..."); it is printed whole, wrapped to 100 columns when not a tty."""
    out = io.StringIO()
    render_terminal(_report(LONG_FINDING), out)
    text = out.getvalue()
    assert len(LONG_FINDING) > 300
    assert _unwrapped(LONG_FINDING) in _unwrapped(text)
    assert FIX in _unwrapped(text)
    assert max(len(line) for line in text.splitlines()) <= 100, text


def test_a_long_finding_is_wrapped_to_the_terminals_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35: in a terminal, a finding is wrapped to its width (and still whole)."""
    monkeypatch.setenv("COLUMNS", "72")
    out = _Terminal()
    render_terminal(_report(LONG_FINDING), out)
    text = out.getvalue()
    assert _unwrapped(LONG_FINDING) in _unwrapped(text)
    finding_lines = text[text.index("ACP-CANCEL-001") - 10 : text.index("cites")].splitlines()
    assert len(finding_lines) > 3
    assert max(len(line) for line in finding_lines) <= 72, text


def test_the_json_and_junit_reports_carry_a_long_finding_whole() -> None:
    """Issue 35: the machine reports carry the whole finding too (the JUnit failure's message
    attribute was cut at 1000 characters)."""
    finding = " ".join([LONG_FINDING] * 4)
    assert len(finding) > 1000
    report = _report(finding)
    [entry] = [r for r in to_json(report)["requirements"] if r["id"] == "ACP-CANCEL-001"]
    assert entry["message"] == finding
    root = ET.fromstring(to_junit(report))
    [failure] = root.iter("failure")
    assert failure.get("message") == finding
    assert finding in (failure.text or "")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="subagents")
    command.add_parser(parser.add_subparsers(dest="command"))
    return parser


def test_an_unknown_only_id_gets_one_line_with_a_did_you_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 35: `--only ACP-INTI-003` (a typo) exits 2 with one line naming the id, the
    closest known ones and --list; no agent is started."""
    args = _parser().parse_args(["conformance", "--only", "ACP-INTI-003", "--", "no-such-agent"])
    assert command.run(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "unknown requirement ACP-INTI-003; did you mean ACP-INIT-003?" in err
    assert "--list" in err


def _agent(argv: list[str]) -> tuple[list[str], argparse.Namespace]:
    args = _parser().parse_args(["conformance", *argv])
    resolved = command.agent_command(args, io.StringIO())
    assert not isinstance(resolved, int), argv
    return resolved, args


def test_a_quoted_agent_command_is_the_same_command_as_one_after_dashes() -> None:
    """Issue 35: `subagents conformance "python my_agent.py"` names the agent the way the
    pytest plugin's --acp-agent does, and is the command `-- python my_agent.py` names."""
    after_dashes, _ = _agent(["--", "python", "my_agent.py", "--flag"])
    quoted, _ = _agent(["python my_agent.py --flag"])
    assert quoted == after_dashes == ["python", "my_agent.py", "--flag"]


def test_options_after_a_quoted_agent_command_are_the_suites_options() -> None:
    """Issue 35: a quoted agent followed by options keeps the options (they were swallowed
    into the agent's command line)."""
    agent, args = _agent(["python my_agent.py", "--only", "ACP-INIT-001", "--json", "r.json"])
    assert agent == ["python", "my_agent.py"]
    assert args.only == ["ACP-INIT-001"]
    assert args.json == "r.json"


def test_a_bad_option_after_a_quoted_agent_is_one_line_and_a_hint(tmp_path: Path) -> None:
    """Issue 35: a bad value among the options after a quoted agent is a usage error like any
    other: exit 2, one line and a hint, nothing run."""
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "conformance", "python my_agent.py", "--jobs", "abc"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    [error, hint] = done.stderr.splitlines()
    assert "--jobs" in error
    assert "subagents conformance --help" in hint


def test_options_after_an_agent_url_are_the_suites_options() -> None:
    """Issue 35: an agent URL followed by options (`URL --transport websocket`) keeps them."""
    agent, args = _agent(["https://build-box:8765/acp", "--transport", "websocket"])
    assert agent == ["https://build-box:8765/acp"]
    assert args.transport == "websocket"


def test_an_existing_file_whose_path_has_a_space_is_one_argument(tmp_path: Path) -> None:
    """Issue 35: a single argument that is an existing file (a path with a space) is the
    agent itself, not split."""
    agent = tmp_path / "my agent"
    agent.write_text("#!/bin/sh\n")
    resolved, _ = _agent([str(agent)])
    assert resolved == [str(agent)]


def test_a_quoted_agent_with_options_after_it_runs_from_the_command_line(tmp_path: Path) -> None:
    """Issue 35: `subagents conformance "python -m subagents.examples.tiny_agent" --only
    ACP-INIT-001 --json FILE` runs that requirement alone and writes the report."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "subagents",
            "conformance",
            f"{sys.executable} -m subagents.examples.tiny_agent",
            "--only",
            "ACP-INIT-001",
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert [r["id"] for r in data["requirements"]] == ["ACP-INIT-001"]
    assert data["command"] == [sys.executable, "-m", "subagents.examples.tiny_agent"]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = command.run(_parser().parse_args(["conformance", *argv]), out, err)
    return status, out.getvalue(), err.getvalue()


def test_list_names_every_requirement_its_tier_and_what_it_checks_without_an_agent() -> None:
    """Issue 35: `subagents conformance --list` (no agent) names every requirement, its tier
    and what the suite does to judge it, wrapped to 100 columns."""
    status, out, err = _cli("--list")
    assert (status, err) == (0, "")
    flat = _unwrapped(out)
    for requirement in REQUIREMENTS.values():
        line = next(x for x in out.splitlines() if x.split()[:1] == [requirement.id])
        assert requirement.tier.value in line
        assert _unwrapped(requirement.checks) in flat
    assert "--explain" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_explain_tells_what_is_sent_what_is_expected_the_citation_and_the_fix() -> None:
    """Issue 35: `--explain ACP-PROMPT-004` says the whole of it: that the suite sends 1 MiB,
    what the agent must do, the spec citation, how to fix a failure."""
    status, out, err = _cli("--explain", "ACP-PROMPT-004")
    assert (status, err) == (0, "")
    requirement = REQUIREMENTS["ACP-PROMPT-004"]
    flat = _unwrapped(out)
    assert "1 MiB" in requirement.checks
    for part in (requirement.text, requirement.checks, requirement.fix, requirement.citation):
        assert _unwrapped(part) in flat
    assert "advisory" in out


def test_explain_of_an_unknown_id_exits_2_with_a_did_you_mean() -> None:
    """Issue 35: `--explain` of an unknown id exits 2 and names the closest known one."""
    status, out, err = _cli("--explain", "ACP-PROMT-004")
    assert status == 2
    assert out == ""
    assert "unknown requirement ACP-PROMT-004; did you mean ACP-PROMPT-004?" in err


def test_every_requirement_says_what_the_suite_does_and_how_to_fix_it() -> None:
    """Issue 35: each requirement carries a one-sentence `checks` (what is sent and expected)
    and a `fix`, for --list and --explain."""
    for requirement in REQUIREMENTS.values():
        assert requirement.checks.strip(), requirement.id
        assert requirement.fix.strip(), requirement.id
        assert "\n" not in requirement.checks + requirement.fix, requirement.id


def test_a_failures_report_names_explain() -> None:
    """Issue 35: a report with failures says how to learn what a requirement checks."""
    out = io.StringIO()
    render_terminal(_report(LONG_FINDING), out)
    assert "subagents conformance --explain ID" in out.getvalue()


def _pytest(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_pytest_extra_pins_the_pytest_the_plugin_is_tested_with() -> None:
    """Issue 35: `pip install 'subagents[pytest]'` brings pytest (the package does not), in a
    range that holds the version requirements/constraints.txt pins."""
    import tomllib
    from importlib import metadata

    from packaging.specifiers import SpecifierSet

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    [wanted] = project["optional-dependencies"]["pytest"]
    assert wanted.startswith("pytest")
    constraints = (root / "requirements" / "constraints.txt").read_text().splitlines()
    [pinned] = [line.split("==")[1] for line in constraints if line.startswith("pytest==")]
    assert pinned in SpecifierSet(wanted.removeprefix("pytest"))
    plugins = metadata.entry_points(group="pytest11")
    assert "subagents.conformance.pytest_plugin" in {p.value for p in plugins}


def test_the_readmes_answer_to_an_unrecognized_acp_agent_is_what_pytest_says_and_works(
    tmp_path: Path,
) -> None:
    """Issue 35: a pytest that does not load the plugin (another environment's, or with plugin
    autoload off) says `unrecognized arguments: --acp-agent`, which the README explains; its
    fix for autoload off (`-p subagents.conformance.pytest_plugin`) loads the plugin."""
    off = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    agent = ("--acp-agent", "python -m subagents.examples.tiny_agent", "--collect-only", "-q")
    status, output = _pytest(tmp_path, *agent, env=off)
    assert status == 4
    assert "unrecognized arguments: --acp-agent" in output
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    with_pytest = readme[readme.index("### With pytest") : readme.index("### Baselines")]
    flat = " ".join(with_pytest.split())
    for needed in (
        "pip install 'subagents[pytest]'",
        'python -m pytest --acp-agent "python my_agent.py"',
        "unrecognized arguments: --acp-agent",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
        "-p subagents.conformance.pytest_plugin",
    ):
        assert needed in flat, needed
    status, output = _pytest(tmp_path, "-p", "subagents.conformance.pytest_plugin", *agent, env=off)
    assert status == 0, output
    assert f"{len(REQUIREMENTS)} tests collected" in output


def test_the_json_and_junit_reports_say_what_the_suite_did_and_how_to_fix_it() -> None:
    """Issue 35: a machine report's requirement carries its checks and fix texts too (JSON:
    `checks`, `fix`, valid against report.schema.json; JUnit: in the failure's text)."""
    from importlib import resources

    import jsonschema

    report = _report(LONG_FINDING)
    requirement = REQUIREMENTS["ACP-CANCEL-001"]
    data = json.loads(json.dumps(to_json(report)))  # as written to the file
    schema = json.loads(
        resources.files("subagents.conformance").joinpath("report.schema.json").read_text()
    )
    jsonschema.validate(data, schema)
    [entry] = [r for r in data["requirements"] if r["id"] == requirement.id]
    assert (entry["checks"], entry["fix"]) == (requirement.checks, requirement.fix)
    [failure] = ET.fromstring(to_junit(report)).iter("failure")
    assert requirement.checks in (failure.text or "")
    assert requirement.fix in (failure.text or "")
