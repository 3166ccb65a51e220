"""`subagents run AGENT [PROMPT]`: one delegation through a configured agent, live."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pexpect  # pyright: ignore[reportMissingTypeStubs]
import pytest

from subagents.commands.run import RunOptions, run_async
from subagents.config import builtin_agents

REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A working directory with no registry file, and no user registry either."""
    (tmp_path / "xdg").mkdir()
    return tmp_path


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CONFIG_HOME": str(home / "xdg"), "PYTHONUNBUFFERED": "1"}


def subagents_run(
    home: Path, *args: str, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subagents", "run", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=home,
        env=_env(home),
        check=False,
    )


def ask_config(home: Path) -> Path:
    """A registry file with the reference agent under the name `ref-ask`, permission ask."""
    path = home / "agents.toml"
    path.write_text(
        "[agents.ref-ask]\n"
        'provider = "acp"\n'
        f"command = {json.dumps(REFERENCE)}\n"
        'permission = "ask"\n',
        encoding="utf-8",
    )
    return path


def json_lines(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


# -- pipes -----------------------------------------------------------------------------------


def test_the_agents_text_streams_to_stdout_and_the_run_exits_zero(home: Path) -> None:
    """Issue 9 / run: the child's text goes to stdout; the outcome line to stderr; exit 0."""
    done = subagents_run(home, "reference", "stream 3")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1 2 3 "
    assert "[completed in " in done.stderr


def test_json_mode_prints_one_event_per_line_and_nothing_else(home: Path) -> None:
    """Issue 9 / run --json: every stdout line is a JSON object: started, progress, outcome."""
    done = subagents_run(home, "reference", "stream 3", "--json")
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    assert events[0]["event"] == "started"
    assert events[0]["agent"] == "reference"
    assert str(events[0]["child_id"]).startswith("reference:")
    progress = [e for e in events if e["event"] == "progress"]
    assert [e["text"] for e in progress] == ["1 ", "2 ", "3 "]
    assert all(e["kind"] == "text" for e in progress)
    outcome = events[-1]
    assert outcome["event"] == "outcome"
    assert outcome["status"] == "completed"
    assert outcome["output"] == "1 2 3 "
    assert outcome["failure_kind"] is None
    assert isinstance(outcome["elapsed"], float)


def test_the_spawn_agent_runs_in_process_on_the_offline_model(home: Path) -> None:
    """Issue 9 / run: the built-in spawn agent answers `You said: hello`."""
    done = subagents_run(home, "spawn", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hello"


def test_the_fork_agent_gets_a_parent_session(home: Path) -> None:
    """Issue 9 / run: a fork agent needs a parent; the command makes a root session for it."""
    done = subagents_run(home, "fork", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hello"


def test_a_dash_reads_the_prompt_from_stdin(home: Path) -> None:
    """Issue 9 / run: the prompt `-` (or none) is all of stdin."""
    done = subagents_run(home, "reference", "-", stdin="stream 2\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1 2 "
    done = subagents_run(home, "spawn", stdin="hello there")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hello there"


def test_a_failed_turn_exits_one_with_one_outcome_line(home: Path) -> None:
    """Issue 9 / run: a failed outcome exits 1 with `[failed (KIND): message]`, no traceback."""
    done = subagents_run(home, "reference", "fail")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "[failed (turn): the agent answered Internal error (code -32603)]"
    ]
    assert "Traceback" not in done.stderr


def test_an_unknown_agent_exits_two_naming_the_known_agents(home: Path) -> None:
    """Issue 9 / run: an unknown agent is a usage error (2) that lists the known agents."""
    done = subagents_run(home, "no-such-agent", "hello")
    assert done.returncode == 2
    first = done.stderr.splitlines()[0]
    assert first.startswith("subagents run: no agent named 'no-such-agent' (known: ")
    assert all(name in first for name in builtin_agents())
    assert done.stdout == ""


def test_a_bad_config_file_exits_two_naming_the_problem(home: Path) -> None:
    """Issue 9 / run: a registry file that cannot be used is a usage error (2), one line."""
    bad = home / "bad.toml"
    bad.write_text("[agents.x]\nprovider = 'acp'\n", encoding="utf-8")
    done = subagents_run(home, "x", "hello", "--config", str(bad))
    assert done.returncode == 2
    assert done.stderr.startswith("subagents run: bad configuration: ")
    assert "needs a command" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_agent_that_cannot_start_exits_one_with_a_hint(home: Path) -> None:
    """Issue 9 / run: a start failure is one line `AGENT could not start: ...` and a hint."""
    config = home / "missing.toml"
    config.write_text(
        '[agents.ghost]\nprovider = "acp"\ncommand = ["/nonexistent/ghost-agent"]\n',
        encoding="utf-8",
    )
    done = subagents_run(home, "ghost", "hello", "--config", str(config))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith("subagents run: ghost could not start: ")
    assert "No such file or directory" in lines[0]
    assert lines[1] == (  # what is missing, where from, what to do (Issue 35, C.3)
        "  hint: /nonexistent/ghost-agent does not exist: fix the command of agents.ghost (a "
        "path relative to its file, or a program on PATH)"
    )
    assert "Traceback" not in done.stderr
    json_done = subagents_run(home, "ghost", "hello", "--config", str(config), "--json")
    [event] = json_lines(json_done.stdout)
    assert event["event"] == "error"
    assert event["code"] == "START_FAILED"


@pytest.mark.timeout(60)
def test_a_timeout_cancels_the_turn_and_exits_124(home: Path) -> None:
    """Issue 9 / run --timeout: the signal fires `timed out after N s`; exit 124; the text
    streamed before it stays on stdout. (The bound counts from the start, spawn included:
    5 s leaves the agent, which ticks every 0.1 s once started, ample time under load.)"""
    done = subagents_run(home, "reference", "slow", "--timeout", "5")
    assert done.returncode == 124, done.stderr
    assert "tick" in done.stdout
    assert "[cancelled: timed out after 5 s]" in done.stderr


@pytest.mark.parametrize(
    ("flag", "reply"), [("--yes", "The tool ran."), ("--deny", "Permission denied")]
)
def test_yes_and_deny_answer_the_agents_permission_request(
    home: Path, flag: str, reply: str
) -> None:
    """Issue 9 / run --yes / --deny: the policy answers the child's permission request, and
    --json reports the decision as an event."""
    done = subagents_run(home, "reference", "tool", flag)
    assert done.returncode == 0, done.stderr
    assert reply in done.stdout
    assert "  · tool: " in done.stderr
    events = json_lines(subagents_run(home, "reference", "tool", flag, "--json").stdout)
    [permission] = [e for e in events if e["event"] == "permission"]
    assert permission["allowed"] is (flag == "--yes")


def test_json_progress_lines_speak_the_one_vocabulary(home: Path) -> None:
    """Issue 15, point 8: --json progress lines keep their shape ({event, kind, text, data})
    and carry the vocabulary: a tool call's data names its id, title, kind, status and input;
    its tool result's data names the same id; a spawned child (the in-process loop) reports
    its usage."""
    events = json_lines(subagents_run(home, "reference", "tool", "--yes", "--json").stdout)
    progress = [e for e in events if e["event"] == "progress"]
    assert all(set(e) == {"event", "kind", "text", "data"} for e in progress)
    calls = [e for e in progress if e["kind"] == "tool_call"]
    assert calls  # the call, then its in_progress update: the same id
    call = calls[0]
    assert isinstance(call["data"], dict)
    assert {c["data"]["id"] for c in calls} == {call["data"]["id"]}  # type: ignore[index]
    assert set(call["data"]) == {"id", "title", "tool_kind", "status", "input"}
    assert call["text"] == call["data"]["title"]
    results = [e for e in progress if e["kind"] == "tool_result"]
    assert results
    assert all(isinstance(r["data"], dict) for r in results)
    assert {r["data"]["id"] for r in results} == {call["data"]["id"]}  # type: ignore[index]
    assert results[-1]["data"]["status"] == "completed"  # type: ignore[index]
    spawned = json_lines(subagents_run(home, "spawn", "hello", "--json").stdout)
    usage = [e for e in spawned if e["event"] == "progress" and e["kind"] == "usage"]
    assert usage
    assert isinstance(usage[-1]["data"], dict)
    assert usage[-1]["data"]["input_tokens"] == 1


def test_ask_without_a_terminal_denies_and_says_so(home: Path) -> None:
    """Issue 9 / run: an entry's `permission = "ask"` with no terminal denies, with one note."""
    done = subagents_run(home, "ref-ask", "tool", "--config", str(ask_config(home)))
    assert done.returncode == 0, done.stderr
    assert "Permission denied" in done.stdout
    assert 'permission is "ask"' in done.stderr
    assert "no terminal" in done.stderr


# -- in process, on both backends ------------------------------------------------------------


def _options(agent: str, prompt: str, **changes: object) -> RunOptions:
    fields: dict[str, object] = {
        "spec": builtin_agents()[agent],
        "prompt": prompt,
        "policy": "deny",
        "why": "test",
        "interactive": False,
    }
    fields.update(changes)
    return RunOptions(**fields)  # pyright: ignore[reportArgumentType]


@pytest.mark.anyio
async def test_run_async_streams_and_reports_on_either_backend() -> None:
    """Issue 9 / run: the command's async core runs on asyncio and trio alike."""
    out, err = io.StringIO(), io.StringIO()
    with anyio.fail_after(30):
        status = await run_async(_options("reference", "stream 3"), out, err)
    assert status == 0
    assert out.getvalue() == "1 2 3 "
    assert "[completed in " in err.getvalue()


@pytest.mark.anyio
async def test_run_async_times_out_on_either_backend() -> None:
    """Issue 9 / run --timeout: the timeout cancels the turn on asyncio and trio alike."""
    out, err = io.StringIO(), io.StringIO()
    with anyio.fail_after(30):
        status = await run_async(
            _options("reference", "slow", timeout=0.3, json_mode=True), out, err
        )
    assert status == 124
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert events[-1]["status"] == "cancelled"
    assert events[-1]["message"] == "timed out after 0.3 s"


# -- a terminal (pexpect) --------------------------------------------------------------------


def spawn_run(home: Path, *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "subagents", "run", *args],
        cwd=str(home),
        env=_env(home),
        encoding="utf-8",
        timeout=30,
    )


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    status = child.exitstatus
    assert status is not None, f"killed by signal {child.signalstatus}"
    return status


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("answer", "reply"), [("y", "The tool ran."), ("n", "Permission denied")])
def test_ask_in_a_terminal_asks_the_question_and_obeys_the_answer(
    home: Path, answer: str, reply: str
) -> None:
    """Issue 9 / run: `permission = "ask"` in a terminal asks `Allow AGENT to use TOOL?`
    and the answer decides."""
    child = spawn_run(home, "ref-ask", "tool", "--config", str(ask_config(home)))
    child.expect(r"Allow ref-ask to use .*\[y/N\] ", timeout=30)
    child.sendline(answer)
    child.expect_exact(reply, timeout=30)
    child.expect_exact("[completed in ", timeout=30)
    assert finish(child) == 0


@pytest.mark.timeout(60)
def test_no_prompt_in_a_terminal_is_a_usage_error(home: Path) -> None:
    """Issue 9 / run: no PROMPT and stdin a terminal: one clear line, exit 2."""
    child = spawn_run(home, "reference")
    child.expect_exact("subagents run: no prompt", timeout=30)
    assert finish(child) == 2


@pytest.mark.timeout(60)
def test_ctrl_c_cancels_the_turn_and_exits_130(home: Path) -> None:
    """Issue 9 / run: the first Ctrl-C fires the run's signal (`cancelling...`); the turn
    settles cancelled; exit 130."""
    child = spawn_run(home, "reference", "slow")
    child.expect_exact("tick", timeout=30)
    child.sendintr()
    child.expect_exact("cancelling... (Ctrl-C again to stop the agent)", timeout=30)
    child.expect_exact("[cancelled: interrupted (Ctrl-C)]", timeout=30)
    assert finish(child) == 130


def _children(pid: int) -> Iterator[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            yield int(entry.name)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"


def stubborn_config(home: Path) -> Path:
    """A registry file with `stubborn`: an ACP agent that ignores `session/cancel`."""
    path = home / "stubborn.toml"
    command = [sys.executable, str(Path(__file__).with_name("stubborn_agent.py"))]
    path.write_text(
        f'[agents.stubborn]\nprovider = "acp"\ncommand = {json.dumps(command)}\n',
        encoding="utf-8",
    )
    return path


def _wait_gone(pids: list[int]) -> list[int]:
    """The pids still alive after a bounded wait (the agent's group was signalled)."""
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


@pytest.mark.timeout(60)
def test_two_ctrl_c_in_a_row_exit_130_and_leave_no_process(home: Path) -> None:
    """Issue 9 / run: Ctrl-C twice in a row on `slow`: exit 130, no agent process left."""
    child = spawn_run(home, "reference", "slow")
    child.expect_exact("tick", timeout=30)
    assert child.pid is not None
    agents = list(_children(child.pid))
    assert agents, "the reference agent runs as a child process"
    child.sendintr()
    child.sendintr()
    child.expect_exact("[cancelled: interrupted (Ctrl-C)", timeout=30)
    assert finish(child) == 130
    assert _wait_gone(agents) == []


@pytest.mark.timeout(60)
def test_a_second_ctrl_c_stops_an_agent_that_ignores_the_cancel(home: Path) -> None:
    """Issue 9 / run: an agent that ignores the cancellation keeps going; the second Ctrl-C
    disposes of the run at once (the agent is stopped): exit 130, no process left."""
    child = spawn_run(home, "stubborn", "go", "--config", str(stubborn_config(home)))
    child.expect_exact("tick 2 ", timeout=30)
    assert child.pid is not None
    agents = list(_children(child.pid))
    assert agents, "the agent runs as a child process"
    child.sendintr()
    child.expect_exact("cancelling... (Ctrl-C again to stop the agent)", timeout=30)
    child.expect(r"tick \d+ ", timeout=30)  # it ignores the cancellation
    child.sendintr()
    child.expect_exact("stopping the agent...", timeout=30)
    child.expect_exact("[cancelled: interrupted (Ctrl-C); the agent was stopped", timeout=30)
    assert finish(child) == 130
    assert _wait_gone(agents) == []


def test_a_reader_that_goes_away_ends_the_run_quietly(tmp_path: Path) -> None:
    """Issue 9 / run: `subagents run ... --json | head -1`: when stdout's reader goes away
    the run stops like other tools (status 141, SIGPIPE's), with no error message, and the
    agent is stopped (no process carrying the run's token is left)."""
    token = f"token-{os.getpid()}-{time.monotonic_ns()}"
    config = tmp_path / "subagents.toml"
    config.write_text(
        "[agents.ref]\n"
        f"command = {json.dumps([sys.executable, '-m', 'subagents.agents.reference'])}\n"
        f'env = {{ RUN_TOKEN = "{token}" }}\n'
    )
    command = [sys.executable, "-m", "subagents", "run", "ref", "stream 100000", "--json"]
    with subprocess.Popen(
        [*command, "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        first = json.loads(process.stdout.readline())
        process.stdout.close()
        status = process.wait(timeout=60)
        stderr = process.stderr.read().decode()
    assert first["event"] == "started"
    assert status == 141
    assert "error" not in stderr
    left = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "environ").read_bytes():
                left.append(entry.name)
        except OSError:
            continue
    assert left == []
