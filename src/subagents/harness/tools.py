"""Tools as the model sees them, and a registry that rejects duplicate names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, final, runtime_checkable

from ..protocol.jsonrpc import JsonValue
from ..providers.contract import CancelSignal

__all__ = ("Tool", "ToolError", "ToolRegistry", "ToolResult", "ToolSpec")


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
class ToolRegistry:
    """Tools by unique name; registering a name twice is an error."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

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

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise ToolError(f"no tool named {name!r}") from None

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self._tools.values())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)
