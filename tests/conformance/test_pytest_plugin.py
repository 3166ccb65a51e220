"""The pytest plugin runs the suite like a pytest plugin (issue 16, point 6; the plugin side of
points 1, 2 and 4).

Every run is a real ``pytest`` in a subprocess, started in pytester's temporary directory (not
the checkout), with the agent named the way its author names it: ``python tiny_agent.py``, a
path relative to where pytest runs. Each run selects a few requirements (``-k`` / ``-m``) to
stay short.
"""

from __future__ import annotations

import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from subagents.conformance.pytest_plugin import NODE_PATH
from subagents.conformance.requirements import REQUIREMENTS, Tier
from subagents.conformance.runner import batches
from subagents.examples import tiny_agent

pytest_plugins = ["pytester"]
# Each test runs pytest (and the agent) in subprocesses, up to three times: a loaded machine
# makes that slow, never wrong.
pytestmark = pytest.mark.timeout(300)

TINY_AGENT = Path(tiny_agent.__file__)
TOTAL = len(REQUIREMENTS)

RAW_AGENT = '''\
"""A stdlib ACP agent: `flawed` echoes the requested protocol version (ACP-INIT-003) and sends
no agentInfo (ACP-INIT-004, advisory); `peers` is correct, and records whether another agent
process ran beside it (the probe, the first process, does not wait)."""
import json
import os
import sys
import time

mode = sys.argv[1]
if mode == "peers":
    os.makedirs("peers", exist_ok=True)
    try:
        os.close(os.open("probed", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        me = str(os.getpid())
        open(os.path.join("peers", me), "w").close()
        seen = "alone"
        for _ in range(200):  # up to 10 s
            names = set(os.listdir("peers"))
            others = {name for name in names if name.isdigit() and name != me}
            for other in others:  # tell it, in case it misses this process (gone quickly)
                open(os.path.join("peers", other + ".seen"), "w").close()
            if others or me + ".seen" in names:
                seen = "peer"
                break
            time.sleep(0.05)
        with open(f"seen-{me}", "w") as out:
            out.write(seen)
sessions = 0
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method, reply = message["method"], {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        if mode == "flawed":
            reply["result"] = {"protocolVersion": message["params"]["protocolVersion"]}
        else:
            info = {"name": "raw", "version": "1.0"}
            reply["result"] = {"protocolVersion": 1, "agentInfo": info}
    elif method == "session/new":
        sessions += 1
        reply["result"] = {"sessionId": f"session-{sessions}"}
    elif method == "session/prompt":
        reply["result"] = {"stopReason": "end_turn"}
    else:
        reply["error"] = {"code": -32601, "message": "Method not found"}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
if mode == "peers" and os.path.exists(os.path.join("peers", str(os.getpid()))):
    os.remove(os.path.join("peers", str(os.getpid())))
'''


@pytest.fixture(autouse=True)
def _no_other_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner runs load this plugin alone (``-p``, see ``_run``): the other plugins of the
    environment take seconds to import."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def author(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester's directory as an agent author's: the agents next to where pytest runs, and
    ``python`` on PATH the interpreter of these tests (as in an activated environment)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    shutil.copy(TINY_AGENT, pytester.path / "tiny_agent.py")
    (pytester.path / "raw_agent.py").write_text(RAW_AGENT)
    return pytester


def _run(pytester: pytest.Pytester, *args: str, autoload: bool = False) -> pytest.RunResult:
    plugin = () if autoload else ("-p", "subagents.conformance.pytest_plugin")
    return pytester.runpytest_subprocess(*plugin, "-p", "no:cacheprovider", *args, timeout=150)


def _ids(*, tier: Tier | None = None, area: str | None = None) -> list[str]:
    return [
        r.id
        for r in REQUIREMENTS.values()
        if (tier is None or r.tier is tier) and (area is None or r.area == area)
    ]


