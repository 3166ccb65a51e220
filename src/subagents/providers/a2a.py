"""``A2AProvider``: an agent served over A2A (the official ``a2a-sdk``'s client) as a subagent.

start = resolve the agent card (the well-known path under ``url``, or ``card_url``; once per
provider) + send the prompt as a streaming message (``SendStreamingMessage``;
``message/stream`` in 0.3); the run is published once the agent has created the task (its
task and context ids are kept as :attr:`A2ARun.task_id` / :attr:`A2ARun.context_id`;
``remote_id`` is the task id). An agent that answers with a plain message (no task)
completes at once with that message's text.

Progress: an artifact's text chunks -> text (a second artifact starts with a newline, so the
text events add up to the output); a status update -> other (its state, and the text of its
message when it has one); data parts -> other (their data).

Outcome, from the task's final state: ``completed`` -> completed with the artifacts' text (the
final status message's text when there is no artifact), or with the structured output when the
request has an output schema (below); ``failed`` / ``rejected`` -> failed
(turn) with the status message's text; ``canceled`` -> cancelled; ``input-required`` /
``auth-required`` -> failed (turn), saying the agent asks for input or authentication that a
subagent run cannot give. The signal sends ``CancelTask`` (``tasks/cancel``), bounded by
``cancel_timeout``. A stream that ends or breaks before a final state: the task is fetched
(``GetTask``: it may have ended meanwhile), else resubscribed (``SubscribeToTask``) once; if
that fails too the run settles failed (infrastructure) naming the cause.

Output schema (advertised **on**): the schema goes to the agent twice, for the two kinds of
agents there are: as the message's metadata under :data:`OUTPUT_SCHEMA_KEY` (``outputSchema``:
A2A has no field of its own for it; an agent written for it reads it there) and as an
instruction after the prompt's text (the shared :func:`output_instructions`: a model-backed
agent reads only the text). The structured output is the task's *last data part*: of its
artifacts (in the order they came; a later chunk's parts after an earlier one's), else of the
final status message (or of a plain message answer). It is validated against the schema
(numbers that are whole are ints: protobuf's ``Value`` holds every number as a double); with no
data part at all, the text output is parsed as JSON instead (bare, or alone in one fenced
block), as Codex's and the in-process children's answers are. Either way the run settles
``completed`` with the JSON value, or ``failed`` (kind ``turn``) saying what does not match or
that the text is not JSON, the same outcomes as theirs; a schema that is not a valid JSON
schema is refused before anything is sent (``INVALID_REQUEST``). In a continuable child only
the first message carries the schema.

The other start-time features cannot be enforced on a remote agent (depth limit, tool filter)
or are not applied (persona): they are advertised off, and the service rejects such requests
before anything is sent. Children are continuable: each later message goes to the
same A2A context (``contextId``), a new task of the agent.

The provider owns the runs' tasks and one HTTP client that all of them share (made on first
use, closed on exit; the agent card is fetched once and kept: see :class:`A2AProvider`): use
it as ``async with A2AProvider(url, name=...)``.
"""

from __future__ import annotations

import os
import ssl
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping
from contextlib import aclosing, suppress
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final, final

import anyio
import httpx
from a2a.client import A2ACardResolver
from a2a.client.transports import ClientTransport, JsonRpcTransport, RestTransport
from a2a.compat.v0_3.versions import is_legacy_version
from a2a.types import (
    AgentCard,
    AgentInterface,
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, VERSION_HEADER, TransportProtocol
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict

from .._exception_groups import leaf_exceptions
from ..protocol.jsonrpc import JsonValue
from ._child_run import ChildConversation, ChildProvider, ChildRun
from .contract import (
    CancelSignal,
    OtherProgress,
    ProgressEvent,
    SubagentCapabilities,
    SubagentOutcome,
    SubagentRequest,
    TextProgress,
)
from .output_schema import (
    check_output_schema,
    output_instructions,
    structured_outcome,
    validated_outcome,
)
from .progress import ProgressFeed

__all__ = (
    "OUTPUT_SCHEMA_KEY",
    "A2AConversation",
    "A2AProvider",
    "A2ARun",
    "A2ATaskView",
    "client_transport",
    "endpoint_refusal",
    "fetch_card",
    "state_name",
)

_DISPOSE_BOUND: Final = 15.0
"""Bound on waiting for a run's task (its cancel request and connection close) to finish."""

_TAIL: Final = 5.0
"""How long the stream may go on after a final state or a message before it is cut."""

_FINAL_STATES: Final = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)
"""The states that end a run (the interrupted ones too: nobody can answer them)."""

