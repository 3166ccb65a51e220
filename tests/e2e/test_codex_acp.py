"""Our ACP client drives the real ``codex-acp`` 0.16.0 (Zed's Rust agent on Codex core),
offline, on asyncio and on trio.

The native binary comes from npm (``scripts/setup``); its model is the project's fake OpenAI
Responses API on 127.0.0.1 (:mod:`subagents.testing.fake_models.openai_responses`), set up
through ``$CODEX_HOME/config.toml``. The agent gets only the environment the fake needs
(no ``inherit_env``): no OpenAI account, key or network is involved.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from subagents.protocol import acp
from subagents.testing.fake_models.openai_responses import (
    API_KEY,
    DEFAULT_REPLY,
    DISCONNECTED_STREAMS,
    SLOW_DELTA,
    FakeServer,
    ResponsesHandler,
    codex_acp_command,
    codex_home,
    last_user_text,
    serve,
)
from subagents.transports.acp_client import connect_agent

pytestmark = pytest.mark.anyio

# Start-up takes 0.2-0.6 s and a turn ~0.2 s here; closing costs ~2 s more (codex-acp does not
# exit on stdin EOF, so the shutdown ladder waits, then signals its process group).
BOUND_SECONDS = 30.0


@pytest.fixture
def codex_acp() -> list[str]:
    """The argv of the native ``codex-acp`` binary installed by ``scripts/setup``."""
    command = codex_acp_command()
    if command is None:
        pytest.fail("codex-acp is not installed: run ./scripts/setup (it needs node and npm)")
    return command


@pytest.fixture
def fake_openai() -> Iterator[FakeServer]:
    """A fake Responses API on 127.0.0.1 for the test's duration."""
    with serve(ResponsesHandler) as server:
        yield server


@pytest.fixture
def codex_env(tmp_path: Path, fake_openai: FakeServer) -> dict[str, str]:
    """The agent's whole environment: a fresh ``CODEX_HOME`` pointing at the fake."""
    return codex_home(tmp_path / "codex", fake_openai)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The session's working directory (absolute)."""
    path = tmp_path / "work"
    path.mkdir()
    return path.resolve()


def texts(updates: list[acp.SessionUpdate]) -> list[str]:
    """The text of each agent message chunk, in order (other updates are skipped)."""
    return [
        update.content.text
        for update in updates
        if isinstance(update, acp.AgentMessageChunkSessionUpdate)
        and isinstance(update.content, acp.TextContentBlock)
    ]


async def test_codex_acp_initializes_offline_and_names_itself(
    codex_acp: list[str], codex_env: dict[str, str], fake_openai: FakeServer
) -> None:
    """Requirement: the real agent starts with only the fake's environment and answers
    ``initialize`` with protocol version 1 and ``agentInfo.name == "codex-acp"``; starting it
    sends nothing to the model server."""
    with anyio.fail_after(BOUND_SECONDS):
        async with connect_agent(codex_acp, env=codex_env) as agent:
            assert agent.protocol_version == 1
            assert agent.agent_info is not None
            assert agent.agent_info.name == "codex-acp"
    assert fake_openai.requests == []


async def test_a_prompt_streams_the_fake_models_reply_and_ends_the_turn(
    codex_acp: list[str], codex_env: dict[str, str], workdir: Path
) -> None:
    """Requirement: a prompt on a new session (no ``authenticate`` needed with the fake
    provider) streams the model's reply as agent message chunks, which join to exactly the
    text the fake sent, and the turn ends with ``end_turn``."""
    with anyio.fail_after(BOUND_SECONDS):
        async with connect_agent(codex_acp, env=codex_env) as agent:
            session = await agent.new_session(workdir)
            async with session.prompt("Say hello.") as turn:
                updates = [update async for update in turn]
    assert turn.stop_reason == "end_turn"
    chunks = texts(updates)
    assert len(chunks) > 1  # streamed, not one block
    assert "".join(chunks) == DEFAULT_REPLY


async def test_the_fake_server_records_the_prompt_codex_sent_it(
    codex_acp: list[str], codex_env: dict[str, str], fake_openai: FakeServer, workdir: Path
) -> None:
    """Requirement: the turn really went through the project's fake: it received one
    streaming ``POST /v1/responses`` whose last user message is the prompt, authorized with
    the fake key, and no other request."""
    prompt = "Please greet the e2e test."
    with anyio.fail_after(BOUND_SECONDS):
        async with connect_agent(codex_acp, env=codex_env) as agent:
            session = await agent.new_session(workdir)
            result = await session.run(prompt)
    assert result.stop_reason == "end_turn"
    assert [(r.method, r.path) for r in fake_openai.requests] == [("POST", "/v1/responses")]
    request = fake_openai.requests[0]
    assert last_user_text(request.body) == prompt
    assert request.body["stream"] is True
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["authorization"] == f"Bearer {API_KEY}"


async def test_cancelling_a_slow_turn_settles_it_cancelled_and_the_session_goes_on(
    codex_acp: list[str], codex_env: dict[str, str], fake_openai: FakeServer, workdir: Path
) -> None:
    """Requirement (ACP cancellation): ``session/cancel`` mid-stream ends the running turn
    with stop reason ``cancelled``, the agent drops the model stream (the fake sees the
    client leave), and the next prompt on the same session completes normally."""
    with anyio.fail_after(BOUND_SECONDS):
        async with connect_agent(codex_acp, env=codex_env) as agent:
            session = await agent.new_session(workdir)
            seen: list[str] = []
            async with session.prompt("Answer slow, please.") as turn:
                async for update in turn:
                    seen.extend(texts([update]))
                    if len(seen) == 3:
                        await session.cancel()
            assert turn.stop_reason == "cancelled"
            assert seen[:3] == [SLOW_DELTA] * 3
            while not fake_openai.state.get(DISCONNECTED_STREAMS):  # noqa: ASYNC110
                await anyio.sleep(0.05)
            after = await session.run("Say hello again.")
            assert after.stop_reason == "end_turn"
    assert fake_openai.state[DISCONNECTED_STREAMS] == 1
