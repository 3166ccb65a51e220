"""A2AProvider against the official ``a2a-sdk`` server around a scripted executor (a
subprocess on 127.0.0.1, killed by the test): each A2A task state's outcome, progress,
cancellation, a server that dies mid-stream, the bearer token and the card URL."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import anyio
import httpx
import pytest
from a2a.types import AgentCard

from subagents.providers import (
    CancelSignal,
    ContinuableProvider,
    OtherProgress,
    ProgressEvent,
    SubagentError,
    SubagentOutcome,
    SubagentRequest,
    SubagentService,
    SubagentStarted,
    TextProgress,
)
from subagents.providers import a2a as a2a_module
from subagents.providers.a2a import A2AProvider, A2ARun, A2ATaskView
from subagents.testing import ProviderScenarios, provider_checks
from tests._ports import closed_port
from tests.a2a._a2a_server import A2AServer, a2a_server

pytestmark = pytest.mark.anyio

BOUND = 20.0


@pytest.fixture(scope="module")
def server() -> Iterator[A2AServer]:
    """One server (a process) for the module's tests, on both backends: each test opens a
    provider of its own (a test that needs a server of its own, to stop it or with a token,
    starts it)."""
    with a2a_server() as running:
        yield running


async def _run(
    provider: A2AProvider, prompt: str, cancel: CancelSignal | None = None
) -> tuple[SubagentOutcome, list[ProgressEvent], A2ARun]:
    """Start ``prompt``, read its progress to the end; its outcome, events and run."""
    events: list[ProgressEvent] = []
    with anyio.fail_after(BOUND):
        run = await provider.start(SubagentRequest(prompt), cancel=cancel or CancelSignal())
        feed = run.progress()
        assert feed is not None
        async for event in feed:
            events.append(event)
        outcome = await run.result()
        await run.dispose()
    return outcome, events, run


async def test_a_streamed_artifact_completes_the_run_with_its_text(server: A2AServer) -> None:
    """Issue 21 point 1: completed -> completed with the artifacts' text; artifact chunks are
    text progress that add up to it; the task and context ids are kept, the child id is the
    parent's."""
    async with A2AProvider(server.url, name="remote") as provider:
        service = SubagentService()
        service.register(provider)
        started: list[object] = []
        service.subscribe(started.append)
        with anyio.fail_after(BOUND):
            tracked = await service.start("remote", SubagentRequest("echo one two"))
            outcome = await tracked.result()
            await tracked.dispose()
        assert outcome == SubagentOutcome.completed(tracked.child_id, "echo one two")
        assert tracked.child_id.startswith("remote:")
        first = started[0]
        assert isinstance(first, SubagentStarted)
        assert first.remote_id
        _, _, run = await _run(provider, "echo kept")
        assert run.task_id
        assert run.context_id
        assert run.remote_id == run.task_id != run.child_id
        _, events, _ = await _run(provider, "echo a b c")
        texts = [e.text for e in events if isinstance(e, TextProgress)]
        assert texts == ["echo", " a", " b", " c"]
        states = [e.data["state"] for e in events if isinstance(e, OtherProgress) and e.data]
        assert states == ["working", "completed"]


async def test_a_plain_message_answer_completes_at_once(server: A2AServer) -> None:
    """Issue 21 point 1: "an agent that answers with a plain message (no task) completes at
    once" with the message's text."""
    async with A2AProvider(server.url) as provider:
        outcome, events, run = await _run(provider, "message just this")
    assert outcome.status == "completed"
    assert outcome.output == "just this"
    assert events == [TextProgress("just this")]
    assert run.task_id == ""


