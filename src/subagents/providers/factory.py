"""Providers from registry entries: the built-in kinds and plugins.

:func:`build_provider` turns an :class:`~subagents.config.AgentSpec` into a provider (use it
as ``async with provider``): ``acp``, ``a2a``, ``codex``, ``claude-code``, ``spawn`` and
``fork`` are built in; any other ``provider`` name is looked up in the entry-point group
``subagents.providers``. A plugin's entry point names a factory, called as
``factory(spec, context)`` and returning a provider: the loaded object itself is called (an
instance carrying its own dependencies keeps them: nothing is re-instantiated, copied or
unwrapped on the way).

Permissions: the entry's ``permission`` decides what the child may do when it asks (an ACP
``session/request_permission``, a Codex approval, a Claude Code ``can_use_tool``): ``allow``,
``deny`` (the default), or ``ask``, which calls ``context.ask`` with a
:class:`PermissionQuestion` (no ``ask`` given: deny).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, Self, TypeAlias, cast, final

from .contract import SubagentProvider

if TYPE_CHECKING:
    from ..config import AgentSpec
    from ..harness.llm.types import LlmAdapter
    from ..protocol import acp
    from ..transports.claude_code import (
        ClaudeAllowTool,
        ClaudeDenyTool,
        ClaudeToolPermissionRequest,
    )
    from ..transports.codex_app_server import ApprovalRequest, Decision

__all__ = (
    "ENTRY_POINT_GROUP",
    "BuildContext",
    "ManagedProvider",
    "PermissionQuestion",
    "ProviderFactory",
    "UnknownProviderKind",
    "build_provider",
    "plugin_factories",
)

ENTRY_POINT_GROUP: Final = "subagents.providers"


class UnknownProviderKind(LookupError):
    """No built-in provider and no plugin has that name."""


@final
@dataclass(frozen=True, slots=True)
class PermissionQuestion:
    """What a child asks to do: ``agent`` (the registry name), ``tool`` (a title), ``detail``
    (the command or input, rendered for a person)."""

    agent: str
    tool: str
    detail: str


Asker: TypeAlias = Callable[[PermissionQuestion], Awaitable[bool]]


@final
@dataclass(frozen=True, slots=True)
class BuildContext:
    """What a factory may need besides the entry: how to ask for permission."""

    ask: Asker | None = None


class ManagedProvider(SubagentProvider, Protocol):
    """A provider that is also an async context manager: what :func:`build_provider` returns.

    Entered once, with ``async with provider:`` (it owns its children's tasks and processes
    until the block ends); ``__aenter__`` returns the provider itself.
    """

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> bool | None: ...


class ProviderFactory(Protocol):
    """What a plugin's entry point names: called as ``factory(spec, context)``, it returns a
    :class:`ManagedProvider` (a provider with nothing to set up returns itself from
    ``__aenter__``)."""

    def __call__(self, spec: AgentSpec, context: BuildContext) -> ManagedProvider: ...


def plugin_factories() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed plugins' entry points, by name (not loaded)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


async def _decide(spec: AgentSpec, context: BuildContext, tool: str, detail: str) -> bool:
    if spec.permission == "allow":
        return True
    if spec.permission == "deny" or context.ask is None:
        return False
    return await context.ask(PermissionQuestion(spec.name, tool, detail))


def _acp_policy(
    spec: AgentSpec, context: BuildContext
) -> Callable[[acp.RequestPermissionRequest], Awaitable[acp.RequestPermissionOutcome]]:
    from ..protocol import acp

    async def policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
        call = request.tool_call
        detail = str(call.raw_input) if call.raw_input is not None else ""
        allowed = await _decide(spec, context, call.title or call.tool_call_id, detail)
        kinds = ("allow_once", "allow_always") if allowed else ("reject_once", "reject_always")
        for kind in kinds:
            for option in request.options:
                if option.kind == kind:
                    return acp.SelectedRequestPermissionOutcome(option_id=option.option_id)
        return acp.CancelledRequestPermissionOutcome()

    return policy


def _codex_policy(
    spec: AgentSpec, context: BuildContext
) -> Callable[[ApprovalRequest], Awaitable[Decision]]:
    async def policy(request: ApprovalRequest) -> Decision:
        tool = "run a command" if request.kind == "commandExecution" else "change files"
        detail = request.command or request.reason or ""
        return "accept" if await _decide(spec, context, tool, detail) else "decline"

    return policy


def _claude_policy(
    spec: AgentSpec, context: BuildContext
) -> Callable[[ClaudeToolPermissionRequest], Awaitable[ClaudeAllowTool | ClaudeDenyTool]]:
    from ..transports.claude_code import ClaudeAllowTool, ClaudeDenyTool

    async def policy(request: ClaudeToolPermissionRequest) -> ClaudeAllowTool | ClaudeDenyTool:
        detail = str(request.input.get("command") or request.description or request.input)
        if await _decide(spec, context, request.tool_name, detail):
            return ClaudeAllowTool()
        return ClaudeDenyTool(f"{request.tool_name} was not allowed")

    return policy


def _env(spec: AgentSpec) -> dict[str, str] | None:
    return dict(spec.env) if spec.env else None


def model_adapter(spec: AgentSpec) -> LlmAdapter:
    """The model adapter of a ``spawn``/``fork`` entry (``options.adapter``: ``offline``, the
    default, ``anthropic`` or ``openai``; ``options.base_url``, ``options.api_key_env``,
    ``options.tick``; ``model``)."""
    from ..config import ConfigError
    from ..harness.llm.select import AdapterConfigError, make_adapter

    options: Mapping[str, Any] = spec.options
    base_url = options.get("base_url")
    api_key_env = options.get("api_key_env")
    try:
        return make_adapter(
            str(options.get("adapter", "offline")),
            model=spec.model,
            base_url=str(base_url) if base_url else None,
            api_key_env=str(api_key_env) if api_key_env else None,
            tick=float(options.get("tick", 0.1)),
        )
    except AdapterConfigError as exc:
        raise ConfigError(f"{spec.name}: {exc}") from exc


def build_provider(spec: AgentSpec, context: BuildContext | None = None) -> ManagedProvider:
    """The provider for the registry entry ``spec``, named ``spec.name``, not yet started.

    ``spec`` is an :class:`~subagents.config.AgentSpec` (one value of
    :func:`~subagents.config.load_agents`); ``context`` carries what the entry may need
    besides itself (``context.ask``, asked when ``spec.permission`` is ``ask``; without it
    such requests are denied). Building starts nothing: the provider is an async context
    manager, entered once, that owns every child process and task it starts::

        async with build_provider(spec) as provider:
            run = await provider.start(SubagentRequest("hello"), cancel=CancelSignal())
            async with run:
                outcome = await run.result()

    An ``a2a`` entry is an :class:`~subagents.providers.a2a.A2AProvider` on its ``url``
    (``token_env`` its bearer token, ``options.card_url`` a card elsewhere than the
    well-known path); it needs the ``a2a`` extra (``subagents[a2a]``).

    An ``acp`` entry with ``urls`` is a :class:`~subagents.providers.spread.SpreadProvider`
    over one :class:`~subagents.providers.acp.AcpProvider` per URL, in the entry's order (each
    run on the least busy server; a server that cannot start it is skipped for the next).

    Raises :class:`UnknownProviderKind` for a ``spec.provider`` no built-in or installed
    plugin has, and :class:`~subagents.config.ConfigError` for an entry its provider cannot
    use (a ``claude-code`` entry without a model, a bad ``turn_deadline`` or model adapter).
    """
    context = context or BuildContext()
    kind = spec.provider
    cwd = spec.cwd
    if kind == "acp":
        from .acp import AcpProvider

        policy = _acp_policy(spec, context)

        def acp_provider(target: str | tuple[str, ...]) -> AcpProvider:
            return AcpProvider(
                target,
                token_env=spec.token_env,
                name=spec.name,
                cwd=cwd,
                env=_env(spec),
                permission_policy=policy,
                auth_method=cast("str | None", spec.options.get("auth_method")),
                initialize_timeout=spec.startup_timeout,
            )

        if spec.urls:
            from .spread import SpreadProvider

            return SpreadProvider(spec.name, [acp_provider(url) for url in spec.urls])
        return acp_provider(spec.url or spec.command)
    if kind == "a2a":
        return _a2a_provider(spec)
    if kind == "codex":
        from .codex import CodexProvider

        if spec.turn_deadline is not None and not spec.turn_deadline > 0:
            from ..config import ConfigError

            raise ConfigError(
                f"{spec.name}: turn_deadline must be seconds > 0, not {spec.turn_deadline!r}"
            )
        return CodexProvider(
            spec.command,
            name=spec.name,
            cwd=cwd,
            env=_env(spec),
            model=spec.model,
            approval_policy=_codex_policy(spec, context),
            startup_timeout=spec.startup_timeout,
            turn_deadline=spec.turn_deadline,
        )
    if kind == "claude-code":
        from ..transports.claude_code import ClaudeOptions
        from .claude_code import ClaudeCodeProvider

        if not spec.model:
            from ..config import ConfigError

            raise ConfigError(f"{spec.name}: claude-code needs a model")
        return ClaudeCodeProvider(
            spec.command[0],
            ClaudeOptions(model=spec.model, extra_args=tuple(spec.command[1:])),
            name=spec.name,
            cwd=cwd,
            env=_env(spec),
            permission_policy=_claude_policy(spec, context),
            startup_timeout=spec.startup_timeout,
        )
    if kind in ("spawn", "fork"):
        from pathlib import Path

        from ..harness.runtime import AgentRuntime
        from ..harness.session import SessionStore
        from .fork import ForkProvider
        from .service import SubagentService
        from .spawn import SpawnProvider

        sessions = spec.options.get("sessions")
        runtime = AgentRuntime(
            model_adapter(spec),
            sessions=SessionStore(Path(str(sessions)) if sessions else None),
        )
        cls = SpawnProvider if kind == "spawn" else ForkProvider
        provider = cls(runtime, name=spec.name)
        # Its agents may delegate further, to the same kind of child (depth limits apply).
        service = SubagentService()
        service.register(provider)
        runtime.offer_subagents(service, spec.name)
        return provider
    plugins = plugin_factories()
    entry_point = plugins.get(kind)
    if entry_point is None:
        known = ", ".join(["acp", "a2a", "codex", "claude-code", "spawn", "fork", *sorted(plugins)])
        raise UnknownProviderKind(
            f"{spec.name}: no provider kind {kind!r} (known: {known}); a plugin provides one "
            f"through the entry-point group {ENTRY_POINT_GROUP!r}"
        )
    factory = cast(ProviderFactory, entry_point.load())
    return factory(spec, context)


def _a2a_provider(spec: AgentSpec) -> ManagedProvider:
    """An ``a2a`` entry's provider (a ConfigError when the ``a2a`` extra is missing)."""
    from ..config import ConfigError

    try:
        from .a2a import A2AProvider
    except ImportError as exc:
        raise ConfigError(
            f"{spec.name}: provider 'a2a' needs the a2a-sdk package ({exc})",
            hint="pip install 'subagents[a2a]'",
        ) from exc
    if spec.url is None:
        raise ConfigError(f"{spec.name}: provider 'a2a' needs the agent's url")
    card_url = spec.options.get("card_url")
    return A2AProvider(
        spec.url,
        name=spec.name,
        token_env=spec.token_env,
        card_url=str(card_url) if card_url is not None else None,
        connect_timeout=spec.startup_timeout,
    )
