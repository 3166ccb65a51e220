"""``AgentRuntime``: sessions, model adapters, tools and delegation for in-process agents.

::

    runtime = AgentRuntime(adapter, sessions=SessionStore(Path("sessions")), tools=my_tools)
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn:
        service.register(spawn)
        runtime.offer_subagents(service, "spawn")     # every agent gets a `subagent` tool
        agent = runtime.root_agent()
        outcome = await agent.run("Summarise the repo.", cancel=CancelSignal())

An :class:`Agent` is a session plus the loop that runs its turns: its own tool registry
(fresh tool instances from ``tools``, the subagent tools bound to its session, the ``task_*``
tools when background tasks are on), its system prompt, and its limits. A child agent's
limits (depth, tool filter) and prompt live in its session's ``config``, so a session read
back from disk (a cold resume) runs with the same ones.

Depth is absolute: a root is at depth 0 and a child one below its parent. A child of a parent
the runtime does not know (a *detached* child: the request names no parent session, or one
of another store) is at depth 1, below whoever started it, so ``depth_limit=N`` allows
exactly N levels either way. Its key is ``detached-<parent id, made file-name safe, or
none>.<n>`` (the n-th detached child of that parent in the session store), stable across runs.
Keys are unique per session store, across its runtimes and, for a store on a directory, its
processes (:mod:`subagents.harness.session`): a snapshot recording is never overwritten.

Snapshots (:class:`~subagents.harness.snapshots.SnapshotStore`): when given, each session's
model calls go through the store under the session's key (recorded, or replayed without the
real adapter).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Final, final

from ..cancel import CancelSignal
from ..protocol.jsonrpc import JsonValue
from ..providers.service import SubagentService
from .llm.types import LlmAdapter, Message
from .loop import DEFAULT_MAX_STEPS, AgentLoop, ProgressCallback, TurnOutcome
from .session import Session, SessionEvent, SessionStore
from .snapshots import SnapshotStore
from .subagent_tool import SubagentTool
from .tasks import TaskRuntime, task_tools
from .tools import Tool, ToolFilter, ToolRegistry

__all__ = ("Agent", "AgentRuntime", "AgentSettings", "ChildLimits")

_FILTER: Final = "tool_filter"
_DEPTH_LIMIT: Final = "depth_limit"
_SYSTEM: Final = "system"
_CAN_DELEGATE: Final = "can_delegate"
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")


@final
@dataclass(frozen=True, slots=True)
class AgentSettings:
    """How every agent of a runtime runs (a child's persona replaces ``system``)."""

    system: str | None = None
    model: str | None = None
    max_tokens: int | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    background_tasks: bool = False
    """Register the ``task_*`` tools (a per-agent :class:`TaskRuntime`; the agent must then be
    used as ``async with agent``)."""


@final
@dataclass(frozen=True, slots=True)
class ChildLimits:
    """What a new child may do, computed from its parent's limits and the request."""

    depth: int
    depth_limit: int | None
    tool_filter: ToolFilter | None

    @property
    def can_delegate(self) -> bool:
        """Whether the child may start children itself (it is below the depth limit)."""
        return self.depth_limit is None or self.depth < self.depth_limit


def _filter_to_json(tool_filter: ToolFilter | None) -> JsonValue:
    if tool_filter is None:
        return None
    allow: JsonValue = None
    if tool_filter.allow is not None:
        allow = list[JsonValue](sorted(tool_filter.allow))
    return {"allow": allow, "deny": list[JsonValue](sorted(tool_filter.deny))}


def _filter_from_json(data: JsonValue) -> ToolFilter | None:
    if not isinstance(data, dict):
        return None
    allow = data.get("allow")
    deny = data.get("deny")
    return ToolFilter(
        frozenset(str(a) for a in allow) if isinstance(allow, list) else None,
        frozenset(str(d) for d in deny) if isinstance(deny, list) else frozenset(),
    )


def _detached_prefix(parent_id: str | None) -> str:
    """What the keys of ``parent_id``'s detached children start with."""
    return f"detached-{_UNSAFE.sub('_', parent_id)[:64] if parent_id else 'none'}"


@final
@dataclass(frozen=True, slots=True)
class _Offer:
    service: SubagentService
    provider: str
    tool_name: str
    description: str | None


@final
class Agent:
    """A session and the loop that runs its turns."""

    def __init__(
        self, runtime: AgentRuntime, session: Session, loop: AgentLoop, registry: ToolRegistry
    ) -> None:
        self.runtime = runtime
        self.session = session
        self.loop = loop
        self.tools = registry
        self._tasks: TaskRuntime | None = None
        self._stack: AsyncExitStack | None = None
        """Holds the background tasks' runtime while the agent is entered."""

    @property
    def id(self) -> str:
        return self.session.id

    async def run(
        self, prompt: str, *, cancel: CancelSignal, on_progress: ProgressCallback | None = None
    ) -> TurnOutcome:
        """Run one turn (see :class:`~subagents.harness.loop.AgentLoop`)."""
        return await self.loop.run_turn(
            self.session, prompt, cancel=cancel, on_progress=on_progress
        )

    async def __aenter__(self) -> Agent:
        if self.runtime.settings.background_tasks:
            stack = AsyncExitStack()
            self._tasks = await stack.enter_async_context(TaskRuntime(self.tools))
            self._stack = stack
            for tool in task_tools(self._tasks):
                self.tools.register(tool)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._stack is not None:
            stack, self._stack, self._tasks = self._stack, None, None
            await stack.__aexit__(exc_type, exc, traceback)


@final
class AgentRuntime:
    """Makes agents: root ones, and the children of the spawn and fork providers.

    ``adapter`` answers every session's model calls (it may be ``None`` when ``snapshots``
    replays); ``tools`` makes each agent's own tools (called once per agent, so tools with
    state are not shared between agents), or is a fixed sequence of stateless tools.
    """

    def __init__(
        self,
        adapter: LlmAdapter | None,
        *,
        sessions: SessionStore | None = None,
        tools: Callable[[], Iterable[Tool]] | Sequence[Tool] = (),
        settings: AgentSettings | None = None,
        snapshots: SnapshotStore | None = None,
    ) -> None:
        if adapter is None and (snapshots is None or snapshots.mode != "replay"):
            raise ValueError("an adapter is needed unless snapshots replay")
        self.adapter = adapter
        self.sessions = sessions or SessionStore()
        self._tools = tools
        self.settings = settings or AgentSettings()
        self.snapshots = snapshots
        self._offers: list[_Offer] = []
        self._adapters: dict[str, LlmAdapter] = {}

    # -- delegation ------------------------------------------------------------------------

    def offer_subagents(
        self,
        service: SubagentService,
        provider: str,
        *,
        tool_name: str = "subagent",
        description: str | None = None,
    ) -> None:
        """Give every agent made from now on a :class:`SubagentTool` named ``tool_name``,
        bound to ``provider`` of ``service`` (and to the agent's session as the parent).
        Call it once per provider to expose (tool names must differ)."""
        if any(offer.tool_name == tool_name for offer in self._offers):
            raise ValueError(f"a subagent tool named {tool_name!r} is already offered")
        self._offers.append(_Offer(service, provider, tool_name, description))

    # -- sessions and agents ---------------------------------------------------------------

    def adapter_for(self, session: Session) -> LlmAdapter:
        """The adapter of ``session`` (through the snapshot store when there is one)."""
        adapter = self._adapters.get(session.key)
        if adapter is None:
            if self.snapshots is not None:
                adapter = self.snapshots.adapter(session.key, self.adapter)
            else:
                assert self.adapter is not None
                adapter = self.adapter
            self._adapters[session.key] = adapter
        return adapter

    def child_limits(
        self,
        parent: Session | None,
        *,
        depth_limit: int | None = None,
        tool_filter: Sequence[str] | None = None,
    ) -> ChildLimits:
        """The limits of a new child of ``parent`` (``None``: a parent this runtime does not
        know, taken as a root, so the child is at depth 1): the smaller depth limit and both
        filters apply."""
        depth = (parent.depth if parent is not None else 0) + 1
        inherited_limit: int | None = None
        inherited_filter: ToolFilter | None = None
        if parent is not None:
            limit = parent.config.get(_DEPTH_LIMIT)
            inherited_limit = limit if isinstance(limit, int) else None
            inherited_filter = _filter_from_json(parent.config.get(_FILTER))
        limits = [x for x in (inherited_limit, depth_limit) if x is not None]
        requested = ToolFilter.parse(tool_filter) if tool_filter is not None else None
        if inherited_filter is not None:
            combined: ToolFilter | None = inherited_filter.narrowed(requested)
        else:
            combined = requested
        return ChildLimits(depth, min(limits) if limits else None, combined)

    def root_agent(self, *, key: str = "root", system: str | None = None) -> Agent:
        """A new root session and its agent (``key`` names its snapshot file; when the
        session store has it already, ``<key>~2``, ``<key>~3``...)."""
        config: dict[str, JsonValue] = {_SYSTEM: system or self.settings.system}
        return self.agent(self.sessions.create(key=key, config=config))

    def child_agent(
        self,
        parent: Session | None,
        limits: ChildLimits,
        *,
        parent_id: str | None = None,
        persona: str | None = None,
        seed: Sequence[Message] | None = None,
        instructions: str | None = None,
        extra_config: Mapping[str, JsonValue] | None = None,
        session_id: str | None = None,
    ) -> Agent:
        """A new child session and its agent; a fork's ``seed`` (its parent's history, maybe
        empty) is logged first as a ``seed`` event.

        Without ``parent`` the child is detached (see the module docstring): at
        ``limits.depth``, below ``parent_id``. ``session_id`` chooses the child's session id
        (default a fresh one; see :meth:`SessionStore.create`)."""
        system = persona if persona is not None else self.settings.system
        if instructions:
            system = f"{system}\n\n{instructions}" if system else instructions
        config: dict[str, JsonValue] = {
            _SYSTEM: system,
            _DEPTH_LIMIT: limits.depth_limit,
            _FILTER: _filter_to_json(limits.tool_filter),
            _CAN_DELEGATE: limits.can_delegate,
            **(extra_config or {}),
        }
        if parent is not None:
            session = self.sessions.create(parent=parent, session_id=session_id, config=config)
        else:
            session = self.sessions.create(
                parent_id=parent_id,
                depth=limits.depth,
                key_prefix=_detached_prefix(parent_id),
                session_id=session_id,
                config=config,
            )
        if seed is not None:
            session.append(SessionEvent("seed", messages=tuple(seed)))
        return self.agent(session)

    def agent(self, session: Session) -> Agent:
        """The agent of an existing ``session`` (new, or read back from disk)."""
        config = session.config
        tool_filter = _filter_from_json(config.get(_FILTER))
        registry = ToolRegistry(tool_filter)
        made = self._tools() if callable(self._tools) else self._tools
        for tool in made:
            registry.register(tool)
        if config.get(_CAN_DELEGATE, True):
            for offer in self._offers:
                registry.register(
                    SubagentTool(
                        offer.service,
                        offer.provider,
                        name=offer.tool_name,
                        description=offer.description,
                        parent_session=session.id,
                    )
                )
        system = config.get(_SYSTEM, self.settings.system)
        loop = AgentLoop(
            self.adapter_for(session),
            registry,
            system=system if isinstance(system, str) else None,
            model=self.settings.model,
            max_tokens=self.settings.max_tokens,
            max_steps=self.settings.max_steps,
        )
        return Agent(self, session, loop, registry)

    def load_agent(self, session_id: str) -> Agent | None:
        """The agent of a stored session (``None`` if this runtime's store does not have it)."""
        session = self.sessions.get(session_id)
        return self.agent(session) if session is not None else None
