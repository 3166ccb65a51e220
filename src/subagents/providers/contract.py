"""The run contract: what every subagent provider offers, whatever runs the child.

A harness delegates through one API (``start -> run -> result, one cancellation signal,
dispose``), and the child may be an in-process agent, an ACP agent process, Codex, or Claude
Code. The rules (from the design note of the seam, ``shared/seam-note.md``):

* ``await provider.start(request, cancel=signal)`` returns only once the child exists: the
  run is *published* and belongs to the caller. Work that fails before publication raises
  :class:`SubagentError` and leaves nothing behind.
* After publication every outcome (prompt error, turn error, cancellation, crash) settles
  through :meth:`SubagentRun.result` as a :class:`SubagentOutcome` that names the child id;
  ``result()`` never raises for those.
* One :class:`CancelSignal`, owned by the caller, covers both phases: fired during ``start``
  it aborts the start (``SubagentError(CANCELLED)``); fired later it cancels the child's turn
  and the outcome settles as ``cancelled``.
* :meth:`SubagentRun.dispose` cancels remaining work and waits for quiescence (no task,
  process or pipe outlives it); it is idempotent. A run is also an async context manager
  that disposes on exit.
* Start-time features (``output_schema``, ``depth_limit``, ``tool_filter``, ``persona``) ride
  on the provider's static, frozen :class:`SubagentCapabilities`; the service checks each
  requested one before delegating and rejects loudly (``UNSUPPORTED_CAPABILITY``).
* Continuable children: a provider that can continue a child implements
  ``prepare_continuable``; the method's presence is the capability
  (``isinstance(provider, ContinuableProvider)``), never a separate flag.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType
from typing import Literal, Protocol, TypeAlias, final, runtime_checkable

import anyio

from ..protocol.jsonrpc import JsonValue

__all__ = (
    "START_TIME_FEATURES",
    "CancelSignal",
    "ContinuableProvider",
    "Continuation",
    "FailureKind",
    "OutcomeStatus",
    "ProgressEvent",
    "SubagentCapabilities",
    "SubagentEnded",
    "SubagentError",
    "SubagentErrorCode",
    "SubagentOutcome",
    "SubagentProvider",
    "SubagentRequest",
    "SubagentRun",
    "SubagentStarted",
)

START_TIME_FEATURES = ("output_schema", "depth_limit", "tool_filter", "persona")
"""The start-time features a request may ask for, each gated by a capability."""


class SubagentErrorCode(StrEnum):
    """Stable codes of :class:`SubagentError` (their values never change)."""

    UNKNOWN_PROVIDER = "UNKNOWN_PROVIDER"
    """No provider is registered under the name."""
    DUPLICATE_PROVIDER = "DUPLICATE_PROVIDER"
    """A provider is already registered under the name."""
    UNSUPPORTED_CAPABILITY = "UNSUPPORTED_CAPABILITY"
    """The request asks for a start-time feature the provider does not advertise."""
    START_FAILED = "START_FAILED"
    """The child could not be started (nothing was published)."""
    CANCELLED = "CANCELLED"
    """The signal fired before the child was published."""
    INVALID_REQUEST = "INVALID_REQUEST"
    """The request itself is malformed (say, an empty prompt)."""
    DEPTH_LIMIT = "DEPTH_LIMIT"
    """The child would be deeper than the absolute depth limit allows."""


class SubagentError(Exception):
    """A start that failed before publication (or a registry misuse); ``code`` is stable."""

    def __init__(
        self,
        code: SubagentErrorCode,
        message: str,
        *,
        provider: str | None = None,
        feature: str | None = None,
    ) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.message = message
        self.provider = provider
        self.feature = feature


@final
@dataclass(frozen=True, slots=True)
class SubagentCapabilities:
    """Which start-time features a provider honours (static: known before any run exists)."""

    output_schema: bool = False
    depth_limit: bool = False
    tool_filter: bool = False
    persona: bool = False

    def supports(self, feature: str) -> bool:
        if feature not in START_TIME_FEATURES:
            raise ValueError(f"unknown start-time feature {feature!r}")
        supported: bool = getattr(self, feature)
        return supported


@final
@dataclass(frozen=True, slots=True)
class SubagentRequest:
    """What to delegate. ``prompt`` is the task; the rest is optional."""

    prompt: str
    description: str = ""
    """A short label for the delegation (what the model wrote as the tool's description)."""
    output_schema: Mapping[str, JsonValue] | None = None
    """Ask for a structured result validated against this JSON schema."""
    depth_limit: int | None = None
    """Absolute nesting limit for children that can delegate further."""
    tool_filter: Sequence[str] | None = None
    """Tool names the child may use."""
    persona: str | None = None
    """A system-prompt persona for the child."""
    parent_session: str | None = None
    """The delegating session's id (lineage)."""
    metadata: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])

    def requested_features(self) -> tuple[str, ...]:
        """The start-time features this request asks for, in a fixed order."""
        return tuple(name for name in START_TIME_FEATURES if getattr(self, name) is not None)


