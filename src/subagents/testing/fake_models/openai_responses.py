"""Re-exports :mod:`subagents.fake_model_servers.openai_responses` for tests, with
:func:`require_codex_command`."""

from ...fake_model_servers import openai_responses as _served
from ...fake_model_servers.openai_responses import *  # noqa: F403
from ...fake_model_servers.openai_responses import ResponseEvents, codex_command
from ..npm_agents import missing_npm_agent

__all__: list[str] = ["require_codex_command"]
__all__ += _served.__all__

_Response = ResponseEvents
"""Its name here before the fake servers moved (tests import it)."""


def require_codex_command() -> list[str]:
    """:func:`codex_command` for a pytest test: when codex is not installed the test is
    skipped if ``npm`` is unavailable and fails otherwise (:func:`missing_npm_agent`)."""
    command = codex_command()
    if command is None:
        missing_npm_agent("@openai/codex")
    return command
