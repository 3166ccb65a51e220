"""Serve any provider as an A2A agent (``subagents serve --a2a``), on the official ``a2a-sdk``.

::

    from subagents.remote.a2a_server import serve_a2a_http

    async with build_provider(spec) as provider:
        async with serve_a2a_http(provider, spec, port=0) as server:
            print(server.card_url)   # http://127.0.0.1:PORT/.well-known/agent-card.json
            await anyio.sleep_forever()

It lives beside the ACP server (:mod:`subagents.remote.server`) because it is the same kind of
thing: hypercorn in-process, the same listening socket, loopback and bearer-token rules, and
the same TLS set-up (``tls_certfile``/``tls_keyfile``: HTTPS, the URLs and the card's endpoint
``https://``). The A2A side is the SDK's own: its request handler, task store, JSON-RPC and
agent-card routes; this module adds the :class:`ProviderExecutor` (the provider behind the SDK's
``AgentExecutor``), the agent card made from a registry entry, and the token check.

One A2A task is one turn of a child. The first message of an A2A context starts a child
(``provider.start``) and streams its progress: text as appended chunks of one artifact
(``response``), tool activity and other events as ``working`` status messages. Its outcome
ends the task: completed, failed (the message says why) or canceled. A later message in the
same context continues that child when the provider is continuable (``resume_continuable``
from the child's remote id, then ``send``, whose progress streams the same way), else it
starts a new child. ``tasks/cancel`` fires the turn's cancel signal and waits (bounded)
for the turn to settle. At most ``max_tasks`` turns run at once; one more is rejected.

Structured output (what :class:`~subagents.providers.a2a.A2AProvider` sends): a message whose
metadata carries ``outputSchema`` (``OUTPUT_SCHEMA_KEY``) asks for a JSON value matching that
schema; one that is not a JSON object, or not a valid JSON schema, is rejected saying why.
When the message starts a child and the provider supports ``output_schema``, the schema goes
to it as ``SubagentRequest.output_schema`` and the instruction the client appended to the
prompt (a blank line, then the shared
:func:`~subagents.providers.output_schema.output_instructions`) is taken off, so the child is
not told twice. It is taken off only when the text ends with exactly that suffix (the schema
as read back from protobuf's ``Struct``, its whole numbers written as ints or every number as
a float); otherwise the prompt is left as it is (the child reads the instruction twice, which
is harmless). When the provider lacks ``output_schema``, or the message continues a child (a
child's schema is fixed when it starts), the prompt keeps its instruction and the answer is
the text, which the client parses as JSON. A completed turn whose output is
structured (not text) adds it to the ``response`` artifact as a data part, after the streamed
text (or after the JSON as text when nothing streamed). The card's ``defaultOutputModes``
include ``application/json`` only when the provider supports ``output_schema``.

Tasks are kept by a :class:`~subagents.remote.a2a_tasks.BoundedTaskStore`: every running
task, the ``max_stored_tasks`` most recently used terminal ones (a ``GetTask`` of one evicted
answers "task not found"), and input-required/auth-required ones idle for less than
``interrupted_timeout`` seconds.

The SDK's server runs on asyncio only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import OrderedDict
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    MutableMapping,
)
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast, final

import anyio

from ..protocol.jsonrpc import JsonValue
from ..providers.contract import (
    CancelSignal,
    ContinuableProvider,
    Continuation,
    ProgressEvent,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    TextProgress,
    ToolCallProgress,
    ToolResultProgress,
)
from ..providers.output_schema import check_output_schema, output_instructions
from ..providers.progress import ProgressFeed
from ._body_limit import DEFAULT_BODY_LIMIT, limit_body
from ._envelope import check_envelopes
from ._origin import OriginPolicy, guard_origin_and_host
from .server import (  # the ACP server's listener and host rules, shared
    GRACEFUL_TIMEOUT,
    _listen,  # pyright: ignore[reportPrivateUsage]
    _url_host,  # pyright: ignore[reportPrivateUsage]
    check_listen_address,
    configure_tls,
)

if TYPE_CHECKING:
    from ._principals import Principals

if TYPE_CHECKING:
    from a2a.server.agent_execution import RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.tasks import TaskUpdater
    from a2a.types import Message

    from ..config import AgentSpec
    from .a2a_tasks import BoundedTaskStore

__all__ = (
    "A2A_EXTRA_HINT",
    "A2AServer",
    "ProviderExecutor",
    "agent_card_json",
    "serve_a2a_http",
)

logger = logging.getLogger("subagents.remote.a2a")

A2A_EXTRA_HINT: Final = "pip install 'subagents[a2a]'"
CARD_PATH: Final = "/.well-known/agent-card.json"
_FOLLOW_UP_PROGRESS: Final = 256
"""Events of a continued turn held while the task's queue takes them (a run's feed's size)."""
RESPONSE_ARTIFACT: Final = "response"
"""The id of the artifact a turn's text streams into."""

ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