_CAPABILITIES: Final = SubagentCapabilities(output_schema=True)

_LIMITS: Final = httpx.Limits(max_keepalive_connections=1)
"""The provider's connection pool: one idle connection kept for the next run (an idle
provider holds one socket; a run's stream and its cancel request may need two at once)."""

OUTPUT_SCHEMA_KEY: Final = "outputSchema"
"""The key of the request's output schema in the metadata of the message that carries it."""


def state_name(state: TaskState) -> str:
    """A task state as the A2A specification spells it (``input-required``...)."""
    name: str = TaskState.Name(state)
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _parts_text(parts: Iterable[Part]) -> str:
    return "".join(part.text for part in parts if part.HasField("text"))


def _message_text(message: Message) -> str:
    return _parts_text(message.parts)


def whole_numbers(value: JsonValue) -> JsonValue:
    """``value`` with its whole numbers as ints (protobuf's ``Value`` and ``Struct`` hold every
    number as a double: an agent's ``3``, a schema's ``"minimum": 3`` arrive as ``3.0``)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    return value


def _parts_data(parts: Iterable[Part]) -> list[JsonValue]:
    """The values of the data parts among ``parts``, in order."""
    return [whole_numbers(MessageToDict(part)["data"]) for part in parts if part.HasField("data")]


@final
@dataclass
class A2ATaskView:
    """What the client knows of the remote task: its ids, its state, its artifacts' text."""

    task_id: str = ""
    context_id: str = ""
    state: TaskState = TaskState.TASK_STATE_UNSPECIFIED
    status_text: str = ""
    artifacts: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Artifact id -> its text chunks, in the order the artifacts first came."""
    artifact_data: dict[str, list[JsonValue]] = field(default_factory=dict[str, list[JsonValue]])
    """Artifact id -> the values of its data parts, in order."""
    status_data: list[JsonValue] = field(default_factory=list[JsonValue])
    """The values of the data parts of the last status message."""

    @property
    def output(self) -> str:
        """The artifacts' text (one artifact after another, separated by a newline)."""
        return "\n".join("".join(chunks) for chunks in self.artifacts.values())

    @property
    def data(self) -> list[JsonValue]:
        """The values of the data parts: the artifacts' (one artifact after another), else
        the last status message's."""
        values = [value for chunk in self.artifact_data.values() for value in chunk]
        return values or list(self.status_data)

    @property
    def state_name(self) -> str:
        """The task's state as the specification spells it (``working``, ``canceled``...)."""
        return state_name(self.state)

    @property
    def final(self) -> bool:
        return self.state in _FINAL_STATES

    def take_task(self, task: Task) -> None:
        """A whole task (the first event, or a resubscription's snapshot)."""
        self.task_id = task.id
        self.context_id = task.context_id
        self._take_status(task.status)
        if task.artifacts:
            self.artifacts = {a.artifact_id: [_parts_text(a.parts)] for a in task.artifacts}
            self.artifact_data = {a.artifact_id: _parts_data(a.parts) for a in task.artifacts}

    def _take_status(self, status: TaskStatus) -> None:
        self.state = status.state
        if status.HasField("message"):
            self.status_text = _message_text(status.message)
            self.status_data = _parts_data(status.message.parts)

    def take(self, event: StreamResponse) -> list[ProgressEvent]:
        """Fold ``event`` in; the progress it carries."""
        kind = event.WhichOneof("payload")
        if kind == "task":
            self.take_task(event.task)
            return []
        if kind == "status_update":
            update = event.status_update
            self.task_id = self.task_id or update.task_id
            self.context_id = self.context_id or update.context_id
            self._take_status(update.status)
            text = _message_text(update.status.message) if update.status.HasField("message") else ""
            return [OtherProgress(text, {"state": state_name(update.status.state)})]
        if kind == "artifact_update":
            update = event.artifact_update
            self.task_id = self.task_id or update.task_id
            self.context_id = self.context_id or update.context_id
            return self._take_artifact(update.artifact, update.append)
        return []

    def _take_artifact(self, artifact: Artifact, append: bool) -> list[ProgressEvent]:
        events: list[ProgressEvent] = []
        text = _parts_text(artifact.parts)
        data = _parts_data(artifact.parts)
        known = self.artifacts.get(artifact.artifact_id)
        if known is None:
            if self.artifacts and text:
                events.append(TextProgress("\n"))
            self.artifacts[artifact.artifact_id] = [text]
            self.artifact_data[artifact.artifact_id] = list(data)
        elif append:
            known.append(text)
            self.artifact_data.setdefault(artifact.artifact_id, []).extend(data)
        else:
            known[:] = [text]
            self.artifact_data[artifact.artifact_id] = list(data)
        if text:
            events.append(TextProgress(text))
        events.extend(OtherProgress("", {"data": value}) for value in data)
        return events


