"""Agent child processes: own group, environment policy, stderr tail, shutdown ladder."""

from __future__ import annotations

import os
import signal
import sys
import textwrap

import anyio
import pytest

from subagents.transports import (
    BASE_ENV_VARS,
    AgentProcess,
    ProcessStartError,
    build_child_env,
    open_agent_process,
)

pytestmark = pytest.mark.anyio


def py(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def read_line(stream: anyio.abc.ByteReceiveStream) -> bytes:
    data = b""
    with anyio.fail_after(10):
        while not data.endswith(b"\n"):
            data += await stream.receive()
    return data


async def test_a_100_mb_stderr_flood_never_blocks_and_its_tail_is_kept() -> None:
    """DESIGN: stderr drained continuously into a bounded tail (the official SDK deadlocks)."""
    code = """
        import sys
        chunk = "e" * 65535 + "\\n"
        for _ in range(1600):                 # 100 MiB
            sys.stderr.write(chunk)
        sys.stderr.write("THE END\\n")
        sys.stderr.flush()
        print("done", flush=True)
    """
    async with open_agent_process(py(code)) as child:
        assert await read_line(child.stdout) == b"done\n"
        with anyio.fail_after(30):
            exit_ = await child.wait()
    assert exit_.returncode == 0
    assert child.stderr_bytes == 1600 * 65536 + 8
    assert exit_.stderr_tail.endswith("THE END\n")
    assert len(exit_.stderr_tail.encode()) <= 64 * 1024


async def test_close_leaves_no_zombie_and_no_orphan_grandchild() -> None:
    """Shutdown ladder: the whole group goes, even a grandchild that ignores SIGTERM."""
    code = """
        import os, signal, sys, time
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.close(1)
            while True:
                time.sleep(1)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print(pid, flush=True)
        sys.stdin.read()          # EOF on close: the leader would exit, the grandchild not
        time.sleep(60)
    """
    async with open_agent_process(py(code), close_timeout=0.3, term_timeout=0.3) as child:
        grandchild = int(await read_line(child.stdout))
        leader = child.pid
        assert alive(grandchild)
    assert child.exit is not None
    assert child.exit.returncode == -signal.SIGKILL
    assert not alive(leader)
    with anyio.fail_after(5):
        while alive(grandchild):  # noqa: ASYNC110 - SIGKILL delivery is not an event we get
            await anyio.sleep(0.01)


async def test_a_child_that_exits_on_stdin_eof_is_not_signalled() -> None:
    """The ladder starts gently: closing stdin is enough for a well-behaved agent."""
    code = """
        import sys
        sys.stdin.read()
        sys.exit(0)
    """
    async with open_agent_process(py(code)) as child:
        pass
    assert child.exit is not None
    assert child.exit.returncode == 0


async def test_the_exit_is_described_with_status_and_stderr_tail() -> None:
    """A crash names its cause: exit status (or signal) and the last stderr lines."""
    code = """
        import sys
        sys.stderr.write("fatal: the model server is down\\n")
        sys.exit(3)
    """
    async with open_agent_process(py(code)) as child:
        with anyio.fail_after(10):
            exit_ = await child.wait()
    assert exit_.returncode == 3
    assert exit_.describe() == (
        "exited with status 3; stderr tail: 'fatal: the model server is down'"
    )
    killed = await _killed_exit()
    assert killed.startswith("was killed by SIGKILL")


async def _killed_exit() -> str:
    async with open_agent_process(py("import os, signal; os.kill(os.getpid(), 9)")) as child:
        with anyio.fail_after(10):
            return (await child.wait()).describe()


def test_the_environment_is_the_documented_base_plus_what_the_caller_passes() -> None:
    """Env policy: no silent inheritance (API keys pass only when configured)."""
    parent = {"PATH": "/bin", "HOME": "/root", "SECRET_API_KEY": "canary", "LANG": "C.UTF-8"}
    assert build_child_env(parent=parent) == {"PATH": "/bin", "HOME": "/root", "LANG": "C.UTF-8"}
    assert build_child_env({"SECRET_API_KEY": "given"}, parent=parent)["SECRET_API_KEY"] == "given"
    assert build_child_env(inherit_env=True, parent=parent) == parent
    assert set(build_child_env(parent=parent)) <= set(BASE_ENV_VARS)


async def test_the_child_sees_only_the_policy_s_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A canary secret in the parent's environment does not reach the child by default."""
    monkeypatch.setenv("SUBAGENTS_CANARY_SECRET", "do-not-leak")
    code = """
        import os
        print(os.environ.get("SUBAGENTS_CANARY_SECRET", "absent"), os.environ.get("GIVEN"))
    """
    async with open_agent_process(py(code), env={"GIVEN": "yes"}) as child:
        assert await read_line(child.stdout) == b"absent yes\n"
        assert "SUBAGENTS_CANARY_SECRET" not in child.env_names
    async with open_agent_process(py(code), inherit_env=True) as child:
        assert await read_line(child.stdout) == b"do-not-leak None\n"


async def test_a_missing_command_is_a_clear_start_error() -> None:
    """Bad input gets a clear error naming the cause."""
    with pytest.raises(ProcessStartError, match="cannot start '/no/such/agent'"):
        async with open_agent_process(["/no/such/agent"]):
            pass


async def test_the_child_runs_in_its_own_process_group() -> None:
    """Own process group, so the ladder can signal the whole tree."""
    async with open_agent_process(py("import os; print(os.getpgid(0))")) as child:
        assert int(await read_line(child.stdout)) == child.pid
    assert os.getpgid(0) != child.pid


async def test_cancelling_the_owner_still_runs_the_bounded_ladder() -> None:
    """Cleanup is shielded from cancellation and bounded."""
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    children: list[AgentProcess] = []
    with anyio.move_on_after(0.2):
        async with open_agent_process(py(code), close_timeout=0.2, term_timeout=0.2) as child:
            children.append(child)
            await anyio.sleep_forever()
    [child] = children
    assert child.exit is not None
    assert child.exit.returncode == -signal.SIGKILL
