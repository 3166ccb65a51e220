"""Strict validation of what an agent sends, against the vendored ACP v1 schema.

:class:`AgentMessageValidator` judges one decoded message the agent wrote:

* a response to one of the client's requests: ``result`` against the method's response
  definition (``x-side: agent``, ``x-method``), ``error`` against ``Error``;
* a request to the client: ``params`` against the method's request definition
  (``x-side: client``); an unknown non-``_`` method is a violation;
* a notification: ``params`` against its definition (``session/update`` →
  ``SessionNotification``).

Violations of the stable schema (``schema.json``) are :attr:`Findings.errors`. Fields the
stable schema does not define (a leniency-only defect: the schema leaves objects open, strict
clients do not) are found at every depth of a valid message, each with its JSON path, and
sorted in two: those the protocol's **unstable** schema (``schema.unstable.json``, vendored
beside the stable one) defines are :attr:`Findings.unstable_fields` (opt-in draft features,
such as ``usage`` in a prompt response: informational), the others are
:attr:`Findings.unknown_fields` (judged by ACP-SCHEMA-002). ``_meta`` is never a finding.

The walk follows the schema the way a typed client decodes: ``$ref``, ``allOf`` (merged),
``oneOf`` / ``anyOf`` (the one variant the value's discriminator consts select; when the
value does not single one out, that object is not judged), arrays (``items``) and maps
(``additionalProperties``: any key). Shapes are cached per schema node, so a message costs a
walk over its own keys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Final, cast

__all__ = ("AgentMessageValidator", "Findings", "definition_root", "load_schema")

_VOID_RESULT_METHODS = frozenset({"session/load"})
"""Methods whose docs show a ``null`` result although the schema says object."""

STABLE: Final = "schema.json"
UNSTABLE: Final = "schema.unstable.json"

RETIRED_UNSTABLE: Final[dict[str, frozenset[str]]] = {
    "NewSessionResponse": frozenset({"models"}),
    "LoadSessionResponse": frozenset({"models"}),
    "ResumeSessionResponse": frozenset({"models"}),
}
"""Fields of the unstable schema that it no longer has: the unstable session model API
(``models``, ``session/set_model``) was in ``schema.unstable.json`` until
agent-client-protocol 822ef53c (2026-06-01, "Remove unstable session model API", #1325), and
agents built on older SDKs still send it. Reported as unstable use, like the current ones."""

_MAX_DEPTH = 48


def load_schema(name: str = STABLE) -> dict[str, Any]:
    """A vendored ACP v1 schema: ``schema.json`` (the stable surface, the default) or
    ``schema.unstable.json`` (the stable surface plus the opt-in draft features)."""
    text = (
        resources.files("subagents.protocol.acp")
        .joinpath("schema", "v1", name)
        .read_text(encoding="utf-8")
    )
    return cast(dict[str, Any], json.loads(text))


@dataclass
class Findings:
    errors: list[str] = field(default_factory=list[str])
    unknown_fields: list[str] = field(default_factory=list[str])
    unstable_fields: list[str] = field(default_factory=list[str])


def _require_jsonschema() -> Any:
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "the conformance suite needs the jsonschema package (a dependency of subagents): "
            "pip install jsonschema"
        ) from exc
    return jsonschema


_OneOfTable = tuple[str, dict[str, int]]

_one_of_tables: dict[int, tuple[list[Any], _OneOfTable | None]] = {}
"""``oneOf`` list (by id; the entry keeps it alive) -> its discriminator table, if it has one."""


def _discriminator(one_of: list[Any]) -> _OneOfTable | None:
    """``(key, {const: branch index})`` when every branch of ``one_of`` requires ``key`` and
    fixes it to a string ``const`` of its own (the ACP schema's tagged unions: ``SessionUpdate``
    by ``sessionUpdate``, ``ContentBlock`` by ``type``, ...), else ``None``."""
    entry = _one_of_tables.get(id(one_of))
    if entry is not None and entry[0] is one_of:
        return entry[1]
    keys: set[str] = set()
    branches: dict[str, int] = {}
    table: _OneOfTable | None = None
    for index, branch in enumerate(one_of):
        if not isinstance(branch, dict):
            break
        branch = cast(dict[str, Any], branch)
        required = branch.get("required")
        properties = branch.get("properties")
        if not isinstance(required, list) or not isinstance(properties, dict):
            break
        properties = cast(dict[str, Any], properties)
        fixed = [
            key
            for key in cast(list[Any], required)
            if isinstance(key, str)
            and isinstance(properties.get(key), dict)
            and isinstance(properties[key].get("const"), str)
        ]
        if len(fixed) != 1 or properties[fixed[0]]["const"] in branches:
            break
        keys.add(fixed[0])
        branches[properties[fixed[0]]["const"]] = index
    else:
        if len(keys) == 1:
            table = (keys.pop(), branches)
    _one_of_tables[id(one_of)] = (one_of, table)
    return table


@cache
def _validator_class() -> Any:
    """``Draft202012Validator`` whose ``oneOf`` tries the one branch a tagged union's
    discriminator names first: when that branch holds, no other can (each requires a
    different ``const``), so the ``oneOf`` holds, and the other branches are not evaluated.
    Otherwise (the branch fails, no discriminator, no table) it is the standard ``oneOf``, so
    every error is the standard one, word for word. Evaluating every branch of
    ``SessionUpdate`` for each update was half a conformance run's own CPU (session 18: a
    ``SessionNotification`` 935 → 273 µs; the mandatory checks' schema checks 247–266 →
    179–195 ms)."""
    jsonschema = _require_jsonschema()
    base = jsonschema.Draft202012Validator
    standard = base.VALIDATORS["oneOf"]

    def one_of(validator: Any, one_of: Any, instance: Any, schema: Any) -> Any:
        table = _discriminator(one_of) if isinstance(instance, dict) else None
        if table is not None:
            tag = cast(dict[str, Any], instance).get(table[0])
            index = table[1].get(tag) if isinstance(tag, str) else None
            if index is not None:
                errors = validator.descend(instance, one_of[index], schema_path=index)
                if next(errors, None) is None:
                    return
        yield from standard(validator, one_of, instance, schema)

    return jsonschema.validators.extend(base, validators={"oneOf": one_of})


def definition_root(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """``schema`` as a root that validates its definition ``name`` (its ``$defs`` kept)."""
    root = dict(schema)
    root.pop("anyOf", None)
    root.pop("title", None)
    root["$ref"] = f"#/$defs/{name}"
    return root


Node = dict[str, Any]


@dataclass
class _Shape:
    """What an object value may hold, per the schema node that describes it."""

    properties: dict[str, Node]
    """Declared keys -> the node describing their values."""
    name: str | None
    """The definition the properties come from (the outermost ``$ref``)."""
    variant: str | None = None
    """The discriminator value of the union variant chosen, when one was."""
    open: bool = False
    """Any key is allowed (a map, a free-form object)."""
    strays: list[str] = field(default_factory=list[str])
    """Discriminator values no variant of a union names (``type: "env_var"`` where the union
    has ``terminal`` and a default variant without ``type``), described."""

    @property
    def label(self) -> str:
        base = self.name or "the schema"
        return f"{base} ({self.variant})" if self.variant else base


@dataclass(frozen=True)
class _Variant:
    node: Node
    consts: dict[str, Any]
    required: frozenset[str]
    objectish: bool


class _Walker:
    """One schema's view of values: shapes of objects, items of arrays."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Node] = schema["$defs"]
        self._variants: dict[int, tuple[list[_Variant], frozenset[str], dict[str, list[Any]]]] = {}

    def ref(self, name: str) -> Node:
        return {"$ref": f"#/$defs/{name}"}

    def _target(self, node: Node) -> tuple[str, Node] | None:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            target = self.defs.get(name)
            if target is not None:
                return name, target
        return None

    def shape(self, node: Node, value: dict[str, Any], depth: int = 0) -> _Shape | None:
        """The shape of ``value`` as ``node`` describes it; ``None`` when it cannot tell (a
        union whose variant the value does not select)."""
        out = _Shape({}, None)
        declared = self._merge(node, value, out, depth)
        if declared is None:
            return None
        if not declared:
            out.open = True  # a node that declares no properties allows any
        return out

    def _merge(self, node: Node, value: dict[str, Any], out: _Shape, depth: int) -> bool | None:
        """Merge what ``node`` declares into ``out``; whether it declared properties."""
        if depth > 16:
            return None
        declared = False
        target = self._target(node)
        if target is not None:
            name, inner = target
            if out.name is None:
                out.name = name
            found = self._merge(inner, value, out, depth + 1)
            if found is None:
                return None
            declared |= found
        for part in cast(list[Node], node.get("allOf", [])):
            found = self._merge(part, value, out, depth + 1)
            if found is None:
                return None
            declared |= found
        properties = node.get("properties")
        if isinstance(properties, dict):
            declared = True
            out.properties.update(cast(dict[str, Node], properties))
        extra = node.get("additionalProperties")
        if extra is not None and extra is not False:
            out.open = True
        union = node.get("oneOf") or node.get("anyOf")
        if isinstance(union, list):
            picked = self._pick(cast(list[Node], union), value)
            if picked is None:
                return None
            variant, discriminators, known = picked
            for key in discriminators:  # a sibling variant's discriminator is no stray key
                out.properties.setdefault(key, {})
                if key in value and key not in variant.consts and value[key] not in known[key]:
                    # The default variant was picked for a value no variant names.
                    names = ", ".join(repr(c) for c in known[key])
                    out.strays.append(
                        f"{key} {value[key]!r} is no variant of {out.name or 'the union'} "
                        f"(known: {names}, or no {key})"
                    )
            tag = next((str(value[k]) for k in variant.consts if k in value), None)
            if tag is not None and out.variant is None:
                out.variant = tag
            found = self._merge(variant.node, value, out, depth + 1)
            if found is None:
                return None
            declared |= found
        return declared

    def _signature(self, node: Node, depth: int = 0) -> tuple[dict[str, Any], set[str], bool]:
        """(discriminator consts, required keys, may be an object) of a variant."""
        consts: dict[str, Any] = {}
        required: set[str] = set(cast(list[str], node.get("required", [])))
        kind: Any = node.get("type")
        kinds: set[str] = (
            set(cast(list[str], kind)) if isinstance(kind, list) else {str(kind)} if kind else set()
        )
        objectish = "object" in kinds or "properties" in node
        for key, prop in cast(dict[str, Any], node.get("properties", {})).items():
            if isinstance(prop, dict) and "const" in prop:
                consts[key] = cast(Node, prop)["const"]
        parts: list[Node] = list(cast(list[Node], node.get("allOf", [])))
        target = self._target(node)
        if target is not None:
            parts.append(target[1])
        for part in cast(list[Node], node.get("oneOf") or node.get("anyOf") or []):
            if depth < 8 and self._signature(part, depth + 1)[2]:
                objectish = True
        for part in parts:
            if depth >= 8:
                break
            inner_consts, inner_required, inner_object = self._signature(part, depth + 1)
            consts.update(inner_consts)
            required |= inner_required
            objectish |= inner_object
        if not kinds and not objectish and "$ref" not in node and "allOf" not in node:
            objectish = "enum" not in node and "const" not in node
        return consts, required, objectish

    def _pick(
        self, union: list[Node], value: dict[str, Any]
    ) -> tuple[_Variant, frozenset[str], dict[str, list[Any]]] | None:
        """The variant ``value`` selects, the union's discriminator keys, and the values
        each key takes in the variants."""
        cached = self._variants.get(id(union))
        if cached is None:
            variants: list[_Variant] = []
            for node in union:
                consts, required, objectish = self._signature(node)
                variants.append(_Variant(node, consts, frozenset(required), objectish))
            keys = frozenset(k for v in variants for k in v.consts)
            # A variant without the key's const is the default one; its title is its tag.
            known = {
                k: [v.consts[k] if k in v.consts else v.node.get("title") for v in variants]
                for k in sorted(keys)
            }
            known = {k: [tag for tag in tags if tag is not None] for k, tags in known.items()}
            cached = (variants, keys, known)
            self._variants[id(union)] = cached
        variants, keys, known = cached
        best: list[_Variant] = []
        best_score = -1
        for variant in variants:
            if not variant.objectish:
                continue
            if any(k in value and value[k] != c for k, c in variant.consts.items()):
                continue
            if any(k not in value for k in variant.consts if k in variant.required):
                continue
            score = sum(1 for k in variant.consts if k in value)
            if score > best_score:
                best, best_score = [variant], score
            elif score == best_score:
                best.append(variant)
        if len(best) != 1:
            return None
        return best[0], keys, known

    def items(self, node: Node, depth: int = 0) -> Node | None:
        """The node describing the items of an array ``node`` describes (``None``: unknown)."""
        if depth > 16:
            return None
        items = node.get("items")
        if isinstance(items, dict):
            return cast(Node, items)
        target = self._target(node)
        if target is not None:
            return self.items(target[1], depth + 1)
        for part in cast(list[Node], node.get("allOf", [])):
            found = self.items(part, depth + 1)
            if found is not None:
                return found
        arrays = [
            found
            for part in cast(list[Node], node.get("oneOf") or node.get("anyOf") or [])
            if (found := self.items(part, depth + 1)) is not None
        ]
        return arrays[0] if len(arrays) == 1 else None