OutcomeStatus: TypeAlias = Literal["completed", "cancelled", "failed"]
FailureKind: TypeAlias = Literal["prompt", "turn", "infrastructure"]
"""``prompt``: the child refused or could not take the prompt; ``turn``: the child's turn
failed; ``infrastructure``: the transport or process failed (a crash, a lost connection)."""


@final
@dataclass(frozen=True, slots=True)
class SubagentOutcome:
    """How a published run ended. Settled exactly once; always names the child id."""

    child_id: str
    status: OutcomeStatus
    output: JsonValue = None
    """The child's final text, or the validated object when an output schema was asked."""
    failure_kind: FailureKind | None = None
    message: str = ""
    """What went wrong (for ``failed`` and ``cancelled``), for people and logs."""
    cause: BaseException | None = None
    usage: Mapping[str, JsonValue] | None = None

    @classmethod
    def completed(
        cls, child_id: str, output: JsonValue, *, usage: Mapping[str, JsonValue] | None = None
    ) -> SubagentOutcome:
        return cls(child_id, "completed", output, usage=usage)

    @classmethod
    def cancelled(cls, child_id: str, message: str = "cancelled") -> SubagentOutcome:
        return cls(child_id, "cancelled", message=message)

    @classmethod
    def failed(
        cls,
        child_id: str,
        kind: FailureKind,
        message: str,
        cause: BaseException | None = None,
    ) -> SubagentOutcome:
        return cls(child_id, "failed", failure_kind=kind, message=message, cause=cause)


@final
@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Live progress of a child: a text chunk, a thought, a tool call, a plan."""

    kind: Literal["text", "thought", "tool_call", "plan", "other"]
    text: str = ""
    data: Mapping[str, JsonValue] | None = None


@final
@dataclass(frozen=True, slots=True)
class SubagentStarted:
    """Lifecycle: a run was published (``start()`` fulfilled)."""

    run_id: str
    provider: str
    request: SubagentRequest


@final
@dataclass(frozen=True, slots=True)
class SubagentEnded:
    """Lifecycle: a published run settled; exactly one per :class:`SubagentStarted`."""

    run_id: str
    provider: str
    outcome: SubagentOutcome


@final
class CancelSignal:
    """The one cancellation signal of a delegation, owned by the caller.

    Call :meth:`cancel` from anywhere in the event loop's thread; providers observe it by
    linking cancel scopes (:meth:`linked_scope`), by awaiting :meth:`wait`, or by polling
    :attr:`cancelled`. Firing it is idempotent and cannot be undone: a new delegation takes a
    new signal. (An anyio ``CancelScope`` cannot serve here: the caller's scope would also
    cancel the caller, and a scope can be entered by one task only.)
    """

    __slots__ = ("_event", "_reason", "_scopes")

    def __init__(self) -> None:
        self._event: anyio.Event | None = None
        self._reason: str | None = None
        self._scopes: set[anyio.CancelScope] = set()

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str = "cancelled by the caller") -> None:
        if self._reason is not None:
            return
        self._reason = reason
        if self._event is not None:
            self._event.set()
        for scope in list(self._scopes):
            scope.cancel()

    async def wait(self) -> None:
        """Return once the signal has fired."""
        if self._reason is not None:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()

    @contextmanager
    def linked_scope(self) -> Generator[anyio.CancelScope, None, None]:
        """A cancel scope that is cancelled when the signal fires (or already has)."""
        with anyio.CancelScope() as scope:
            if self._reason is not None:
                scope.cancel()
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)


class SubagentRun(Protocol):
    """A published child: its id, its one outcome, and its disposal."""

    @property
    def id(self) -> str:
        """The child id: an in-process child's session id, or a parent-scoped lifecycle id."""
        ...

    async def result(self) -> SubagentOutcome:
        """Wait for the outcome (settled once; later calls return the same outcome)."""
        ...

    async def dispose(self) -> None:
        """Cancel remaining work and wait for quiescence. Idempotent."""
        ...

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        """Live progress events (bounded; never blocks the child), or ``None``."""
        ...

    async def __aenter__(self) -> SubagentRun: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> bool | None: ...


@runtime_checkable
class SubagentProvider(Protocol):
    """A named way to run children."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> SubagentCapabilities: ...

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        """Publish a child (see the module docstring for the rules)."""
        ...


class Continuation(Protocol):
    """A continuable child: later messages reach it through :meth:`send`."""

    @property
    def id(self) -> str:
        """The child id, stable across cold resumes (persist it to continue later)."""
        ...

    async def send(self, message: str, *, cancel: CancelSignal | None = None) -> SubagentOutcome:
        """Deliver ``message`` as the child's next turn and return that turn's outcome."""
        ...

    async def dispose(self) -> None:
        """Release the live child (it can still be resumed cold from its id). Idempotent."""
        ...


@runtime_checkable
class ContinuableProvider(SubagentProvider, Protocol):
    """A provider whose children can be continued: the methods' presence is the capability."""

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> Continuation:
        """Start a child that later messages can reach (its first turn is ``request``)."""
        ...

    async def resume_continuable(self, child_id: str, *, cancel: CancelSignal) -> Continuation:
        """Cold-resume a child from its persisted id (a new process or session, same child)."""
        ...
