"""The in-process agent runtime: tools, the model-facing subagent tool (and, next, sessions,
the agent loop and LLM adapters)."""

from .subagent_tool import SUBAGENT_INPUT_SCHEMA as SUBAGENT_INPUT_SCHEMA
from .subagent_tool import SubagentTool as SubagentTool
from .tasks import TaskInfo as TaskInfo
from .tasks import TaskLimitError as TaskLimitError
from .tasks import TaskRuntime as TaskRuntime
from .tasks import TaskState as TaskState
from .tasks import task_tools as task_tools
from .tools import ProgressReportingTool as ProgressReportingTool
from .tools import Tool as Tool
from .tools import ToolError as ToolError
from .tools import ToolProgressCallback as ToolProgressCallback
from .tools import ToolRegistry as ToolRegistry
from .tools import ToolResult as ToolResult
from .tools import ToolSpec as ToolSpec

__all__ = (
    "SUBAGENT_INPUT_SCHEMA",
    "ProgressReportingTool",
    "SubagentTool",
    "TaskInfo",
    "TaskLimitError",
    "TaskRuntime",
    "TaskState",
    "Tool",
    "ToolError",
    "ToolProgressCallback",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "task_tools",
)
