"""The real ACP agents from npm that run offline here, each with the fake model server it
runs on and the environment that points it there (a private HOME, every base URL on
127.0.0.1): one table for the e2e conformance tests and ``bench/conformance_wall.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .fake_models import anthropic_messages, gemini_api, openai_chat, openai_responses
from .fake_models._http import FakeHandler, FakeServer

__all__ = ("REAL_ACP_AGENTS", "RealAcpAgent")


@dataclass(frozen=True)
class RealAcpAgent:
    find_command: Callable[[], list[str] | None]
    """The installed agent's command line (``None`` when it is not installed)."""
    handler: type[FakeHandler]
    """The fake model server it talks to."""
    environment: Callable[[Path, FakeServer], dict[str, str]]
    """Its offline environment: ``(private home, running fake server) -> variables``."""


REAL_ACP_AGENTS: dict[str, RealAcpAgent] = {
    "codex-acp": RealAcpAgent(
        openai_responses.codex_acp_command,
        openai_responses.ResponsesHandler,
        openai_responses.codex_home,
    ),
    "claude-agent-acp": RealAcpAgent(
        anthropic_messages.claude_agent_acp_command,
        anthropic_messages.AnthropicMessagesHandler,
        anthropic_messages.claude_env,
    ),
    "qwen-code": RealAcpAgent(
        openai_chat.qwen_acp_command, openai_chat.ChatCompletionsHandler, openai_chat.qwen_env
    ),
    "opencode": RealAcpAgent(
        openai_chat.opencode_acp_command,
        openai_chat.ChatCompletionsHandler,
        openai_chat.opencode_env,
    ),
    "gemini-cli": RealAcpAgent(
        gemini_api.gemini_acp_command, gemini_api.GeminiHandler, gemini_api.gemini_env
    ),
}
"""Agent name (as its baseline file is named) -> how to run it offline."""
