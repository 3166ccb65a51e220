"""Our A2A client (``A2AProvider``) against our A2A server (``serve_a2a_http``) in front of
the reference ACP agent: ACP → A2A → ACP, both halves ours (issue 21 points 1, 2 and 5)."""

from __future__ import annotations

import sys

import anyio
import pytest

pytest.importorskip("a2a.server")

from subagents.config import AgentSpec
from subagents.providers.a2a import A2AProvider
from subagents.providers.contract import CancelSignal, SubagentRequest, TextProgress
from subagents.providers.factory import build_provider
from subagents.remote.a2a_server import serve_a2a_http

REFERENCE = AgentSpec("ref", "acp", (sys.executable, "-m", "subagents.agents.reference"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a2a_provider_streams_and_cancels_through_serve_a2a() -> None:
    """Issue 21 point 5: A2AProvider -> serve_a2a_http -> the ACP agent: the text streams as
    progress and the outcome is completed with it; the cancel signal reaches the agent (its
    'cancelled after' chunk arrives) and the run settles cancelled."""
    async with (
        build_provider(REFERENCE) as acp,
        serve_a2a_http(acp, REFERENCE, port=0) as server,
        A2AProvider(server.url, name="remote-ref") as provider,
    ):
        with anyio.fail_after(30):
            run = await provider.start(SubagentRequest("stream 3"), cancel=CancelSignal())
            async with run:
                events = run.progress()
                assert events is not None
                texts = [e.text async for e in events if isinstance(e, TextProgress)]
                outcome = await run.result()
        assert "".join(texts) == "1 2 3 "
        assert outcome.status == "completed"
        assert outcome.output == "1 2 3 "

        signal = CancelSignal()
        with anyio.fail_after(30):
            run = await provider.start(SubagentRequest("slow 100"), cancel=signal)
            async with run:
                events = run.progress()
                assert events is not None
                seen: list[str] = []
                async for event in events:
                    if isinstance(event, TextProgress):
                        seen.append(event.text)
                        if event.text == "tick 2":
                            signal.cancel("enough")
                outcome = await run.result()
        assert outcome.status == "cancelled"
        assert seen[-1].startswith("cancelled after")
