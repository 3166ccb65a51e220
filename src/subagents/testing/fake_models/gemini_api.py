"""Re-exports :mod:`subagents.fake_model_servers.gemini_api` for tests."""

from ...fake_model_servers import gemini_api as _served
from ...fake_model_servers.gemini_api import *  # noqa: F403

__all__: list[str] = []
__all__ += _served.__all__
