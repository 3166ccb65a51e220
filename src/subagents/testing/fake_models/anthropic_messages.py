"""Re-exports :mod:`subagents.fake_model_servers.anthropic_messages` for tests."""

from ...fake_model_servers import anthropic_messages as _served
from ...fake_model_servers.anthropic_messages import *  # noqa: F403

__all__: list[str] = []
__all__ += _served.__all__
