"""AcpProvider: ``authenticate`` when configured, and cold resume through ``session/resume``
when the agent advertises resume but not load (real child processes: the reference agent and
tests/providers/resume_only_agent.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from subagents.agents.reference import AUTH_ENV_VAR, SESSION_DIR_ENV_VAR
from subagents.providers import (
    CancelSignal,
    ContinuationManager,
    SubagentError,
    SubagentErrorCode,
    SubagentRequest,
    SubagentService,
)
from subagents.providers.acp import AcpProvider

pytestmark = pytest.mark.anyio

REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]
RESUME_ONLY = [sys.executable, str(Path(__file__).with_name("resume_only_agent.py"))]
LOG_ENV_VAR = "RESUME_ONLY_AGENT_LOG"  # see resume_only_agent.py

METHOD = "reference-token"
AUTH_ENV = {AUTH_ENV_VAR: METHOD}
"""The reference agent requires ``authenticate`` with ``METHOD`` before any session."""


# --- authenticate ---------------------------------------------------------------------------


async def test_with_the_agents_auth_method_a_run_completes() -> None:
    """Issue 5: "start = spawn + initialize (+ authenticate when configured) + session/new":
    with ``auth_method`` the agent's required method, the run starts and completes."""
    async with AcpProvider(REFERENCE, env=AUTH_ENV, auth_method=METHOD) as provider:
        with anyio.fail_after(20):
            run = await provider.start(SubagentRequest("echo hello"), cancel=CancelSignal())
            async with run:
                outcome = await run.result()
    assert outcome.status == "completed"
    assert outcome.output == "echo hello"


async def test_a_continuable_child_authenticates_too() -> None:
    """Issue 5: "start = spawn + initialize (+ authenticate when configured) + session/new",
    for a continuable child: its session opens and hears later messages."""
    async with AcpProvider(REFERENCE, env=AUTH_ENV, auth_method=METHOD) as provider:
        with anyio.fail_after(20):
            child = await provider.prepare_continuable(
                SubagentRequest("echo first"), cancel=CancelSignal()
            )
            try:
                second = await child.send("echo second")
            finally:
                await child.dispose()
    assert child.outcomes[0].output == "echo first"
    assert second.status == "completed"
    assert second.output == "echo second"


