"""Pydantic models of the ``codex app-server`` (v2) messages this project uses.

Written by hand against the vendored JSON schema (``schema/``, codex 0.171.0, provenance in
``schema/SOURCE.md``), following the conventions of the ACP models (:class:`CodexModel` is
configured like ``ACPModel``):

* Python attributes are snake_case; wire names (camelCase, and the odd snake_case key such as
  ``text_elements``) are aliases, so ``Model(thread_id=...)`` and
  ``Model.model_validate({"threadId": ...})`` both work;
* unknown fields are kept (``extra="allow"``) and dumped back unchanged;
* models are built on first use (``defer_build=True``);
* validation is strict: no coercion between JSON types.

What we receive is validated leniently in one respect: fields the schema marks required but
that we do not need are optional here, so a newer (or older) server that adds or drops them
does not break the client. What we send always validates against the schema (the tests check
it). Item and input unions are tagged by ``type``; an item type we do not model becomes an
:class:`UnknownItem` that keeps every field.
"""

from __future__ import annotations

from types import GenericAlias
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter
from pydantic.alias_generators import to_camel

from ..acp._base import JsonValue, tag_picker

__all__ = (
    "AgentMessageDeltaNotification",
    "AgentMessageItem",
    "ApprovalPolicyName",
    "ClientInfo",
    "CodexModel",
    "CommandExecutionItem",
    "CommandExecutionRequestApprovalParams",
    "CommandExecutionRequestApprovalResponse",
    "ErrorNotification",
    "FileChangeDecision",
    "FileChangeItem",
    "FileChangeRequestApprovalParams",
    "FileChangeRequestApprovalResponse",
    "FileUpdateChange",
    "ImageUserInput",
    "InitializeCapabilities",
    "InitializeParams",
    "InitializeResponse",
    "ItemCompletedNotification",
    "ItemStartedNotification",
    "LocalImageUserInput",
    "MentionUserInput",
    "PlanDeltaNotification",
    "ReasoningItem",
    "ReasoningSummaryTextDeltaNotification",
    "ReasoningTextDeltaNotification",
    "SandboxMode",
    "SkillUserInput",
    "TextUserInput",
    "Thread",
    "ThreadForkParams",
    "ThreadForkResponse",
    "ThreadItem",
    "ThreadReadParams",
    "ThreadReadResponse",
    "ThreadResumeParams",
    "ThreadResumeResponse",
    "ThreadStartParams",
    "ThreadStartResponse",
    "ThreadStartedNotification",
    "ThreadStatus",
    "ThreadStatusChangedNotification",
    "ThreadTokenUsage",
    "ThreadTokenUsageUpdatedNotification",
    "TokenUsageBreakdown",
    "Turn",
    "TurnCompletedNotification",
    "TurnError",
    "TurnInterruptParams",
    "TurnInterruptResponse",
    "TurnPlanStep",
    "TurnPlanUpdatedNotification",
    "TurnStartParams",
    "TurnStartResponse",
    "TurnStartedNotification",
    "TurnStatus",
    "UnknownItem",
    "UserInput",
    "UserMessageItem",
    "from_wire",
    "to_wire",
)


class CodexModel(BaseModel):
    """Base class of every Codex app-server model.

    Unknown fields are preserved and round-trip. Fields that tag a union variant (``type``)
    have their constant as default and always count as set, so ``exclude_unset`` dumps keep
    them.
    """

    model_config = ConfigDict(
        extra="allow",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
        strict=True,
        # Codex has fields called model, model_provider, model_context_window...
        protected_namespaces=(),
    )

    _codex_tags: ClassVar[tuple[str, ...]] = ()

    def model_post_init(self, context: Any, /) -> None:
        if self._codex_tags:
            self.__pydantic_fields_set__.update(self._codex_tags)


SandboxMode: TypeAlias = Literal["read-only", "workspace-write", "danger-full-access"]
"""``thread/start``'s ``sandbox`` (kebab-case on the wire, unlike ``turn/start``'s policy)."""

ApprovalPolicyName: TypeAlias = Literal["untrusted", "on-request", "never"]
"""The stable ``approvalPolicy`` values (the ``granular`` object needs the experimental API)."""

TurnStatus: TypeAlias = Literal["completed", "interrupted", "failed", "inProgress"]
"""``inProgress`` appears only in ``turn/start`` answers and ``turn/started``."""

