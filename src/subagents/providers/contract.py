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
* Child ids are minted by the parent (:class:`~subagents.providers.SubagentService`, passed
  as :attr:`SubagentRequest.child_id`): unique whatever the remote side numbers its sessions;
  the remote id is kept as ``remote_id``. The child id has one name everywhere: ``child_id``
  (a run's, a continuation's, an outcome's, a request's, a lifecycle event's). The names it
  had before (``run.id``, ``continuation.id``, the events' ``run_id``) are deprecated aliases
  that warn (``DeprecationWarning``), for one release; a run written outside the package
  that has only ``id`` is still accepted (:func:`child_id_of`), with the same warning.
* An unexpected exception inside a run settles it ``failed`` (infrastructure) and never
  reaches its siblings; ``dispose()`` escalates past its bound and raises
  ``DISPOSE_INCOMPLETE`` rather than return with the child still running.
* Continuable children: a provider that can continue a child implements
  ``prepare_continuable``; the method's presence is the capability
  (``isinstance(provider, ContinuableProvider)``), never a separate flag.
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType
from typing import Final, Literal, Protocol, TypeAlias, final, runtime_checkable

from ..cancel import CancelSignal
from ..protocol.jsonrpc import JsonValue

__all__ = (
    "PARTIAL_OUTPUT_LIMIT",
    "START_TIME_FEATURES",
    "TOOL_OUTPUT_EXCERPT",
    "CancelSignal",
    "ChildProgress",
    "ContinuableProvider",
    "Continuation",
    "FailureKind",
    "OtherProgress",
    "OutcomeStatus",
    "PlanEntry",
    "PlanEntryStatus",
    "PlanProgress",
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
    "TextProgress",
    "ThoughtProgress",
    "ToolCallProgress",
    "ToolCallStatus",
    "ToolKind",
    "ToolResultProgress",
    "ToolResultStatus",
    "UsageProgress",
    "child_id_of",
    "new_child_id",
    "output_excerpt",
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
    DISPOSE_INCOMPLETE = "DISPOSE_INCOMPLETE"
    """``dispose()`` escalated and something of the child still runs (the message names it)."""


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

    def check(self, request: SubagentRequest, *, provider: str) -> None:
        """Raise ``UNSUPPORTED_CAPABILITY`` (naming the feature and ``provider``) for the first
        start-time feature ``request`` asks for that these capabilities lack."""
        for feature in request.requested_features():
            if not self.supports(feature):
                raise SubagentError(
                    SubagentErrorCode.UNSUPPORTED_CAPABILITY,
                    f"provider {provider!r} does not support {feature!r}",
                    provider=provider,
                    feature=feature,
                )


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
    child_id: str | None = None
    """The id the run will be known by. :class:`~subagents.providers.SubagentService` mints it
    (unique for the service's lifetime) and sets it here before delegating; a provider uses it
    as its run's id, and mints one of its own when called directly without it."""

    def requested_features(self) -> tuple[str, ...]:
        """The start-time features this request asks for, in a fixed order."""
        return tuple(name for name in START_TIME_FEATURES if getattr(self, name) is not None)


OutcomeStatus: TypeAlias = Literal["completed", "cancelled", "failed"]
FailureKind: TypeAlias = Literal["prompt", "turn", "infrastructure"]
"""``prompt``: the child refused or could not take the prompt; ``turn``: the child's turn
failed; ``infrastructure``: the transport or process failed (a crash, a lost connection)."""


PARTIAL_OUTPUT_LIMIT: Final = 65_536
"""At most this many characters of streamed text are kept as a cancelled or failed run's
partial output (the rest is cut, saying how much)."""


def new_child_id(provider: str) -> str:
    """A fresh child id for a run of ``provider`` (``"<provider>:<12 hex digits>"``): random,
    so it never repeats what a remote side numbers per process."""
    return f"{provider}:{secrets.token_hex(6)}"


def bounded_partial(text: str) -> str | None:
    """``text`` as a partial output: ``None`` when empty, cut to :data:`PARTIAL_OUTPUT_LIMIT`."""
    if not text:
        return None
    if len(text) <= PARTIAL_OUTPUT_LIMIT:
        return text
    return f"{text[:PARTIAL_OUTPUT_LIMIT]}\n[... cut at {PARTIAL_OUTPUT_LIMIT} characters]"


@final
@dataclass(frozen=True, slots=True)
class SubagentOutcome:
    """How a published run ended. Settled exactly once; always names the child id."""

    child_id: str
    status: OutcomeStatus
    output: JsonValue = None
    """The child's final text, or the validated object when an output schema was asked. For a
    ``cancelled`` or ``failed`` run: the text the child streamed before it ended (its partial
    work, bounded by :data:`PARTIAL_OUTPUT_LIMIT`), or ``None`` when it streamed none."""
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
    def cancelled(
        cls, child_id: str, message: str = "cancelled", *, partial: str | None = None
    ) -> SubagentOutcome:
        return cls(child_id, "cancelled", bounded_partial(partial or ""), message=message)

    @classmethod
    def failed(
        cls,
        child_id: str,
        kind: FailureKind,
        message: str,
        cause: BaseException | None = None,
        *,
        partial: str | None = None,
    ) -> SubagentOutcome:
        return cls(
            child_id,
            "failed",
            bounded_partial(partial or ""),
            failure_kind=kind,
            message=message,
            cause=cause,
        )

    @property
    def partial_output(self) -> str | None:
        """The text a ``cancelled`` or ``failed`` child streamed before it ended, if any."""
        if self.status == "completed" or not isinstance(self.output, str):
            return None
        return self.output


# -- progress: one vocabulary for every dialect --------------------------------------------

ToolKind: TypeAlias = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
"""What a tool call does (ACP's categories; ``other`` when the dialect does not say)."""
ToolCallStatus: TypeAlias = Literal["pending", "in_progress"]
"""A tool call not yet run (waiting, for instance, for a permission) or running."""
ToolResultStatus: TypeAlias = Literal["completed", "failed"]
PlanEntryStatus: TypeAlias = Literal["pending", "in_progress", "completed"]

TOOL_OUTPUT_EXCERPT: Final = 2000
"""Characters of a tool's output a :class:`ToolResultProgress` keeps (the rest is cut)."""


def output_excerpt(text: str, limit: int = TOOL_OUTPUT_EXCERPT) -> str:
    """``text`` cut to at most ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    note = f"… [{len(text) - limit} more characters]"
    return text[: max(0, limit - len(note))] + note


@final
@dataclass(frozen=True, slots=True)
class TextProgress:
    """A chunk of the child's answer text, as it streams (a plain turn's chunks add up to its
    output)."""

    kind: Literal["text"] = field(default="text", init=False)
    text: str
    message_id: str | None = None
    """The message the chunk belongs to, when the dialect names it (Codex messages can
    interleave)."""


@final
@dataclass(frozen=True, slots=True)
class ThoughtProgress:
    """A chunk of the child's reasoning (shown to people, never part of the output)."""

    kind: Literal["thought"] = field(default="thought", init=False)
    text: str
    message_id: str | None = None
    """The reasoning item the chunk belongs to, when the dialect names it."""


@final
@dataclass(frozen=True, slots=True)
class ToolCallProgress:
    """A tool call began, or changed (the same ``id`` again: a new title, status or input).

    It ends with the :class:`ToolResultProgress` of the same ``id``.
    """

    kind: Literal["tool_call"] = field(default="tool_call", init=False)
    id: str
    title: str
    """For people: the tool's name, a command line, ``edit PATH``..."""
    tool_kind: ToolKind = "other"
    status: ToolCallStatus = "in_progress"
    input: JsonValue = None
    """The call's arguments, when the dialect reports them."""


@final
@dataclass(frozen=True, slots=True)
class ToolResultProgress:
    """A tool call ended (``id`` names an earlier :class:`ToolCallProgress`).

    ``output`` is an excerpt: at most :data:`TOOL_OUTPUT_EXCERPT` characters, cut (and saying
    so) when longer, however the event was made.
    """

    kind: Literal["tool_result"] = field(default="tool_result", init=False)
    id: str
    status: ToolResultStatus
    output: str = ""

    def __post_init__(self) -> None:
        if len(self.output) > TOOL_OUTPUT_EXCERPT:
            object.__setattr__(self, "output", output_excerpt(self.output))


@final
@dataclass(frozen=True, slots=True)
class PlanEntry:
    content: str
    status: PlanEntryStatus


@final
@dataclass(frozen=True, slots=True)
class PlanProgress:
    """The child's whole plan as it stands now (each one replaces the previous one)."""

    kind: Literal["plan"] = field(default="plan", init=False)
    entries: tuple[PlanEntry, ...]
    explanation: str | None = None


@final
@dataclass(frozen=True, slots=True)
class UsageProgress:
    """What the child has used so far, where its dialect reports it (``None``: not reported).

    Token counts are the run's so far (a later event replaces an earlier one); ``context_*``
    is the model's context window (used, size); ``data`` is the dialect's own report.
    """

    kind: Literal["usage"] = field(default="usage", init=False)
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    context_used: int | None = None
    context_size: int | None = None
    cost_usd: float | None = None
    data: Mapping[str, JsonValue] | None = None


@final
@dataclass(frozen=True, slots=True)
class OtherProgress:
    """Anything else the child reports that people may want to see (an upstream error...)."""

    kind: Literal["other"] = field(default="other", init=False)
    text: str = ""
    data: Mapping[str, JsonValue] | None = None


@final
@dataclass(frozen=True, slots=True)
class ChildProgress:
    """Progress a running tool reported, relayed under the id of the tool call that runs it:
    for the subagent tool, its child's own events (nested again for a grandchild's).

    Kept apart from the run's own events on purpose: a child's text is never the parent's
    text, and its tool call ids are the child's.
    """

    kind: Literal["child"] = field(default="child", init=False)
    tool_call_id: str
    event: ProgressEvent


ProgressEvent: TypeAlias = (
    TextProgress
    | ThoughtProgress
    | ToolCallProgress
    | ToolResultProgress
    | PlanProgress
    | UsageProgress
    | OtherProgress
    | ChildProgress
)
"""Live progress of a child, one vocabulary whatever its dialect: switch on ``kind`` (each
member is a frozen dataclass with a literal ``kind``). The README maps each dialect's
messages onto it."""


@final
@dataclass(frozen=True, slots=True)
class SubagentStarted:
    """Lifecycle: a run was published (``start()`` fulfilled)."""

    child_id: str
    """The child id (the one the service minted)."""
    provider: str
    request: SubagentRequest
    remote_id: str | None = None
    """The child's own id on the other side (an ACP session, a Codex thread, a Claude Code
    session, an in-process session), when the provider reports one: for diagnostics and
    resume. ``child_id`` is the id the service minted."""

    @property
    def run_id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "run_id")
        return self.child_id


@final
@dataclass(frozen=True, slots=True)
class SubagentEnded:
    """Lifecycle: a published run settled; exactly one per :class:`SubagentStarted`."""

    child_id: str
    """The child id (the one the service minted)."""
    provider: str
    outcome: SubagentOutcome

    @property
    def run_id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "run_id")
        return self.child_id


