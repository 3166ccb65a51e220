"""``subagents serve --listen``: the command line of the remote server, as a real process
(asyncio and trio drive it; the server itself runs on asyncio, the CLI's loop)."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import anyio
import anyio.abc
import pytest

from subagents.cli import main
from subagents.protocol.acp_remote import DRAINING_METHOD
from tests.remote._server_helpers import TOKEN, WAIT, RawClient, http_client, prompt_request

SERVE = [sys.executable, "-m", "subagents", "serve"]


async def read_url(process: anyio.abc.Process) -> str:
    """The URL of the ``listening on URL`` line the server writes to stderr when ready."""
    assert process.stderr is not None
    seen = b""
    with anyio.fail_after(WAIT):
        while not (found := re.search(rb"listening on (http://\S+/acp)\n", seen)):
            seen += await process.stderr.receive()
    return found.group(1).decode()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.anyio
async def test_sigterm_drains_the_turn_and_reaps_the_agent(tmp_path: Path) -> None:
    """Issue 20: "Clean drain on shutdown (SIGTERM for the CLI): stop accepting, cancel
    in-flight turns so they are answered ..., close streams, reap agent processes, then
    exit", with ``subagents serve --listen 127.0.0.1:0 -- <reference agent>``."""
    pids = tmp_path / "pids"
    agent = f'echo $$ >> {pids}; exec "{sys.executable}" -m subagents.agents.reference'
    command = [*SERVE, "--listen", "127.0.0.1:0", "--", "sh", "-c", agent]
    async with await anyio.open_process(command, stdin=None, stdout=None) as process:
        try:
            url = await read_url(process)
            async with http_client() as http:
                client = RawClient(http, url)
                await client.initialize()
                async with client.stream() as events:
                    session_id = await client.new_session(events)
                    async with client.stream(session_id) as session_events:
                        await client.post(prompt_request(3, session_id, "slow 600"), session_id)
                        await session_events.until_method("session/update")
                        process.send_signal(signal.SIGTERM)
                        _, answer = await session_events.until_answer(3)
                        assert await session_events.rest() == []
                    # Issue 34: the drain's notification (why the connection ends), then the end.
                    drained = [message.get("method") for message in await events.rest()]
                    assert drained == [DRAINING_METHOD]
            with anyio.fail_after(WAIT):
                returncode = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
    assert answer["result"]["stopReason"] == "cancelled"
    assert returncode == 0
    [pid] = [int(line) for line in pids.read_text().split()]
    assert not alive(pid)


@pytest.mark.anyio
async def test_the_runtime_is_served_without_an_agent_command(tmp_path: Path) -> None:
    """Issue 20: without ``-- COMMAND`` the in-process runtime is served (offline model);
    the token comes from a file (never argv) and is required by the server it starts."""
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    token_file.chmod(0o600)
    command = [*SERVE, "--listen", "127.0.0.1:0", "--token-file", str(token_file)]
    async with await anyio.open_process(command, stdin=None, stdout=None) as process:
        try:
            url = await read_url(process)
            async with http_client() as http:
                refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "x"})
                client = RawClient(http, url, token=TOKEN)
                await client.initialize()
                async with client.stream() as events:
                    session_id = await client.new_session(events)
                    async with client.stream(session_id) as session_events:
                        await client.post(prompt_request(3, session_id, "hello"), session_id)
                        _, answer = await session_events.until_answer(3)
                await client.delete()
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(WAIT):
                returncode = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
    assert refused.status_code == 401
    assert answer["result"]["stopReason"] == "end_turn"
    assert returncode == 0


def test_beyond_loopback_without_a_token_the_command_refuses_to_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 20: the token is "REQUIRED unless bound to a loopback address (refuse to start
    otherwise with a clear error)"."""
    assert main(["serve", "--listen", "0.0.0.0:0"]) == 2
    assert "needs a bearer token" in capsys.readouterr().err


def test_bad_listen_and_token_options_are_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The options say what is wrong, one line each, exit status 2."""
    monkeypatch.delenv("NO_SUCH_TOKEN_VAR", raising=False)
    assert main(["serve", "--listen", "nowhere"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err
    assert main(["serve", "--listen", "127.0.0.1:0", "--token-env", "NO_SUCH_TOKEN_VAR"]) == 2
    assert "NO_SUCH_TOKEN_VAR" in capsys.readouterr().err
    assert main(["serve", "--", "some-agent"]) == 2
    assert "--listen" in capsys.readouterr().err
    assert main(["serve", "--listen", "127.0.0.1:0", "--tls-cert", "c.pem"]) == 2
    assert "both a certificate file and a key file" in capsys.readouterr().err


def test_without_the_remote_extra_the_error_names_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20: "When the remote extra is missing, an error naming
    pip install 'subagents[remote]'"."""
    monkeypatch.setitem(sys.modules, "hypercorn", None)
    assert main(["serve", "--listen", "127.0.0.1:0"]) == 2
    assert "pip install 'subagents[remote]'" in capsys.readouterr().err