@dataclass(slots=True)
class _Turn:
    signal: CancelSignal
    settled: anyio.Event = field(default_factory=anyio.Event)


@dataclass(slots=True)
class _Child:
    remote_id: str | None
    continuation: Continuation | None = None


@final
class ProviderExecutor:
    """The SDK's ``AgentExecutor`` for ``provider`` (see the module docstring for the rules).

    ``max_tasks`` turns run at once (one more is rejected); ``max_contexts`` contexts are
    remembered for continuation (the oldest is forgotten, its live child released), each
    its principal's (the call's user: a context id another principal sends starts a child
    of its own);
    ``cancel_timeout`` bounds how long ``tasks/cancel`` waits for the turn to settle.
    """

    def __init__(
        self,
        provider: SubagentProvider,
        *,
        max_tasks: int = 16,
        max_contexts: int = 256,
        cancel_timeout: float = 15.0,
    ) -> None:
        if max_tasks < 1 or max_contexts < 1:
            raise ValueError("max_tasks and max_contexts must be at least 1")
        self.provider = provider
        self.max_tasks = max_tasks
        self.max_contexts = max_contexts
        self.cancel_timeout = cancel_timeout
        self._turns: dict[str, _Turn] = {}
        self._children: OrderedDict[tuple[str, str], _Child] = OrderedDict()
        """(principal, context id) -> the context's child, least recently used first."""
        self._draining = False

    @property
    def running(self) -> int:
        """How many turns run now."""
        return len(self._turns)

    @property
    def contexts(self) -> dict[str, str | None]:
        """The remembered A2A contexts: context id -> its child's remote id (an ACP session,
        a thread...; ``None`` when the provider reports none), oldest first."""
        return {context_id: child.remote_id for (_, context_id), child in self._children.items()}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run the message as a turn of the context's child and publish its events."""
        from a2a.helpers.proto_helpers import new_task
        from a2a.server.tasks import TaskUpdater
        from a2a.types import TaskState

        task_id = context.task_id or ""
        context_id = context.context_id or ""
        key = (context.call_context.user.user_name, context_id)
        if context.current_task is None:
            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            )
        updater = TaskUpdater(event_queue, task_id, context_id)
        prompt = context.get_user_input()
        if self._draining or len(self._turns) >= self.max_tasks:
            why = "the server is shutting down" if self._draining else "too many tasks at once"
            await updater.reject(updater.new_agent_message([_text_part(why)]))
            return
        try:
            schema = _requested_schema(context.message, provider=self.provider.name)
        except SubagentError as exc:
            await updater.reject(updater.new_agent_message([_text_part(exc.message)]))
            return
        child = self._continuable_child(key)
        if (
            schema is not None
            and child is None
            and self.provider.capabilities.supports("output_schema")
        ):
            prompt = _without_instructions(prompt, schema)
        else:
            schema = None
        if not prompt.strip():
            await updater.reject(updater.new_agent_message([_text_part("no text in the message")]))
            return
        turn = _Turn(CancelSignal())
        self._turns[task_id] = turn
        try:
            if child is not None:
                provider, known = child
                outcome = await self._continue(provider, known, prompt, turn.signal, updater)
            else:
                outcome = await self._start(key, prompt, schema, turn.signal, updater)
            await _finish(updater, outcome)
        finally:
            del self._turns[task_id]
            turn.settled.set()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Fire the task's cancel signal and wait (bounded) for its turn to settle."""
        turn = self._turns.get(context.task_id or "")
        if turn is None:
            return
        turn.signal.cancel("cancelled by the A2A client")
        with anyio.move_on_after(self.cancel_timeout):
            await turn.settled.wait()

    async def drain(self, timeout: float) -> None:
        """Refuse new turns, cancel those running, wait (bounded) for them to settle, and
        release the live children."""
        self._draining = True
        turns = list(self._turns.values())
        for turn in turns:
            turn.signal.cancel("the server is shutting down")
        with anyio.move_on_after(timeout):
            for turn in turns:
                await turn.settled.wait()
        children = list(self._children.values())
        self._children.clear()
        for child in children:
            await _release(child)

    def _continuable_child(self, key: tuple[str, str]) -> tuple[ContinuableProvider, _Child] | None:
        """The context's child when a message there continues it (else a new child starts)."""
        child = self._children.get(key)
        provider = self.provider
        if (
            child is not None
            and child.remote_id is not None
            and isinstance(provider, ContinuableProvider)
        ):
            return provider, child
        return None

    async def _start(
        self,
        key: tuple[str, str],
        prompt: str,
        schema: dict[str, JsonValue] | None,
        signal: CancelSignal,
        updater: TaskUpdater,
    ) -> SubagentOutcome | str:
        request = SubagentRequest(prompt, output_schema=schema)
        try:
            run = await self.provider.start(request, cancel=signal)
        except SubagentError as exc:
            return exc.message
        try:
            await updater.start_work()
            streamed = await _stream(run.progress(), updater)
            outcome = await run.result()
            self._remember(key, _Child(getattr(run, "remote_id", None) or None))
            if outcome.status == "completed":
                await _add_output(updater, outcome, streamed=streamed)
            return outcome
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.cancel_timeout):
                await run.dispose()

    async def _continue(
        self,
        provider: ContinuableProvider,
        child: _Child,
        prompt: str,
        signal: CancelSignal,
        updater: TaskUpdater,
    ) -> SubagentOutcome | str:
        if child.continuation is None:
            try:
                child.continuation = await provider.resume_continuable(
                    cast(str, child.remote_id), cancel=signal
                )
            except SubagentError as exc:
                return exc.message
        await updater.start_work()
        continuation = child.continuation
        feed = ProgressFeed(_FOLLOW_UP_PROGRESS)
        streamed = False
        outcome: SubagentOutcome | None = None

        async def publish() -> None:
            nonlocal streamed
            streamed = await _stream(feed, updater)

        async with anyio.create_task_group() as tg:
            tg.start_soon(publish)
            try:
                outcome = await continuation.send(prompt, cancel=signal, on_progress=feed.push)
            finally:
                feed.close()  # what was pushed is still published, then ``publish`` ends
        assert outcome is not None  # send() returned, or its error left the block
        child.remote_id = continuation.remote_id
        if outcome.status == "completed":
            await _add_output(updater, outcome, streamed=streamed)
        return outcome

    def _remember(self, key: tuple[str, str], child: _Child) -> None:
        self._children[key] = child
        self._children.move_to_end(key)
        while len(self._children) > self.max_contexts:
            _, old = self._children.popitem(last=False)
            if old.continuation is not None:
                asyncio.get_running_loop().create_task(_release(old))