FileChangeDecision: TypeAlias = Literal["accept", "acceptForSession", "decline", "cancel"]


# ---------------------------------------------------------------- initialize


class ClientInfo(CodexModel):
    name: str
    version: str
    title: str | None = None


class InitializeCapabilities(CodexModel):
    experimental_api: bool = False
    opt_out_notification_methods: list[str] | None = None


class InitializeParams(CodexModel):
    client_info: ClientInfo
    capabilities: InitializeCapabilities | None = None


class InitializeResponse(CodexModel):
    user_agent: str
    """E.g. ``"subagents/0.171.0 (Debian 12.0.0; x86_64) ..."``: it names the CLI version."""
    codex_home: str | None = None
    platform_family: str | None = None
    platform_os: str | None = None


# ---------------------------------------------------------------- items and turns


class TextUserInput(CodexModel):
    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["text"] = "text"
    text: str
    text_elements: list[JsonValue] = Field(default_factory=list[JsonValue], alias="text_elements")


class ImageUserInput(CodexModel):
    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["image"] = "image"
    url: str | None = None
    file_id: str | None = None


class LocalImageUserInput(CodexModel):
    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["localImage"] = "localImage"
    path: str


class SkillUserInput(CodexModel):
    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["skill"] = "skill"
    name: str
    path: str


class MentionUserInput(CodexModel):
    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["mention"] = "mention"
    name: str
    path: str


UserInput: TypeAlias = Annotated[
    TextUserInput | ImageUserInput | LocalImageUserInput | SkillUserInput | MentionUserInput,
    Field(discriminator="type"),
]
"""One piece of a turn's input (``turn/start``'s ``input`` is a list of them)."""


class UserMessageItem(CodexModel):
    """The user's input, echoed as an item. ``content`` is kept as raw ``UserInput`` JSON."""

    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["userMessage"] = "userMessage"
    id: str
    content: list[JsonValue] = Field(default_factory=list[JsonValue])


class AgentMessageItem(CodexModel):
    """A message of the agent. ``phase`` is ``"commentary"``, ``"partial_answer"``,
    ``"final_answer"`` or ``None`` (unknown: models do not all emit it)."""

    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["agentMessage"] = "agentMessage"
    id: str
    text: str
    phase: str | None = None


class ReasoningItem(CodexModel):
    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["reasoning"] = "reasoning"
    id: str
    summary: list[str] = Field(default_factory=list[str])
    content: list[str] = Field(default_factory=list[str])


class CommandExecutionItem(CodexModel):
    """A shell command. ``status``: ``inProgress``, ``completed``, ``failed`` or ``declined``."""

    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["commandExecution"] = "commandExecution"
    id: str
    command: str
    status: str
    cwd: str | None = None
    exit_code: int | None = None
    aggregated_output: str | None = None
    duration_ms: int | None = None
    command_actions: list[JsonValue] = Field(default_factory=list[JsonValue])


class FileUpdateChange(CodexModel):
    path: str
    kind: JsonValue = None
    diff: str = ""


class FileChangeItem(CodexModel):
    """A patch. ``status``: ``inProgress``, ``completed``, ``failed`` or ``declined``."""

    _codex_tags: ClassVar[tuple[str, ...]] = ("type",)
    type: Literal["fileChange"] = "fileChange"
    id: str
    changes: list[FileUpdateChange] = Field(default_factory=list[FileUpdateChange])
    status: str


class UnknownItem(CodexModel):
    """Any other item type (plan, mcpToolCall, webSearch, ... or one from a newer server):
    every field is kept as received (``model_extra``; :func:`to_wire` dumps it back)."""

    type: str
    id: str | None = None


_ITEM_TAG = Discriminator(
    tag_picker(
        "type",
        "type",
        ("userMessage", "agentMessage", "reasoning", "commandExecution", "fileChange"),
        unknown="unknown",
    )
)
ThreadItem: TypeAlias = Annotated[
    Annotated[UserMessageItem, Tag("userMessage")]
    | Annotated[AgentMessageItem, Tag("agentMessage")]
    | Annotated[ReasoningItem, Tag("reasoning")]
    | Annotated[CommandExecutionItem, Tag("commandExecution")]
    | Annotated[FileChangeItem, Tag("fileChange")]
    | Annotated[UnknownItem, Tag("unknown")],
    _ITEM_TAG,
]
"""An item of a turn, tagged by ``type``; unmodelled types become :class:`UnknownItem`."""


