"""The real ``claude-agent-acp`` (and the Claude Code CLI) offline on the fake Messages API.

The pinned npm agent runs as a child process through the project's own ACP client; its model
is :mod:`subagents.testing.fake_models.anthropic_messages` on 127.0.0.1, so no key and no
network are needed. Skipped when the npm agents are not installed (``scripts/setup``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from subagents.protocol import acp
from subagents.testing.fake_models._http import FakeServer, serve
from subagents.testing.fake_models.anthropic_messages import (
    DEFAULT_REPLY,
    FAKE_API_KEY,
    AnthropicMessagesHandler,
    claude_agent_acp_command,
    claude_env,
    last_user_text,
    message_requests,
    wait_streams_closed,
)
from subagents.transports import AgentConnection, ClientSession, connect_agent

COMMAND = claude_agent_acp_command()

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def installed() -> None:
    """The adapter comes from scripts/setup: its absence fails the tests, never skips them."""
    if COMMAND is None:
        pytest.fail(
            "claude-agent-acp is not installed: run ./scripts/setup (it needs node and npm)"
        )


STARTUP_TIMEOUT = 45.0
"""Bound on initialize plus session/new (took about 1 s here, up to 8.7 s under load)."""

TURN_TIMEOUT = 30.0


@pytest.fixture
def fake() -> Generator[FakeServer]:
    with serve(AnthropicMessagesHandler) as server:
        yield server


@asynccontextmanager
async def claude_agent(
    tmp_path: Path, server: FakeServer
) -> AsyncGenerator[tuple[AgentConnection, ClientSession]]:
    """The adapter on ``server``, initialized, with one session in ``tmp_path/work``."""
    assert COMMAND is not None
    workdir = (tmp_path / "work").resolve()
    workdir.mkdir()
    async with connect_agent(
        COMMAND,
        env=claude_env(tmp_path, server),
        cwd=workdir,
        start_timeout=STARTUP_TIMEOUT,
        initialize_timeout=STARTUP_TIMEOUT,
        cancel_timeout=TURN_TIMEOUT,
        name="claude-agent-acp",
    ) as agent:
        with anyio.fail_after(STARTUP_TIMEOUT):
            session = await agent.new_session(cwd=workdir)
        yield agent, session


def text_of(update: acp.SessionUpdate) -> str | None:
    if isinstance(update, acp.AgentMessageChunkSessionUpdate) and isinstance(
        update.content, acp.TextContentBlock
    ):
        return update.content.text
    return None


async def test_initialize_answers_with_the_adapters_identity_and_protocol_version_1(
    tmp_path: Path, fake: FakeServer
) -> None:
    """REQ: the client's initialize handshake works against the real adapter, offline."""
    async with claude_agent(tmp_path, fake) as (agent, session):
        assert agent.protocol_version == 1
        assert agent.agent_info is not None
        assert agent.agent_info.name == "@agentclientprotocol/claude-agent-acp"
        assert session.session_id


async def test_a_prompt_streams_the_fake_models_reply_and_ends_the_turn(
    tmp_path: Path, fake: FakeServer
) -> None:
    """REQ: a prompt completes with ``end_turn``, the streamed agent text carries the fake
    model's reply, and the fake saw the request with the prompt text and the fake key."""
    prompt = "Please say hello to the e2e test."
    async with claude_agent(tmp_path, fake) as (_, session):
        with anyio.fail_after(TURN_TIMEOUT):
            async with session.prompt(prompt) as turn:
                texts = [t async for u in turn if (t := text_of(u)) is not None]
    assert turn.stop_reason == "end_turn"
    assert DEFAULT_REPLY in "".join(texts)
    requests = [r for r in message_requests(fake) if prompt in last_user_text(r.body)]
    assert requests, [last_user_text(r.body) for r in message_requests(fake)]
    headers = {name.lower(): value for name, value in requests[0].headers.items()}
    assert headers.get("x-api-key") == FAKE_API_KEY
    assert requests[0].body["stream"] is True


async def test_cancelling_a_slow_turn_settles_with_cancelled_and_drops_the_stream(
    tmp_path: Path, fake: FakeServer
) -> None:
    """REQ: ``session/cancel`` sent mid-stream through the session ends the turn with stop
    reason ``cancelled``, well before the slow reply would have ended; the fake's stream is
    then dropped by the agent."""
    async with claude_agent(tmp_path, fake) as (_, session):
        started = anyio.current_time()
        with anyio.fail_after(TURN_TIMEOUT):
            async with session.prompt("Answer slow, please.") as turn:
                received = 0
                async for update in turn:
                    if text_of(update):
                        received += 1
                        if received == 3:
                            await session.cancel()
                result = await turn.result()
        assert result.stop_reason == "cancelled"
        assert turn.cancel_requested
        assert received >= 3
        assert anyio.current_time() - started < 20
        assert await anyio.to_thread.run_sync(wait_streams_closed, fake, 10.0)
