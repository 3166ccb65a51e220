"""Issue 15, point 10: a permission policy receives the run's id and the agent's name with
the request, for every provider that asks (ACP, Codex, Claude Code): a policy wrapped in
``RunAware`` is told who asks; a plain policy keeps working unchanged."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from subagents.protocol import acp
from subagents.providers import (
    CancelSignal,
    PermissionAsker,
    RunAware,
    SubagentRequest,
    SubagentService,
)
from subagents.providers.acp import AcpProvider
from subagents.providers.claude_code import ClaudeCodeProvider
from subagents.providers.codex import CodexProvider
from subagents.transports.claude_code import AllowTool, ClaudeOptions, ToolPermissionRequest
from subagents.transports.codex_app_server import ApprovalRequest, Decision

pytestmark = pytest.mark.anyio

TESTS = Path(__file__).parents[1]
REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]
FAKE_CODEX = [sys.executable, str(TESTS / "transports" / "fake_codex_app_server.py")]
FAKE_CLAUDE = TESTS / "transports" / "fake_claude_cli.py"


async def delegate(service: SubagentService, name: str, prompt: str) -> tuple[str, str, str]:
    """Run ``prompt`` on ``name`` through the service: (run id, remote id, outcome status)."""
    with anyio.fail_after(30):
        async with await service.start(name, SubagentRequest(prompt), cancel=CancelSignal()) as run:
            outcome = await run.result()
            remote: object = getattr(run, "remote_id", "")
            assert isinstance(remote, str)
            return run.child_id, remote, outcome.status


async def test_an_acp_permission_policy_is_told_which_run_asks() -> None:
    askers: list[PermissionAsker] = []

    async def decide(
        asker: PermissionAsker, request: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionOutcome:
        askers.append(asker)
        allow = next(o for o in request.options if o.kind.startswith("allow"))
        return acp.SelectedRequestPermissionOutcome(option_id=allow.option_id)

    service = SubagentService()
    async with AcpProvider(REFERENCE, name="ref", permission_policy=RunAware(decide)) as made:
        service.register(made)
        run_id, remote_id, status = await delegate(service, "ref", "tool")
    assert status == "completed"
    assert askers == [PermissionAsker(run_id, "ref", remote_id)]
    assert run_id.startswith("ref:")
    assert remote_id


async def test_a_codex_approval_policy_is_told_which_run_asks(tmp_path: Path) -> None:
    askers: list[PermissionAsker] = []

    async def decide(asker: PermissionAsker, request: ApprovalRequest) -> Decision:
        askers.append(asker)
        return "accept"

    service = SubagentService()
    async with CodexProvider(
        FAKE_CODEX, name="cx", cwd=tmp_path, approval_policy=RunAware(decide)
    ) as made:
        service.register(made)
        run_id, remote_id, status = await delegate(service, "cx", "approve")
    assert status == "completed"
    assert askers == [PermissionAsker(run_id, "cx", remote_id)]
    assert remote_id.startswith("thr-")


async def test_a_claude_code_permission_policy_is_told_which_run_asks(tmp_path: Path) -> None:
    askers: list[PermissionAsker] = []

    async def decide(asker: PermissionAsker, request: ToolPermissionRequest) -> AllowTool:
        askers.append(asker)
        return AllowTool()

    cli = tmp_path / "claude"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLAUDE}" "$@"\n', encoding="utf-8")
    cli.chmod(0o755)
    service = SubagentService()
    async with ClaudeCodeProvider(
        cli,
        ClaudeOptions(model="claude-fake-model"),
        name="cc",
        cwd=tmp_path,
        permission_policy=RunAware(decide),
        startup_timeout=20,
    ) as made:
        service.register(made)
        run_id, remote_id, status = await delegate(service, "cc", "[[tool]]")
    assert status == "completed"
    assert askers == [PermissionAsker(run_id, "cc", remote_id)]
    assert remote_id


async def test_two_concurrent_runs_are_told_apart() -> None:
    """Two runs of one provider asking at the same time name two different runs."""
    askers: list[PermissionAsker] = []

    async def decide(
        asker: PermissionAsker, request: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionOutcome:
        askers.append(asker)
        return acp.CancelledRequestPermissionOutcome()

    service = SubagentService()
    ids: list[str] = []
    async with AcpProvider(REFERENCE, name="ref", permission_policy=RunAware(decide)) as made:
        service.register(made)

        async def one() -> None:
            run_id, _, _ = await delegate(service, "ref", "tool")
            ids.append(run_id)

        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
    assert sorted(a.child_id for a in askers) == sorted(ids)
    assert len(set(ids)) == 2


async def test_a_run_aware_policy_called_outside_a_run_has_an_anonymous_asker() -> None:
    """A RunAware policy is itself a plain policy (for a transport used directly)."""
    seen: list[PermissionAsker] = []

    async def decide(asker: PermissionAsker, request: str) -> str:
        seen.append(asker)
        return request.upper()

    assert await RunAware(decide)("yes") == "YES"
    assert seen == [PermissionAsker("", "")]
