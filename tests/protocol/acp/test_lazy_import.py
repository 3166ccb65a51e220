"""Importing the ACP package is lazy and anyio-free (requirements 5 and 6)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap

import pytest

import subagents.protocol.acp as acp_package


def run(code: str) -> dict[str, bool]:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=50,
    )
    answer: dict[str, bool] = json.loads(result.stdout)
    return answer


def test_importing_the_package_loads_neither_anyio_nor_the_generated_models() -> None:
    """Requirement 5/6: ``import subagents.protocol.acp`` imports no anyio, pydantic or models."""
    loaded = run(
        """
        import json, sys
        import subagents.protocol.acp
        print(json.dumps({
            "anyio": "anyio" in sys.modules,
            "generated": "subagents.protocol.acp._v1_generated" in sys.modules,
            "pydantic": "pydantic" in sys.modules,
        }))
        """
    )
    assert loaded == {"anyio": False, "generated": False, "pydantic": False}


def test_method_constants_do_not_load_the_models() -> None:
    """Requirement 5: ``PROTOCOL_VERSION`` and friends come from methods.py alone."""
    loaded = run(
        """
        import json, sys
        from subagents.protocol import acp
        assert acp.PROTOCOL_VERSION == 1 and acp.SUPPORTED_PROTOCOL_VERSIONS == (1,)
        print(json.dumps({"generated": "subagents.protocol.acp._v1_generated" in sys.modules}))
        """
    )
    assert loaded == {"generated": False}


def test_a_model_attribute_imports_the_models_but_builds_only_on_use() -> None:
    """Requirement 3/5 (issue 17): attribute access imports the module; a model's validator is
    built on its first use, for the models it needs only, and pydantic itself is never imported
    (the models are validated by pydantic_core directly)."""
    loaded = run(
        """
        import json, sys
        from subagents.protocol import acp
        cls = acp.SessionNotification
        imported = "subagents.protocol.acp._v1_generated" in sys.modules
        built_before = "__acp_validator__" in vars(cls)
        acp.from_wire(cls, {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}})
        print(json.dumps({
            "imported": imported,
            "built_before": built_before,
            "built_after": "__acp_validator__" in vars(cls),
            "unrelated_built": "__acp_validator__" in vars(acp.InitializeRequest),
            "anyio": "anyio" in sys.modules,
            "pydantic": "pydantic" in sys.modules,
        }))
        """
    )
    assert loaded == {
        "imported": True,
        "built_before": False,
        "built_after": True,
        "unrelated_built": False,
        "anyio": False,
        "pydantic": False,
    }


def test_every_exported_name_resolves() -> None:
    """Requirement 5: ``__all__`` is a tuple and each name in it is reachable lazily."""
    assert isinstance(acp_package.__all__, tuple)
    assert len(set(acp_package.__all__)) == len(acp_package.__all__)
    for name in acp_package.__all__:
        assert getattr(acp_package, name) is not None, name
    assert set(acp_package.__all__) <= set(dir(acp_package))
    handwritten = {
        "_base": ("ACPModel", "JsonValue", "from_wire", "to_wire"),
        "methods": tuple(importlib.import_module("subagents.protocol.acp.methods").__all__),
    }
    for module_name, names in handwritten.items():
        module = importlib.import_module(f"subagents.protocol.acp.{module_name}")
        for name in names:
            assert name in acp_package.__all__, name
            assert getattr(acp_package, name) is getattr(module, name), name


def test_unknown_attributes_raise_attribute_error() -> None:
    """Requirement 5: the lazy ``__getattr__`` does not invent names."""
    with pytest.raises(AttributeError, match="NoSuchModel"):
        getattr(acp_package, "NoSuchModel")  # noqa: B009


def test_the_client_endpoint_loads_the_model_machinery_with_its_first_connection() -> None:
    """Issue 17 (import of the client endpoint ≤ 1.5× ``import asyncio, json``; no stall):
    importing ``subagents.transports.acp_client`` loads neither pydantic_core nor the model
    runtime; the first connection loads them (in a worker thread) and then talks typed ACP."""
    loaded = run(
        """
        import json, sys
        import anyio
        import subagents.transports.acp_client as client
        before = {
            "pydantic_core": "pydantic_core" in sys.modules,
            "base": "subagents.protocol.acp._base" in sys.modules,
        }

        async def main():
            command = [sys.executable, "-m", "subagents.agents.reference"]
            async with client.connect_agent(command) as agent:
                session = await agent.new_session()
                return (await session.run("hello")).stop_reason

        stop = anyio.run(main)
        after = {"pydantic_core": "pydantic_core" in sys.modules, "stop": stop}
        print(json.dumps({"before": before, "after": after}))
        """
    )
    assert loaded == {
        "before": {"pydantic_core": False, "base": False},
        "after": {"pydantic_core": True, "stop": "end_turn"},
    }