async def test_without_auth_method_the_start_fails_naming_authentication() -> None:
    """Issue 5: "start = spawn + initialize (+ authenticate when configured) + session/new":
    an agent that requires authentication, started without ``auth_method``, fails the start
    (START_FAILED, nothing published) with the agent's auth-required error."""
    async with AcpProvider(REFERENCE, env=AUTH_ENV) as provider:
        with anyio.fail_after(20), pytest.raises(SubagentError) as info:
            await provider.start(SubagentRequest("echo hello"), cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert "did not start" in info.value.message
    assert "Authentication required" in info.value.message
    assert "(code -32000)" in info.value.message  # ACP's auth_required
    assert METHOD in info.value.message  # the agent says which method it needs


async def test_without_auth_method_a_continuable_child_fails_naming_authentication() -> None:
    """Issue 5: "start = spawn + initialize (+ authenticate when configured) + session/new",
    for a continuable child: its session cannot open without authentication."""
    async with AcpProvider(REFERENCE, env=AUTH_ENV) as provider:
        with anyio.fail_after(20), pytest.raises(SubagentError) as info:
            await provider.prepare_continuable(SubagentRequest("echo hi"), cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert "did not open the session" in info.value.message
    assert "Authentication required" in info.value.message
    assert "(code -32000)" in info.value.message


async def test_a_wrong_auth_method_fails_a_continuable_child_naming_the_method() -> None:
    """Issue 5: "start = spawn + initialize (+ authenticate when configured) + session/new":
    an ``auth_method`` the agent does not advertise fails before anything is sent
    (UNSUPPORTED_CAPABILITY), naming the method asked for and those offered."""
    async with AcpProvider(REFERENCE, env=AUTH_ENV, auth_method="wrong-method") as provider:
        with anyio.fail_after(20), pytest.raises(SubagentError) as info:
            await provider.prepare_continuable(SubagentRequest("echo hi"), cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.UNSUPPORTED_CAPABILITY
    assert "no auth method 'wrong-method'" in info.value.message
    assert METHOD in info.value.message  # what the agent offers instead


async def test_a_wrong_auth_method_fails_a_run_naming_the_method() -> None:
    """Issue 5: "start = spawn + initialize (+ authenticate when configured) + session/new":
    an ``auth_method`` the agent does not advertise fails the start, naming the method, and
    leaves the provider usable and cleanly closable."""
    message = ""
    async with AcpProvider(REFERENCE, env=AUTH_ENV, auth_method="wrong-method") as provider:
        with anyio.fail_after(20):
            with pytest.raises(SubagentError) as info:
                await provider.start(SubagentRequest("echo hi"), cancel=CancelSignal())
            message = info.value.message
            assert info.value.code is SubagentErrorCode.UNSUPPORTED_CAPABILITY
    assert "'wrong-method'" in message


# --- cold resume through session/resume -------------------------------------------------------


def _setups(log: Path) -> list[tuple[str, str]]:
    """The session setups the resume-only agent recorded: ``(pid, method)`` in order."""
    pairs: list[tuple[str, str]] = []
    for line in log.read_text(encoding="utf-8").splitlines():
        pid, method = line.split()
        pairs.append((pid, method))
    return pairs


async def test_a_resume_only_agent_is_resumed_cold_through_session_resume(
    tmp_path: Path,
) -> None:
    """Issue 5: "Continuable through session/load or session/resume when the agent
    advertises them": an agent advertising resume but not load is resumed cold, in a new
    process, with ``session/resume``; the child hears the next message and has its history."""
    sessions = tmp_path / "sessions"
    log = tmp_path / "setups.log"
    env = {SESSION_DIR_ENV_VAR: str(sessions), LOG_ENV_VAR: str(log)}
    service = SubagentService()
    async with AcpProvider(RESUME_ONLY, env=env, cwd=tmp_path) as provider:
        service.register(provider)
        with anyio.fail_after(30):
            async with ContinuationManager(service) as children:
                child = await children.start("acp", SubagentRequest("echo first"))
                second = await children.deliver(child.child_id, "echo second")
                await children.release(child.child_id)  # the agent process exits
                third = await children.deliver(child.child_id, "echo third")  # a new process
                history = await children.deliver(child.child_id, "history")
                child_id = child.child_id
                session_id = children.known()[child_id].remote_id
    assert second.output == "echo second"
    assert third.output == "echo third"
    # The new process holds the whole conversation, the turns of the first one included.
    assert history.output == "history: echo first | echo second | echo third"

    setups = _setups(log)
    assert [method for _, method in setups] == ["session/new", "session/resume"]
    assert setups[0][0] != setups[1][0]  # two processes: the resume was cold

    assert child_id.startswith("acp:")
    assert session_id != child_id.removeprefix("acp:")  # the minted id is not the session's
    saved = json.loads((sessions / f"{session_id}.json").read_text(encoding="utf-8"))
    assert [text for role, text in saved["history"] if role == "user"] == [
        "echo first",
        "echo second",
        "echo third",
    ]  # the fixture's ``history`` prompt is not itself recorded


async def test_resume_continuable_reopens_a_resume_only_session(tmp_path: Path) -> None:
    """Issue 5: "Continuable through session/load or session/resume when the agent
    advertises them", at the provider: ``resume_continuable`` of a disposed child's id opens
    it in a new process with ``session/resume`` (never ``session/load``), same id."""
    log = tmp_path / "setups.log"
    env = {SESSION_DIR_ENV_VAR: str(tmp_path / "sessions"), LOG_ENV_VAR: str(log)}
    async with AcpProvider(RESUME_ONLY, env=env, cwd=tmp_path) as provider:
        with anyio.fail_after(30):
            first = await provider.prepare_continuable(
                SubagentRequest("echo first"), cancel=CancelSignal()
            )
            await first.dispose()
            resumed = await provider.resume_continuable(first.child_id, cancel=CancelSignal())
            try:
                history = await resumed.send("history")
                after = await resumed.send("echo again")
            finally:
                await resumed.dispose()
    assert first.outcomes[0].output == "echo first"
    assert resumed.child_id == first.child_id
    assert history.output == "history: echo first"
    assert after.output == "echo again"
    methods = [method for _, method in _setups(log)]
    assert methods == ["session/new", "session/resume"]
