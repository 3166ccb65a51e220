"""Model adapters: the provider-neutral request/response types, a registry of adapters by
name, a scripted adapter for tests, the embedded offline model, and streaming HTTP adapters
for the Anthropic Messages API and OpenAI-style Chat Completions.

The types, the registry and the scripted adapter are imported eagerly; the HTTP adapters
load on first use, so importing this package (or :mod:`.types`) does not import ``httpx``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .offline import OfflineModel as OfflineModel
from .registry import LlmRegistry as LlmRegistry
from .registry import LlmRegistryError as LlmRegistryError
from .scripted import Responder as Responder
from .scripted import ScriptedAdapter as ScriptedAdapter
from .scripted import ScriptStep as ScriptStep
from .types import LlmAdapter as LlmAdapter
from .types import LlmCancelled as LlmCancelled
from .types import LlmError as LlmError
from .types import LlmErrorKind as LlmErrorKind
from .types import Message as Message
from .types import ModelRequest as ModelRequest
from .types import ModelResponse as ModelResponse
from .types import Role as Role
from .types import StopReason as StopReason
from .types import TextCallback as TextCallback
from .types import ToolCall as ToolCall
from .types import message_from_json as message_from_json
from .types import message_to_json as message_to_json
from .types import request_from_json as request_from_json
from .types import request_to_json as request_to_json
from .types import response_from_json as response_from_json
from .types import response_to_json as response_to_json

if TYPE_CHECKING:
    from .anthropic import AnthropicAdapter
    from .openai_chat import OpenAIChatAdapter

__all__ = (
    "AnthropicAdapter",
    "LlmAdapter",
    "LlmCancelled",
    "LlmError",
    "LlmErrorKind",
    "LlmRegistry",
    "LlmRegistryError",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "OfflineModel",
    "OpenAIChatAdapter",
    "Responder",
    "Role",
    "ScriptStep",
    "ScriptedAdapter",
    "StopReason",
    "TextCallback",
    "ToolCall",
    "message_from_json",
    "message_to_json",
    "request_from_json",
    "request_to_json",
    "response_from_json",
    "response_to_json",
)

_LAZY = {"AnthropicAdapter": "anthropic", "OpenAIChatAdapter": "openai_chat"}


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above: a misspelt name is an error.
    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
