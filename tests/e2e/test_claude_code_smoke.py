"""Smoke: our Claude Code client drives the real ``claude`` CLI (pinned 2.1.332), offline.

The CLI comes from npm (``scripts/setup``); its model is the project's fake Anthropic
Messages API on 127.0.0.1 (``ANTHROPIC_BASE_URL``), with a private ``HOME`` and
``CLAUDE_CONFIG_DIR``. Requirement names refer to issue 7, part 1 (the transport).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from subagents.testing.fake_models._http import serve
from subagents.testing.fake_models.anthropic_messages import (
    DEFAULT_REPLY,
    AnthropicMessagesHandler,
    claude_cli_path,
    claude_env,
)
from subagents.transports.claude_code import (
    ClaudeOptions,
    ClaudeResult,
    ClaudeStreamEvent,
    ClaudeSystemInit,
    connect_claude,
)

pytestmark = pytest.mark.anyio


async def test_a_real_claude_turn_ends_with_the_fake_models_reply(tmp_path: Path) -> None:
    """Issue 7 / transport: initialize -> user message -> system/init, partial deltas and a
    success result whose text is the fake model's reply; the CLI exits 0 on close."""
    cli = claude_cli_path()
    if cli is None:
        pytest.fail("claude is not installed: run ./scripts/setup (it needs node and npm)")
    work = tmp_path / "work"
    work.mkdir()
    with serve(AnthropicMessagesHandler) as server:
        env = claude_env(tmp_path / "claude", server)
        options = ClaudeOptions(model="claude-fake-model", config_dir=env["CLAUDE_CONFIG_DIR"])
        with anyio.fail_after(60):
            async with connect_claude(cli, options, env=env, cwd=work) as conn:
                assert conn.init_response.get("claude_code_version") == "2.1.332"
                async with conn.turn("Say hello.") as turn:
                    events = [event async for event in turn]
                process = conn.process
    assert isinstance(events[0], ClaudeSystemInit)
    deltas = [e.text_delta for e in events if isinstance(e, ClaudeStreamEvent)]
    assert "".join(d for d in deltas if d) == DEFAULT_REPLY
    result = events[-1]
    assert isinstance(result, ClaudeResult)
    assert result.subtype == "success"
    assert not result.is_error
    assert result.result is not None
    assert DEFAULT_REPLY in result.result
    assert process is not None  # a CLI started by connect_claude
    assert process.exit is not None
    assert process.exit.returncode == 0
