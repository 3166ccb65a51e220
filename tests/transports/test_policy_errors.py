"""Issue 19, point 4: a permission policy that raises is a deny, the same for every transport.

The embedder's policy is the embedder's code: when it raises, each transport answers the agent
with its protocol's deny (ACP: a reject option the agent offered, else ``cancelled``; Codex
app-server: ``decline``; Claude Code: ``deny``), the run goes on, and the exception is logged
with its traceback on the transport's logger, naming the policy and the permission asked for.
Each transport runs against the fixtures its own tests use: the reference agent (and a
scripted agent) for ACP, the fake app-server for Codex, the fake CLI for Claude Code.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
import pytest

from subagents.protocol import JsonValue, acp
from subagents.transports.acp_client import connect_agent
from subagents.transports.claude_code import (
    ClaudeAllowTool,
    ClaudeDenyTool,
    ClaudeToolPermissionRequest,
)
from subagents.transports.codex_app_server import ApprovalRequest, Decision, connect_codex

from .test_acp_client import SESSION, FakeAgent, connected
from .test_claude_code import answers_to
from .test_claude_code import connected as claude_connected
from .test_codex_app_server import fake, received

pytestmark = pytest.mark.anyio

REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]


class PolicyBug(Exception):
    """What the broken policies raise."""


def the_policy_failure(caplog: pytest.LogCaptureFixture, logger: str) -> logging.LogRecord:
    """The one record logging the policy's exception on ``logger``, with its traceback."""
    records = [r for r in caplog.records if r.name == logger and r.exc_info is not None]
    assert len(records) == 1, caplog.text
    (record,) = records
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], PolicyBug)
    assert "broken_policy" in record.getMessage()  # names the policy
    assert "answering deny" in record.getMessage()
    return record


async def test_acp_a_policy_that_raises_rejects_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 19 (ACP): a permission policy that raises is a deny, the same for every transport:
    the reference agent's session/request_permission is answered with the reject option it
    offered (not a JSON-RPC error), its turn ends end_turn with the tool call failed, the next
    turn runs, and the exception is logged naming the policy and the tool call."""

    async def broken_policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
        raise PolicyBug("typo in the policy")

    texts: list[str] = []
    statuses: list[str | None] = []
    async with connect_agent(REFERENCE, permission_policy=broken_policy) as agent:
        session = await agent.new_session()
        with anyio.fail_after(20):
            async with session.prompt("tool") as turn:
                async for update in turn:
                    if isinstance(update, acp.ToolCallUpdateSessionUpdate):
                        statuses.append(update.status)
                    elif isinstance(update, acp.AgentMessageChunkSessionUpdate) and isinstance(
                        update.content, acp.TextContentBlock
                    ):
                        texts.append(update.content.text)
            after = await session.run("echo still here")
    assert turn.stop_reason == "end_turn"
    assert statuses[-1] == "failed"
    assert "".join(texts) == "Permission denied (option 'reject')."
    assert after.stop_reason == "end_turn"
    record = the_policy_failure(caplog, "subagents.acp.client")
    assert "session/request_permission" in record.getMessage()
    assert "call_" in record.getMessage()  # the tool call's id


async def test_acp_a_policy_that_raises_with_no_reject_option_offered_answers_cancelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 19 (ACP): a permission policy that raises is a deny; when the agent offered no
    reject option, the deny is the spec's other outcome, ``cancelled``, never an error."""
    agent = FakeAgent()
    answers: list[JsonValue] = []

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        assert agent.peer is not None
        permission = {
            "sessionId": SESSION,
            "toolCall": {"toolCallId": "t1", "title": "rm -rf"},
            "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}],
        }
        answers.append(await agent.peer.request("session/request_permission", permission))
        return {"stopReason": "end_turn"}

    async def broken_policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
        raise PolicyBug("policy bug")

    agent.prompt_script = script
    async with connected(agent, policy=broken_policy) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            result = await session.run("x")
    assert result.stop_reason == "end_turn"
    assert answers == [{"outcome": {"outcome": "cancelled"}}]
    record = the_policy_failure(caplog, "subagents.acp.client")
    assert "'t1'" in record.getMessage()
    assert "'rm -rf'" in record.getMessage()


async def test_codex_a_policy_that_raises_declines_and_the_thread_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 19 (Codex app-server): a permission policy that raises is a deny, the same for
    every transport: the approval is answered ``decline``, the turn completes, the next turn
    runs, and the exception is logged naming the policy and the command."""
    record_path = tmp_path / "record.jsonl"

    async def broken_policy(request: ApprovalRequest) -> Decision:
        raise PolicyBug("policy bug")

    with anyio.fail_after(10):
        async with connect_codex(
            fake("--record", str(record_path)), approval_policy=broken_policy
        ) as conn:
            thread = await conn.start_thread()
            result = await thread.run("approve this")
            after = await thread.run("hello")
    assert result.status == "completed"
    assert result.final_text == "decision: decline"
    assert after.status == "completed"
    answers = [m for m in received(record_path) if "result" in m]
    assert answers == [{"id": 0, "result": {"decision": "decline"}}]
    record = the_policy_failure(caplog, "subagents.codex")
    assert "item/commandExecution/requestApproval" in record.getMessage()
    assert "echo hi" in record.getMessage()


async def test_claude_a_policy_that_raises_denies_and_the_connection_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 19 (Claude Code): a permission policy that raises is a deny, the same for every
    transport: can_use_tool is answered ``deny``, the query ends with the CLI's result, the
    next query runs, and the exception is logged naming the policy and the tool."""

    async def broken_policy(
        request: ClaudeToolPermissionRequest,
    ) -> ClaudeAllowTool | ClaudeDenyTool:
        raise PolicyBug("policy bug")

    with anyio.fail_after(10):
        async with claude_connected(permission_policy=broken_policy) as (conn, fake_cli):
            result = await conn.query("[[tool]]")
            after = await conn.query("hello")
    assert result.result == "TOOL_DENIED: permission policy failed"
    assert not after.is_error
    (answer,) = answers_to(fake_cli)
    assert answer["subtype"] == "success"
    assert answer["response"]["behavior"] == "deny"
    record = the_policy_failure(caplog, "subagents.claude")
    assert "can_use_tool 'Bash'" in record.getMessage()
    assert "toolu_fake_1" in record.getMessage()


@pytest.mark.parametrize("answer", [None, "allow"])
async def test_acp_a_policy_that_answers_no_outcome_rejects_and_is_logged(
    answer: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 19 (ACP): a policy answering something that is not an outcome (``None``, a
    string) is a deny too, logged naming the policy, never an error sent to the agent."""
    agent = FakeAgent()
    answers: list[JsonValue] = []

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        assert agent.peer is not None
        permission = {
            "sessionId": SESSION,
            "toolCall": {"toolCallId": "t1"},
            "options": [
                {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_always"},
            ],
        }
        answers.append(await agent.peer.request("session/request_permission", permission))
        return {"stopReason": "end_turn"}

    async def sloppy_policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
        return answer  # pyright: ignore[reportReturnType]

    agent.prompt_script = script
    async with connected(agent, policy=sloppy_policy) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            result = await session.run("x")
    assert result.stop_reason == "end_turn"
    assert answers == [{"outcome": {"outcome": "selected", "optionId": "no"}}]
    logged = [r for r in caplog.records if r.name == "subagents.acp.client"]
    assert len(logged) == 1
    assert logged[0].levelno == logging.ERROR
    assert "sloppy_policy" in logged[0].getMessage()
    assert "answering deny" in logged[0].getMessage()