class TurnError(CodexModel):
    """Why a turn failed (``turn.error``, and the ``error`` notification's ``error``)."""

    message: str
    codex_error_info: JsonValue = None
    """A string such as ``"internalServerError"`` or an object such as
    ``{"responseStreamDisconnected": {...}}``."""
    additional_details: str | None = None


class Turn(CodexModel):
    id: str
    status: TurnStatus
    items: list[ThreadItem] = Field(default_factory=list[ThreadItem])
    items_view: str | None = None
    error: TurnError | None = None
    duration_ms: int | None = None
    started_at: int | None = None
    completed_at: int | None = None


class ThreadStatus(CodexModel):
    """``notLoaded``, ``idle``, ``systemError``, or ``active`` with ``active_flags``."""

    type: str
    active_flags: list[str] | None = None


class Thread(CodexModel):
    id: str
    status: ThreadStatus | None = None
    turns: list[Turn] = Field(default_factory=list[Turn])
    path: str | None = None
    ephemeral: bool | None = None
    forked_from_id: str | None = None
    cwd: str | None = None
    model_provider: str | None = None
    preview: str | None = None
    cli_version: str | None = None
    created_at: int | None = None
    updated_at: int | None = None


# ---------------------------------------------------------------- thread requests


class _ThreadOverrides(CodexModel):
    cwd: str | None = None
    model: str | None = None
    model_provider: str | None = None
    approval_policy: ApprovalPolicyName | None = None
    sandbox: SandboxMode | None = None
    base_instructions: str | None = None
    developer_instructions: str | None = None
    config: dict[str, JsonValue] | None = None


class ThreadStartParams(_ThreadOverrides):
    ephemeral: bool | None = None
    service_name: str | None = None


class ThreadResumeParams(_ThreadOverrides):
    thread_id: str
    exclude_turns: bool | None = None


class ThreadForkParams(_ThreadOverrides):
    thread_id: str
    ephemeral: bool | None = None
    exclude_turns: bool | None = None
    """0.171.0 refuses an ephemeral fork without ``exclude_turns=True``."""
    last_turn_id: str | None = None


class ThreadReadParams(CodexModel):
    thread_id: str
    include_turns: bool | None = None


class ThreadStartResponse(CodexModel):
    thread: Thread
    model: str | None = None
    model_provider: str | None = None
    cwd: str | None = None
    approval_policy: JsonValue = None
    approvals_reviewer: JsonValue = None
    sandbox: JsonValue = None
    """The effective sandbox policy (a camelCase object such as ``{"type": "readOnly"}``)."""


class ThreadResumeResponse(ThreadStartResponse):
    pass


class ThreadForkResponse(ThreadStartResponse):
    pass


class ThreadReadResponse(CodexModel):
    thread: Thread


# ---------------------------------------------------------------- turn requests


class TurnStartParams(CodexModel):
    thread_id: str
    input: list[UserInput]
    output_schema: JsonValue = None
    cwd: str | None = None
    model: str | None = None
    effort: str | None = None
    approval_policy: ApprovalPolicyName | None = None


class TurnStartResponse(CodexModel):
    turn: Turn


class TurnInterruptParams(CodexModel):
    thread_id: str
    turn_id: str


class TurnInterruptResponse(CodexModel):
    pass


# ---------------------------------------------------------------- notifications


class ThreadStartedNotification(CodexModel):
    thread: Thread


class ThreadStatusChangedNotification(CodexModel):
    thread_id: str
    status: ThreadStatus


class TurnStartedNotification(CodexModel):
    thread_id: str
    turn: Turn


class TurnCompletedNotification(CodexModel):
    thread_id: str
    turn: Turn


class ItemStartedNotification(CodexModel):
    thread_id: str
    turn_id: str
    item: ThreadItem
    started_at_ms: int | None = None


class ItemCompletedNotification(CodexModel):
    thread_id: str
    turn_id: str
    item: ThreadItem
    completed_at_ms: int | None = None


class AgentMessageDeltaNotification(CodexModel):
    thread_id: str
    turn_id: str
    item_id: str
    delta: str


