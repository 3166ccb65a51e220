"""Re-exports :mod:`subagents.fake_model_servers.openai_chat` for tests."""

from ...fake_model_servers import openai_chat as _served
from ...fake_model_servers.openai_chat import *  # noqa: F403

__all__: list[str] = []
__all__ += _served.__all__
