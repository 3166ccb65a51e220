"""Faults of the chaos agent through ``subagents run`` (issue 10, part 2): the command ends in
bound with the exit status of the outcome, one line naming the fault, the text streamed
before the fault on stdout, and no agent process left behind (found by a token in its
environment, from ``/proc``)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

Observe = Callable[[str, str, str], None]
CHAOS = Path(__file__).with_name("chaos_agent.py")
ALL = "".join(f"chunk {i}" for i in range(1, 6))


def leftovers(token: str) -> list[int]:
    """Processes whose environment carries ``token`` (the run's agent and its children)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"CHAOS_TOKEN={token}".encode() in environ:
            found.append(int(entry.name))
    return found


def run_chaos(
    tmp_path: Path, fault: str, *args: str, options: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess[str], str]:
    token = uuid.uuid4().hex
    command = [sys.executable, str(CHAOS), fault, *args]
    config = tmp_path / "subagents.toml"
    config.write_text(
        f'[agents.chaos]\nprovider = "acp"\ncommand = {command!r}\n'.replace("'", '"')
        + f'env = {{ CHAOS_TOKEN = "{token}" }}\n'
        + "startup_timeout = 3\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "subagents",
            "run",
            "chaos",
            "go",
            "--config",
            str(config),
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    return done, token


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie is dead: once the command exited, its orphans belong to
    init, which reaps them in its own time)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    ("fault", "args"),
    [
        ("none", ()),
        ("split", ()),
        ("garbage", ()),
        ("huge-line", ("100",)),
        ("stderr-flood", ("100",)),
        ("no-eof-exit", ()),
        ("duplicate", ()),
        ("storm", ("2000",)),
    ],
)
def test_faults_the_run_survives_exit_0_with_the_whole_text(
    tmp_path: Path, fault: str, args: tuple[str, ...], observe: Observe
) -> None:
    done, token = run_chaos(tmp_path, fault, *args)
    assert done.returncode == 0, done.stderr[-2000:]
    expected = "storm of 2000 requests answered" if fault == "storm" else ALL
    assert done.stdout == expected
    assert leftovers(token) == []
    observe("subagents run", fault, f"exit 0; the whole text on stdout; {last_line(done.stderr)}")


def test_a_crash_exits_1_naming_the_status_after_the_text(tmp_path: Path, observe: Observe) -> None:
    done, token = run_chaos(tmp_path, "crash-after", "3")
    assert done.returncode == 1
    assert done.stdout == "chunk 1chunk 2chunk 3"
    assert "exited with status 3" in done.stderr
    assert "crashing on purpose" in done.stderr
    assert leftovers(token) == []
    observe(
        "subagents run",
        "crash-after",
        f"exit 1; the 3 chunks on stdout; {last_line(done.stderr)}",
    )


def test_an_answer_to_the_cancel_notification_still_ends_the_run_cancelled(
    tmp_path: Path, observe: Observe
) -> None:
    done, token = run_chaos(tmp_path, "answer-notify", options=("--timeout", "1.5"))
    assert done.returncode == 124, done.stderr[-2000:]
    assert done.stdout.startswith("chunk 1")
    assert leftovers(token) == []
    observe("subagents run", "answer-notify", f"exit 124 (--timeout 1.5); {last_line(done.stderr)}")


@pytest.mark.parametrize("fault", ["hang", "ignore-cancel", "wrong-ids"])
def test_a_turn_that_never_ends_is_ended_by_the_timeout(
    tmp_path: Path, fault: str, observe: Observe
) -> None:
    """``--timeout`` fires the signal; an agent that ignores it is abandoned ``--stop-grace``
    seconds later (10 by default) and stopped; exit 124."""
    done, token = run_chaos(tmp_path, fault, options=("--timeout", "2", "--stop-grace", "1"))
    assert done.returncode == 124, done.stderr[-2000:]
    assert done.stdout.startswith("chunk 1chunk 2")
    assert "timed out after 2 s" in done.stderr
    assert "the agent did not end its turn 1 s after the cancellation" in done.stderr
    assert leftovers(token) == []
    observe("subagents run", fault, f"exit 124 (--timeout 2); {last_line(done.stderr)}")


@pytest.mark.parametrize("fault", ["hang-init", "exit-during-init"])
def test_a_start_that_fails_exits_1_with_one_line(
    tmp_path: Path, fault: str, observe: Observe
) -> None:
    done, token = run_chaos(tmp_path, fault)
    assert done.returncode == 1
    assert done.stdout == ""
    first = [line for line in done.stderr.splitlines() if line.startswith("subagents run:")]
    assert len(first) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert leftovers(token) == []
    observe("subagents run", fault, f"exit 1; {first[0]}")


def test_no_grandchild_survives_the_command(tmp_path: Path, observe: Observe) -> None:
    pid_file = tmp_path / "grandchild.pid"
    done, token = run_chaos(tmp_path, "grandchild", str(pid_file))
    assert done.returncode == 0
    assert leftovers(token) == []
    assert not alive(int(pid_file.read_text()))
    observe("subagents run", "grandchild", "exit 0; the agent and its grandchild are gone")
