"""The adapter registry: unique names, clear errors."""

from __future__ import annotations

import pytest

from subagents.harness.llm import LlmAdapter, LlmRegistry, LlmRegistryError, ScriptedAdapter


def test_adapters_are_found_by_the_name_they_were_registered_under() -> None:
    """`get` returns what `register` stored; `names` lists them in order."""
    registry = LlmRegistry()
    first, second = ScriptedAdapter(), ScriptedAdapter()
    registry.register("claude", first)
    registry.register("local", second)
    assert registry.get("claude") is first
    assert registry.get("local") is second
    assert registry.names == ("claude", "local")
    assert "claude" in registry
    assert len(registry) == 2
    assert isinstance(first, LlmAdapter)


def test_a_duplicate_name_is_rejected_and_named() -> None:
    """Registering a name twice raises `LlmRegistryError` naming it; the first stays."""
    registry = LlmRegistry()
    first = ScriptedAdapter()
    registry.register("claude", first)
    with pytest.raises(LlmRegistryError, match="'claude' is already registered") as info:
        registry.register("claude", ScriptedAdapter())
    assert info.value.name == "claude"
    assert registry.get("claude") is first


def test_an_unknown_name_lists_the_known_ones() -> None:
    """`get` of an unknown name says which names exist."""
    registry = LlmRegistry()
    registry.register("b", ScriptedAdapter())
    registry.register("a", ScriptedAdapter())
    with pytest.raises(
        LlmRegistryError, match=r"no model adapter named 'c' \(registered: 'a', 'b'\)"
    ):
        registry.get("c")
    with pytest.raises(LlmRegistryError, match="registered: none"):
        LlmRegistry().get("c")


def test_unregister_removes_and_returns_the_adapter() -> None:
    """After `unregister` the name is free again; unregistering it twice is an error."""
    registry = LlmRegistry()
    adapter = ScriptedAdapter()
    registry.register("x", adapter)
    assert registry.unregister("x") is adapter
    assert registry.names == ()
    with pytest.raises(LlmRegistryError, match="no model adapter named 'x'"):
        registry.unregister("x")
    registry.register("x", adapter)


def test_an_empty_name_is_rejected() -> None:
    """Names must be non-empty."""
    with pytest.raises(LlmRegistryError, match="non-empty"):
        LlmRegistry().register("", ScriptedAdapter())