async def _release(child: _Child) -> None:
    if child.continuation is not None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(15.0):
            await child.continuation.dispose()


def _requested_schema(message: Message | None, *, provider: str) -> dict[str, JsonValue] | None:
    """The output schema the message's metadata asks for (whole numbers as ints), ``None``
    when it asks for none. ``SubagentError(INVALID_REQUEST)`` when it is not a JSON object or
    not a valid JSON schema."""
    from google.protobuf.json_format import MessageToDict

    from ..providers.a2a import OUTPUT_SCHEMA_KEY, whole_numbers

    if message is None or OUTPUT_SCHEMA_KEY not in message.metadata:
        return None
    raw = whole_numbers(cast(JsonValue, MessageToDict(message.metadata)[OUTPUT_SCHEMA_KEY]))
    if not isinstance(raw, dict):
        raise SubagentError(
            SubagentErrorCode.INVALID_REQUEST,
            f"the message's {OUTPUT_SCHEMA_KEY} metadata is not a JSON object (a JSON schema)",
            provider=provider,
        )
    check_output_schema(raw, provider=provider)
    return raw


def _without_instructions(prompt: str, schema: dict[str, JsonValue]) -> str:
    """``prompt`` without the output-schema instruction an A2A client appended to it (the
    shared :func:`output_instructions` after a blank line, as ``A2AProvider`` sends it); as it
    is when it does not end with exactly that (for the schema with whole numbers as ints, as
    read, or with every number a float, as protobuf holds them)."""
    floats = cast(JsonValue, json.loads(json.dumps(schema), parse_int=float))
    for form in (schema, floats):
        suffix = output_instructions(cast("dict[str, JsonValue]", form))
        if prompt == suffix:
            return ""
        if prompt.endswith(f"\n\n{suffix}"):
            return prompt[: -len(suffix) - 2]
    return prompt


