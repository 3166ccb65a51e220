"""Byte streams, child processes, and the ACP endpoints that run over them.

- :func:`open_agent_process`: the one way to run an agent command (own process group,
  explicit environment, stderr tail, bounded shutdown ladder);
- :func:`connect_agent`: the ACP client endpoint (drive any ACP agent);
- :func:`connect_codex`: the Codex app-server client (drive ``codex app-server``);
- :func:`connect_claude`: the Claude Code client (drive ``claude`` over stream-json);
- :class:`ClientSandbox`: the client's opt-in ``fs/*`` and ``terminal/*``, confined to a root;
- pipe streams: asyncio's pipe transports on asyncio, portable fd streams elsewhere.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._asyncio_pipes import AsyncioPipeReceiveStream as AsyncioPipeReceiveStream
    from ._asyncio_pipes import AsyncioPipeSendStream as AsyncioPipeSendStream
    from ._fd import FdReceiveStream as FdReceiveStream
    from ._fd import FdSendStream as FdSendStream
    from ._fd import open_pipe_pair as open_pipe_pair
    from ._fd import open_stdio_streams as open_stdio_streams
    from ._fd import pipe_pair as pipe_pair
    from ._fd import wrap_pipe_fds as wrap_pipe_fds
    from ._turn_events import DEFAULT_MAX_EVENTS as DEFAULT_MAX_EVENTS
    from ._turn_events import TurnOverflowError as TurnOverflowError
    from .acp_agent import AGENT_PROTOCOL_VERSIONS as AGENT_PROTOCOL_VERSIONS
    from .acp_agent import Agent as Agent
    from .acp_agent import AgentTurn as AgentTurn
    from .acp_agent import ClientCapabilityError as ClientCapabilityError
    from .acp_agent import ClientConnection as ClientConnection
    from .acp_agent import TerminalHandle as TerminalHandle
    from .acp_agent import negotiate_protocol_version as negotiate_protocol_version
    from .acp_agent import run_agent as run_agent
    from .acp_agent import serve_agent as serve_agent
    from .acp_agent import serve_agent_over as serve_agent_over
    from .acp_client import AgentConnection as AgentConnection
    from .acp_client import AgentStartupError as AgentStartupError
    from .acp_client import CapabilityError as CapabilityError
    from .acp_client import ClientExtension as ClientExtension
    from .acp_client import ClientSession as ClientSession
    from .acp_client import PermissionPolicy as PermissionPolicy
    from .acp_client import PromptTurn as PromptTurn
    from .acp_client import ProtocolVersionError as ProtocolVersionError
    from .acp_client import allow_policy as allow_policy
    from .acp_client import connect_agent as connect_agent
    from .acp_client import connect_agent_over as connect_agent_over
    from .acp_client import reject_policy as reject_policy
    from .acp_sandbox import ClientSandbox as ClientSandbox
    from .claude_code import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
    from .claude_code import AllowTool as AllowTool
    from .claude_code import ClaudeAllowTool as ClaudeAllowTool
    from .claude_code import ClaudeAssistantMessage as ClaudeAssistantMessage
    from .claude_code import ClaudeConfigError as ClaudeConfigError
    from .claude_code import ClaudeConnection as ClaudeConnection
    from .claude_code import ClaudeConnectionError as ClaudeConnectionError
    from .claude_code import ClaudeControlError as ClaudeControlError
    from .claude_code import ClaudeDenyTool as ClaudeDenyTool
    from .claude_code import ClaudeEvent as ClaudeEvent
    from .claude_code import ClaudeHook as ClaudeHook
    from .claude_code import ClaudeLineTooLongError as ClaudeLineTooLongError
    from .claude_code import ClaudeOptions as ClaudeOptions
    from .claude_code import ClaudePermissionPolicy as ClaudePermissionPolicy
    from .claude_code import ClaudeRawEvent as ClaudeRawEvent
    from .claude_code import ClaudeResult as ClaudeResult
    from .claude_code import ClaudeStartupError as ClaudeStartupError
    from .claude_code import ClaudeStreamEvent as ClaudeStreamEvent
    from .claude_code import ClaudeSystemInit as ClaudeSystemInit
    from .claude_code import ClaudeToolPermissionRequest as ClaudeToolPermissionRequest
    from .claude_code import ClaudeToolUse as ClaudeToolUse
    from .claude_code import ClaudeTurn as ClaudeTurn
    from .claude_code import ClaudeUserMessage as ClaudeUserMessage
    from .claude_code import DenyTool as DenyTool
    from .claude_code import ToolPermissionRequest as ToolPermissionRequest
    from .claude_code import allow_tools_policy as allow_tools_policy
    from .claude_code import build_claude_argv as build_claude_argv
    from .claude_code import build_claude_env as build_claude_env
    from .claude_code import connect_claude as connect_claude
    from .claude_code import connect_claude_over as connect_claude_over
    from .claude_code import deny_tools_policy as deny_tools_policy
    from .codex_app_server import AgentMessageDelta as AgentMessageDelta
    from .codex_app_server import ApprovalPolicy as ApprovalPolicy
    from .codex_app_server import ApprovalRequest as ApprovalRequest
    from .codex_app_server import CodexAgentMessageDelta as CodexAgentMessageDelta
    from .codex_app_server import CodexApprovalPolicy as CodexApprovalPolicy
    from .codex_app_server import CodexApprovalRequest as CodexApprovalRequest
    from .codex_app_server import CodexConnection as CodexConnection
    from .codex_app_server import CodexDecision as CodexDecision
    from .codex_app_server import CodexError as CodexError
    from .codex_app_server import CodexEvent as CodexEvent
    from .codex_app_server import CodexItemCompleted as CodexItemCompleted
    from .codex_app_server import CodexItemStarted as CodexItemStarted
    from .codex_app_server import CodexOtherEvent as CodexOtherEvent
    from .codex_app_server import CodexPlanDelta as CodexPlanDelta
    from .codex_app_server import CodexPlanUpdated as CodexPlanUpdated
    from .codex_app_server import CodexReasoningDelta as CodexReasoningDelta
    from .codex_app_server import CodexStartupError as CodexStartupError
    from .codex_app_server import CodexThread as CodexThread
    from .codex_app_server import CodexTokenUsage as CodexTokenUsage
    from .codex_app_server import CodexTurn as CodexTurn
    from .codex_app_server import CodexTurnError as CodexTurnError
    from .codex_app_server import CodexTurnResult as CodexTurnResult
    from .codex_app_server import Decision as Decision
    from .codex_app_server import ItemCompleted as ItemCompleted
    from .codex_app_server import ItemStarted as ItemStarted
    from .codex_app_server import OtherEvent as OtherEvent
    from .codex_app_server import TokenUsage as TokenUsage
    from .codex_app_server import TurnError as TurnError
    from .codex_app_server import TurnResult as TurnResult
    from .codex_app_server import accept_policy as accept_policy
    from .codex_app_server import connect_codex as connect_codex
    from .codex_app_server import connect_codex_over as connect_codex_over
    from .codex_app_server import decline_policy as decline_policy
    from .process import BASE_ENV_VARS as BASE_ENV_VARS
    from .process import AgentProcess as AgentProcess
    from .process import ProcessExit as ProcessExit
    from .process import ProcessStartError as ProcessStartError
    from .process import build_child_env as build_child_env
    from .process import open_agent_process as open_agent_process
    from .process import terminate_process_group as terminate_process_group

_WHERE: dict[str, str] = {
    "DEFAULT_MAX_EVENTS": "._turn_events",
    "TurnOverflowError": "._turn_events",
    "AGENT_PROTOCOL_VERSIONS": ".acp_agent",
    "Agent": ".acp_agent",
    "AgentConnection": ".acp_client",
    "AgentMessageDelta": ".codex_app_server",
    "AgentProcess": ".process",
    "AgentStartupError": ".acp_client",
    "AgentTurn": ".acp_agent",
    "ApprovalPolicy": ".codex_app_server",
    "ApprovalRequest": ".codex_app_server",
    "AsyncioPipeReceiveStream": "._asyncio_pipes",
    "AsyncioPipeSendStream": "._asyncio_pipes",
    "BASE_ENV_VARS": ".process",
    "CapabilityError": ".acp_client",
    "ClientCapabilityError": ".acp_agent",
    "ClientConnection": ".acp_agent",
    "ClientExtension": ".acp_client",
    "ClientSandbox": ".acp_sandbox",
    "ClientSession": ".acp_client",
    "CodexAgentMessageDelta": ".codex_app_server",
    "CodexApprovalPolicy": ".codex_app_server",
    "CodexApprovalRequest": ".codex_app_server",
    "CodexDecision": ".codex_app_server",
    "CodexItemCompleted": ".codex_app_server",
    "CodexItemStarted": ".codex_app_server",
    "CodexOtherEvent": ".codex_app_server",
    "CodexPlanDelta": ".codex_app_server",
    "CodexPlanUpdated": ".codex_app_server",
    "CodexReasoningDelta": ".codex_app_server",
    "CodexTokenUsage": ".codex_app_server",
    "CodexTurnError": ".codex_app_server",
    "CodexTurnResult": ".codex_app_server",
    "connect_codex_over": ".codex_app_server",
    "CodexConnection": ".codex_app_server",
    "CodexError": ".codex_app_server",
    "CodexEvent": ".codex_app_server",
    "CodexStartupError": ".codex_app_server",
    "CodexThread": ".codex_app_server",
    "CodexTurn": ".codex_app_server",
    "Decision": ".codex_app_server",
    "FdReceiveStream": "._fd",
    "FdSendStream": "._fd",
    "ItemCompleted": ".codex_app_server",
    "ItemStarted": ".codex_app_server",
    "OtherEvent": ".codex_app_server",
    "PermissionPolicy": ".acp_client",
    "ProcessExit": ".process",
    "ProcessStartError": ".process",
    "PromptTurn": ".acp_client",
    "ProtocolVersionError": ".acp_client",
    "TerminalHandle": ".acp_agent",
    "TokenUsage": ".codex_app_server",
    "TurnError": ".codex_app_server",
    "TurnResult": ".codex_app_server",
    "accept_policy": ".codex_app_server",
    "allow_policy": ".acp_client",
    "build_child_env": ".process",
    "connect_agent": ".acp_client",
    "connect_agent_over": ".acp_client",
    "connect_codex": ".codex_app_server",
    "decline_policy": ".codex_app_server",
    "negotiate_protocol_version": ".acp_agent",
    "open_agent_process": ".process",
    "open_pipe_pair": "._fd",
    "open_stdio_streams": "._fd",
    "pipe_pair": "._fd",
    "reject_policy": ".acp_client",
    "run_agent": ".acp_agent",
    "serve_agent": ".acp_agent",
    "serve_agent_over": ".acp_agent",
    "terminate_process_group": ".process",
    "wrap_pipe_fds": "._fd",
    "DEFAULT_MAX_LINE_BYTES": ".claude_code",
    "AllowTool": ".claude_code",
    "ClaudeAssistantMessage": ".claude_code",
    "ClaudeConfigError": ".claude_code",
    "ClaudeConnection": ".claude_code",
    "ClaudeConnectionError": ".claude_code",
    "ClaudeControlError": ".claude_code",
    "ClaudeEvent": ".claude_code",
    "ClaudeHook": ".claude_code",
    "ClaudeLineTooLongError": ".claude_code",
    "ClaudeOptions": ".claude_code",
    "ClaudePermissionPolicy": ".claude_code",
    "ClaudeRawEvent": ".claude_code",
    "ClaudeResult": ".claude_code",
    "ClaudeStartupError": ".claude_code",
    "ClaudeStreamEvent": ".claude_code",
    "ClaudeSystemInit": ".claude_code",
    "ClaudeToolUse": ".claude_code",
    "ClaudeTurn": ".claude_code",
    "ClaudeUserMessage": ".claude_code",
    "DenyTool": ".claude_code",
    "ToolPermissionRequest": ".claude_code",
    "allow_tools_policy": ".claude_code",
    "build_claude_argv": ".claude_code",
    "build_claude_env": ".claude_code",
    "connect_claude": ".claude_code",
    "connect_claude_over": ".claude_code",
    "deny_tools_policy": ".claude_code",
    "ClaudeAllowTool": ".claude_code",
    "ClaudeDenyTool": ".claude_code",
    "ClaudeToolPermissionRequest": ".claude_code",
}


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above: a misspelt name is an error.
    def __getattr__(name: str) -> Any:
        # Submodules load on first use: an agent that needs only the agent endpoint does not pay
        # for the client, the sandbox or pydantic at import time.
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = (
    "AGENT_PROTOCOL_VERSIONS",
    "BASE_ENV_VARS",
    "DEFAULT_MAX_EVENTS",
    "DEFAULT_MAX_LINE_BYTES",
    "Agent",
    "AgentConnection",
    "AgentMessageDelta",
    "AgentProcess",
    "AgentStartupError",
    "AgentTurn",
    "AllowTool",
    "ApprovalPolicy",
    "ApprovalRequest",
    "AsyncioPipeReceiveStream",
    "AsyncioPipeSendStream",
    "CapabilityError",
    "ClaudeAllowTool",
    "ClaudeAssistantMessage",
    "ClaudeConfigError",
    "ClaudeConnection",
    "ClaudeConnectionError",
    "ClaudeControlError",
    "ClaudeDenyTool",
    "ClaudeEvent",
    "ClaudeHook",
    "ClaudeLineTooLongError",
    "ClaudeOptions",
    "ClaudePermissionPolicy",
    "ClaudeRawEvent",
    "ClaudeResult",
    "ClaudeStartupError",
    "ClaudeStreamEvent",
    "ClaudeSystemInit",
    "ClaudeToolPermissionRequest",
    "ClaudeToolUse",
    "ClaudeTurn",
    "ClaudeUserMessage",
    "ClientCapabilityError",
    "ClientConnection",
    "ClientExtension",
    "ClientSandbox",
    "ClientSession",
    "CodexAgentMessageDelta",
    "CodexApprovalPolicy",
    "CodexApprovalRequest",
    "CodexConnection",
    "CodexDecision",
    "CodexError",
    "CodexEvent",
    "CodexItemCompleted",
    "CodexItemStarted",
    "CodexOtherEvent",
    "CodexPlanDelta",
    "CodexPlanUpdated",
    "CodexReasoningDelta",
    "CodexStartupError",
    "CodexThread",
    "CodexTokenUsage",
    "CodexTurn",
    "CodexTurnError",
    "CodexTurnResult",
    "Decision",
    "DenyTool",
    "FdReceiveStream",
    "FdSendStream",
    "ItemCompleted",
    "ItemStarted",
    "OtherEvent",
    "PermissionPolicy",
    "ProcessExit",
    "ProcessStartError",
    "PromptTurn",
    "ProtocolVersionError",
    "TerminalHandle",
    "TokenUsage",
    "ToolPermissionRequest",
    "TurnError",
    "TurnOverflowError",
    "TurnResult",
    "accept_policy",
    "allow_policy",
    "allow_tools_policy",
    "build_child_env",
    "build_claude_argv",
    "build_claude_env",
    "connect_agent",
    "connect_agent_over",
    "connect_claude",
    "connect_claude_over",
    "connect_codex",
    "connect_codex_over",
    "decline_policy",
    "deny_tools_policy",
    "negotiate_protocol_version",
    "open_agent_process",
    "open_pipe_pair",
    "open_stdio_streams",
    "pipe_pair",
    "reject_policy",
    "run_agent",
    "serve_agent",
    "serve_agent_over",
    "terminate_process_group",
    "wrap_pipe_fds",
)