class ReasoningSummaryTextDeltaNotification(CodexModel):
    """``item/reasoning/summaryTextDelta``: a piece of part ``summary_index`` of a reasoning
    item's summary (what the completed item lists in ``summary``)."""

    thread_id: str
    turn_id: str
    item_id: str
    delta: str
    summary_index: int = 0


class ReasoningTextDeltaNotification(CodexModel):
    """``item/reasoning/textDelta``: a piece of part ``content_index`` of a reasoning item's
    raw content (what the completed item lists in ``content``)."""

    thread_id: str
    turn_id: str
    item_id: str
    delta: str
    content_index: int = 0


class TurnPlanStep(CodexModel):
    """One step of the turn's plan. ``status``: ``pending``, ``inProgress`` or ``completed``."""

    step: str
    status: str


class TurnPlanUpdatedNotification(CodexModel):
    """``turn/plan/updated``: the whole plan of the turn, as it stands now."""

    thread_id: str
    turn_id: str
    plan: list[TurnPlanStep]
    explanation: str | None = None


class PlanDeltaNotification(CodexModel):
    """``item/plan/delta``: a piece of a plan item's text (upstream marks it experimental: the
    pieces need not add up to the completed item's text)."""

    thread_id: str
    turn_id: str
    item_id: str
    delta: str


class TokenUsageBreakdown(CodexModel):
    total_tokens: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0


class ThreadTokenUsage(CodexModel):
    total: TokenUsageBreakdown
    last: TokenUsageBreakdown
    model_context_window: int | None = None


class ThreadTokenUsageUpdatedNotification(CodexModel):
    thread_id: str
    turn_id: str
    token_usage: ThreadTokenUsage


class ErrorNotification(CodexModel):
    """An error in a turn; ``will_retry`` tells a transient one (Codex retries) from the end."""

    error: TurnError
    will_retry: bool
    thread_id: str
    turn_id: str


# ---------------------------------------------------------------- approvals (server requests)


class CommandExecutionRequestApprovalParams(CodexModel):
    thread_id: str
    turn_id: str
    item_id: str
    started_at_ms: int | None = None
    approval_id: str | None = None
    command: str | None = None
    cwd: str | None = None
    reason: str | None = None
    command_actions: list[JsonValue] | None = None
    proposed_execpolicy_amendment: list[str] | None = None


class CommandExecutionRequestApprovalResponse(CodexModel):
    decision: FileChangeDecision | dict[str, JsonValue]
    """One of the four plain decisions, or an amendment object
    (``{"acceptWithExecpolicyAmendment": {...}}``)."""


class FileChangeRequestApprovalParams(CodexModel):
    thread_id: str
    turn_id: str
    item_id: str
    started_at_ms: int | None = None
    reason: str | None = None
    grant_root: str | None = None


class FileChangeRequestApprovalResponse(CodexModel):
    decision: FileChangeDecision


ModelT = TypeVar("ModelT", bound=BaseModel)


def to_wire(model: BaseModel) -> dict[str, JsonValue]:
    """Dump ``model`` as the JSON object that goes on the wire (set fields, wire names)."""
    data = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return cast("dict[str, JsonValue]", data)


@overload
def from_wire(tp: type[ModelT], data: object) -> ModelT: ...
@overload
def from_wire(tp: object, data: object) -> Any: ...
def from_wire(tp: object, data: object) -> Any:
    """Validate decoded JSON ``data`` as ``tp`` (a model class, or a union alias such as
    :data:`ThreadItem`). Raises :class:`pydantic.ValidationError`."""
    if isinstance(tp, type) and not isinstance(tp, GenericAlias) and issubclass(tp, BaseModel):
        return tp.model_validate(data)
    return _adapter(cast("object", tp)).validate_python(data)


_adapters: dict[int, tuple[object, TypeAdapter[Any]]] = {}


def _adapter(tp: object) -> TypeAdapter[Any]:
    # Keyed by identity: the aliases are module-level singletons; the entry keeps ``tp`` alive.
    entry = _adapters.get(id(tp))
    if entry is not None and entry[0] is tp:
        return entry[1]
    adapter: TypeAdapter[Any] = TypeAdapter(cast("Any", tp))
    _adapters[id(tp)] = (tp, adapter)
    return adapter
