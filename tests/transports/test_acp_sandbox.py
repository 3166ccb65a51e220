"""ClientSandbox: the ACP client's fs/* and terminal/* methods, confined to a root directory.

Every test runs on asyncio and on trio, through a real pair of peers over OS pipes: an "agent"
peer sends the requests and a "client" peer answers them with the sandbox's handlers. Commands
signal readiness through a FIFO, and process deaths are awaited on pidfds: nothing sleeps.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from subagents.protocol import JsonValue
from subagents.protocol.acp import to_wire
from subagents.rpc import Peer, Router, RPCError, open_peer
from subagents.transports import FdReceiveStream, open_pipe_pair
from subagents.transports._sandbox_terminals import _Output
from subagents.transports.acp_sandbox import ClientSandbox

pytestmark = pytest.mark.anyio

SESSION = "session-1"
PYTHON = sys.executable


# ---------------------------------------------------------------------------------- helpers


@asynccontextmanager
async def agent_for(sandbox: ClientSandbox) -> AsyncIterator[Peer]:
    """An agent peer connected to a client peer that serves ``sandbox``'s methods."""
    router = Router()
    sandbox.register(router)
    client_in, agent_out = await open_pipe_pair()
    agent_in, client_out = await open_pipe_pair()
    try:
        async with (
            open_peer(client_in, client_out, router=router, name="client"),
            open_peer(agent_in, agent_out, name="agent") as agent,
        ):
            yield agent
    finally:
        with anyio.CancelScope(shield=True):
            await client_in.aclose()
            await agent_in.aclose()


@asynccontextmanager
async def open_sandbox(root: Path, **options: Any) -> AsyncIterator[tuple[ClientSandbox, Peer]]:
    async with ClientSandbox(root, **options) as sandbox, agent_for(sandbox) as agent:
        yield sandbox, agent


async def call(agent: Peer, method: str, **params: JsonValue) -> dict[str, Any]:
    with anyio.fail_after(5):
        result = await agent.request(method, {"sessionId": SESSION, **params})
    assert isinstance(result, dict)
    return cast(dict[str, Any], result)


async def refusal(agent: Peer, method: str, **params: JsonValue) -> RPCError:
    with pytest.raises(RPCError) as caught:
        await call(agent, method, **params)
    return caught.value


async def refusal_after_close(sandbox: ClientSandbox) -> RPCError:
    async with agent_for(sandbox) as agent:
        return await refusal(agent, "terminal/create", command=PYTHON)


async def run(agent: Peer, code: str, *args: str, **params: JsonValue) -> str:
    """Start ``python -c code args...`` in a terminal; its id."""
    created = await call(
        agent, "terminal/create", command=PYTHON, args=["-c", code, *args], **params
    )
    terminal_id = created["terminalId"]
    assert isinstance(terminal_id, str)
    return terminal_id


class Fifo:
    """A named pipe commands write lines to, to say they are ready (read without sleeping)."""

    def __init__(self, directory: Path) -> None:
        self.path = str(directory / "signals.fifo")
        os.mkfifo(self.path)
        # Opened read-write, so that reads wait for data instead of seeing "no writer" as EOF.
        self._stream = FdReceiveStream(os.open(self.path, os.O_RDWR | os.O_NONBLOCK))
        self._buffer = b""

    async def read_line(self) -> str:
        with anyio.fail_after(5):
            while b"\n" not in self._buffer:
                self._buffer += await self._stream.receive()
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    async def aclose(self) -> None:
        await self._stream.aclose()


@asynccontextmanager
async def open_fifo(directory: Path) -> AsyncIterator[Fifo]:
    fifo = Fifo(directory)
    try:
        yield fifo
    finally:
        await fifo.aclose()


class Death:
    """Watches a process that is not our child, through a pidfd, until it dies."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd = os.pidfd_open(pid)

    async def wait(self) -> None:
        """Return once the process has ended (a pidfd turns readable then)."""
        try:
            with anyio.fail_after(5):
                await anyio.wait_readable(self._fd)
        finally:
            os.close(self._fd)


def not_running(pid: int) -> bool:
    """Gone from the process table, or a zombie waiting for its reaper (init, here)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat_file:
            state = stat_file.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


