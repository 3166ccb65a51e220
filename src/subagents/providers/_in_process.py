"""What the spawn and fork providers share: an in-process child behind the run contract.

start = check the request (capabilities, depth limit, output schema, the parent for a fork),
then make the child's session and publish (the child's session id is its child id, minted by
the service: ``"<provider>:<12 hex digits>"``); the prompt runs as one turn of the runtime's
agent loop in the provider's task group.

- The child's limits: the depth limit is absolute and inherited (the smaller of the parent's
  and the request's); a child at the limit is not offered the subagent tools, and a start
  that would go deeper is refused (``DEPTH_LIMIT``). The tool filter narrows the parent's.
- ``persona`` is the child's system prompt; ``output_schema`` is added to it as an
  instruction and the final answer is validated (``failed``, kind ``turn``, with the
  validation errors when it does not match).
- Outcomes: the turn's ``completed`` / ``cancelled`` / ``failed`` (model errors and the step
  limit are ``turn`` failures); live progress is the loop's text, tool calls and results.
- What the child's own code raises (its adapter, its tools) is that child's failure, whatever
  it is: an ``Exception``, a ``BaseException`` subclass, ``KeyboardInterrupt``,
  ``SystemExit``, or a stray ``CancelledError`` that no cancel scope of ours raised. The run
  settles ``failed`` (``infrastructure``, the message naming the exception's type and text,
  the exception kept as ``cause``), its lifecycle pair closes, and its siblings and the
  provider go on. ``KeyboardInterrupt`` and ``SystemExit`` raised *inside a child* are the
  child's code calling ``exit()`` or raising them, not the user: a Ctrl-C is the event
  loop's (on asyncio the first one cancels the main task, a real cancellation, under which
  the runs end ``cancelled``; trio raises it where unprotected code runs when the signal
  comes, so on trio a Ctrl-C that lands inside a child's code fails only that child: press
  it again). A real cancellation (the run's own scope, the provider closing, the caller's
  scope) is never turned into a failure: it passes through.
- The parent's log gets only the delegation call and its result (the subagent tool's); the
  child's steps are in the child's own session, linked by ``parent_session``.
- Continuable: later messages are later turns of the same session; a cold resume reads the
  session back from the runtime's session store (its limits and prompt come with it).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Final

from ..harness.llm.types import Message
from ..harness.loop import TurnOutcome
from ..harness.runtime import Agent, AgentRuntime, ChildLimits
from ..harness.session import Session, SessionError
from ..protocol.jsonrpc import JsonValue
from ._child_run import ChildConversation, ChildProvider, ChildRun
from .contract import (
    CancelSignal,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
)
from .output_schema import check_output_schema, output_instructions, structured_outcome
from .progress import ProgressFeed

__all__ = ("InProcessConversation", "InProcessProvider", "InProcessRun")

_DISPOSE_BOUND: Final = 5.0
_CAPABILITIES: Final = SubagentCapabilities(
    output_schema=True, depth_limit=True, tool_filter=True, persona=True
)


def _outcome(
    child_id: str, turn: TurnOutcome, request_schema: dict[str, JsonValue] | None
) -> SubagentOutcome:
    usage: dict[str, JsonValue] = dict(turn.usage)
    if turn.status == "completed":
        if request_schema is not None:
            return structured_outcome(child_id, turn.text, request_schema, usage)
        return SubagentOutcome.completed(child_id, turn.text, usage=usage)
    if turn.status == "cancelled":
        return SubagentOutcome.cancelled(child_id, turn.message or "cancelled")
    return SubagentOutcome.failed(child_id, "turn", turn.message)


async def _run_turn(
    agent: Agent,
    child_id: str,
    prompt: str,
    cancel: CancelSignal,
    feed: ProgressFeed | None,
) -> SubagentOutcome:
    schema = agent.session.config.get("output_schema")
    turn = await agent.run(
        prompt, cancel=cancel, on_progress=feed.push if feed is not None else None
    )
    return _outcome(child_id, turn, schema if isinstance(schema, dict) else None)


class InProcessRun(ChildRun["InProcessProvider"]):
    """A published in-process child: its session, one turn."""

    _dispose_bound = _DISPOSE_BOUND
    _failures = (SessionError,)

    session_id: str = ""
    """The child session's id (its child id), once published."""
    agent: Agent | None = None

    def _child_key(self) -> str:
        return self.session_id

    async def _run(
        self, provider: InProcessProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        agent = provider.make_child(request, session_id=self.child_id)
        self.agent = agent
        self.session_id = agent.session.id
        self._publish()
        async with agent:
            outcome = await _run_turn(agent, self.child_id, request.prompt, cancel, self._feed)
            await self._conclude(outcome)


class InProcessConversation(ChildConversation):
    """A continuable in-process child: its session, one turn per message."""

    _dispose_bound = _DISPOSE_BOUND

    def __init__(
        self,
        provider: InProcessProvider,
        request: SubagentRequest | None,
        resume_id: str | None = None,
        child_id: str | None = None,
    ) -> None:
        super().__init__(provider.name, child_id, dispose_bound=provider.dispose_timeout)
        self._in_process = provider
        self._request = request
        self._resume_id = resume_id
        self.session_id = resume_id or ""

    def _child_key(self) -> str:
        return self.session_id

    async def _converse(self) -> None:
        provider = self._in_process
        if self._request is not None:
            agent = provider.make_child(self._request, session_id=self.child_id)
        else:
            assert self._resume_id is not None
            agent = provider.runtime.load_agent(self._resume_id)
            if agent is None:
                raise SessionError(f"no session {self._resume_id} in this runtime's store")
        self.session_id = agent.session.id

        async def turn(message: str, cancel: CancelSignal, feed: ProgressFeed) -> SubagentOutcome:
            return await _run_turn(agent, self.child_id, message, cancel, feed)

        async with agent:
            await self._serve(turn)

    def _not_opened(self) -> str:
        return "the in-process child could not be opened"


class InProcessProvider(ChildProvider, abc.ABC):
    """Runs children as agents of ``runtime``, in this process."""

    def __init__(
        self,
        runtime: AgentRuntime,
        *,
        name: str,
        progress_capacity: int = 256,
        dispose_timeout: float | None = None,
    ) -> None:
        super().__init__(name, dispose_timeout=dispose_timeout)
        self.runtime = runtime
        self._progress_capacity = progress_capacity

    @property
    def capabilities(self) -> SubagentCapabilities:
        return _CAPABILITIES

    @abc.abstractmethod
    def _seed(self, parent: Session | None, request: SubagentRequest) -> Sequence[Message] | None:
        """The history the child starts with (``None``: a fresh child)."""

    def _parent(self, request: SubagentRequest) -> Session | None:
        if request.parent_session is None:
            return None
        return self.runtime.sessions.get(request.parent_session)

    def _limits(self, request: SubagentRequest) -> tuple[Session | None, ChildLimits]:
        """Check ``request`` (raising ``SubagentError``) and compute the child's limits."""
        if not request.prompt.strip():
            raise SubagentError(
                SubagentErrorCode.INVALID_REQUEST, "the prompt is empty", provider=self._name
            )
        if request.output_schema is not None:
            check_output_schema(request.output_schema, provider=self._name)
        if request.depth_limit is not None and request.depth_limit < 0:
            raise SubagentError(
                SubagentErrorCode.INVALID_REQUEST,
                "depth_limit must not be negative",
                provider=self._name,
            )
        parent = self._parent(request)
        limits = self.runtime.child_limits(
            parent, depth_limit=request.depth_limit, tool_filter=request.tool_filter
        )
        if limits.depth_limit is not None and limits.depth > limits.depth_limit:
            raise SubagentError(
                SubagentErrorCode.DEPTH_LIMIT,
                f"a child here would be at depth {limits.depth}, beyond the depth limit "
                f"{limits.depth_limit}",
                provider=self._name,
            )
        return parent, limits

    def make_child(self, request: SubagentRequest, *, session_id: str | None = None) -> Agent:
        """The child's session and agent, for a checked ``request`` (``session_id``: the
        child's id, which an in-process child's session takes as its own)."""
        parent, limits = self._limits(request)
        schema = request.output_schema
        return self.runtime.child_agent(
            parent,
            limits,
            parent_id=request.parent_session,
            persona=request.persona,
            seed=self._seed(parent, request),
            instructions=output_instructions(schema) if schema is not None else None,
            extra_config={"output_schema": dict(schema)} if schema is not None else None,
            session_id=session_id,
        )

    def _check(self, request: SubagentRequest, cancel: CancelSignal) -> None:
        self._check_request(request, cancel)
        self._limits(request)
        self._seed(self._parent(request), request)

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> InProcessRun:
        self._check(request, cancel)
        run = self._new_run(InProcessRun, request)
        return await self._start_run(run, request, cancel, what="the in-process child")

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> InProcessConversation:
        """Start a child that keeps its session; ``request`` is its first turn (its outcome is
        ``conversation.outcomes[0]``)."""
        self._check(request, cancel)
        child_id = self._child_id(request)
        conversation = await self._open_conversation(
            lambda: InProcessConversation(self, request, None, child_id), cancel
        )
        await conversation.send(request.prompt, cancel=cancel)
        return conversation

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> InProcessConversation:
        """Reopen session ``remote_id`` (or the child of that id this provider started) from
        the session store."""
        self._check_open()
        self._check_not_cancelled(cancel)
        # An in-process child's session id is its child id: it keeps it across a cold resume.
        child, session_id = self._resume_ids(remote_id, child_id or remote_id)
        return await self._open_conversation(
            lambda: InProcessConversation(self, None, session_id, child), cancel
        )
