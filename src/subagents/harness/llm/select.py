"""Choosing a model adapter by kind, for configuration files and command-line options."""

from __future__ import annotations

import os
from typing import Final

from .types import LlmAdapter

__all__ = ("ADAPTER_KINDS", "AdapterConfigError", "make_adapter")

ADAPTER_KINDS: Final = ("offline", "anthropic", "openai")


class AdapterConfigError(ValueError):
    """The adapter cannot be made as configured (the message says what is missing)."""


def make_adapter(
    kind: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    tick: float = 0.1,
) -> LlmAdapter:
    """``offline`` (the embedded model; ``tick`` paces its ``slow`` answers), ``anthropic``
    (key in ``$ANTHROPIC_API_KEY`` unless ``api_key_env`` names another variable) or
    ``openai`` (Chat Completions; ``$OPENAI_API_KEY``, which a local server may not need)."""
    if kind == "offline":
        from .offline import OfflineModel

        return OfflineModel(tick=tick)
    if kind not in ADAPTER_KINDS:
        raise AdapterConfigError(f"unknown adapter {kind!r} ({', '.join(ADAPTER_KINDS)})")
    if not model:
        raise AdapterConfigError(f"the {kind} adapter needs a model name")
    default_variable = "ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY"
    variable = api_key_env or default_variable
    key = os.environ.get(variable)
    if kind == "anthropic":
        if not key:
            raise AdapterConfigError(f"the anthropic adapter needs a key in ${variable}")
        from .anthropic import AnthropicAdapter

        if base_url:
            return AnthropicAdapter(model, api_key=key, base_url=base_url)
        return AnthropicAdapter(model, api_key=key)
    from .openai_chat import OpenAIChatAdapter

    if base_url:
        return OpenAIChatAdapter(model, api_key=key, base_url=base_url)
    return OpenAIChatAdapter(model, api_key=key)