def _answer(
    child_id: str, text: str, data: list[JsonValue], schema: Mapping[str, JsonValue] | None
) -> SubagentOutcome:
    """``completed`` with ``text``; with an output schema, with the last of the data parts'
    values ``data`` (else ``text`` parsed as JSON), validated against it."""
    if schema is None:
        return SubagentOutcome.completed(child_id, text)
    if data:
        return validated_outcome(child_id, data[-1], schema, what="the agent's data part")
    return structured_outcome(child_id, text, schema)


def _outcome(
    view: A2ATaskView,
    child_id: str,
    cancel: CancelSignal,
    schema: Mapping[str, JsonValue] | None = None,
) -> SubagentOutcome:
    """The run's outcome from the task's final state (``schema``: the request's output
    schema)."""
    state = view.state
    said = f": {view.status_text}" if view.status_text else ""
    if state == TaskState.TASK_STATE_COMPLETED:
        output = view.output if view.artifacts else view.status_text
        return _answer(child_id, output, view.data, schema)
    if state == TaskState.TASK_STATE_CANCELED:
        return SubagentOutcome.cancelled(child_id, cancel.reason or "the agent cancelled the task")
    if state in (TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED):
        return SubagentOutcome.failed(
            child_id, "turn", f"the agent's task ended {state_name(state)}{said}"
        )
    what = "input" if state == TaskState.TASK_STATE_INPUT_REQUIRED else "authentication"
    return SubagentOutcome.failed(
        child_id,
        "turn",
        f"the agent's task stopped {state_name(state)}: it asks for {what}, which a subagent "
        f"run cannot give{said}",
    )


async def fetch_card(http: httpx.AsyncClient, url: str, card_url: str | None) -> AgentCard:
    """The agent card: from ``card_url`` when given, else from the well-known path under
    ``url``."""
    if card_url is not None:
        return await A2ACardResolver(http, card_url, agent_card_path="").get_agent_card()
    return await A2ACardResolver(http, url).get_agent_card()


def _interface(card: AgentCard) -> AgentInterface | None:
    """The interface of ``card`` the client uses: its first JSON-RPC or HTTP+JSON one."""
    for interface in card.supported_interfaces:
        if interface.protocol_binding in (TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON):
            return interface
    return None


