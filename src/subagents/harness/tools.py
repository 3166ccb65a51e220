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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, final, runtime_checkable

from ..protocol.jsonrpc import JsonValue
from ..providers.contract import CancelSignal

__all__ = ("Tool", "ToolError", "ToolFilter", "ToolRegistry", "ToolResult", "ToolSpec")


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
