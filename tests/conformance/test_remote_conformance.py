"""The conformance suite against an agent served at a URL (issue 20: "the conformance suite
passes the reference agent served over HTTP and over WebSocket, with the same verdicts as
over stdio").

The whole suite (``run_suite``) judges the reference agent over stdio once (the module's
fixture), then through ``subagents bridge`` to our server (``serve_acp_http`` with
``agent_command``, in-process on 127.0.0.1) over Streamable HTTP and over WebSocket; each
requirement's status must be the same (notes may differ). A whole run takes a minute or
two on a small machine, so each transport is compared once: HTTP on asyncio, WebSocket on
trio (both backends, both transports). The command line is tested as real processes
(``subagents serve --listen`` and ``subagents conformance URL``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from subagents.conformance.framework import Options
from subagents.conformance.remote import JUDGE_THE_BRIDGE, bridge_command
from subagents.conformance.runner import Status, SuiteReport, run_suite
from subagents.remote import ClientMcpPolicy, agent_command, serve_acp_http

from .conftest import REFERENCE, run_conformance

# A whole suite run (twice in the comparison tests) takes minutes on a loaded machine.
pytestmark = pytest.mark.timeout(900)

TOKEN = "conformance-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"


def _statuses(report: SuiteReport) -> dict[str, Status]:
    return {result.requirement.id: result.status for result in report.results}


@pytest.fixture(scope="module")
def over_stdio(tmp_path_factory: pytest.TempPathFactory) -> SuiteReport:
    """The whole suite against the reference agent over stdio (once for the module)."""
    cwd = tmp_path_factory.mktemp("stdio")
    started = time.monotonic()
    report = anyio.run(run_suite, Options(command=tuple(REFERENCE), cwd=cwd))
    print(f"whole suite over stdio: {time.monotonic() - started:.1f} s")  # recorded
    return report


@pytest.fixture(
    params=[pytest.param(("asyncio", "http"), id="http"), pytest.param(("trio", "ws"), id="ws")]
)
def backend_and_transport(request: pytest.FixtureRequest) -> tuple[str, str]:
    chosen: tuple[str, str] = request.param
    return chosen


@pytest.fixture
def anyio_backend(backend_and_transport: tuple[str, str]) -> str:
    """One whole comparison per transport: HTTP on asyncio, WebSocket on trio."""
    return backend_and_transport[0]


@pytest.mark.long
@pytest.mark.anyio
async def test_the_reference_agent_gets_the_same_verdicts_over_http_and_websocket(
    over_stdio: SuiteReport, backend_and_transport: tuple[str, str], tmp_path: Path
) -> None:
    """Issue 20, done means: the whole suite, through ``subagents bridge`` to our server
    fronting the reference agent, gives every requirement the status it gets over stdio
    (the reference agent is conformant both ways); the report says it went through the
    bridge."""
    transport = backend_and_transport[1]
    # The suite hands the agent its own MCP servers: a stdio probe run by this Python, and
    # http and sse servers on ephemeral loopback ports (issue 34: allowed by the operator).
    policy = ClientMcpPolicy.allowing([sys.executable], ["http://127.0.0.1:*"])
    async with serve_acp_http(agent_command(REFERENCE), port=0, client_mcp=policy) as server:
        url = server.websocket_url if transport == "ws" else server.url
        started = time.monotonic()
        report = await run_suite(Options(command=bridge_command(url), cwd=tmp_path))
        print(f"whole suite over {transport}: {time.monotonic() - started:.1f} s")  # recorded
    assert report.start_failure is None, report.start_failure
    assert report.command[:4] == (sys.executable, "-m", "subagents", "bridge")
    remote, local = _statuses(report), _statuses(over_stdio)
    differences = {
        rid: (local[rid].value, remote[rid].value) for rid in local if local[rid] != remote[rid]
    }
    said = {
        where: {r.requirement.id: r.message for r in judged.results}
        for where, judged in (("stdio", over_stdio), (transport, report))
    }
    messages = {rid: {where: said[where][rid] for where in said} for rid in differences}
    probes = {"stdio": over_stdio.probe_error, transport: report.probe_error}
    assert differences == {}, (messages, probes)
    assert report.verdict == over_stdio.verdict == "conformant"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``subagents serve --listen 127.0.0.1:0 --token-env ... -- <reference agent>`` as a
    process; yields its URL; SIGTERM at the end (it must exit 0)."""
    env = {**os.environ, "SERVE_TOKEN": TOKEN}
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "subagents", "serve", "--listen", "127.0.0.1:0"),
            *("--token-env", "SERVE_TOKEN", "--", *REFERENCE),
        ],
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert process.stderr is not None
        seen = b""
        deadline = time.monotonic() + 30
        while not (found := re.search(rb"listening on (http://\S+/acp)\n", seen)):
            assert time.monotonic() < deadline, seen
            line = process.stderr.readline()
            assert line, f"the server exited: {seen!r}"
            seen += line
        yield found.group(1).decode()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


# The process-level requirements (judging the bridge), a session's round trip, load and the
# informational checks that send lines that are no JSON-RPC message.
CLI_ONLY = [
    *JUDGE_THE_BRIDGE,
    *("ACP-INIT-003", "ACP-PROMPT-001", "ACP-LOAD-002", "ACP-INFO-PARSE-001", "ACP-INFO-BATCH-001"),
]


def test_the_command_judges_a_url_through_the_bridge(served: str, tmp_path: Path) -> None:
    """Issue 20: ``subagents conformance --token-env VAR URL`` as a process, against
    ``subagents serve --listen`` fronting the reference agent: exit 0, and the terminal
    output and the JSON report say the agent was judged through the bridge, whose
    process-level requirements are the bridge's."""
    only = [arg for rid in CLI_ONLY for arg in ("--only", rid)]
    run = run_conformance(
        tmp_path, [served], "--token-env", "T", *only, env={"T": TOKEN}, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"ACP conformance of: {served}" in run.stdout
    assert "through the bridge:" in run.stdout
    assert "judge the bridge, not the remote agent" in run.stdout
    assert run.report["bridge"]["url"] == served
    assert run.report["bridge"]["judge_the_bridge"] == list(JUDGE_THE_BRIDGE)
    assert run.report["command"][2:5] == ["subagents", "bridge", served]
    assert {r["id"]: r["status"] for r in run.report["requirements"]} == {
        rid: "info" if rid.startswith(("ACP-INFO", "ACP-STDERR")) else "pass" for rid in CLI_ONLY
    }


def test_a_wrong_token_is_a_clear_could_not_start(served: str, tmp_path: Path) -> None:
    """Issue 20: a token the server refuses: nothing is judged, exit 4 (could not start), and
    the output names the refusal (the bridge's stderr: the URL and HTTP 401)."""
    run = run_conformance(tmp_path, [served], "--token-env", "T", env={"T": "wrong"}, timeout=120)
    assert run.returncode == 4, run.stdout + run.stderr
    assert "COULD NOT START" in run.stdout
    assert f"the server at {served} refused the token (HTTP 401)" in run.stdout


def test_bridge_options_without_a_url_are_bad_usage(tmp_path: Path) -> None:
    """--token-env, --transport and --header only go with an agent URL (exit 2 otherwise)."""
    run = run_conformance(tmp_path, REFERENCE, "--transport", "websocket", timeout=60)
    assert run.returncode == 2
    assert "for an agent URL" in run.stderr