# A command leading its group, with a child that ignores SIGTERM; the child reports
# "<leader pid> <child pid>" on the FIFO once SIGTERM is ignored.
STUBBORN_CHILD = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as fifo:
    fifo.write(f"{os.getppid()} {os.getpid()}\\n")
while True:
    time.sleep(3600)
"""
LEADER_WITH_STUBBORN_CHILD = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[1]])
while True:
    time.sleep(3600)
"""
SLEEPER = """
import os, sys, time
print("hello", flush=True)
with open(sys.argv[1], "w") as fifo:
    fifo.write(f"{os.getpid()}\\n")
while True:
    time.sleep(3600)
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("top secret")
    return path


# ---------------------------------------------------------------------------------- capabilities


async def test_capabilities_advertise_exactly_the_enabled_methods(root: Path) -> None:
    """ACP initialization: the client advertises fs.readTextFile, fs.writeTextFile, terminal."""
    everything = ClientSandbox(root)
    assert to_wire(everything.capabilities()) == {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
    }
    reads_only = ClientSandbox(root, write=False, terminals=False)
    assert to_wire(reads_only.capabilities()) == {
        "fs": {"readTextFile": True, "writeTextFile": False},
        "terminal": False,
    }
    assert reads_only.methods == ("fs/read_text_file",)
    assert everything.methods == (
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    )


async def test_disabled_methods_are_answered_method_not_found(root: Path) -> None:
    """A method not advertised is not served: the peer answers -32601 (file-system.mdx,
    terminals.mdx gate each method on its capability)."""
    async with open_sandbox(root, read=False, terminals=False) as (_, agent):
        await call(agent, "fs/write_text_file", path=str(root / "a.txt"), content="x")
        for method, params in [
            ("fs/read_text_file", {"path": str(root / "a.txt")}),
            ("terminal/create", {"command": PYTHON}),
            ("terminal/output", {"terminalId": "terminal-1"}),
            ("terminal/release", {"terminalId": "terminal-1"}),
        ]:
            error = await refusal(agent, method, **params)
            assert error.code == -32601, method
    assert (root / "a.txt").read_text() == "x"


# ---------------------------------------------------------------------------------- fs: escapes


async def test_a_relative_path_is_refused(root: Path) -> None:
    """ACP: "All file paths in the protocol MUST be absolute"."""
    (root / "notes.txt").write_text("n")
    async with open_sandbox(root) as (_, agent):
        for path in ["notes.txt", "./notes.txt", "../root/notes.txt"]:
            error = await refusal(agent, "fs/read_text_file", path=path)
            assert (error.code, error.data) == (-32602, {"path": path, "reason": "not_absolute"})
        error = await refusal(agent, "fs/write_text_file", path="new.txt", content="x")
        assert error.code == -32602
    assert not (root / "new.txt").exists()


async def test_dot_dot_traversal_out_of_the_root_is_refused(root: Path, outside: Path) -> None:
    """Sandbox: `..` is resolved before the root check, for reads and writes."""
    escape = f"{root}/../outside/secret.txt"
    async with open_sandbox(root) as (_, agent):
        error = await refusal(agent, "fs/read_text_file", path=escape)
        assert (error.code, error.data) == (-32602, {"path": escape, "reason": "outside_root"})
        assert "outside the sandbox root" in error.message
        error = await refusal(agent, "fs/write_text_file", path=escape, content="pwned")
        assert error.code == -32602
        deep = f"{root}/missing/../../outside/new.txt"
        error = await refusal(agent, "fs/write_text_file", path=deep, content="pwned")
        assert error.code == -32602
    assert (outside / "secret.txt").read_text() == "top secret"
    assert not (outside / "new.txt").exists()
    assert not (root / "missing").exists()


async def test_an_absolute_path_elsewhere_is_refused(root: Path, outside: Path) -> None:
    """Sandbox: only paths under the root are served."""
    async with open_sandbox(root) as (_, agent):
        for path in [str(outside / "secret.txt"), "/etc/passwd", "/"]:
            error = await refusal(agent, "fs/read_text_file", path=path)
            assert error.data == {"path": path, "reason": "outside_root"}
        target = str(outside / "new.txt")
        error = await refusal(agent, "fs/write_text_file", path=target, content="x")
        assert error.data == {"path": target, "reason": "outside_root"}
    assert not (outside / "new.txt").exists()


async def test_a_symlinked_file_pointing_outside_is_refused(root: Path, outside: Path) -> None:
    """Sandbox: symbolic links are resolved before the root check (file escape)."""
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dangling.txt").symlink_to(outside / "not-yet.txt")
    async with open_sandbox(root) as (_, agent):
        link = str(root / "link.txt")
        error = await refusal(agent, "fs/read_text_file", path=link)
        assert error.data == {"path": link, "reason": "outside_root"}
        error = await refusal(agent, "fs/write_text_file", path=link, content="pwned")
        assert error.code == -32602
        dangling = str(root / "dangling.txt")
        error = await refusal(agent, "fs/write_text_file", path=dangling, content="pwned")
        assert error.data == {"path": dangling, "reason": "outside_root"}
    assert (outside / "secret.txt").read_text() == "top secret"
    assert not (outside / "not-yet.txt").exists()


async def test_a_symlinked_directory_pointing_outside_is_refused(root: Path, outside: Path) -> None:
    """Sandbox: a path through a linked directory is refused, for existing files and for a
    file that does not exist yet (its parent is the link)."""
    (root / "linked").symlink_to(outside, target_is_directory=True)
    async with open_sandbox(root) as (_, agent):
        existing = str(root / "linked" / "secret.txt")
        error = await refusal(agent, "fs/read_text_file", path=existing)
        assert error.data == {"path": existing, "reason": "outside_root"}
        fresh = str(root / "linked" / "fresh.txt")
        error = await refusal(agent, "fs/write_text_file", path=fresh, content="pwned")
        assert error.data == {"path": fresh, "reason": "outside_root"}
        nested = str(root / "linked" / "sub" / "fresh.txt")
        error = await refusal(agent, "fs/write_text_file", path=nested, content="pwned")
        assert error.code == -32602
    assert os.listdir(outside) == ["secret.txt"]


async def test_links_and_dot_dots_that_stay_inside_the_root_are_followed(root: Path) -> None:
    """The sandbox refuses escapes only: a link or `..` that stays inside is fine."""
    (root / "real.txt").write_text("real")
    (root / "alias.txt").symlink_to(root / "real.txt")
    (root / "sub").mkdir()
    async with open_sandbox(root) as (_, agent):
        read = await call(agent, "fs/read_text_file", path=str(root / "alias.txt"))
        assert read == {"content": "real"}
        read = await call(agent, "fs/read_text_file", path=f"{root}/sub/../real.txt")
        assert read == {"content": "real"}
        await call(agent, "fs/write_text_file", path=str(root / "alias.txt"), content="new")
    assert (root / "real.txt").read_text() == "new"


# ---------------------------------------------------------------------------------- fs: reads


async def test_read_honours_line_and_limit(root: Path) -> None:
    """fs/read_text_file: `line` is 1-based, `limit` counts lines."""
    path = str(root / "lines.txt")
    (root / "lines.txt").write_bytes("one\ntwo\r\nthrée\nfour".encode())
    async with open_sandbox(root) as (_, agent):

        async def read(**params: JsonValue) -> str:
            content = (await call(agent, "fs/read_text_file", path=path, **params))["content"]
            assert isinstance(content, str)
            return content

        assert await read() == "one\ntwo\r\nthrée\nfour"
        assert await read(line=2, limit=2) == "two\r\nthrée\n"
        assert await read(line=3) == "thrée\nfour"
        assert await read(limit=1) == "one\n"
        assert await read(line=4, limit=10) == "four"
        assert await read(line=9) == ""
        assert await read(limit=0) == ""
        assert await read(line=0, limit=1) == "one\n"  # the schema allows 0: read as 1


async def test_read_of_a_missing_file_is_resource_not_found(root: Path) -> None:
    """Error choice: a missing file is -32002 Resource not found, with the path."""
    missing = str(root / "missing.txt")
    async with open_sandbox(root) as (_, agent):
        error = await refusal(agent, "fs/read_text_file", path=missing)
    assert (error.code, error.data) == (-32002, {"path": missing, "reason": "not_found"})


async def test_read_of_a_directory_or_too_much_is_refused(root: Path) -> None:
    """A directory is not a text file; a read larger than max_read_bytes needs line/limit."""
    (root / "big.txt").write_text("0123456789\n" * 3)
    async with open_sandbox(root, max_read_bytes=20) as (_, agent):
        error = await refusal(agent, "fs/read_text_file", path=str(root))
        assert (error.code, error.data) == (-32602, {"path": str(root), "reason": "is_directory"})
        big = str(root / "big.txt")
        error = await refusal(agent, "fs/read_text_file", path=big)
        assert (error.code, error.data) == (-32602, {"path": big, "reason": "too_large"})
        read = await call(agent, "fs/read_text_file", path=big, line=2, limit=1)
        assert read == {"content": "0123456789\n"}


# ---------------------------------------------------------------------------------- fs: writes


async def test_write_creates_a_missing_file_and_replaces_an_existing_one(root: Path) -> None:
    """file-system.mdx: "The Client MUST create the file if it doesn't exist"."""
    path = root / "new.txt"
    async with open_sandbox(root) as (_, agent):
        assert await call(agent, "fs/write_text_file", path=str(path), content="é😀\n") == {}
        assert path.read_text(encoding="utf-8") == "é😀\n"
        await call(agent, "fs/write_text_file", path=str(path), content="short")
        assert path.read_text() == "short"
        nested = root / "a" / "b" / "c.txt"
        await call(agent, "fs/write_text_file", path=str(nested), content="deep")
        assert nested.read_text() == "deep"
        read = await call(agent, "fs/read_text_file", path=str(path))
        assert read == {"content": "short"}
        error = await refusal(agent, "fs/write_text_file", path=str(root), content="x")
        assert error.data == {"path": str(root), "reason": "is_directory"}


async def test_fs_methods_work_without_a_running_sandbox(root: Path) -> None:
    """Only terminals need the sandbox's task group; terminal/create says so."""
    sandbox = ClientSandbox(root)
    async with agent_for(sandbox) as agent:
        await call(agent, "fs/write_text_file", path=str(root / "f.txt"), content="ok")
        assert await call(agent, "fs/read_text_file", path=str(root / "f.txt")) == {"content": "ok"}
        error = await refusal(agent, "terminal/create", command=PYTHON)
        assert (error.code, error.data) == (-32603, {"reason": "not_running"})