async def test_status_messages_are_other_progress(server: A2AServer) -> None:
    """Issue 21 point 1: status updates are mapped onto the progress vocabulary (other, with
    the state and the status message's text)."""
    async with A2AProvider(server.url) as provider:
        outcome, events, _ = await _run(provider, "status reading writing")
    assert outcome.output == "done"
    others = [(e.text, e.data) for e in events if isinstance(e, OtherProgress)]
    assert ("reading", {"state": "working"}) in others
    assert ("writing", {"state": "working"}) in others


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("fail", "the agent's task ended failed: it broke"),
        ("reject", "the agent's task ended rejected: not my job"),
        (
            "input",
            "the agent's task stopped input-required: it asks for input, which a subagent run "
            "cannot give: which file?",
        ),
        (
            "auth",
            "the agent's task stopped auth-required: it asks for authentication, which a "
            "subagent run cannot give: log in first",
        ),
    ],
)
async def test_unsuccessful_states_fail_the_turn(
    server: A2AServer, prompt: str, expected: str
) -> None:
    """Issue 21 point 1: failed/rejected -> failed (turn); input-required and auth-required
    -> failed with a clear message (the status message's text included)."""
    async with A2AProvider(server.url) as provider:
        outcome, _, run = await _run(provider, prompt)
    assert outcome.status == "failed"
    assert outcome.failure_kind == "turn"
    assert outcome.message == expected
    assert outcome.child_id == run.child_id


async def test_the_signal_cancels_the_remote_task(server: A2AServer) -> None:
    """Issue 21 point 1: "the cancel signal -> tasks/cancel, bounded": the agent confirms,
    the remote task ends canceled and the run settles cancelled with the streamed text."""
    async with A2AProvider(server.url) as provider:
        signal = CancelSignal()
        with anyio.fail_after(BOUND):
            run = await provider.start(SubagentRequest("slow"), cancel=signal)
            feed = run.progress()
            assert feed is not None
            async for event in feed:  # "started": the executor is waiting
                if isinstance(event, OtherProgress) and event.text == "started":
                    break
            started = anyio.current_time()
            signal.cancel("enough")
            outcome = await run.result()
            elapsed = anyio.current_time() - started
            await run.dispose()
    assert outcome.status == "cancelled"
    assert outcome.message == "enough"
    assert run.view.state_name == "canceled"
    assert elapsed < provider.cancel_timeout


async def test_a_server_that_dies_mid_stream_fails_the_run_naming_the_cause() -> None:
    """Issue 21 point 1: "a stream that drops mid-task -> resubscribe once, then failed
    (infrastructure) naming the cause"; the text streamed before is the partial output."""
    with a2a_server() as server:
        async with A2AProvider(server.url) as provider:
            events: list[ProgressEvent] = []
            with anyio.fail_after(BOUND):
                run = await provider.start(SubagentRequest("die"), cancel=CancelSignal())
                feed = run.progress()
                assert feed is not None
                async for event in feed:
                    events.append(event)
                    if event == TextProgress("partial"):
                        server.process.kill()  # the chunk is here: the server dies mid-task
                outcome = await run.result()
                await run.dispose()
    assert TextProgress("partial") in events
    assert outcome.status == "failed"
    assert outcome.failure_kind == "infrastructure"
    assert f"the stream of task {run.task_id} at A2A agent at {server.url}" in outcome.message
    assert "again after resubscribing" in outcome.message
    assert outcome.cause is not None
    assert type(outcome.cause).__name__ in outcome.message
    assert outcome.partial_output == "partial"


async def test_the_bearer_token_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 21 point 1/3: auth headers from the registry, a token from an environment
    variable; without it the agent's 401 fails the start."""
    with a2a_server("--token", "s3cret") as server:
        monkeypatch.setenv("A2A_TEST_TOKEN", "s3cret")
        async with A2AProvider(server.url, token_env="A2A_TEST_TOKEN") as provider:
            outcome, _, _ = await _run(provider, "echo authorised")
        assert outcome.output == "echo authorised"
        async with A2AProvider(server.url) as provider:
            with anyio.fail_after(BOUND), pytest.raises(Exception, match="401"):
                await provider.start(SubagentRequest("echo no"), cancel=CancelSignal())
        monkeypatch.delenv("A2A_TEST_TOKEN")
        async with A2AProvider(server.url, token_env="A2A_TEST_TOKEN") as provider:
            with anyio.fail_after(BOUND), pytest.raises(Exception, match="A2A_TEST_TOKEN"):
                await provider.start(SubagentRequest("echo no"), cancel=CancelSignal())


