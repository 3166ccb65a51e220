"""Smoke: our Codex app-server client drives the real ``codex app-server`` 0.171.0, offline.

The native binary comes from npm (``scripts/setup``); its model is the project's fake OpenAI
Responses API on 127.0.0.1, configured through ``$CODEX_HOME/config.toml``. The child gets
only the environment the fake needs (no ``inherit_env``).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from subagents.testing.fake_models.openai_responses import (
    DEFAULT_REPLY,
    ResponsesHandler,
    codex_home,
    require_codex_command,
    serve,
)
from subagents.transports.codex_app_server import AgentMessageDelta, connect_codex

pytestmark = pytest.mark.anyio


async def test_a_real_codex_turn_ends_with_the_fake_models_reply(tmp_path: Path) -> None:
    """initialize -> thread/start -> turn/start -> deltas -> turn/completed against the real
    binary; the final text is the fake model's reply, byte for byte."""
    command = require_codex_command()
    work = tmp_path / "work"
    work.mkdir()
    with serve(ResponsesHandler) as server:
        env = codex_home(tmp_path / "codex", server)
        with anyio.fail_after(60):
            async with connect_codex(command, env=env) as conn:
                assert conn.version == "0.171.0"
                thread = await conn.start_thread(cwd=work, sandbox="read-only")
                async with thread.turn("Say hello.", deadline=30) as turn:
                    deltas = [e.delta async for e in turn if isinstance(e, AgentMessageDelta)]
                result = await turn.result()
                process = conn.process
    assert result.status == "completed"
    assert result.final_text == DEFAULT_REPLY
    assert "".join(deltas) == DEFAULT_REPLY
    assert result.usage is not None
    assert process is not None
    assert process.exit is not None
    assert process.exit.returncode == 0