# ---------------------------------------------------------------------------------- terminals


async def test_create_answers_at_once_and_output_has_no_exit_status_while_running(
    root: Path, tmp_path: Path
) -> None:
    """terminals.mdx: terminal/create returns the terminalId immediately."""
    async with open_fifo(tmp_path) as fifo, open_sandbox(root) as (_, agent):
        terminal_id = await run(agent, SLEEPER, fifo.path)
        await fifo.read_line()
        output = await call(agent, "terminal/output", terminalId=terminal_id)
        assert "exitStatus" not in output
        assert output["truncated"] is False
        await call(agent, "terminal/release", terminalId=terminal_id)


async def test_output_combines_stdout_and_stderr_and_reports_the_exit(root: Path) -> None:
    """terminal/output: output so far, `truncated`, and exitStatus once exited."""
    code = "import sys; print('out', flush=True); sys.stderr.write('err\\n')"
    async with open_sandbox(root) as (_, agent):
        terminal_id = await run(agent, code)
        assert await call(agent, "terminal/wait_for_exit", terminalId=terminal_id) == {
            "exitCode": 0
        }
        output = await call(agent, "terminal/output", terminalId=terminal_id)
        assert output == {"output": "out\nerr\n", "truncated": False, "exitStatus": {"exitCode": 0}}