def _text_part(text: str) -> Any:
    from a2a.types import Part

    return Part(text=text)


async def _stream(events: AsyncIterator[ProgressEvent] | None, updater: TaskUpdater) -> bool:
    """Publish a run's progress: text appended to the response artifact, tool activity and
    the rest as ``working`` status messages. Whether any text was streamed."""
    from a2a.types import TaskState

    if events is None:
        return False
    first = True
    async for event in events:
        if isinstance(event, TextProgress):
            if not event.text:
                continue
            await updater.add_artifact(
                [_text_part(event.text)],
                artifact_id=RESPONSE_ARTIFACT,
                name=RESPONSE_ARTIFACT,
                append=not first,
            )
            first = False
            continue
        note = _note(event)
        if note:
            await updater.update_status(
                TaskState.TASK_STATE_WORKING,
                updater.new_agent_message([_text_part(note)], metadata={"kind": event.kind}),
            )
    return not first


def _note(event: object) -> str:
    if isinstance(event, ToolCallProgress):
        return f"tool: {event.title} ({event.status})"
    if isinstance(event, ToolResultProgress):
        return f"tool {event.id}: {event.status}"
    text = getattr(event, "text", "")
    return text if isinstance(text, str) else ""


async def _add_output(updater: TaskUpdater, outcome: SubagentOutcome, *, streamed: bool) -> None:
    """Publish a completed turn's output in the response artifact: its text when none streamed;
    a structured output (not text) as a data part, after the streamed text (appended), else
    after its JSON as text."""
    from a2a.helpers.proto_helpers import new_data_part

    output = outcome.output
    if output is None or output == "":
        return
    if isinstance(output, str):
        if not streamed:
            await updater.add_artifact(
                [_text_part(output)], artifact_id=RESPONSE_ARTIFACT, name=RESPONSE_ARTIFACT
            )
        return
    parts = [] if streamed else [_text_part(json.dumps(output, ensure_ascii=False))]
    parts.append(new_data_part(output))
    await updater.add_artifact(
        parts, artifact_id=RESPONSE_ARTIFACT, name=RESPONSE_ARTIFACT, append=streamed
    )


async def _finish(updater: TaskUpdater, outcome: SubagentOutcome | str) -> None:
    """End the task from the outcome (a string: the start failed, saying why)."""
    if isinstance(outcome, str):
        await updater.failed(updater.new_agent_message([_text_part(outcome)]))
    elif outcome.status == "completed":
        await updater.complete()
    elif outcome.status == "cancelled":
        await updater.cancel(updater.new_agent_message([_text_part(outcome.message)]))
    else:
        why = f"{outcome.failure_kind}: {outcome.message}"
        await updater.failed(updater.new_agent_message([_text_part(why)]))