async def test_the_card_can_come_from_a_card_url(server: A2AServer) -> None:
    """Issue 21 point 1: discovery from the well-known path, or a card URL."""
    card_url = f"{server.url}/.well-known/agent-card.json"
    async with A2AProvider("http://127.0.0.1:9/unused", card_url=card_url) as provider:
        card = await provider.card()
        outcome, _, _ = await _run(provider, "echo via card")
    assert card.name == "scripted"
    assert card.version == "1.2.3"
    assert outcome.output == "echo via card"


async def test_an_unexpected_fault_fails_only_its_run(
    server: A2AServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21 point 1 (the kit's fault isolation rule): a fault in the event mapping
    settles that run failed (infrastructure) and leaves its siblings working."""
    take = A2ATaskView.take

    def faulty(view: A2ATaskView, event: object) -> list[ProgressEvent]:
        if event.WhichOneof("payload") == "artifact_update" and "boom" in str(event):  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
            raise RuntimeError("injected fault")
        return take(view, event)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(A2ATaskView, "take", faulty)
    check = next(
        c
        for c in provider_checks()
        if c.name == "an_unexpected_fault_inside_one_run_fails_only_that_run"
    )
    scenarios = ProviderScenarios(
        good=SubagentRequest("echo fine"),
        slow=SubagentRequest("slow"),
        crashing=SubagentRequest("echo boom"),
        timeout=BOUND,
    )
    await check.run(lambda: A2AProvider(server.url), scenarios)


async def test_later_messages_continue_the_same_context(server: A2AServer) -> None:
    """Issue 21 point 1: "continuable children over the same contextId (later messages; cold
    resume by id)": the agent sees the earlier messages of the context, from the same
    conversation and from a cold resume in another provider."""
    async with A2AProvider(server.url) as provider:
        assert isinstance(provider, ContinuableProvider)
        with anyio.fail_after(BOUND):
            conversation = await provider.prepare_continuable(
                SubagentRequest("echo first"), cancel=CancelSignal()
            )
            assert conversation.outcomes[0].output == "echo first"
            second = await conversation.send("recall")
            context_id = conversation.remote_id
            child_id = conversation.child_id
            await conversation.dispose()
    assert second == SubagentOutcome.completed(child_id, "echo first")
    assert context_id
    async with A2AProvider(server.url) as again:
        with anyio.fail_after(BOUND):
            resumed = await again.resume_continuable(
                context_id, cancel=CancelSignal(), child_id=child_id
            )
            third = await resumed.send("recall")
            await resumed.dispose()
    assert third == SubagentOutcome.completed(child_id, "echo first | recall")
    assert resumed.remote_id == context_id


async def test_a_dropped_stream_is_resubscribed_once_and_the_task_followed_to_its_end(
    server: A2AServer,
) -> None:
    """Issue 21 point 1: "a stream that drops mid-task resubscribes once": the server ends
    the response early while the task goes on; the provider resubscribes and the run
    completes with the whole artifact."""
    async with A2AProvider(server.url) as provider:
        outcome, events, _ = await _run(provider, "drop")
    assert outcome.status == "completed", outcome.message
    assert outcome.output == "before after"
    assert TextProgress("before") in events


async def test_runs_share_one_http_client_and_one_card_fetch_closed_on_exit(
    server: A2AServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21 (bench: later turns 5-7x the SDK client's): the provider makes one HTTP client
    and fetches the card once for all its runs and conversations, loads no CA bundle for an
    http:// agent, and closes the client when it exits."""
    clients: list[httpx.AsyncClient] = []
    fetches: list[str] = []
    cas: list[object] = []
    make, fetch = A2AProvider.http_client, a2a_module.fetch_card

    def counting_client(provider: A2AProvider) -> httpx.AsyncClient:
        clients.append(make(provider))
        return clients[-1]

    async def counting_fetch(http: httpx.AsyncClient, url: str, card_url: str | None) -> AgentCard:
        fetches.append(url)
        return await fetch(http, url, card_url)

    monkeypatch.setattr(A2AProvider, "http_client", counting_client)
    monkeypatch.setattr(a2a_module, "fetch_card", counting_fetch)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", lambda *a, **k: cas.append(a))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    async with A2AProvider(server.url) as provider:
        for word in ("one", "two", "three"):
            outcome, _, _ = await _run(provider, f"echo {word}")
            assert outcome.output == f"echo {word}"
        with anyio.fail_after(BOUND):
            conversation = await provider.prepare_continuable(
                SubagentRequest("echo first"), cancel=CancelSignal()
            )
            assert await conversation.send("recall") == SubagentOutcome.completed(
                conversation.child_id, "echo first"
            )
            await conversation.dispose()
        assert (await provider.card()).name == "scripted"
        assert len(clients) == 1
        assert not clients[0].is_closed
    assert clients[0].is_closed
    assert fetches == [server.url]
    assert cas == []


async def test_cancelling_one_run_leaves_the_shared_client_working_for_the_others(
    server: A2AServer,
) -> None:
    """Issue 21: runs share the provider's HTTP client; one run disposed mid-stream (its
    stream cut by cancellation) does not break it: a concurrent run still follows its task
    to its end, and a later run completes."""
    async with A2AProvider(server.url) as provider:
        with anyio.fail_after(BOUND):
            signal = CancelSignal()
            first = await provider.start(SubagentRequest("slow"), cancel=CancelSignal())
            second = await provider.start(SubagentRequest("slow"), cancel=signal)
            for run in (first, second):
                feed = run.progress()
                assert feed is not None
                async for event in feed:  # "started": the executor is waiting
                    if isinstance(event, OtherProgress) and event.text == "started":
                        break
            await first.dispose()
            signal.cancel("enough")
            outcome = await second.result()
            await second.dispose()
        assert (await first.result()).status == "cancelled"
        assert outcome.status == "cancelled"
        assert second.view.state_name == "canceled"  # the agent's confirmation came through
        third, _, _ = await _run(provider, "echo still fine")
    assert third.output == "echo still fine"


async def test_a_card_whose_endpoint_stopped_answering_is_fetched_again_once(
    server: A2AServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: the card is kept for the provider's life, except that a message refused at
    the card's endpoint (the agent moved) fetches it again: a new endpoint is used for that
    run and the later ones; an unchanged card fails the run as before."""
    fetch = a2a_module.fetch_card
    moved = f"http://127.0.0.1:{closed_port()}/a2a"
    fetches: list[str] = []

    async def moving_fetch(http: httpx.AsyncClient, url: str, card_url: str | None) -> AgentCard:
        card = await fetch(http, url, card_url)
        fetches.append(url)
        if len(fetches) == 1:  # the first card names an endpoint nothing answers at
            card.supported_interfaces[0].url = moved
        return card

    monkeypatch.setattr(a2a_module, "fetch_card", moving_fetch)
    async with A2AProvider(server.url) as provider:
        outcome, _, _ = await _run(provider, "echo moved")
        assert outcome.output == "echo moved"
        again, _, _ = await _run(provider, "echo again")
        assert again.output == "echo again"
    assert len(fetches) == 2

    async def stuck_fetch(http: httpx.AsyncClient, url: str, card_url: str | None) -> AgentCard:
        card = await fetch(http, url, card_url)
        fetches.append(url)
        card.supported_interfaces[0].url = moved
        return card

    fetches.clear()
    monkeypatch.setattr(a2a_module, "fetch_card", stuck_fetch)
    async with A2AProvider(server.url) as provider:
        with anyio.fail_after(BOUND), pytest.raises(SubagentError, match="did not start"):
            await provider.start(SubagentRequest("echo nowhere"), cancel=CancelSignal())
    assert len(fetches) == 2
