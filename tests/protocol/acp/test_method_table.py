"""The v1 method table against ``meta.json`` / ``meta.unstable.json`` and the schema (req. 4)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from subagents.protocol import acp
from subagents.protocol.acp import _v1_generated as generated

SCHEMA_DIR = Path(acp.__file__).parent / "schema" / "v1"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    return data


def meta_sides(meta: dict[str, Any]) -> dict[str, set[str]]:
    """method -> the sides ``meta*.json`` list it under."""
    out: dict[str, set[str]] = {}
    for key, side in (
        ("agentMethods", "agent"),
        ("clientMethods", "client"),
        ("protocolMethods", "protocol"),
    ):
        for method in meta[key].values():
            out.setdefault(method, set()).add(side)
    return out


def spec_sides(spec: acp.MethodSpec) -> set[str]:
    return {"agent", "client"} if spec.side == "both" else {spec.side}


STABLE_NOTIFICATIONS = {
    "session/cancel",
    "session/update",
    "elicitation/complete",
    "$/cancel_request",
}


def test_the_default_table_is_exactly_the_stable_methods_of_meta_json() -> None:
    """Requirement 4: every method of meta.json, with its handling side, and nothing else."""
    table = acp.method_table()
    expected = meta_sides(load("meta.json"))
    assert {name: spec_sides(spec) for name, spec in table.items()} == expected
    assert all(spec.stable for spec in table.values())
    assert len(table) == 25


def test_the_unstable_table_is_exactly_meta_unstable_json() -> None:
    """Requirement 4: with ``unstable=True`` the table is meta.unstable.json, sides included."""
    table = acp.method_table(1, unstable=True)
    expected = meta_sides(load("meta.unstable.json"))
    assert {name: spec_sides(spec) for name, spec in table.items()} == expected
    stable_names = set(meta_sides(load("meta.json")))
    assert {n for n, s in table.items() if s.stable} == stable_names


def test_unstable_methods_are_excluded_unless_asked_for() -> None:
    """Requirement 4: draft methods (session/fork, nes/*, ...) are opt-in."""
    default = acp.method_table()
    unstable = acp.method_table(unstable=True)
    for name in ("session/fork", "providers/list", "mcp/connect", "nes/start", "document/didOpen"):
        assert name not in default
        assert name in unstable
        assert not unstable[name].stable


def test_requests_and_notifications_follow_the_schema() -> None:
    """Requirement 4: notifications have no result type; requests have one (acp.md §3)."""
    table = acp.method_table()
    notifications = {name for name, spec in table.items() if spec.kind == "notification"}
    assert notifications == STABLE_NOTIFICATIONS
    for spec in table.values():
        assert (spec.result_type is None) == (spec.kind == "notification")
    # cross-check against the schema: a method has a response type iff it is a request
    defs: dict[str, Any] = load("schema.unstable.json")["$defs"]
    for spec in acp.method_table(unstable=True).values():
        payloads = [n for n, d in defs.items() if d.get("x-method") == spec.name]
        has_response = any(n.endswith("Response") for n in payloads)
        assert has_response == (spec.kind == "request"), spec.name


def test_payload_types_are_the_schema_definitions_named_by_x_method() -> None:
    """Requirement 4: each ``x-method`` definition is the params or result type of its method."""
    defs: dict[str, Any] = load("schema.unstable.json")["$defs"]
    table = acp.method_table(unstable=True)
    for name, schema in defs.items():
        if "x-method" not in schema:
            continue
        spec = table[schema["x-method"]]
        payload_types = (spec.params_type, spec.result_type, spec.notification_params_type)
        assert any(getattr(generated, name) is t for t in payload_types), name
        assert spec.side == schema["x-side"]


def test_well_known_methods_have_the_expected_specs() -> None:
    """Requirement 4: spot checks against acp.md §3 (side, kind, payload types)."""
    table = acp.method_table(unstable=True)
    prompt = table["session/prompt"]
    assert (prompt.side, prompt.kind) == ("agent", "request")
    assert prompt.params_type is acp.PromptRequest
    assert prompt.result_type is acp.PromptResponse
    update = table["session/update"]
    assert (update.side, update.kind, update.result_type) == ("client", "notification", None)
    assert update.params_type is acp.SessionNotification
    cancel = table["$/cancel_request"]
    assert (cancel.side, cancel.kind) == ("protocol", "notification")
    assert table["session/set_config_option"].params_type is acp.SetSessionConfigOptionRequest
    mcp = table["mcp/message"]  # sent both ways, as a request or a notification
    assert (mcp.side, mcp.kind) == ("both", "request")
    assert mcp.notification_params_type is generated.MessageMcpNotification


def test_an_unknown_protocol_version_raises_a_clear_error() -> None:
    """Requirement 4: versions without a table raise UnsupportedProtocolVersionError."""
    for version in (0, 2, 65535):
        with pytest.raises(acp.UnsupportedProtocolVersionError, match=r"supported: 1\b") as info:
            acp.method_table(version)
        assert isinstance(info.value, ValueError)
        assert info.value.requested == version
        assert info.value.supported == (1,)


def test_protocol_version_constants_describe_v1() -> None:
    """Requirement 4: PROTOCOL_VERSION is 1 and every supported version has a table."""
    assert acp.PROTOCOL_VERSION == 1
    assert acp.SUPPORTED_PROTOCOL_VERSIONS == (1,)
    for version in acp.SUPPORTED_PROTOCOL_VERSIONS:
        assert acp.method_table(version)


def test_method_specs_are_frozen_and_the_table_is_read_only() -> None:
    """Requirement 4: MethodSpec is a frozen slotted dataclass; tables cannot be mutated."""
    table = acp.method_table()
    spec = table["initialize"]
    assert dataclasses.is_dataclass(spec)
    assert not hasattr(spec, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        table["x"] = spec  # type: ignore[index]
    assert acp.method_table() is table