def test_plugin_is_inert_without_an_agent(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed through the pytest11 entry point, it adds options and nothing else unless
    --acp-agent is given."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = _run(pytester, autoload=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["collected 1 item"])
    help_text = _run(pytester, "--help", autoload=True).stdout.str()
    for flag in ("--acp-agent", "--acp-cwd", "--acp-jobs", "--acp-strict", "--acp-fs-prompt"):
        assert flag in help_text


def test_requirements_are_collected_as_items_of_the_registry_file(
    pytester: pytest.Pytester,
) -> None:
    """Point 6: one item per requirement under a file part (``NODE_PATH::ACP-...``), counted
    by collection ("N tests collected"), selected by pytest's own -k and by the registered
    tier and area markers (under --strict-markers); collecting starts no agent (the command
    does not even exist)."""
    agent = ("--acp-agent", "no-such-agent-command", "--strict-markers", "--co", "-q")
    everything = _run(pytester, *agent)
    assert everything.ret == 0, everything.stdout.str()
    listed = [line for line in everything.outlines if "::" in line]
    assert listed[: len(listed) - 2] == [
        f"{NODE_PATH}::{i}" for i in REQUIREMENTS if not i.startswith("ACP-SCHEMA-")
    ]
    assert listed[-2:] == [f"{NODE_PATH}::ACP-SCHEMA-001", f"{NODE_PATH}::ACP-SCHEMA-002"]
    everything.stdout.fnmatch_lines([f"{TOTAL} tests collected in *"])

    one = _run(pytester, *agent, "-k", "ACP-INIT-002")
    assert [line for line in one.outlines if "::" in line] == [f"{NODE_PATH}::ACP-INIT-002"]
    one.stdout.fnmatch_lines([f"1/{TOTAL} tests collected ({TOTAL - 1} deselected) in *"])

    marked = _run(pytester, *agent, "-m", "acp_mandatory and acp_init or acp_advisory and acp_mcp")
    wanted = _ids(tier=Tier.MANDATORY, area="INIT") + _ids(tier=Tier.ADVISORY, area="MCP")
    assert sorted(line for line in marked.outlines if "::" in line) == sorted(
        f"{NODE_PATH}::{i}" for i in wanted
    )


def test_a_relative_agent_command_runs_in_the_invocation_directory(author: pytest.Pytester) -> None:
    """Points 1 and 6: ``--acp-agent "python tiny_agent.py"`` from the agent's directory runs
    the script there; "collected N items / M deselected / K selected" is the truth before the
    checks run; each item's id names the file and the requirement."""
    wanted = _ids(tier=Tier.MANDATORY, area="INIT")
    result = _run(
        author, "--acp-agent", "python tiny_agent.py", "-m", "acp_mandatory and acp_init", "-v"
    )
    result.assert_outcomes(passed=len(wanted), deselected=TOTAL - len(wanted))
    result.stdout.fnmatch_lines(
        [
            f"*collected {TOTAL} items / {TOTAL - len(wanted)} deselected / {len(wanted)} selected",
            *(f"{NODE_PATH}::{i} PASSED*" for i in wanted),
        ]
    )


def test_acp_cwd_names_the_agents_directory(author: pytest.Pytester) -> None:
    """Point 1: from another directory, ``--acp-cwd DIR`` is where the agent runs (so the
    command's relative path is taken from DIR)."""
    directory = author.path / "my agent"
    directory.mkdir()
    (author.path / "tiny_agent.py").rename(directory / "tiny_agent.py")
    result = _run(
        author, "--acp-agent", "python tiny_agent.py", "--acp-cwd", "my agent", "-k", "ACP-INIT-001"
    )
    result.assert_outcomes(passed=1, deselected=TOTAL - 1)


@pytest.mark.parametrize(
    ("agent", "extra", "expected"),
    [
        pytest.param(
            "no-such-agent-command",
            (),
            [
                "could not start the agent: cannot start 'no-such-agent-command'*",
                "hint: *not on PATH*",
            ],
            id="missing-command",
        ),
        pytest.param(
            "python -c 'import sys; sys.stderr.write(\"boom: no config\\n\"); sys.exit(3)'",
            (),
            [
                "could not start the agent: *exited before answering initialize*status 3",
                "stderr tail:",
                "boom: no config",
            ],
            id="exits-at-once",
        ),
        pytest.param(
            "python -c 'import sys; sys.stdin.read()'",
            ("--acp-startup-timeout", "2"),
            [
                "could not start the agent: *did not answer initialize within 2 s",
                "hint: *--acp-startup-timeout*",
            ],
            id="never-answers",
        ),
    ],
)
def test_an_agent_that_cannot_start_is_one_error(
    author: pytest.Pytester, agent: str, extra: tuple[str, ...], expected: list[str]
) -> None:
    """Point 2: a missing command, an agent that exits at once and one that never answers
    initialize are ONE error (every requirement selected, none run), with the cause, the
    exit status, the stderr tail and a hint; pytest's exit status is non-zero."""
    result = _run(author, "--acp-agent", agent, *extra)
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"collected {TOTAL} items",
            "*ERROR at setup of ACP-*",
            *expected,
            "nothing else was run",
            "*the agent could not be started*",
            "*= 1 error in *",
        ]
    )


