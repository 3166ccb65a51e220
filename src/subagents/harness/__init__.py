"""The in-process agent runtime: tools, the model-facing subagent tool (and, next, sessions,
the agent loop and LLM adapters)."""

from .subagent_tool import SUBAGENT_INPUT_SCHEMA as SUBAGENT_INPUT_SCHEMA
from .subagent_tool import SubagentTool as SubagentTool
from .tools import Tool as Tool
from .tools import ToolError as ToolError
from .tools import ToolRegistry as ToolRegistry
from .tools import ToolResult as ToolResult
from .tools import ToolSpec as ToolSpec

__all__ = (
    "SUBAGENT_INPUT_SCHEMA",
    "SubagentTool",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
)