def client_transport(http: httpx.AsyncClient, card: AgentCard) -> ClientTransport:
    """The SDK's transport for the first JSON-RPC or HTTP+JSON interface of ``card`` (the
    protocol's 0.3 versions through the SDK's compatible transports), over ``http`` (shared:
    closing the transport leaves it open).

    The transport is used directly, not through the SDK's ``BaseClient``: its
    ``send_message`` returns from an inner async generator without closing it when the agent
    answers with a message, which leaves the transport's generators to the garbage collector
    (trio warns of each; the HTTP response stays open until then)."""
    http.headers.setdefault(VERSION_HEADER, PROTOCOL_VERSION_CURRENT)
    interface = _interface(card)
    if interface is not None:
        legacy = is_legacy_version(interface.protocol_version)
        if interface.protocol_binding == TransportProtocol.JSONRPC:
            if legacy:
                from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport

                return CompatJsonRpcTransport(http, card, interface.url, is_shared_httpx=True)
            return JsonRpcTransport(http, card, interface.url, is_shared_httpx=True)
        if legacy:
            from a2a.compat.v0_3.rest_transport import CompatRestTransport

            return CompatRestTransport(http, card, interface.url, is_shared_httpx=True)
        return RestTransport(http, card, interface.url, is_shared_httpx=True)
    bindings = sorted({i.protocol_binding for i in card.supported_interfaces})
    raise A2AError(
        f"the agent {card.name!r} offers no JSON-RPC or HTTP+JSON interface (it offers "
        f"{bindings or 'none'})"
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it, outermost first."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


def _not_connected(exc: Exception) -> bool:
    """Whether ``exc`` (or one in it, when a task group raised it) comes of a connection that
    could not be made (the request was never sent)."""
    leaves = leaf_exceptions(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return any(isinstance(c, httpx.ConnectError) for leaf in leaves for c in _causes(leaf))


async def endpoint_refusal(http: httpx.AsyncClient, card: AgentCard) -> int | None:
    """Whether the agent's endpoint (the interface of ``card`` a run would use) takes the
    requests of ``http`` (its token): one cheap authenticated request, ``GetTask`` of a random
    task id, which an agent that accepts the request answers with an error (task not found).
    The HTTP status (401 or 403) when the endpoint refuses it; None when anything else
    answers (the request got past its authentication). Raises ``A2AError`` when nothing
    answers (or the card offers no usable interface)."""
    transport = client_transport(http, card)
    try:
        await transport.get_task(GetTaskRequest(id=str(uuid.uuid4())))
    except A2AError as exc:
        causes = list(_causes(exc))
        statuses = [c.response.status_code for c in causes if isinstance(c, httpx.HTTPStatusError)]
        if statuses and statuses[0] in (401, 403):
            return statuses[0]
        if not statuses and any(isinstance(c, httpx.TransportError) for c in causes):
            raise
    finally:
        with anyio.CancelScope(shield=True):
            await transport.close()
    return None


class _A2ATurn:
    """One message to the agent and the task it makes: its events folded into ``view``, its
    progress into ``feed``, ``started`` called once the task (or a message answer) exists."""

    def __init__(
        self,
        provider: A2AProvider,
        child_id: str,
        feed: ProgressFeed,
        started: Callable[[], None],
    ) -> None:
        self._provider = provider
        self.client: ClientTransport | None = None
        """The transport the message went through (None before it is sent)."""
        self.child_id = child_id
        self.view = A2ATaskView()
        self._feed = feed
        self._on_started = started
        self.started = False
        self._cancel_timeout = provider.cancel_timeout
        self._cancel_sent = False
        self._schema: Mapping[str, JsonValue] | None = None
        self._answer_data: list[JsonValue] = []

    def _started(self) -> None:
        if not self.started:
            self.started = True
            self._on_started()

    async def run(
        self,
        prompt: str,
        cancel: CancelSignal,
        context_id: str = "",
        schema: Mapping[str, JsonValue] | None = None,
    ) -> SubagentOutcome:
        """Send ``prompt`` (in ``context_id`` when given; with the output ``schema`` in the
        message's metadata and an instruction after the prompt) and follow the task to its
        outcome.

        When the message cannot even be sent (nothing answers at the card's endpoint: the
        connection is refused or fails), the card is fetched again; if it now names another
        endpoint (the agent moved), the message is sent there, once."""
        self._schema = schema
        text = prompt if schema is None else f"{prompt}\n\n{output_instructions(schema)}"
        message = Message(
            role=Role.ROLE_USER,
            message_id=os.urandom(16).hex(),
            context_id=context_id,
            parts=[Part(text=text)],
        )
        if schema is not None:
            message.metadata.update({OUTPUT_SCHEMA_KEY: dict(schema)})
        provider = self._provider
        client = await provider.transport()
        try:
            return await self._send(client, message, cancel)
        except Exception as exc:  # raised again unless nothing answered at the endpoint
            if self.started or not _not_connected(exc):
                raise
            moved = await provider.renewed_transport(client)
            if moved is None:
                raise
        return await self._send(moved, message, cancel)

    async def _send(
        self, client: ClientTransport, message: Message, cancel: CancelSignal
    ) -> SubagentOutcome:
        self.client = client
        stream = client.send_message_streaming(SendMessageRequest(message=message))
        return await self._follow(client, stream, cancel, self._provider.what)

    async def _follow(
        self,
        client: ClientTransport,
        stream: AsyncIterator[StreamResponse],
        cancel: CancelSignal,
        what: str,
    ) -> SubagentOutcome:
        """Read the task's events until a final state (resubscribing once when the stream
        ends or breaks before it); the outcome."""
        outcomes: list[SubagentOutcome] = []
        async with anyio.create_task_group() as tg:

            async def forward_cancel() -> None:
                await cancel.wait()
                await self.send_cancel()
                # An agent that ignores tasks/cancel must not hold the run forever.
                await anyio.sleep(self._cancel_timeout)
                outcomes.append(
                    SubagentOutcome.cancelled(
                        self.child_id,
                        f"{cancel.reason or 'cancelled'} (the agent did not confirm the cancel "
                        f"within {self._cancel_timeout:g} s; stopped waiting)",
                    )
                )
                tg.cancel_scope.cancel()

            async def follow() -> None:
                outcomes.append(await self._follow_events(client, stream, cancel, what))
                tg.cancel_scope.cancel()

            tg.start_soon(forward_cancel)
            tg.start_soon(follow)
        return outcomes[0]

    async def _follow_events(
        self,
        client: ClientTransport,
        stream: AsyncIterator[StreamResponse],
        cancel: CancelSignal,
        what: str,
    ) -> SubagentOutcome:
        view = self.view
        resubscribed = False
        while True:
            cause: BaseException | None = None
            try:
                answer = await self._read(stream, view)
            except (A2AError, httpx.HTTPError) as exc:
                if not self.started:
                    raise
                answer, cause = None, exc
            if answer is not None:  # a plain message: the answer
                return _answer(self.child_id, answer, self._answer_data, self._schema)
            if view.final:
                return _outcome(view, self.child_id, cancel, self._schema)
            if not self.started:
                raise A2AError(f"{what} ended the stream before it created a task")
            if resubscribed:
                # It may have ended between the GetTask and the resubscription (refused then,
                # as a task in a final state is): one last look before failing.
                with suppress(A2AError, httpx.HTTPError):
                    view.take_task(await client.get_task(GetTaskRequest(id=view.task_id)))
                if view.final:
                    return _outcome(view, self.child_id, cancel, self._schema)
                why = f"{type(cause).__name__}: {cause}" if cause else "the stream ended"
                return SubagentOutcome.failed(
                    self.child_id,
                    "infrastructure",
                    f"the stream of task {view.task_id} at {what} dropped before the task "
                    f"ended, and again after resubscribing ({why})",
                    cause,
                )
            resubscribed = True
            # The task may have ended meanwhile (an agent refuses to resubscribe to a task
            # in a final state): ask for it first.
            with suppress(A2AError, httpx.HTTPError):
                view.take_task(await client.get_task(GetTaskRequest(id=view.task_id)))
            if view.final:
                return _outcome(view, self.child_id, cancel, self._schema)
            stream = client.subscribe(SubscribeToTaskRequest(id=view.task_id))

    async def _read(self, stream: AsyncIterator[StreamResponse], view: A2ATaskView) -> str | None:
        """Fold the stream's events into ``view`` until it ends; the text of a plain message
        answer, if that is what came.

        The stream is read to its end (for at most :data:`_TAIL` seconds past a final state or
        a message, then cancelled inside the read), never left between two events: the SDK's
        client nests async generators it does not close, and one abandoned at a ``yield`` is
        collected unfinished (trio warns of each)."""
        answer: str | None = None
        fault: Exception | None = None
        done = False
        with anyio.CancelScope() as tail:
            async with aclosing(stream):  # pyright: ignore[reportArgumentType]
                async for event in stream:
                    if done:
                        continue
                    try:
                        answer = self._take(event, view)
                    except Exception as exc:  # raised once the stream is closed, below
                        fault = exc
                    if fault is not None or answer is not None or view.final:
                        done = True
                        tail.deadline = anyio.current_time() + _TAIL
        if fault is not None:
            raise fault
        return answer

    def _take(self, event: StreamResponse, view: A2ATaskView) -> str | None:
        """Fold one event in (publishing the run once the task exists); the text of a plain
        message answer."""
        if event.WhichOneof("payload") == "message":
            answer = _message_text(event.message)
            self._answer_data = _parts_data(event.message.parts)
            self._started()
            if answer:
                self._feed.push(TextProgress(answer))
            return answer
        for progress in view.take(event):
            self._feed.push(progress)
        if view.task_id and not self.started:
            self._started()
        return None

    async def send_cancel(self) -> None:
        """``tasks/cancel`` for the task, once, bounded (a failure is only logged away: the
        run settles anyway)."""
        client = self.client
        if client is None or self._cancel_sent or not self.view.task_id or self.view.final:
            return
        self._cancel_sent = True
        with anyio.move_on_after(self._cancel_timeout):
            with suppress(A2AError, httpx.HTTPError):
                await client.cancel_task(CancelTaskRequest(id=self.view.task_id))


@final
class A2ARun(ChildRun["A2AProvider"]):
    """A published A2A child: one task (or one plain message answer)."""

    _dispose_bound = _DISPOSE_BOUND
    _failures = (A2AError, httpx.HTTPError)

    def __init__(
        self,
        provider: str,
        progress_capacity: int,
        child_id: str | None = None,
        *,
        dispose_bound: float | None = None,
    ) -> None:
        super().__init__(provider, progress_capacity, child_id, dispose_bound=dispose_bound)
        self._turn: _A2ATurn | None = None

    @property
    def view(self) -> A2ATaskView:
        """The remote task as the client knows it."""
        return self._turn.view if self._turn is not None else A2ATaskView()

    @property
    def task_id(self) -> str:
        """The A2A task's id (empty before publication, and for a plain message answer)."""
        return self.view.task_id

    @property
    def context_id(self) -> str:
        """The A2A context the task belongs to."""
        return self.view.context_id

    def _child_key(self) -> str:
        return self.view.task_id

    async def _run(
        self, provider: A2AProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        turn = _A2ATurn(provider, self.child_id, self._feed, self._publish)
        self._turn = turn
        outcome = await turn.run(request.prompt, cancel, schema=request.output_schema)
        await self._conclude(outcome)

    async def _stop_turn(self) -> None:
        if self._turn is not None:
            await self._turn.send_cancel()


@final
class A2AConversation(ChildConversation):
    """A continuable A2A child: each :meth:`send` is a new message in the same A2A context
    (``contextId``), a new task of the agent. :attr:`remote_id` is the context id; a cold
    resume (:meth:`A2AProvider.resume_continuable`) sends the next message in that context
    (the agent must still know it)."""

    _dispose_bound = _DISPOSE_BOUND

    def __init__(
        self,
        provider: A2AProvider,
        context_id: str | None,
        child_id: str | None = None,
        schema: Mapping[str, JsonValue] | None = None,
    ) -> None:
        super().__init__(provider.name, child_id, dispose_bound=provider.dispose_timeout)
        self._provider = provider
        self.context_id = context_id or ""
        """The A2A context of the child's messages (empty until the agent names it)."""
        self._first_schema = schema
        """The output schema of the first message (the later ones have none)."""

    def _child_key(self) -> str:
        return self.context_id

    async def _converse(self) -> None:
        provider = self._provider
        await provider.transport()  # the agent's card, resolved once per provider

        async def turn(message: str, cancel: CancelSignal, feed: ProgressFeed) -> SubagentOutcome:
            one = _A2ATurn(provider, self.child_id, feed, lambda: None)
            schema, self._first_schema = self._first_schema, None
            try:
                return await one.run(message, cancel, self.context_id, schema)
            except (A2AError, httpx.HTTPError) as exc:
                return SubagentOutcome.failed(
                    self.child_id, "infrastructure", f"{provider.what}: {exc}", exc
                )
            finally:
                self.context_id = self.context_id or one.view.context_id

        await self._serve(turn)

    def _not_opened(self) -> str:
        return f"{self._provider.what} could not be reached"


class _BearerToken(httpx.Auth):
    """Sets ``Authorization: Bearer <token>`` on each request, the token read then (``token``
    returns None for none; it raises when the token must come from an unset variable)."""

    def __init__(self, token: Callable[[], str | None]) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._token()
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"
        yield request


class _LazyTLSTransport(httpx.AsyncBaseTransport):
    """``https://`` requests through an ``httpx.AsyncHTTPTransport`` made on the first one: its
    SSL context loads the CA bundle (30-40 ms of CPU), which a client of an ``http://`` agent
    never needs."""

    def __init__(self) -> None:
        self._inner: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._inner is None:
            self._inner = httpx.AsyncHTTPTransport(limits=_LIMITS)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()


def _plain_http_transport() -> httpx.AsyncHTTPTransport:
    """The transport for ``http://`` requests (``https://`` ones are mounted elsewhere): its
    SSL context is never used, so it is a bare one that loads no CA bundle and verifies
    certificates, trusting none (a TLS connection through it would fail, never go unchecked)."""
    return httpx.AsyncHTTPTransport(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), limits=_LIMITS)


@final
class A2AProvider(ChildProvider):
    """Runs children as tasks of the A2A agent at ``url`` (its card at the well-known path
    under it, or at ``card_url``); ``token`` or the variable ``token_env`` is sent as a bearer
    token (read at each request), ``headers`` with every request.

    The provider owns one HTTP client (:meth:`http_client`), made on first use and closed when
    the provider exits; every run, conversation and :meth:`card` / :meth:`endpoint_refusal`
    goes through it (concurrent runs share its connection pool). The agent card is fetched on
    first use and kept for the provider's life, with one exception: a message that cannot be
    sent because nothing answers at the card's endpoint (the connection is refused or fails:
    the agent may have moved) makes the run fetch the card again; when the card now names
    another endpoint it is kept, and the message is sent there (once), else the run fails as
    it would have."""

    _what = "A2AProvider"

    def __init__(
        self,
        url: str,
        *,
        name: str = "a2a",
        token: str | None = None,
        token_env: str | None = None,
        headers: Mapping[str, str] | None = None,
        card_url: str | None = None,
        connect_timeout: float = 30.0,
        cancel_timeout: float = 10.0,
        progress_capacity: int = 256,
        dispose_timeout: float | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"an A2A agent's url is http(s)://...: {url!r}")
        super().__init__(name, dispose_timeout=dispose_timeout)
        self.url = url
        self.token = token
        self.token_env = token_env
        self.headers = dict(headers or {})
        self.card_url = card_url
        self.connect_timeout = connect_timeout
        """Bound on connecting and on each request other than the stream's reads."""
        self.cancel_timeout = cancel_timeout
        """How long ``tasks/cancel`` and its confirmation may take before the run stops
        waiting (it settles ``cancelled`` saying so)."""
        self._progress_capacity = progress_capacity
        self._client: httpx.AsyncClient | None = None
        """The provider's HTTP client (None until first used, and once closed)."""
        self._card: AgentCard | None = None
        self._transport: ClientTransport | None = None
        """The SDK's transport for :attr:`_card`, over :attr:`_client`."""
        self._card_lock = anyio.Lock()
        """Held while the card is fetched: concurrent first runs fetch it once."""

    @property
    def capabilities(self) -> SubagentCapabilities:
        return _CAPABILITIES

    @property
    def what(self) -> str:
        """The agent, in messages: ``A2A agent at http://...``."""
        return f"A2A agent at {self.url}"

    def bearer_token(self) -> str | None:
        """The token to send (``token``, else the variable ``token_env``, read now); None for
        none. Raises ``A2AError`` when ``token_env`` names an unset variable."""
        if self.token is not None or self.token_env is None:
            return self.token
        token = os.environ.get(self.token_env) or None
        if token is None:
            raise A2AError(
                f"{self.url} needs the token in ${self.token_env} (token_env), which is not set"
            )
        return token

    def request_headers(self) -> dict[str, str]:
        """The headers every request carries (``Authorization`` from the token)."""
        headers = dict(self.headers)
        token = self.bearer_token()
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def http_client(self) -> httpx.AsyncClient:
        """A new HTTP client with this provider's headers (the bearer token set on each
        request) and bounds (the stream's reads are unbounded: a task may be silent for long).
        The provider makes one, for all its runs: it keeps one idle connection for the next
        run (sequential turns reuse it; those of concurrent runs close as they end). Unless
        the environment names proxies (then httpx's own handling is kept as is), ``http://``
        requests build no SSL context that loads the CA bundle: the first ``https://`` request
        does."""
        timeout = httpx.Timeout(self.connect_timeout, read=None)
        auth = _BearerToken(self.bearer_token)
        if urllib.request.getproxies():
            return httpx.AsyncClient(
                headers=self.headers, auth=auth, timeout=timeout, limits=_LIMITS
            )
        return httpx.AsyncClient(
            headers=self.headers,
            auth=auth,
            timeout=timeout,
            transport=_plain_http_transport(),
            mounts={"https://": _LazyTLSTransport()},
        )

    def _http(self) -> httpx.AsyncClient:
        """The provider's HTTP client, made on first use (the provider must be open: it
        closes the client when it exits)."""
        self._check_open()
        client = self._client
        if client is None:
            client = self._client = self.http_client()
        return client

    async def card(self) -> AgentCard:
        """The agent card: fetched on first use, then kept (``agents --probe`` shows it)."""
        card = self._card
        if card is None:
            async with self._card_lock:
                card = self._card
                if card is None:
                    card = self._card = await fetch_card(self._http(), self.url, self.card_url)
        return card

    async def transport(self) -> ClientTransport:
        """The SDK's client transport for the agent card's JSON-RPC or HTTP+JSON interface,
        over the provider's HTTP client: made with the card, then kept."""
        card = await self.card()
        transport = self._transport
        if transport is None:
            transport = self._transport = client_transport(self._http(), card)
        return transport

    async def renewed_transport(self, stale: ClientTransport) -> ClientTransport | None:
        """After a message could not be sent through ``stale`` (nothing answered at its
        endpoint): the card fetched again and, when it names another endpoint, the transport
        for it (both kept for later runs). None when the card is unchanged or cannot be
        fetched. A run that comes after another one renewed it gets that one's."""
        async with self._card_lock:
            current = self._transport
            if current is not None and current is not stale:
                return current
            http = self._http()
            old = self._card
            try:
                card = await fetch_card(http, self.url, self.card_url)
                transport = client_transport(http, card)
            except (A2AError, httpx.HTTPError):
                return None
            if old is not None and _interface(card) == _interface(old):
                return None
            self._card, self._transport = card, transport
            return transport

    async def endpoint_refusal(self) -> int | None:
        """:func:`endpoint_refusal` of the card's endpoint, through the provider's client."""
        return await endpoint_refusal(self._http(), await self.card())

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        """Wait for the runs (as every provider does), then close the HTTP client."""
        try:
            return await super().__aexit__(exc_type, exc, traceback)
        finally:
            client, self._client = self._client, None
            self._card = self._transport = None
            if client is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_DISPOSE_BOUND):
                    await client.aclose()

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> A2AConversation:
        """Start a child whose later messages go to the same A2A context; ``request`` is its
        first message (its outcome is ``conversation.outcomes[0]``)."""
        self._check(request, cancel)
        child_id = self._child_id(request)
        conversation = await self._open_conversation(
            lambda: A2AConversation(self, None, child_id, request.output_schema), cancel
        )
        await conversation.send(request.prompt, cancel=cancel)
        return conversation

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> A2AConversation:
        """Continue the A2A context ``remote_id`` (or the child of that id this provider
        started): later messages go to that context."""
        self._check_open()
        self._check_not_cancelled(cancel)
        child, context_id = self._resume_ids(remote_id, child_id)
        return await self._open_conversation(
            lambda: A2AConversation(self, context_id, child), cancel
        )

    def _check(self, request: SubagentRequest, cancel: CancelSignal) -> None:
        self._check_request(request, cancel)
        if request.output_schema is not None:
            check_output_schema(request.output_schema, provider=self._name)

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> A2ARun:
        self._check(request, cancel)
        run = self._new_run(A2ARun, request)
        return await self._start_run(run, request, cancel, what=self.what)