def test_a_mandatory_failure_fails_and_an_advisory_one_passes_with_its_finding(
    author: pytest.Pytester,
) -> None:
    """Point 6 (verdicts as in the CLI, issue point 4): a mandatory failure fails with the
    reason and citation on its summary line, what the suite did and how to fix it (issue 35),
    and the transcript; an advisory failure passes,
    its finding in JUnit properties and the terminal summary; --acp-advisory-failures fails
    it; the baseline's expected failure is an xfail."""
    agent = ("--acp-agent", "python raw_agent.py flawed", "-k", "ACP-INIT-003 or ACP-INIT-004")
    result = _run(author, *agent, "--junitxml", "junit.xml")
    result.assert_outcomes(failed=1, passed=1, deselected=TOTAL - 2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*_ ACP-INIT-003 _*",
            "the agent echoed the unsupported protocol version 65535*"
            "[[]mandatory: *initialization.mdx*",
            "citation: docs/protocol/v1/initialization.mdx*",
            "what the suite does: A fresh process gets initialize with protocolVersion 65535*",
            "how to fix: *never echo the requested version*",
            "*<- *protocolVersion*65535*",
            "*= ACP conformance =*",
            "1 advisory finding(s), passed*",
            "  ACP-INIT-004: *agentInfo*",
            f"FAILED {NODE_PATH}::ACP-INIT-003 - the agent echoed*",
        ]
    )
    cases = {
        case.get("name"): case for case in ET.parse(author.path / "junit.xml").iter("testcase")
    }
    advisory = cases["ACP-INIT-004"]
    assert advisory.find("failure") is None
    properties = {p.get("name"): p.get("value") for p in advisory.iter("property")}
    assert properties["acp_status"] == "fail"
    assert "agentInfo" in (properties["acp_finding"] or "")
    assert cases["ACP-INIT-003"].find("failure") is not None

    strict = _run(author, *agent, "--acp-advisory-failures")
    strict.assert_outcomes(failed=2, deselected=TOTAL - 2)

    baseline = author.path / "baseline.json"
    baseline.write_text('{"expected_failures": {"ACP-INIT-003": "echoes the version"}}')
    known = _run(author, *agent, "--acp-baseline", "baseline.json")
    known.assert_outcomes(xfailed=1, passed=1, deselected=TOTAL - 2)
    assert known.ret == pytest.ExitCode.OK


def test_an_unjudged_mandatory_requirement_is_a_skip_naming_why_or_with_strict_a_failure(
    author: pytest.Pytester,
) -> None:
    """Point 6 (issue point 4): the tiny agent never makes a terminal request, so
    ACP-TERMINAL-001 is not judged: a skip whose reason starts with the status; with
    --acp-strict a failure that says it was not judged."""
    agent = ("--acp-agent", "python tiny_agent.py", "-k", "ACP-TERMINAL-001")
    result = _run(author, *agent, "-rs")
    result.assert_outcomes(skipped=1, deselected=TOTAL - 1)
    result.stdout.fnmatch_lines(
        [
            "1 mandatory requirement(s) could not be judged*",
            "SKIPPED [[]1[]] *requirements.py:*: not-exercised: *--acp-terminal-prompt*",
        ]
    )
    strict = _run(author, *agent, "--acp-strict")
    strict.assert_outcomes(failed=1, deselected=TOTAL - 1)
    strict.stdout.fnmatch_lines(["not judged (--acp-strict): not-exercised: *"])


def test_checks_run_concurrently(author: pytest.Pytester) -> None:
    """Point 6 (parallel checks): the selected checks run at once (up to --acp-jobs), not one
    after the other. Each agent process but the probe's waits (up to 10 s) until it sees
    another one beside it: in series none would. (The checks of one shared exchange judge one
    process: one per batch.)"""
    wanted = _ids(tier=Tier.MANDATORY, area="INIT")
    processes = len(batches(REQUIREMENTS[i] for i in wanted))
    assert processes >= 2
    result = _run(
        author,
        "--acp-agent",
        "python raw_agent.py peers",
        "-m",
        "acp_mandatory and acp_init",
        "--acp-jobs",
        str(len(wanted)),
    )
    result.assert_outcomes(passed=len(wanted), deselected=TOTAL - len(wanted))
    seen = [path.read_text() for path in author.path.glob("seen-*")]
    assert len(seen) >= processes, seen
    assert "peer" in seen, seen
