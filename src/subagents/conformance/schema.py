"""Strict validation of what an agent sends, against the vendored ACP v1 schema.

:class:`AgentMessageValidator` judges one decoded message the agent wrote:

* a response to one of the client's requests: ``result`` against the method's response
  definition (``x-side: agent``, ``x-method``), ``error`` against ``Error``;
* a request to the client: ``params`` against the method's request definition
  (``x-side: client``); an unknown non-``_`` method is a violation;
* a notification: ``params`` against its definition (``session/update`` →
  ``SessionNotification``).

Violations of the schema are :attr:`Findings.errors`. Fields the schema does not define (a
leniency-only defect: the schema leaves objects open, strict clients do not) are reported
separately, in :attr:`Findings.unknown_fields`, for the top level of ``params`` / ``result``
and for the ``update`` of a ``session/update``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, cast

__all__ = ("AgentMessageValidator", "Findings", "load_schema")

_VOID_RESULT_METHODS = frozenset({"session/load"})
"""Methods whose docs show a ``null`` result although the schema says object."""


def load_schema() -> dict[str, Any]:
    """The vendored ``schema.json`` (ACP v1, stable surface)."""
    text = (
        resources.files("subagents.protocol.acp")
        .joinpath("schema", "v1", "schema.json")
        .read_text(encoding="utf-8")
    )
    return cast(dict[str, Any], json.loads(text))


@dataclass
class Findings:
    errors: list[str] = field(default_factory=list[str])
    unknown_fields: list[str] = field(default_factory=list[str])


def _require_jsonschema() -> Any:
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "the conformance suite needs the jsonschema package (a dependency of subagents): "
            "pip install jsonschema"
        ) from exc
    return jsonschema


class AgentMessageValidator:
    """Validates agent-authored messages (one instance per process is enough: it caches)."""

    def __init__(self, schema: dict[str, Any] | None = None) -> None:
        self._schema = schema if schema is not None else load_schema()
        defs: dict[str, Any] = self._schema["$defs"]
        self._defs = defs
        self._responses: dict[str, str] = {}
        self._requests: dict[str, str] = {}
        self._notifications: dict[str, str] = {}
        for name, definition in defs.items():
            method = definition.get("x-method")
            side = definition.get("x-side")
            if not isinstance(method, str):
                continue
            if side == "agent" and name.endswith("Response"):
                self._responses[method] = name
            elif side in ("client", "protocol") and name.endswith("Request"):
                self._requests[method] = name
            elif side in ("client", "protocol") and name.endswith("Notification"):
                self._notifications[method] = name
        self._validators: dict[str, Any] = {}

    def _validator(self, name: str) -> Any:
        validator = self._validators.get(name)
        if validator is None:
            jsonschema = _require_jsonschema()
            root = dict(self._schema)
            root.pop("anyOf", None)
            root.pop("title", None)
            root["$ref"] = f"#/$defs/{name}"
            validator = jsonschema.Draft202012Validator(root)
            self._validators[name] = validator
        return validator

    def _check(self, name: str, value: Any, where: str, findings: Findings) -> None:
        errors = sorted(
            self._validator(name).iter_errors(value), key=lambda e: list(e.absolute_path)
        )
        for error in errors[:5]:
            path = "/".join(str(p) for p in error.absolute_path)
            message = str(error.message)
            if len(message) > 300:
                message = message[:300] + "..."
            findings.errors.append(f"{where}{'/' + path if path else ''}: {message} ({name})")
        if not errors and isinstance(value, dict):
            self._unknown(name, cast(dict[str, Any], value), where, findings)

    # -- unknown fields ---------------------------------------------------------------------

    def _properties(self, schema: dict[str, Any], seen: int = 0) -> set[str] | None:
        """Property names a definition declares (None when it cannot tell: a union)."""
        if seen > 8:
            return None
        names: set[str] = set(cast(dict[str, Any], schema.get("properties", {})))
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            inner = self._properties(self._defs[ref.removeprefix("#/$defs/")], seen + 1)
            if inner is None:
                return None
            names |= inner
        for part in cast(list[dict[str, Any]], schema.get("allOf", [])):
            inner = self._properties(part, seen + 1)
            if inner is None:
                return None
            names |= inner
        if "anyOf" in schema or "oneOf" in schema:
            return None
        if schema.get("additionalProperties") not in (None, False):
            return None  # a map: every key is allowed
        return names

    def _unknown(self, name: str, value: dict[str, Any], where: str, out: Findings) -> None:
        known = self._properties(self._defs[name])
        if known is None:
            return
        extra = sorted(k for k in value if k not in known and k != "_meta")
        if extra:
            out.unknown_fields.append(f"{where}: fields not in {name}: {', '.join(extra)}")

    def _unknown_update(self, update: Any, where: str, out: Findings) -> None:
        if not isinstance(update, dict):
            return
        kind = cast(dict[str, Any], update).get("sessionUpdate")
        for variant in cast(list[dict[str, Any]], self._defs["SessionUpdate"].get("oneOf", [])):
            declared = cast(dict[str, Any], variant.get("properties", {})).get("sessionUpdate")
            if isinstance(declared, dict) and cast(dict[str, Any], declared).get("const") == kind:
                known = self._properties(variant)
                if known is None:
                    return
                extra = sorted(
                    k for k in cast(dict[str, Any], update) if k not in known and k != "_meta"
                )
                if extra:
                    out.unknown_fields.append(
                        f"{where}/update: fields not in the {kind} update: {', '.join(extra)}"
                    )
                return

    # -- entry points -----------------------------------------------------------------------

    def response(self, method: str, message: dict[str, Any]) -> Findings:
        """Judge the agent's response to the client's ``method`` request."""
        findings = Findings()
        if "error" in message:
            self._check("Error", message["error"], f"{method} error", findings)
            return findings
        result = message.get("result")
        name = self._responses.get(method)
        if name is None:
            return findings  # an extension method: nothing to judge against
        if result is None and method in _VOID_RESULT_METHODS:
            return findings
        self._check(name, result, f"{method} result", findings)
        return findings

    def incoming(self, message: dict[str, Any]) -> Findings:
        """Judge a request or notification the agent sent."""
        findings = Findings()
        method = message.get("method")
        if not isinstance(method, str):
            return findings
        is_request = "id" in message
        table = self._requests if is_request else self._notifications
        name = table.get(method)
        kind = "request" if is_request else "notification"
        if name is None:
            if not method.startswith("_"):
                findings.errors.append(f"{method}: not a client {kind} of ACP v1")
            return findings
        params = message.get("params")
        self._check(name, params, f"{method} params", findings)
        if method == "session/update" and not findings.errors and isinstance(params, dict):
            self._unknown_update(cast(dict[str, Any], params).get("update"), method, findings)
        return findings


@cache
def shared_validator() -> AgentMessageValidator:
    """One validator per process (building the per-definition validators is the slow part)."""
    return AgentMessageValidator()