def deprecated_alias(owner: object, name: str, stacklevel: int = 3) -> None:
    """Warn that ``owner.name`` is the deprecated name of its ``child_id``."""
    warnings.warn(
        f"{type(owner).__name__}.{name} is deprecated (removed in the next release): "
        "use child_id, the same value",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def child_id_of(child: object) -> str:
    """The child id of a run or continuation: its ``child_id``. One written against the
    contract before the rename has only ``id``: still accepted, with a
    ``DeprecationWarning`` (rename it ``child_id``)."""
    value: object = getattr(child, "child_id", None)
    if isinstance(value, str):
        return value
    legacy: object = getattr(child, "id", None)
    if not isinstance(legacy, str):
        raise TypeError(f"{type(child).__name__} has no child_id (a str)")
    warnings.warn(
        f"{type(child).__name__} has no child_id, only id (deprecated): a run's or "
        "continuation's child id is named child_id now",
        DeprecationWarning,
        stacklevel=2,
    )
    return legacy


class SubagentRun(Protocol):
    """A published child: its id, its one outcome, and its disposal.

    A run may also have a ``remote_id`` attribute (``str``): the child's own id on the other
    side (session, thread), which the service reports in :class:`SubagentStarted`. (The
    package's runs keep ``id``, a deprecated alias of ``child_id``, for one release.)
    """

    @property
    def child_id(self) -> str:
        """The child id: an in-process child's session id, or a parent-scoped lifecycle id."""
        ...

    async def result(self) -> SubagentOutcome:
        """Wait for the outcome (settled once; later calls return the same outcome)."""
        ...

    async def dispose(self) -> None:
        """Cancel remaining work and wait for quiescence. Idempotent. Past its polite bound it
        escalates; if something of the child still runs then, it raises
        :class:`SubagentError` (``DISPOSE_INCOMPLETE``) naming what survived: it never
        returns silently with the child still running."""
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
    """A continuable child: later messages reach it through :meth:`send`; :attr:`outcomes`
    holds every turn's outcome (the first turn's included). (The package's continuations
    keep ``id``, a deprecated alias of ``child_id``, for one release.)"""

    @property
    def child_id(self) -> str:
        """The child id, stable across cold resumes (persist it to continue later)."""
        ...

    @property
    def remote_id(self) -> str:
        """The child's own id on the other side (session, thread): what a cold resume needs."""
        ...

    @property
    def outcomes(self) -> Sequence[SubagentOutcome]:
        """The outcome of every turn through this handle so far, in order. For a child
        started with ``prepare_continuable``, ``outcomes[0]`` is its first turn's (the
        request's prompt); a cold-resumed handle starts with none."""
        ...

    async def send(
        self,
        message: str,
        *,
        cancel: CancelSignal | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> SubagentOutcome:
        """Deliver ``message`` as the child's next turn and return that turn's outcome.

        ``on_progress`` receives the turn's progress events as they come (the vocabulary of a
        run's :meth:`SubagentRun.progress`), called on the child's task: it must not block,
        and an exception it raises is logged and dropped (the turn goes on)."""
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
        """Start a child that later messages can reach (its first turn is ``request``; that
        turn's outcome is the continuation's ``outcomes[0]``)."""
        ...

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> Continuation:
        """Cold-resume a child from its persisted remote id (its session or thread: a new
        process or session, same child); ``child_id`` is the id it keeps (the service passes
        the one it minted at the start). A provider also accepts, in ``remote_id``, the child
        id of a child it started itself."""
        ...
