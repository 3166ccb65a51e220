"""Model adapters by unique name; registering a name twice is an error."""

from __future__ import annotations

from typing import final

from .types import LlmAdapter

__all__ = ("LlmRegistry", "LlmRegistryError")


class LlmRegistryError(Exception):
    """An adapter registry misuse (a duplicate or unknown name); ``name`` is the name."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name


@final
class LlmRegistry:
    """Model adapters by unique name (say ``"claude"``, ``"local-llama"``)."""

    def __init__(self) -> None:
        self._adapters: dict[str, LlmAdapter] = {}

    def register(self, name: str, adapter: LlmAdapter) -> None:
        """Add ``adapter`` under ``name``; a name already taken is refused."""
        if not name:
            raise LlmRegistryError("a model adapter needs a non-empty name", name=name)
        if name in self._adapters:
            raise LlmRegistryError(
                f"a model adapter named {name!r} is already registered", name=name
            )
        self._adapters[name] = adapter

    def unregister(self, name: str) -> LlmAdapter:
        """Remove and return the adapter registered under ``name``."""
        try:
            return self._adapters.pop(name)
        except KeyError:
            raise self._unknown(name) from None

    def get(self, name: str) -> LlmAdapter:
        """The adapter registered under ``name``."""
        try:
            return self._adapters[name]
        except KeyError:
            raise self._unknown(name) from None

    def __contains__(self, name: object) -> bool:
        return name in self._adapters

    def __len__(self) -> int:
        return len(self._adapters)

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._adapters)

    def _unknown(self, name: str) -> LlmRegistryError:
        known = ", ".join(repr(n) for n in sorted(self._adapters)) or "none"
        return LlmRegistryError(f"no model adapter named {name!r} (registered: {known})", name=name)