async def test_wait_for_exit_reports_the_exit_code_or_the_signal(root: Path) -> None:
    """terminal/wait_for_exit: `exitCode` for an exit, `signal` (its name) for a kill."""
    async with open_sandbox(root) as (_, agent):
        exits = await run(agent, "import sys; sys.exit(3)")
        killed = await run(agent, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        assert await call(agent, "terminal/wait_for_exit", terminalId=exits) == {"exitCode": 3}
        assert await call(agent, "terminal/wait_for_exit", terminalId=killed) == {
            "signal": "SIGKILL"
        }
        output = await call(agent, "terminal/output", terminalId=killed)
        assert output["exitStatus"] == {"signal": "SIGKILL"}


async def test_env_and_cwd_come_from_the_request_on_top_of_the_base_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """terminal/create: `env` is added to the child's environment; `cwd` inside the root is
    used; the parent's other variables are not passed (build_child_env)."""
    monkeypatch.setenv("SANDBOX_TEST_SECRET", "leaked")
    (root / "sub").mkdir()
    code = (
        "import os; print(os.getcwd()); print(os.environ.get('GREETING')); "
        "print(os.environ.get('BASE')); print(os.environ.get('SANDBOX_TEST_SECRET'))"
    )
    env: JsonValue = [{"name": "GREETING", "value": "hi"}, {"name": "BASE", "value": "over"}]
    async with open_sandbox(root, terminal_env={"BASE": "base"}) as (_, agent):
        terminal_id = await run(agent, code, cwd=str(root / "sub"), env=env)
        await call(agent, "terminal/wait_for_exit", terminalId=terminal_id)
        output = await call(agent, "terminal/output", terminalId=terminal_id)
        assert output["output"].splitlines() == [str(root / "sub"), "hi", "over", "None"]
        default_cwd = await run(agent, "import os; print(os.getcwd())")
        await call(agent, "terminal/wait_for_exit", terminalId=default_cwd)
        output = await call(agent, "terminal/output", terminalId=default_cwd)
        assert output["output"] == f"{root}\n"


async def test_a_working_directory_outside_the_root_is_refused(root: Path, outside: Path) -> None:
    """Sandbox: a terminal's cwd is held to the same rules as fs paths."""
    (root / "escape").symlink_to(outside, target_is_directory=True)
    async with open_sandbox(root) as (_, agent):
        for cwd, reason in [
            (str(outside), "outside_root"),
            (f"{root}/..", "outside_root"),
            (str(root / "escape"), "outside_root"),
            ("relative", "not_absolute"),
        ]:
            error = await refusal(agent, "terminal/create", command=PYTHON, cwd=cwd)
            assert (error.code, error.data) == (-32602, {"path": cwd, "reason": reason})
        missing = str(root / "missing")
        error = await refusal(agent, "terminal/create", command=PYTHON, cwd=missing)
        assert error.code == -32002
        error = await refusal(agent, "terminal/create", command=str(root / "no-such-command"))
        assert error.code == -32002
        assert error.data == {
            "command": str(root / "no-such-command"),
            "reason": "command_not_found",
        }


async def test_output_byte_limit_keeps_the_tail_cut_at_a_character_boundary(root: Path) -> None:
    """terminals.mdx: "The Client MUST ensure truncation happens at a character boundary";
    the output is truncated from the beginning and `truncated` is set."""
    text = "a" + "é" * 10 + "😀" * 3  # 1 + 20 + 12 = 33 bytes
    code = f"import sys; sys.stdout.buffer.write({text.encode()!r})"
    expected = {
        33: text,  # fits: nothing cut
        32: "é" * 10 + "😀" * 3,
        14: "é😀😀😀",
        13: "😀😀😀",  # the cut falls inside an "é": its second byte is dropped
        11: "😀😀",  # inside an emoji: its last three bytes are dropped
        1: "",
        0: "",
    }
    async with open_sandbox(root) as (_, agent):
        for limit, kept in expected.items():
            terminal_id = await run(agent, code, outputByteLimit=limit)
            await call(agent, "terminal/wait_for_exit", terminalId=terminal_id)
            output = await call(agent, "terminal/output", terminalId=terminal_id)
            assert output["output"] == kept, limit
            assert output["truncated"] is (limit < 33), limit
            assert len(output["output"].encode()) <= limit
            await call(agent, "terminal/release", terminalId=terminal_id)


async def test_output_is_limited_by_the_sandbox_when_the_agent_sets_no_limit(root: Path) -> None:
    """Without outputByteLimit the sandbox's max_output_bytes applies, the same way."""
    code = "import sys; sys.stdout.write('x' * 100 + 'é' * 5)"
    async with open_sandbox(root, max_output_bytes=9) as (_, agent):
        terminal_id = await run(agent, code)
        await call(agent, "terminal/wait_for_exit", terminalId=terminal_id)
        output = await call(agent, "terminal/output", terminalId=terminal_id)
        assert (output["output"], output["truncated"]) == ("éééé", True)


async def test_output_holds_back_a_character_still_being_written() -> None:
    """terminal/output never returns half a character, even mid-stream."""
    output = _Output(limit=100)
    emoji = "😀".encode()
    output.feed(b"ok " + emoji[:2])
    assert output.text(complete=False) == "ok "
    output.feed(emoji[2:])
    assert output.text(complete=False) == "ok 😀"
    output.feed(b"\xff")  # not UTF-8 at all: replaced, not held back
    assert output.text(complete=False) == "ok 😀\ufffd"
    assert output.truncated is False


async def test_kill_stops_the_command_and_the_terminal_stays_valid(
    root: Path, tmp_path: Path
) -> None:
    """terminals.mdx: terminal/kill kills the command; the terminal remains valid (output and
    exit status readable) until it is released."""
    async with open_fifo(tmp_path) as fifo, open_sandbox(root) as (_, agent):
        terminal_id = await run(agent, SLEEPER, fifo.path)
        death = Death(int(await fifo.read_line()))
        assert await call(agent, "terminal/kill", terminalId=terminal_id) == {}
        await death.wait()
        output = await call(agent, "terminal/output", terminalId=terminal_id)
        assert output == {
            "output": "hello\n",
            "truncated": False,
            "exitStatus": {"signal": "SIGTERM"},
        }
        assert await call(agent, "terminal/wait_for_exit", terminalId=terminal_id) == {
            "signal": "SIGTERM"
        }
        assert await call(agent, "terminal/kill", terminalId=terminal_id) == {}
        assert await call(agent, "terminal/release", terminalId=terminal_id) == {}


async def test_release_kills_the_whole_process_group_and_forgets_the_id(
    root: Path, tmp_path: Path
) -> None:
    """terminals.mdx: terminal/release kills a running command and invalidates the id; the
    whole group goes, including a child that ignores SIGTERM."""
    async with open_fifo(tmp_path) as fifo, open_sandbox(root) as (_, agent):
        terminal_id = await run(agent, LEADER_WITH_STUBBORN_CHILD, fifo.path, STUBBORN_CHILD)
        leader, child = (int(pid) for pid in (await fifo.read_line()).split())
        deaths = [Death(leader), Death(child)]
        assert await call(agent, "terminal/release", terminalId=terminal_id) == {}
        for death in deaths:
            await death.wait()
        assert not_running(leader)
        assert not_running(child)
        for method in ("terminal/output", "terminal/wait_for_exit", "terminal/release"):
            error = await refusal(agent, method, terminalId=terminal_id)
            assert error.code == -32002
            assert error.data == {"terminalId": terminal_id, "reason": "unknown_terminal"}


async def test_a_background_process_holding_the_output_does_not_hold_back_the_exit(
    root: Path, tmp_path: Path
) -> None:
    """terminal/wait_for_exit reports the command's exit even while a process it left behind
    keeps the output open; release then kills that process too (same group)."""
    leader = (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', sys.argv[2], sys.argv[1]])\n"
    )
    async with open_fifo(tmp_path) as fifo, open_sandbox(root) as (_, agent):
        terminal_id = await run(agent, leader, fifo.path, STUBBORN_CHILD)
        child = int((await fifo.read_line()).split()[1])
        death = Death(child)
        assert await call(agent, "terminal/wait_for_exit", terminalId=terminal_id) == {
            "exitCode": 0
        }
        output = await call(agent, "terminal/output", terminalId=terminal_id)
        assert output["exitStatus"] == {"exitCode": 0}
        assert not not_running(child)
        await call(agent, "terminal/release", terminalId=terminal_id)
        await death.wait()


async def test_an_unknown_terminal_or_another_session_s_terminal_is_not_found(
    root: Path,
) -> None:
    """Error choice: -32002 Resource not found for a terminal id that this session does not have."""
    async with open_sandbox(root) as (_, agent):
        error = await refusal(agent, "terminal/output", terminalId="nope")
        assert error.code == -32002
        assert "Unknown terminal" in error.message
        terminal_id = await run(agent, "pass")
        with pytest.raises(RPCError) as caught, anyio.fail_after(5):
            await agent.request(
                "terminal/kill", {"sessionId": "another-session", "terminalId": terminal_id}
            )
        assert caught.value.code == -32002
        await call(agent, "terminal/release", terminalId=terminal_id)


async def test_cancelling_wait_for_exit_leaves_the_command_running(
    root: Path, tmp_path: Path
) -> None:
    """The caller's cancellation ($/cancel_request) ends the wait, not the command."""
    async with open_fifo(tmp_path) as fifo, open_sandbox(root) as (_, agent):
        terminal_id = await run(agent, SLEEPER, fifo.path)
        await fifo.read_line()
        params: JsonValue = {"sessionId": SESSION, "terminalId": terminal_id}
        with pytest.raises(TimeoutError):
            await agent.request("terminal/wait_for_exit", params, timeout=0.05)
        output = await call(agent, "terminal/output", terminalId=terminal_id)
        assert "exitStatus" not in output
        await call(agent, "terminal/release", terminalId=terminal_id)


async def test_max_terminals_bounds_the_terminals_alive_at_once(root: Path) -> None:
    """A sandbox runs at most max_terminals commands; releasing one makes room."""
    async with open_sandbox(root, max_terminals=1) as (_, agent):
        first = await run(agent, "pass")
        error = await refusal(agent, "terminal/create", command=PYTHON)
        assert (error.code, error.data) == (-32603, {"reason": "too_many_terminals", "limit": 1})
        await call(agent, "terminal/release", terminalId=first)
        second = await run(agent, "pass")
        await call(agent, "terminal/release", terminalId=second)


async def test_closing_the_sandbox_kills_and_reaps_every_terminal(
    root: Path, tmp_path: Path
) -> None:
    """aclose/exit: no process is left behind, whatever state the terminals are in."""
    async with open_fifo(tmp_path) as fifo:
        async with open_sandbox(root) as (sandbox, agent):
            await run(agent, LEADER_WITH_STUBBORN_CHILD, fifo.path, STUBBORN_CHILD)
            leader, child = (int(pid) for pid in (await fifo.read_line()).split())
            await run(agent, SLEEPER, fifo.path)
            sleeper = int(await fifo.read_line())
            killed = await run(agent, SLEEPER, fifo.path)
            killed_pid = int(await fifo.read_line())
            await call(agent, "terminal/kill", terminalId=killed)
            await run(agent, "pass")
            deaths = [Death(pid) for pid in (leader, child, sleeper)]
        for death in deaths:
            await death.wait()
        # Our own children (the terminals' commands) are reaped, not just dead.
        for pid in (leader, sleeper, killed_pid):
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        assert not_running(child)
        error = await refusal_after_close(sandbox)
        assert error.data == {"reason": "not_running"}


async def test_aclose_is_idempotent_and_leaves_the_sandbox_closed(root: Path) -> None:
    """aclose() may be called before the block ends; exiting afterwards is fine."""
    async with open_sandbox(root) as (sandbox, agent):
        terminal_id = await run(agent, "import time; time.sleep(3600)")
        await sandbox.aclose()
        await sandbox.aclose()
        error = await refusal(agent, "terminal/output", terminalId=terminal_id)
        assert error.code == -32002
        error = await refusal(agent, "terminal/create", command=PYTHON)
        assert error.data == {"reason": "not_running"}
