"""``serve_a2a_http`` in-process, fronting the reference ACP agent, driven by the official
A2A SDK's client on 127.0.0.1 (issue 21 point 2, and the interop half of point 4)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest

pytest.importorskip("a2a.server")

from subagents.config import AgentSpec
from subagents.providers.factory import build_provider
from subagents.remote import RemoteServerConfigError
from subagents.remote.a2a_server import A2AServer, serve_a2a_http
from tests.a2a_server._client import Turn, a2a_client, cancel, send
from tests.remote._serve_processes import children

REFERENCE = AgentSpec(
    "ref",
    "acp",
    (sys.executable, "-m", "subagents.agents.reference"),
    description="the reference agent, over A2A",
)
TOKEN = "a2a-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's server is asyncio-based


@asynccontextmanager
async def serving(token: str | None = None, max_tasks: int = 16) -> AsyncIterator[A2AServer]:
    async with (
        build_provider(REFERENCE) as provider,
        serve_a2a_http(provider, REFERENCE, port=0, token=token, max_tasks=max_tasks) as server,
    ):
        yield server


async def no_agent_left(bound: float = 10.0) -> None:
    """Wait (bounded) until this process has no reference agent child left."""
    with anyio.fail_after(bound):
        while any(_is_reference(pid) for pid in children(os.getpid())):  # noqa: ASYNC110 - a process leaving has no event
            await anyio.sleep(0.05)


def _is_reference(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"subagents.agents.reference" in f.read()
    except OSError:
        return False


@pytest.mark.anyio
async def test_the_card_is_made_from_the_registry_entry() -> None:
    """Issue 21 point 2: the agent card is generated from the registry entry (name,
    description, version, streaming, skills) and served at the well-known path."""
    async with serving() as server, httpx.AsyncClient() as http:
        card = (await http.get(server.card_url)).json()
    assert card["name"] == "ref"
    assert card["description"] == "the reference agent, over A2A"
    assert card["version"]
    assert card["capabilities"]["streaming"] is True
    assert [s["id"] for s in card["skills"]] == ["ref"]
    assert card["supportedInterfaces"][0]["url"] == server.url


@pytest.mark.anyio
async def test_the_card_names_the_public_url_when_given() -> None:
    """Issue 21 point 2: behind a proxy or another host name, the card names the endpoint
    clients reach (public_url), not the address the server listens on."""
    async with (
        build_provider(REFERENCE) as provider,
        serve_a2a_http(
            provider, REFERENCE, port=0, public_url="https://agents.example/ref/"
        ) as server,
        httpx.AsyncClient() as http,
    ):
        card = (await http.get(server.card_url)).json()
    assert card["supportedInterfaces"][0]["url"] == "https://agents.example/ref/"


@pytest.mark.anyio
async def test_a_turn_streams_its_text_and_completes() -> None:
    """Issue 21 point 2: a message starts a run on the provider; its text streams as artifact
    updates (chunk by chunk) and the task ends completed."""
    async with serving() as server, a2a_client(server.url) as client:
        with anyio.fail_after(30):
            turn = await send(client, "stream 3")
    assert turn.chunks == ["1 ", "2 ", "3 "]
    assert turn.states[0] == "TASK_STATE_WORKING"
    assert turn.final == "TASK_STATE_COMPLETED"
    await no_agent_left()


@pytest.mark.anyio
async def test_a_failed_turn_fails_the_task_saying_why() -> None:
    """Issue 21 point 2: a run that settles failed ends the task failed, with the reason."""
    async with serving() as server, a2a_client(server.url) as client:
        with anyio.fail_after(30):
            turn = await send(client, "fail")
    assert turn.final == "TASK_STATE_FAILED"
    assert turn.final_message


@pytest.mark.anyio
async def test_cancel_reaches_the_agent_and_ends_the_task_canceled() -> None:
    """Issue 21 point 2: tasks/cancel fires the run's cancel signal: the ACP agent hears
    session/cancel (its last chunk says so), the task ends canceled, no agent is left."""
    answers: list[str] = []
    async with serving() as server, a2a_client(server.url) as client:

        async def cancel_at_tick_2(turn: Turn) -> None:
            if "tick 2" in turn.chunks[-1]:
                answers.append(await cancel(client, turn.task_id))

        with anyio.fail_after(30):
            turn = await send(client, "slow 100", on_chunk=cancel_at_tick_2)
        assert answers == ["TASK_STATE_CANCELED"]
        assert turn.chunks[-1].startswith("cancelled after")
        assert turn.final == "TASK_STATE_CANCELED"
        await no_agent_left()


@pytest.mark.anyio
async def test_a_later_message_in_the_context_continues_the_child() -> None:
    """Issue 21 point 2: one child per A2A context: a later message with the same contextId
    continues it (the ACP provider is continuable: the session is loaded again), and its
    answer streams into the artifact as a first turn's does; another context starts a new
    child."""
    async with serving() as server, a2a_client(server.url) as client:
        with anyio.fail_after(60):
            first = await send(client, "stream 2")
            child = server.executor.contexts[first.context_id]
            again = await send(client, "echo once more", context_id=first.context_id)
            streamed = await send(client, "stream 3", context_id=first.context_id)
            other = await send(client, "echo elsewhere")
        contexts = server.executor.contexts
    # A continued turn streams as a first one does: chunk by chunk, not one artifact at the end.
    assert streamed.chunks == ["1 ", "2 ", "3 "]
    assert streamed.final == "TASK_STATE_COMPLETED"
    assert again.context_id == first.context_id
    assert again.task_id != first.task_id
    assert again.final == "TASK_STATE_COMPLETED"
    assert again.text == "echo once more"
    assert child  # the ACP session the first turn opened...
    assert contexts[first.context_id] == child  # ...is the one the later message continued
    assert other.context_id != first.context_id
    assert contexts[other.context_id] not in (None, child)  # a new context, a new child


@pytest.mark.anyio
async def test_tasks_are_bounded() -> None:
    """Issue 21 point 2: bounded concurrent tasks: past max_tasks a message is rejected."""
    async with serving(max_tasks=1) as server, a2a_client(server.url) as client:
        busy = anyio.Event()
        results: list[Turn] = []
        second = Turn()

        async def first_turn() -> None:
            async def note(turn: Turn) -> None:
                busy.set()
                if "tick 1" in turn.chunks[-1]:
                    await cancel(client, turn.task_id)

            results.append(await send(client, "slow 100", on_chunk=note))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(first_turn)
                await busy.wait()
                second = await send(client, "echo hi")
        assert second.final == "TASK_STATE_REJECTED"
        assert "too many tasks" in second.final_message
        assert results[0].final == "TASK_STATE_CANCELED"


@pytest.mark.anyio
async def test_a_token_is_required_when_configured() -> None:
    """Issue 21 point 2: with a bearer token, a request without it gets 401 (the card stays
    public); with it, the turn runs."""
    async with serving(token=TOKEN) as server:
        async with httpx.AsyncClient() as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}
            refused = await http.post(server.url, json=body)
            wrong = await http.post(server.url, json=body, headers={"Authorization": "Bearer nope"})
            card = await http.get(server.card_url)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert wrong.status_code == 401
        assert card.status_code == 200
        assert "securitySchemes" in card.json()
        async with a2a_client(server.url, TOKEN) as client:
            with anyio.fail_after(30):
                turn = await send(client, "stream 1")
        assert turn.final == "TASK_STATE_COMPLETED"


@pytest.mark.anyio
async def test_off_loopback_without_a_token_is_refused() -> None:
    """Issue 21 point 2: bound beyond loopback, a bearer token is required: the server
    refuses to start (nothing is bound) without one."""
    async with build_provider(REFERENCE) as provider:
        with pytest.raises(RemoteServerConfigError, match="needs a bearer token"):
            async with serve_a2a_http(provider, REFERENCE, host="0.0.0.0", port=0):
                pass