class AgentMessageValidator:
    """Validates agent-authored messages (one instance per process is enough: it caches)."""

    def __init__(
        self, schema: dict[str, Any] | None = None, unstable: dict[str, Any] | None = None
    ) -> None:
        self._schema = schema if schema is not None else load_schema()
        if unstable is None and schema is None:
            unstable = load_schema(UNSTABLE)
        defs: dict[str, Any] = self._schema["$defs"]
        self._defs = defs
        self._stable = _Walker(self._schema)
        self._unstable = _Walker(unstable) if unstable is not None else None
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
            validator = _validator_class()(definition_root(self._schema, name))
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
        if not errors:
            unstable = self._unstable.ref(name) if self._unstable is not None else None
            self._walk(value, self._stable.ref(name), unstable, where, "", findings, 0)

    # -- fields outside the schema ----------------------------------------------------------

    def _walk(
        self,
        value: Any,
        node: Node,
        unstable: Node | None,
        where: str,
        path: str,
        out: Findings,
        depth: int,
    ) -> None:
        if depth > _MAX_DEPTH:
            return
        if isinstance(value, dict):
            value = cast(dict[str, Any], value)
            shape = self._stable.shape(node, value)
            if shape is None:
                return
            other: _Shape | None = None
            if unstable is not None and self._unstable is not None:
                other = self._unstable.shape(unstable, value)
            for stray in shape.strays:
                if other is not None and stray not in other.strays:  # a draft variant
                    out.unstable_fields.append(f"{where}{path}: a variant of the unstable schema")
                else:
                    out.unknown_fields.append(f"{where}{path}: {stray}")
            if not shape.open:
                extra = [k for k in value if k not in shape.properties and k != "_meta"]
                if extra:
                    self._sort_extra(value, extra, shape, unstable, f"{where}{path}", out)
            for key, item in value.items():
                child = shape.properties.get(key)
                if key == "_meta" or child is None or not child:
                    continue
                if not isinstance(item, dict | list):
                    continue
                twin = other.properties.get(key) if other is not None else None
                self._walk(item, child, twin, where, f"{path}/{key}", out, depth + 1)
        elif isinstance(value, list):
            items = self._stable.items(node)
            if items is None:
                return
            twin_items = (
                self._unstable.items(unstable)
                if unstable is not None and self._unstable is not None
                else None
            )
            for index, item in enumerate(cast(list[Any], value)):
                if isinstance(item, dict | list):
                    self._walk(item, items, twin_items, where, f"{path}/{index}", out, depth + 1)

    def _sort_extra(
        self,
        value: dict[str, Any],
        extra: list[str],
        shape: _Shape,
        unstable: Node | None,
        where: str,
        out: Findings,
    ) -> None:
        draft: set[str] = set(RETIRED_UNSTABLE.get(shape.name or "", frozenset()))
        if unstable is not None and self._unstable is not None:
            other = self._unstable.shape(unstable, value)
            if other is not None:
                draft |= set(other.properties)
        unknown = sorted(k for k in extra if k not in draft)
        known_draft = sorted(k for k in extra if k in draft)
        if unknown:
            out.unknown_fields.append(f"{where}: fields not in {shape.label}: {', '.join(unknown)}")
        if known_draft:
            out.unstable_fields.append(
                f"{where}: fields of the unstable schema ({shape.label}): {', '.join(known_draft)}"
            )

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
        self._check(name, message.get("params"), f"{method} params", findings)
        return findings


@cache
def shared_validator() -> AgentMessageValidator:
    """One validator per process (building the per-definition validators is the slow part)."""
    return AgentMessageValidator()
