"""The pytest plugin runs the same checks for agent authors who prefer pytest."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .conftest import SDK_ECHO_AGENT

pytest_plugins = ["pytester"]


def _agent(command: list[str]) -> str:
    return " ".join(command)


def test_plugin_is_inert_without_an_agent(pytester: pytest.Pytester) -> None:
    """Installed through the pytest11 entry point, it adds nothing unless --acp-agent is given."""
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.timeout(120)
def test_plugin_runs_requirements_as_tests(pytester: pytest.Pytester) -> None:
    """One test per requirement, selectable with -k; passes, skips (closed gates) and
    informational findings show up as pytest outcomes."""
    agent = _agent([sys.executable, "-m", "subagents.agents.reference"])
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--acp-agent", agent, "-k", "INIT or AUTH", "-v"
    )
    # INIT-001..004, PREINIT, AUTH-001, AUTH-002 pass; AUTH-003 n/a (no --acp-auth-method);
    # AUTH-004 skipped (logout is exercised only with --acp-allow-logout)
    result.assert_outcomes(passed=7, skipped=2)
    result.stdout.fnmatch_lines(
        ["*ACP-INIT-003 PASSED*", "*ACP-AUTH-003 SKIPPED*", "*ACP-AUTH-004 SKIPPED*"]
    )


@pytest.mark.timeout(120)
def test_plugin_reports_a_failure_with_citation_and_transcript(pytester: pytest.Pytester) -> None:
    """A failing requirement fails its test with the requirement, the citation, the reason and
    the transcript; a baseline turns it into an xfail."""
    if not SDK_ECHO_AGENT.is_file():
        pytest.fail(f"{SDK_ECHO_AGENT} is missing: run ./scripts/setup")
    agent = _agent([sys.executable, str(SDK_ECHO_AGENT)])
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--acp-agent", agent, "-k", "INIT-003"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ACP-INIT-003 [[]mandatory[]]*",
            "*citation: docs/protocol/v1/initialization.mdx*",
            "*FAILED: the agent echoed the unsupported protocol version 65535*",
            "*<- *protocolVersion*65535*",
        ]
    )
    baseline = Path(pytester.path) / "baseline.json"
    baseline.write_text(json.dumps({"expected_failures": {"ACP-INIT-003": "echoes"}}))
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--acp-agent",
        agent,
        "-k",
        "INIT-003",
        "--acp-baseline",
        str(baseline),
    )
    result.assert_outcomes(xfailed=1)