def agent_card_json(
    spec: AgentSpec, url: str, *, token: bool, output_schema: bool = False
) -> dict[str, Any]:
    """The agent card for the registry entry ``spec`` served at ``url`` (A2A's JSON form).

    ``output_schema``: the provider supports an output schema (the message's ``outputSchema``
    metadata): the default output modes add ``application/json`` (a data part) to text."""
    from importlib.metadata import version

    from a2a.utils.constants import PROTOCOL_VERSION_CURRENT

    card: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description or f"the {spec.provider} agent {spec.name!r}",
        "version": version("subagents"),
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION_CURRENT}
        ],
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"]
        if output_schema
        else ["text/plain"],
        "skills": [
            {
                "id": spec.name,
                "name": spec.name,
                "description": spec.description or f"delegate a task to {spec.name}",
                "tags": [spec.provider],
            }
        ],
    }
    if token:
        card["securitySchemes"] = {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
        }
        card["securityRequirements"] = [{"schemes": {"bearer": {"list": []}}}]
    return card


def _bearer_guard(app: Any, principals: Principals | None) -> ASGIApp:
    """``app`` behind a bearer-token check (the agent card stays public, as A2A expects).

    The token's principal is the request's user (Starlette's ``scope["user"]``, which the
    SDK's call context reads): the task store and the executor's contexts are scoped by it,
    so a principal never sees, continues or cancels another's task (it is "not found")."""
    from starlette.authentication import SimpleUser

    async def guarded(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if principals is not None and scope["type"] == "http" and scope["path"] != CARD_PATH:
            headers = cast("list[tuple[bytes, bytes]]", scope.get("headers", []))
            given = next((v for k, v in headers if k == b"authorization"), None)
            name = principals.identify(None if given is None else given.decode("latin-1"))
            scope["user"] = SimpleUser(name or "")
            if name is None:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"www-authenticate", b"Bearer"),
                            (b"content-type", b"text/plain"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"a bearer token is needed\n"})
                return
        await app(scope, receive, send)

    return guarded


@final
@dataclass(frozen=True, slots=True)
class A2AServer:
    """A running A2A server (made by :func:`serve_a2a_http`): where it listens, its executor
    (the turns running) and its task store (the tasks kept)."""

    host: str
    port: int
    executor: ProviderExecutor
    tasks: BoundedTaskStore
    tls: bool = False
    """Whether it serves HTTPS (``https://`` URLs)."""

    @property
    def url(self) -> str:
        """The JSON-RPC endpoint, ``http://HOST:PORT/`` (``https`` with TLS)."""
        return f"{self._origin}/"

    @property
    def card_url(self) -> str:
        return f"{self._origin}{CARD_PATH}"

    @property
    def _origin(self) -> str:
        return f"http{'s' if self.tls else ''}://{_url_host(self.host)}:{self.port}"


