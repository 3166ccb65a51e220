"""Tools as the model sees them, and a registry that rejects duplicate names.

A registry may carry a :class:`ToolFilter` (a child's ``tool_filter``): it is applied to the
live registry at every lookup, so a tool registered later is filtered too, and a filtered-out
tool is neither offered to the model (:meth:`ToolRegistry.specs`) nor callable
(:meth:`ToolRegistry.get`, which the agent loop and the ``task_*`` tools go through).

Security limits of a filter: it works by tool name, inside one process. It decides which
tools a model may call; it is not a sandbox for what a permitted tool does (a shell tool that
is allowed can run anything the process can), and in-process tools share the parent's
memory, files and credentials.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias, final, runtime_checkable

from ..cancel import CancelSignal
from ..protocol.jsonrpc import JsonValue
from ..providers.contract import ProgressEvent

__all__ = (
    "ProgressReportingTool",
    "Tool",
    "ToolError",
    "ToolFilter",
    "ToolProgressCallback",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
)


@final
@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is shown: a name, a description, and a JSON schema for the arguments."""

    name: str
    description: str
    input_schema: Mapping[str, JsonValue]


@final
@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the model gets back. ``is_error`` results are failures, never partial success."""

    content: str
    is_error: bool = False
    data: JsonValue = None

    @classmethod
    def error(cls, content: str, data: JsonValue = None) -> ToolResult:
        return cls(content, True, data)


class ToolError(Exception):
    """A tool registry misuse (a duplicate or unknown name)."""


@runtime_checkable
class Tool(Protocol):
    """A tool a model can call."""

    @property
    def spec(self) -> ToolSpec: ...

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        """Run the tool; ``cancel`` is the execution's signal (pass it on to what you start)."""
        ...


ToolProgressCallback: TypeAlias = Callable[[ProgressEvent], None]
"""Takes what a running tool reports. Synchronous and non-blocking: it must return at once
(buffer or drop, never wait), so a slow listener never holds the tool's work back."""


@runtime_checkable
class ProgressReportingTool(Tool, Protocol):
    """A tool that can report progress while it runs (the subagent tool: its child's events).

    Optional: the method's presence is the capability (``isinstance(tool,
    ProgressReportingTool)``), so every plain :class:`Tool` keeps working unchanged. The
    agent loop calls :meth:`execute_with_progress` instead of ``execute`` when someone listens
    to the turn's progress, and relays each event as a
    :class:`~subagents.providers.contract.ChildProgress` under the call's id.
    """

    async def execute_with_progress(
        self,
        arguments: Mapping[str, JsonValue],
        *,
        cancel: CancelSignal,
        on_progress: ToolProgressCallback,
    ) -> ToolResult:
        """Run the tool as ``execute`` does, passing what it reports to ``on_progress`` as it
        happens (only while it runs)."""
        ...


@final
@dataclass(frozen=True, slots=True)
class ToolFilter:
    """Which tool names may be used: ``allow`` (``None``: any name not denied) minus
    ``deny``."""

    allow: frozenset[str] | None = None
    deny: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, entries: Sequence[str]) -> ToolFilter:
        """A request's ``tool_filter``: names are allowed, ``!name`` denied. With no allowed
        name (only denials) every other tool stays allowed; an empty list allows nothing."""
        allow = frozenset(e for e in entries if not e.startswith("!"))
        deny = frozenset(e[1:] for e in entries if e.startswith("!"))
        if not allow and deny:
            return cls(None, deny)
        return cls(allow, deny)

    def permits(self, name: str) -> bool:
        return name not in self.deny and (self.allow is None or name in self.allow)

    def narrowed(self, other: ToolFilter | None) -> ToolFilter:
        """Both filters at once (a child never gets a tool its parent's filter refused)."""
        if other is None:
            return self
        if self.allow is None:
            allow = other.allow
        elif other.allow is None:
            allow = self.allow
        else:
            allow = self.allow & other.allow
        return ToolFilter(allow, self.deny | other.deny)


@final
class ToolRegistry:
    """Tools by unique name; registering a name twice is an error. With a ``tool_filter``,
    only the tools it permits are offered and callable (see the module docstring)."""

    def __init__(self, tool_filter: ToolFilter | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self.tool_filter = tool_filter

    def register(self, tool: Tool) -> None:
        name = tool.spec.name
        if name in self._tools:
            raise ToolError(f"a tool named {name!r} is already registered")
        self._tools[name] = tool

    def unregister(self, name: str) -> Tool:
        try:
            return self._tools.pop(name)
        except KeyError:
            raise ToolError(f"no tool named {name!r}") from None

    def _permits(self, name: str) -> bool:
        return self.tool_filter is None or self.tool_filter.permits(name)

    def get(self, name: str) -> Tool:
        if name in self._tools and not self._permits(name):
            raise ToolError(f"the tool {name!r} is not allowed here (tool filter)")
        try:
            return self._tools[name]
        except KeyError:
            raise ToolError(f"no tool named {name!r}") from None

    def specs(self) -> tuple[ToolSpec, ...]:
        """The specs of the tools offered (those the filter permits)."""
        return tuple(tool.spec for name, tool in self._tools.items() if self._permits(name))

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the tools offered (those the filter permits)."""
        return tuple(name for name in self._tools if self._permits(name))