@asynccontextmanager
async def serve_a2a_http(
    provider: SubagentProvider,
    spec: AgentSpec,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | Principals | None = None,
    max_tasks: int = 16,
    drain_timeout: float = 10.0,
    public_url: str | None = None,
    max_stored_tasks: int = 1000,
    interrupted_timeout: float = 3600.0,
    max_message_bytes: int = DEFAULT_BODY_LIMIT,
    max_stored_task_bytes: int | None = 256 * 1024 * 1024,
    tls_certfile: str | os.PathLike[str] | None = None,
    tls_keyfile: str | os.PathLike[str] | None = None,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
) -> AsyncGenerator[A2AServer, None]:
    """Serve ``provider`` (an entered provider, built from ``spec``) as an A2A agent.

    With ``tls_certfile`` and ``tls_keyfile`` (PEM) it serves HTTPS (HTTP/2 by ALPN), and
    its URLs and the card's endpoint are ``https://`` (as for
    :func:`~subagents.remote.serve_acp_http`, which shares the TLS set-up).

    ``token``: one bearer token (the principal ``default``) or
    :class:`~subagents.remote.Principals` (named tokens): each principal's tasks and contexts
    are its own (another's are "task not found"; a context id of another's starts anew).

    Raises :class:`~subagents.remote.RemoteServerConfigError` when bound beyond loopback
    without ``token``, given a weak one (or one TLS file without the other, or a file that
    cannot be used), and ``ImportError`` naming ``subagents[a2a]`` without the SDK. Leaving
    the block drains: new turns are rejected, running ones cancelled and settled (bounded by
    ``drain_timeout``), then the listener closes. The card names ``public_url`` as the
    agent's endpoint when given (what clients elsewhere reach: a proxy's, a host name), else
    the address it listens on.

    At most ``max_stored_tasks`` terminal tasks are kept (the least recently used evicted
    first; at least 1), and an input-required or auth-required task idle for
    ``interrupted_timeout`` seconds is evicted (the SDK releases its waiting turn then too):
    see :mod:`subagents.remote.a2a_tasks`. ``ValueError`` when either is out of range.
    The stored tasks together hold at most ``max_stored_task_bytes`` (serialized; the least
    recently used finished ones evicted first, running ones never; ``None``: no bound).

    A request body longer than ``max_message_bytes`` is answered 413 and never reaches the
    SDK (the bound of ``serve --listen``'s messages, 4 MiB by default).

    As :func:`~subagents.remote.serve_acp_http`, a request from a web page (with an
    ``Origin``) is refused (403) unless its origin is in ``allowed_origins``, and one whose
    ``Host`` names neither an IP address, ``localhost``, ``host``, ``public_url``'s host nor
    a name in ``allowed_hosts`` (``*``: any) is refused (421): see
    :mod:`subagents.remote._origin`.
    """
    principals = check_listen_address(host, token)
    if max_message_bytes < 1:
        raise ValueError("max_message_bytes must be at least 1")
    origins = OriginPolicy.make(
        bound_host=host,
        public_url=public_url,
        allowed_origins=allowed_origins,
        allowed_hosts=allowed_hosts,
    )
    try:
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
        from a2a.types import AgentCard
        from google.protobuf.json_format import ParseDict
        from hypercorn.asyncio import serve as hypercorn_serve  # pyright: ignore[reportUnknownVariableType]
        from hypercorn.config import Config
        from starlette.applications import Starlette

        from .a2a_tasks import BoundedTaskStore
    except ImportError as exc:
        raise ImportError(f"serving A2A needs the a2a extra: {A2A_EXTRA_HINT}") from exc
    store = BoundedTaskStore(
        max_stored_tasks,
        interrupted_timeout=interrupted_timeout,
        max_bytes=max_stored_task_bytes,
    )
    config = Config()
    config.errorlog = logging.getLogger("subagents.remote.a2a.hypercorn")
    config.accesslog = None
    config.graceful_timeout = GRACEFUL_TIMEOUT
    config.include_server_header = False
    tls = configure_tls(config, tls_certfile, tls_keyfile)
    sock = _listen(host, port)
    try:
        bound: int = sock.getsockname()[1]
        executor = ProviderExecutor(provider, max_tasks=max_tasks)
        server = A2AServer(host, bound, executor, store, tls)
        advertised = public_url or server.url
        structured = provider.capabilities.supports("output_schema")
        card_json = agent_card_json(
            spec, advertised, token=principals is not None, output_schema=structured
        )
        card = ParseDict(card_json, AgentCard())
    except BaseException:
        sock.close()
        raise
    handler = DefaultRequestHandler(
        cast(Any, executor), store, card, interrupted_task_timeout=interrupted_timeout
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
    checked = check_envelopes(Starlette(routes=routes))  # bad JSON-RPC: 400, SDK never sees it
    app = guard_origin_and_host(_bearer_guard(checked, principals), origins)
    app = limit_body(app, max_message_bytes)  # a body too long: 413, before anything else
    config.bind = [f"fd://{sock.detach()}"]
    shutdown = anyio.Event()
    served = anyio.Event()

    async def serve() -> None:
        try:
            await hypercorn_serve(
                cast(Any, app), config, shutdown_trigger=shutdown.wait, mode="asgi"
            )
        finally:
            served.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        try:
            yield server
        finally:
            with anyio.CancelScope(shield=True):
                await executor.drain(drain_timeout)
                shutdown.set()
                with anyio.move_on_after(GRACEFUL_TIMEOUT + 2.0):
                    await served.wait()
            tg.cancel_scope.cancel()
