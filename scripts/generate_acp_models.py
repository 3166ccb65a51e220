#!/usr/bin/env python3
"""Generate the ACP v1 models from the vendored JSON schema.

Reads ``src/subagents/protocol/acp/schema/v1/`` (``schema.unstable.json``, the superset the models
are generated from; ``schema.json`` and ``meta*.json`` for what is stable) and writes

* ``src/subagents/protocol/acp/_v1_generated.py``: the models, union aliases and method table;
* the block between the ``BEGIN GENERATED EXPORTS`` / ``END GENERATED EXPORTS`` markers in
  ``src/subagents/protocol/acp/__init__.py``: the lazy export list.

Standard library only. The output is deterministic and already ruff-formatted (line length
100), so it is checked in as generated.

Usage::

    python scripts/generate_acp_models.py                  # rewrite both files
    python scripts/generate_acp_models.py --check          # exit 1 if either is out of date
    python scripts/generate_acp_models.py --output PATH    # write the module to PATH only

How schema constructs map to Python:

* an object definition becomes an ``ACPModel`` subclass; properties become snake_case fields
  with the wire name as validation and serialization alias (``_meta`` becomes ``meta``);
* ``oneOf``/``anyOf`` of constants becomes a ``Literal[...]`` alias (``| str`` when the schema
  has an open "other" branch);
* a union of objects tagged by a constant property becomes one class per variant (the payload
  class plus the tag field, named ``<Tag><Union>``) and an ``Annotated[A | B, ...]`` alias; with
  every variant tagged the alias uses ``Field(discriminator=...)``, and when a variant is the
  default for a missing tag or a catch-all for unknown tags it uses a callable discriminator;
* properties shared by all variants (``SessionConfigOption``) are added to each variant class;
* an untagged ``anyOf`` of objects inside an object (the elicitation scopes) is merged into
  optional fields;
* ``anyOf [X, null]`` and ``"type": [X, "null"]`` become ``X | None``; a property with no type
  is ``JsonValue``;
* descriptions become class, alias and field docstrings.

A variant class whose ``<Tag><Union>`` name is already a definition gets a ``Variant`` suffix
(``StringMultiSelectItemsVariant``). A method whose payloads say ``"x-side": "both"``
(``mcp/message``) keeps that side; one sent both as a request and as a notification gets the
notification's params type as ``notification_params_type``.

``x-deserialize-default-on-error`` and ``x-deserialize-skip-invalid-items`` (lenient parsing
hints) are not implemented: the models are strict.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import keyword
import re
import sys
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = ROOT / "src" / "subagents" / "protocol" / "acp"
SCHEMA_DIR = PACKAGE_DIR / "schema" / "v1"
DEFAULT_OUTPUT = PACKAGE_DIR / "_v1_generated.py"
INIT_FILE = PACKAGE_DIR / "__init__.py"
PACKAGE = "subagents.protocol.acp"
GENERATED_MODULE = f"{PACKAGE}._v1_generated"
PROTOCOL_VERSION = 1

LINE_LENGTH = 100
INDENT = "    "

INIT_BEGIN = "# BEGIN GENERATED EXPORTS (scripts/generate_acp_models.py; do not edit by hand)"
INIT_END = "# END GENERATED EXPORTS"

# Names the package __init__ re-exports from the hand-written modules (kept in __all__ too).
HANDWRITTEN_EXPORTS: dict[str, tuple[str, ...]] = {
    "_base": ("ACPModel", "JsonValue", "from_wire", "prepare", "to_wire"),
    "methods": (
        "PROTOCOL_VERSION",
        "SUPPORTED_PROTOCOL_VERSIONS",
        "MethodKind",
        "MethodSide",
        "MethodSpec",
        "UnsupportedProtocolVersionError",
        "method_table",
    ),
}

# Names the generated module binds itself; no schema definition may take them.
RESERVED_NAMES = frozenset(
    {
        "ACPModel",
        "Annotated",
        "ClassVar",
        "Discriminator",
        "Field",
        "Final",
        "JsonValue",
        "Literal",
        "Mapping",
        "MethodSpec",
        "Tag",
        "TypeAlias",
        "tag_discriminator",
        "METHODS",
        "UNSTABLE_NAMES",
        "UNSTABLE_FIELDS",
        "SCHEMA_RELEASE",
        "SCHEMA_SHA256",
    }
)


class SchemaError(Exception):
    """The schema uses a construct this generator does not handle."""


# --------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class Inputs:
    unstable: dict[str, Any]
    stable: dict[str, Any]
    meta: dict[str, Any]
    meta_unstable: dict[str, Any]
    sha256: dict[str, str]
    release: str
    commit: str
    repository: str


def load_inputs(schema_dir: Path = SCHEMA_DIR) -> Inputs:
    raw = {
        name: (schema_dir / name).read_bytes()
        for name in ("schema.unstable.json", "schema.json", "meta.json", "meta.unstable.json")
    }
    source = (schema_dir / "SOURCE.md").read_text(encoding="utf-8")

    def source_field(label: str) -> str:
        match = re.search(rf"^- {label}: (\S+)", source, re.MULTILINE)
        if match is None:
            raise SchemaError(f"SOURCE.md has no '- {label}:' line")
        return match.group(1)

    return Inputs(
        unstable=json.loads(raw["schema.unstable.json"]),
        stable=json.loads(raw["schema.json"]),
        meta=json.loads(raw["meta.json"]),
        meta_unstable=json.loads(raw["meta.unstable.json"]),
        sha256={name: hashlib.sha256(data).hexdigest() for name, data in raw.items()},
        release=source_field("Schema release"),
        commit=source_field("Commit"),
        repository=source_field("Repository"),
    )


# --------------------------------------------------------------------------------------------
# Naming


def snake(name: str) -> str:
    """camelCase wire name -> snake_case attribute name."""
    if name == "_meta":
        return "meta"
    if not re.fullmatch(r"[a-z][A-Za-z0-9]*", name):
        raise SchemaError(f"unexpected property name {name!r}")
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    if keyword.iskeyword(out) or out.startswith("model_"):
        out += "_"
    return out


def pascal(value: str) -> str:
    """A tag value (snake_case, camelCase or kebab-case) -> PascalCase."""
    parts = re.split(r"[_\-\s]+", value)
    out = "".join(p[:1].upper() + p[1:] for p in parts if p)
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", out):
        raise SchemaError(f"cannot make a class name from {value!r}")
    return out


def upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).upper()


def py_str(value: str) -> str:
    """A Python string literal in double quotes (what ruff format produces)."""
    return json.dumps(value, ensure_ascii=False)


def py_literal(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return py_str(value)
    if isinstance(value, int | float):
        return repr(value)
    if value is None:
        return "None"
    raise SchemaError(f"unsupported literal {value!r}")


def natural_key(name: str) -> tuple[object, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def ruff_all_key(name: str) -> tuple[object, ...]:
    """Sort key of ruff's RUF022 (isort-style ``__all__`` order)."""
    if name.isupper() or re.fullmatch(r"[A-Z0-9_]+", name):
        group = 0 if len(name) > 1 else 1
    elif name[:1].isupper():
        group = 1
    else:
        group = 2
    return (group, natural_key(name))


# --------------------------------------------------------------------------------------------
# A tiny formatter for the few expression shapes we emit (black/ruff style, line length 100)


@dataclass(frozen=True)
class Atom:
    text: str


@dataclass(frozen=True)
class Seq:
    """A bracketed, comma-separated sequence: a call, subscript, tuple, set or dict."""

    open: str
    items: tuple[Node, ...]
    close: str
    magic: bool = False  # emit a trailing comma, which keeps it exploded


@dataclass(frozen=True)
class Or:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class KV:
    key: str
    value: Node


Node = Atom | Seq | Or | KV


def forced(node: Node) -> bool:
    if isinstance(node, Seq):
        return node.magic or any(forced(i) for i in node.items)
    if isinstance(node, Or):
        return any(forced(i) for i in node.items)
    if isinstance(node, KV):
        return forced(node.value)
    return False


def flat(node: Node) -> str:
    if isinstance(node, Atom):
        return node.text
    if isinstance(node, Or):
        return " | ".join(flat(i) for i in node.items)
    if isinstance(node, KV):
        return f"{node.key}: {flat(node.value)}"
    return node.open + ", ".join(flat(i) for i in node.items) + node.close


def render(node: Node, indent: int, prefix: str = "", suffix: str = "") -> list[str]:
    pad = INDENT * indent
    if not forced(node):
        line = pad + prefix + flat(node) + suffix
        if len(line) <= LINE_LENGTH:
            return [line]
    if isinstance(node, KV):
        return render(node.value, indent, prefix + node.key + ": ", suffix)
    if isinstance(node, Atom):
        return [pad + prefix + node.text + suffix]
    if isinstance(node, Or):
        lines: list[str] = []
        for n, item in enumerate(node.items):
            head = prefix if n == 0 else "| "
            tail = suffix if n == len(node.items) - 1 else ""
            lines.extend(render(item, indent, head, tail))
        return lines
    head = pad + prefix + node.open
    close = pad + node.close + suffix
    if not node.magic and not any(forced(i) for i in node.items):
        body = INDENT * (indent + 1) + ", ".join(flat(i) for i in node.items)
        if len(body) <= LINE_LENGTH:
            return [head, body, close]
    lines = [head]
    if len(node.items) == 1 and not node.magic:
        lines.extend(render(node.items[0], indent + 1))
    else:
        for item in node.items:
            lines.extend(render(item, indent + 1, "", ","))
    lines.append(close)
    return lines


def call(name: str, *args: Node | str, magic: bool = False) -> Seq:
    return Seq(f"{name}(", tuple(Atom(a) if isinstance(a, str) else a for a in args), ")", magic)


def subscript(name: str, *args: Node | str) -> Seq:
    return Seq(f"{name}[", tuple(Atom(a) if isinstance(a, str) else a for a in args), "]")


def docstring(text: str, indent: int) -> list[str]:
    """A docstring as ruff format writes it (content dedented, quotes on their own line)."""
    text = text.replace("\r\n", "\n").replace("\t", "    ").strip()
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = [line.rstrip() for line in text.split("\n")]
    rest = [line for line in lines[1:] if line.strip()]
    if rest:
        common = min(len(line) - len(line.lstrip(" ")) for line in rest)
        lines = [lines[0]] + [line[common:] for line in lines[1:]]
    pad = INDENT * indent
    if len(lines) == 1:
        body = lines[0]
        if body.endswith('"'):
            body += " "
        return [f'{pad}"""{body}"""']
    out = [f'{pad}"""{lines[0]}']
    out.extend(pad + line if line else "" for line in lines[1:])
    out.append(f'{pad}"""')
    return out


# --------------------------------------------------------------------------------------------
# Intermediate representation


@dataclass
class FieldIR:
    py: str
    wire: str
    annotation: str
    deps: list[str]
    required: bool
    default: str | None = None  # Python expression; None means "no plain default"
    default_factory: str | None = None
    constraints: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    doc: str | None = None

    def statement(self) -> Node | None:
        """The right-hand side of the field statement, or None for a bare annotation."""
        plain_default = self.default if self.default is not None else "None"
        if self.default_factory is None and not self.constraints and self.py == self.wire:
            return None if self.required else Atom(plain_default)
        args: list[Node] = []
        if self.default_factory is not None:
            args.append(Atom(f"default_factory={self.default_factory}"))
        elif not self.required:
            args.append(Atom(f"default={plain_default}"))  # pyright ignores a positional default
        args.extend(Atom(f"{k}={v}") for k, v in self.constraints)
        if self.py != self.wire:
            args.append(Atom(f"validation_alias={py_str(self.wire)}"))
            args.append(Atom(f"serialization_alias={py_str(self.wire)}"))
        return call("Field", *args)


@dataclass
class ClassIR:
    name: str
    base: str
    doc: str
    fields: list[FieldIR]
    stable: bool
    tags: tuple[str, ...] = ()
    unstable_fields: tuple[str, ...] = ()

    def deps(self) -> list[str]:
        out = [self.base]
        for f in self.fields:
            out.extend(f.deps)
            if f.default_factory and f.default_factory[:1].isupper():
                out.append(f.default_factory)
        return out


@dataclass
class AliasIR:
    name: str
    value: Node
    doc: str
    stable: bool
    deps: list[str]
    discriminator: tuple[str, Node] | None = None  # (constant name, value) emitted first


Item = ClassIR | AliasIR


@dataclass
class MethodIR:
    name: str
    side: str
    kind: str
    params: str
    result: str | None
    stable: bool
    notification_params: str | None = None


# --------------------------------------------------------------------------------------------
# Schema -> IR


NULL = {"type": "null"}
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
IGNORED_KEYS = frozenset(
    {
        "description",
        "title",
        "x-deserialize-default-on-error",
        "x-deserialize-skip-invalid-items",
        "x-method",
        "x-side",
        "format",
    }
)


def ref_name(ref: str) -> str:
    prefix = "#/$defs/"
    if not ref.startswith(prefix):
        raise SchemaError(f"unsupported $ref {ref!r}")
    return ref[len(prefix) :]


def single_ref(schema: dict[str, Any]) -> str | None:
    """The target of ``{"$ref": X}`` or ``{"allOf": [{"$ref": X}]}``, else None."""
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and set(all_of[0]) == {"$ref"}:
        return ref_name(all_of[0]["$ref"])
    return None


@dataclass
class Alt:
    """One alternative of a union of objects."""

    schema: dict[str, Any]
    kind: str  # "tagged", "default" or "other"
    tag: str | None
    tag_prop: str | None
    ref: str | None
    title: str | None
    props: dict[str, Any]
    required: list[str]
    nested: list[dict[str, Any]]
    tag_doc: str | None = None


class Generator:
    def __init__(self, inputs: Inputs) -> None:
        self.inputs = inputs
        self.defs: dict[str, Any] = inputs.unstable["$defs"]
        self.stable_defs: dict[str, Any] = inputs.stable["$defs"]
        self.items: dict[str, Item] = {}
        self.natural: list[str] = []
        self.def_items: dict[str, str] = {}  # schema def name -> Python name of its type
        self.uses_tag = False
        self.uses_literal = False
        self.uses_annotated = False

    # ---- entry point

    def build(self) -> None:
        for name in self.defs:
            if name in RESERVED_NAMES:
                raise SchemaError(f"definition {name!r} clashes with a generated name")
        for name, schema in self.defs.items():
            if schema.get("x-docs-ignore"):
                continue  # JSON-RPC envelopes; the jsonrpc layer owns those
            if name not in self.def_items:  # a variant base may have been converted already
                self.convert_def(name, schema)

    def add(self, item: Item) -> None:
        if item.name in self.items or item.name in RESERVED_NAMES:
            raise SchemaError(f"generated name {item.name!r} is not unique")
        self.items[item.name] = item
        self.natural.append(item.name)

    # ---- stability helpers

    def is_stable_def(self, name: str) -> bool:
        return name in self.stable_defs

    def unstable_props(self, name: str) -> set[str]:
        if name not in self.stable_defs:
            return set()
        stable_props = set(self.stable_defs[name].get("properties", {}))
        return set(self.defs[name].get("properties", {})) - stable_props

    def stable_alt_keys(self, name: str) -> set[str] | None:
        if name not in self.stable_defs:
            return None
        schema = self.stable_defs[name]
        alts = schema.get("oneOf") or schema.get("anyOf") or []
        return {self.alt_key(a) for a in alts}

    @staticmethod
    def alt_key(alt: dict[str, Any]) -> str:
        for prop, sub in alt.get("properties", {}).items():
            if "const" in sub:
                return f"{prop}={sub['const']}"
        return f"title={alt.get('title')}"

    # ---- definitions

    def convert_def(self, name: str, schema: dict[str, Any]) -> None:
        doc = schema.get("description", "")
        stable = self.is_stable_def(name)
        union_key = "oneOf" if "oneOf" in schema else "anyOf" if "anyOf" in schema else None
        if union_key is not None:
            alts: list[dict[str, Any]] = schema[union_key]
            if all(self.is_const_alt(a) for a in alts):
                self.convert_literal(name, alts, doc, stable)
                return
            parsed = [self.parse_alt(a) for a in alts]
            if any(a.kind != "default" for a in parsed):
                self.convert_tagged_union(name, schema, parsed, doc, stable)
            elif "properties" in schema:  # an object with untagged alternatives: merge them
                self.convert_class(name, schema, doc, stable)
            else:
                self.convert_plain_union(name, alts, doc, stable)
        elif schema.get("type") == "object" or "properties" in schema:
            self.convert_class(name, schema, doc, stable)
        elif schema.get("type") in SCALARS:
            kwargs = self.constraints(schema)
            base = SCALARS[schema["type"]]
            if kwargs:
                value: Node = subscript(
                    "Annotated", base, call("Field", *(f"{k}={v}" for k, v in kwargs))
                )
                self.uses_annotated = True
            else:
                value = Atom(base)
            self.alias(name, value, doc, stable, [])
        elif not (set(schema) - IGNORED_KEYS):
            self.alias(name, Atom("JsonValue"), doc, stable, [])
        else:
            raise SchemaError(f"cannot convert definition {name!r}")

    def alias(self, name: str, value: Node, doc: str, stable: bool, deps: list[str]) -> None:
        self.def_items.setdefault(name, name)
        self.add(AliasIR(name, value, doc, stable, deps))

    @staticmethod
    def is_const_alt(alt: dict[str, Any]) -> bool:
        if "const" in alt:
            return True
        # an open enum's catch-all: {"title": "other", "type": "string"} ("Other" in ErrorCode)
        return (
            str(alt.get("title", "")).lower() == "other"
            and alt.get("type") in ("string", "integer")
            and (not set(alt) - {"title", "type", "description", "format"})
        )

    def convert_literal(
        self, name: str, alts: list[dict[str, Any]], doc: str, stable: bool
    ) -> None:
        values = [py_literal(a["const"]) for a in alts if "const" in a]
        open_types = [SCALARS[a["type"]] for a in alts if "const" not in a]
        literal = subscript("Literal", *values)
        self.uses_literal = True
        value: Node = Or((literal, *map(Atom, open_types))) if open_types else literal
        self.alias(name, value, doc, stable, [])

    def convert_plain_union(
        self, name: str, alts: list[dict[str, Any]], doc: str, stable: bool
    ) -> None:
        members: list[str] = []
        deps: list[str] = []
        has_null = False
        for alt in alts:
            if alt.get("type") == "null":
                has_null = True
                continue
            annotation, alt_deps, nullable = self.type_of(alt)
            has_null = has_null or nullable
            members.append(annotation)
            deps.extend(alt_deps)
        if has_null:
            members.append("None")
        value: Node = Or(tuple(map(Atom, members))) if len(members) > 1 else Atom(members[0])
        self.alias(name, value, doc, stable, deps)

    # ---- unions of objects

    def parse_alt(self, alt: dict[str, Any]) -> Alt:
        props = dict(alt.get("properties", {}))
        required = list(alt.get("required", []))
        tag_prop = None
        tag = None
        kind = "default"
        for prop, sub in props.items():
            if "const" in sub and isinstance(sub["const"], str) and prop in required:
                if tag_prop is not None:
                    raise SchemaError(f"variant with two tags: {alt}")
                tag_prop, tag, kind = prop, sub["const"], "tagged"
        if tag_prop is None and alt.get("title") == "other" and "not" in alt:
            open_props = [
                p
                for p, sub in props.items()
                if {k: v for k, v in sub.items() if k != "description"} == {"type": "string"}
            ]
            if len(open_props) != 1:
                raise SchemaError(f"cannot find the open tag of {alt}")
            tag_prop, kind = open_props[0], "other"
        tag_doc = None
        if tag_prop is not None:
            tag_doc = props.pop(tag_prop).get("description")
            required.remove(tag_prop)
        ref = None
        all_of = alt.get("allOf", [])
        if all_of:
            if len(all_of) != 1 or set(all_of[0]) != {"$ref"}:
                raise SchemaError(f"unsupported allOf in {alt}")
            ref = ref_name(all_of[0]["$ref"])
        nested: list[dict[str, Any]] = alt.get("anyOf", [])
        return Alt(
            alt, kind, tag, tag_prop, ref, alt.get("title"), props, required, nested, tag_doc
        )

    def convert_tagged_union(
        self, name: str, schema: dict[str, Any], alts: list[Alt], doc: str, stable: bool
    ) -> None:
        tag_props = {a.tag_prop for a in alts if a.tag_prop is not None}
        if len(tag_props) != 1:
            raise SchemaError(f"{name}: variants are not tagged by one property: {tag_props}")
        (tag_wire,) = tag_props
        tag_py = snake(tag_wire)
        common = schema.get("properties", {})
        common_required = schema.get("required", [])
        stable_keys = self.stable_alt_keys(name)

        variants: list[tuple[str, str]] = []  # (class name, pydantic Tag)
        default_tag: str | None = None
        other_tag: str | None = None
        for alt in alts:
            variant_stable = stable and stable_keys is not None
            variant_stable = variant_stable and self.alt_key(alt.schema) in (stable_keys or ())
            if alt.kind == "tagged":
                assert alt.tag is not None
                label = alt.tag
            else:
                if not alt.title:
                    raise SchemaError(f"{name}: untagged variant without a title")
                label = alt.title
                if alt.kind == "other":
                    other_tag = label
                else:
                    if default_tag is not None:
                        raise SchemaError(f"{name}: two default variants")
                    default_tag = label
            reuse = (
                alt.kind == "default"
                and alt.ref is not None
                and not alt.props
                and not alt.nested
                and not common
            )
            if reuse:
                assert alt.ref is not None
                variants.append((alt.ref, label))
                continue
            cls_name = pascal(label) + name
            if cls_name in self.defs:  # e.g. MultiSelectItems' "string" variant
                cls_name += "Variant"
            base = alt.ref or "ACPModel"
            base_fields = self.inherited_fields(base)
            fields: list[FieldIR] = []
            tags: tuple[str, ...] = ()
            if alt.kind == "tagged":
                assert alt.tag is not None
                literal = f"Literal[{py_str(alt.tag)}]"
                self.uses_literal = True
                fields.append(
                    FieldIR(
                        tag_py,
                        tag_wire,
                        literal,
                        [],
                        required=False,
                        default=py_str(alt.tag),
                        doc=f"The variant tag, always ``{py_str(alt.tag)}``.",
                    )
                )
                tags = (tag_py,)
            elif alt.kind == "other":
                doc = alt.tag_doc or "The variant tag: any value other than the known ones."
                fields.append(FieldIR(tag_py, tag_wire, "str", [], True, doc=doc))
            # a default variant (chosen when the tag is absent) has no tag field of its own
            unstable_common = self.unstable_props(name)
            for wire, sub in common.items():
                fields.append(self.make_field(wire, sub, wire in common_required, unstable_common))
            for wire, sub in alt.props.items():
                fields.append(self.make_field(wire, sub, wire in alt.required, set()))
            fields.extend(self.merged_fields(alt.nested))
            fields = self.drop_inherited(cls_name, fields, base_fields)
            variant_doc = alt.schema.get("description") or (
                self.defs[alt.ref].get("description", "") if alt.ref else ""
            )
            if alt.nested:
                variant_doc = self.scope_note(variant_doc, alt.nested)
            cls = ClassIR(cls_name, base, variant_doc, fields, variant_stable, tags)
            self.check_class(cls)
            self.add(cls)
            variants.append((cls_name, label))

        deps = [v for v, _ in variants]
        self.uses_annotated = True
        if default_tag is None and other_tag is None:
            union = Or(tuple(Atom(v) for v, _ in variants))
            value: Node = subscript("Annotated", union, f"Field(discriminator={py_str(tag_py)})")
            self.def_items.setdefault(name, name)
            self.add(AliasIR(name, value, doc, stable, deps))
            return
        self.uses_tag = True
        known = tuple(label for _, label in variants if label not in (default_tag, other_tag))
        const_name = f"_{upper_snake(name)}_TAG"
        args: list[Node | str] = [
            py_str(tag_wire),
            py_str(tag_py),
            Seq("(", tuple(Atom(py_str(t)) for t in known), ",)" if len(known) == 1 else ")"),
        ]
        if default_tag is not None:
            args.append(f"missing={py_str(default_tag)}")
        unknown = other_tag or default_tag
        if unknown is not None:
            args.append(f"unknown={py_str(unknown)}")
        discriminator = call("tag_discriminator", *args)
        union = Or(tuple(subscript("Annotated", v, f"Tag({py_str(t)})") for v, t in variants))
        value = subscript("Annotated", union, const_name)
        self.def_items.setdefault(name, name)
        self.add(AliasIR(name, value, doc, stable, deps, (const_name, discriminator)))

    def inherited_fields(self, base: str) -> dict[str, FieldIR]:
        out: dict[str, FieldIR] = {}
        while base != "ACPModel":
            item = self.items.get(base)
            if item is None and base in self.defs:
                self.convert_def(base, self.defs[base])
                item = self.items.get(base)
            if not isinstance(item, ClassIR):
                raise SchemaError(f"variant base {base!r} is not a model class")
            for f in item.fields:
                out.setdefault(f.py, f)
            base = item.base
        return out

    @staticmethod
    def drop_inherited(
        cls_name: str, fields: list[FieldIR], inherited: dict[str, FieldIR]
    ) -> list[FieldIR]:
        out: list[FieldIR] = []
        for f in fields:
            parent = inherited.get(f.py)
            if parent is None:
                out.append(f)
            elif (parent.annotation, parent.wire, parent.required) != (
                f.annotation,
                f.wire,
                f.required,
            ):
                raise SchemaError(f"{cls_name}.{f.py} conflicts with the inherited field")
        return out

    def merged_fields(self, nested: list[dict[str, Any]]) -> list[FieldIR]:
        """Untagged ``anyOf`` alternatives inside an object, merged into optional fields."""
        out: dict[str, FieldIR] = {}
        for alt in nested:
            ref = single_ref(alt)
            if ref is None:
                raise SchemaError(f"unsupported nested anyOf alternative {alt}")
            target = self.defs[ref]
            if "oneOf" in target or "anyOf" in target:
                raise SchemaError(f"nested anyOf alternative {ref} is itself a union")
            for wire, sub in target.get("properties", {}).items():
                f = self.make_field(wire, sub, False, set())
                if f.py in out and out[f.py].annotation != f.annotation:
                    raise SchemaError(f"merged field {wire} has two types")
                out.setdefault(f.py, f)
        return list(out.values())

    def scope_note(self, doc: str, nested: list[dict[str, Any]]) -> str:
        parts: list[str] = []
        for alt in nested:
            ref = single_ref(alt)
            assert ref is not None
            required = self.defs[ref].get("required", [])
            names = ", ".join(f"``{r}``" for r in required) or "no fields"
            parts.append(f"{alt.get('title', ref)} ({names})")
        note = textwrap.fill(
            "The schema requires one of these field groups: "
            + "; ".join(parts)
            + ". The model accepts any combination of them.",
            width=92,
        )
        return f"{doc}\n\n{note}" if doc else note

    # ---- objects

    def convert_class(self, name: str, schema: dict[str, Any], doc: str, stable: bool) -> None:
        if name in self.items:
            return
        allowed = {"type", "properties", "required", "anyOf", "additionalProperties"}
        extra = set(schema) - IGNORED_KEYS - allowed
        if extra:
            raise SchemaError(f"{name}: unsupported keys {sorted(extra)}")
        required = schema.get("required", [])
        unstable = self.unstable_props(name)
        fields = [
            self.make_field(wire, sub, wire in required, unstable)
            for wire, sub in schema.get("properties", {}).items()
        ]
        nested: list[dict[str, Any]] = schema.get("anyOf", [])
        if nested:
            fields.extend(self.merged_fields(nested))
            doc = self.scope_note(doc, nested)
        unstable_wire = tuple(f.wire for f in fields if f.wire in unstable)
        cls = ClassIR(name, "ACPModel", doc, fields, stable, (), unstable_wire)
        self.check_class(cls)
        self.def_items.setdefault(name, name)
        self.add(cls)

    def check_class(self, cls: ClassIR) -> None:
        seen: set[str] = set()
        for n, f in enumerate(cls.fields):
            if f.py in seen:
                raise SchemaError(f"{cls.name}: two fields named {f.py!r}")
            seen.add(f.py)
            # a field named like a type would shadow it for the annotations that follow
            later = " ".join(g.annotation for g in cls.fields[n + 1 :])
            if re.search(rf"\b{re.escape(f.py)}\b", later):
                raise SchemaError(f"{cls.name}.{f.py} shadows a name used in a later annotation")

    def make_field(
        self, wire: str, schema: dict[str, Any], required: bool, unstable: set[str]
    ) -> FieldIR:
        py = snake(wire)
        annotation, deps, nullable = self.type_of(schema)
        doc = schema.get("description")
        if wire in unstable:
            note = "Unstable: not in the stable schema (``schema.json``)."
            doc = f"{doc}\n\n{note}" if doc else note
        f = FieldIR(py, wire, annotation, deps, required, doc=doc)
        f.constraints = self.constraints(schema)
        if "default" in schema:
            self.apply_default(f, schema)
        elif not required and not nullable:
            f.annotation = f"{annotation} | None"
        return f

    def apply_default(self, f: FieldIR, schema: dict[str, Any]) -> None:
        default = schema["default"]
        f.required = False
        if isinstance(default, bool | int | float | str):
            f.default = py_literal(default)
        elif default == [] and f.annotation.startswith("list["):
            f.default_factory = f.annotation  # list[X], so type checkers know the item type
        elif isinstance(default, dict):
            ref = single_ref(schema)
            if ref is None:
                if default or not f.annotation.startswith("dict["):
                    raise SchemaError(f"unsupported default for {f.wire}: {default!r}")
                f.default_factory = f.annotation
            else:
                implied = self.implied_default(ref)
                if implied != default:
                    raise SchemaError(
                        f"default of {f.wire} ({default!r}) differs from {ref}() ({implied!r})"
                    )
                f.default_factory = ref
        else:
            raise SchemaError(f"unsupported default for {f.wire}: {default!r}")

    def implied_default(self, name: str) -> dict[str, Any]:
        """What ``name()`` dumps to, with every schema default filled in."""
        out: dict[str, Any] = {}
        for wire, sub in self.defs[name].get("properties", {}).items():
            if "default" not in sub:
                continue
            ref = single_ref(sub)
            if isinstance(sub["default"], dict) and ref is not None:
                out[wire] = self.implied_default(ref)
            else:
                out[wire] = sub["default"]
        return out

    @staticmethod
    def constraints(schema: dict[str, Any]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for key, kw in (("minimum", "ge"), ("maximum", "le"), ("minLength", "min_length")):
            if key in schema:
                out.append((kw, py_literal(schema[key])))
        return out

    def type_of(self, schema: dict[str, Any]) -> tuple[str, list[str], bool]:
        """(annotation, referenced definitions, whether it admits null)."""
        ref = single_ref(schema)
        if ref is not None:
            target = self.def_items.get(ref, ref)
            return target, [ref], self.admits_null(ref)
        if "anyOf" in schema:
            alts = [a for a in schema["anyOf"] if a != NULL]
            if len(alts) != 1:
                raise SchemaError(f"unsupported inline union {schema}")
            annotation, deps, nullable = self.type_of(alts[0])
            if len(alts) < len(schema["anyOf"]) and not nullable:
                annotation += " | None"
            return annotation, deps, True
        if "const" in schema:
            self.uses_literal = True
            return f"Literal[{py_literal(schema['const'])}]", [], schema["const"] is None
        if "allOf" in schema or "oneOf" in schema or "properties" in schema:
            raise SchemaError(f"unsupported inline schema {schema}")
        types = schema.get("type")
        if types is None:
            return "JsonValue", [], True
        if isinstance(types, str):
            types = [types]
        nullable = "null" in types
        non_null = [t for t in types if t != "null"]
        if len(non_null) != 1:
            raise SchemaError(f"unsupported type list {types}")
        kind = non_null[0]
        deps: list[str] = []
        if kind in SCALARS:
            annotation = SCALARS[kind]
        elif kind == "array":
            items = schema.get("items")
            if items is None:
                annotation = "list[JsonValue]"
            else:
                inner, deps, _ = self.type_of(items)
                annotation = f"list[{inner}]"
        elif kind == "object":
            extra = schema.get("additionalProperties", True)
            if extra is True:
                annotation = "dict[str, JsonValue]"
            elif isinstance(extra, dict):
                inner, deps, _ = self.type_of(extra)
                annotation = f"dict[str, {inner}]"
            else:
                raise SchemaError(f"unsupported object schema {schema}")
        else:
            raise SchemaError(f"unsupported type {kind!r}")
        if nullable:
            annotation += " | None"
        return annotation, deps, nullable

    def admits_null(self, name: str) -> bool:
        schema = self.defs[name]
        alts = schema.get("anyOf") or schema.get("oneOf") or []
        if any(a.get("type") == "null" for a in alts):
            return True
        return not (set(schema) - IGNORED_KEYS)  # an untyped definition is any JSON value

    # ---- methods

    def methods(self) -> list[MethodIR]:
        roles: dict[str, dict[str, set[str]]] = {}

        def collect(envelope: dict[str, Any], prop: str, role: str) -> None:
            sub = envelope.get("properties", {}).get(prop)
            if sub is None:
                return
            for outer in sub.get("anyOf", []):
                for alt in outer.get("anyOf", [outer]):
                    ref = single_ref(alt)
                    if ref is None or "x-method" not in self.defs[ref]:
                        continue
                    method = self.defs[ref]["x-method"]
                    roles.setdefault(method, {}).setdefault(role, set()).add(ref)

        for env in ("ClientRequest", "AgentRequest"):
            collect(self.defs[env], "params", "request")
        for env in ("ClientNotification", "AgentNotification"):
            collect(self.defs[env], "params", "notification")
        for env in ("ClientResponse", "AgentResponse"):
            for branch in self.defs[env].get("anyOf", []):
                collect(branch, "result", "result")
        for branch in self.inputs.unstable.get("anyOf", []):
            collect(branch, "params", "notification")

        declared = {s["x-method"] for s in self.defs.values() if "x-method" in s}
        if declared != set(roles):
            raise SchemaError(f"x-method defs not in any envelope: {declared - set(roles)}")

        stable_methods = self.meta_methods(self.inputs.meta)
        unstable_methods = self.meta_methods(self.inputs.meta_unstable)
        if set(unstable_methods) != set(roles):
            raise SchemaError("meta.unstable.json and the schema list different methods")

        out: list[MethodIR] = []
        for method in sorted(roles):
            role = roles[method]
            members = [n for names in role.values() for n in names]
            sides = {self.defs[n]["x-side"] for n in members}
            if len(sides) != 1:
                raise SchemaError(f"{method}: inconsistent x-side {sides}")
            (side,) = sides
            expected = unstable_methods[method]
            if (side == "both" and expected != {"agent", "client"}) or (
                side != "both" and expected != {side}
            ):
                raise SchemaError(f"{method}: x-side {side} but meta lists {expected}")
            for r, names in role.items():
                if len(names) != 1:
                    raise SchemaError(f"{method}: several {r} types {names}")
            request = next(iter(role.get("request", ())), None)
            notification = next(iter(role.get("notification", ())), None)
            result = next(iter(role.get("result", ())), None)
            if request is not None:
                if result is None:
                    raise SchemaError(f"{method}: request without a result type")
                kind, params = "request", request
            elif notification is not None:
                if result is not None:
                    raise SchemaError(f"{method}: notification with a result type")
                kind, params, notification = "notification", notification, None
            else:
                raise SchemaError(f"{method}: no params type")
            stable = method in stable_methods
            if stable != all(self.is_stable_def(n) for n in members):
                raise SchemaError(f"{method}: meta.json and schema.json disagree on stability")
            if stable and stable_methods[method] != expected:
                raise SchemaError(f"{method}: side differs between meta files")
            out.append(
                MethodIR(
                    method,
                    side,
                    kind,
                    self.def_items[params],
                    self.def_items[result] if result else None,
                    stable,
                    self.def_items[notification] if notification else None,
                )
            )
        return out

    @staticmethod
    def meta_methods(meta: dict[str, Any]) -> dict[str, set[str]]:
        if meta.get("version") != PROTOCOL_VERSION:
            raise SchemaError(f"meta file is for version {meta.get('version')}")
        out: dict[str, set[str]] = {}
        for key, side in (
            ("agentMethods", "agent"),
            ("clientMethods", "client"),
            ("protocolMethods", "protocol"),
        ):
            for method in meta.get(key, {}).values():
                out.setdefault(method, set()).add(side)
        return out

    # ---- ordering

    def ordered(self) -> list[Item]:
        done: set[str] = set()
        out: list[Item] = []

        def visit(name: str, stack: tuple[str, ...]) -> None:
            if name in done or name in ("ACPModel", "JsonValue"):
                return
            if name in stack:
                raise SchemaError(f"dependency cycle: {' -> '.join((*stack, name))}")
            item = self.items[self.def_items.get(name, name)]
            deps = item.deps() if isinstance(item, ClassIR) else item.deps
            for dep in deps:
                visit(dep, (*stack, name))
            if item.name not in done:
                done.add(item.name)
                out.append(item)

        for name in self.natural:
            visit(name, ())
        return out


# --------------------------------------------------------------------------------------------
# Emission


def emit_class(cls: ClassIR) -> list[str]:
    lines = [f"class {cls.name}({cls.base}):"]
    doc = cls.doc or f"The ``{cls.name}`` object."
    if not cls.stable:
        doc += "\n\nOnly in the unstable schema (``schema.unstable.json``)."
    lines.extend(docstring(doc, 1))
    if cls.tags:
        lines.append("")
        lines.append(f"{INDENT}_acp_tags = ({', '.join(py_str(t) for t in cls.tags)},)")
    if cls.fields:
        lines.append("")
    for f in cls.fields:
        rhs = f.statement()
        head = f"{f.py}: {f.annotation}"
        if len(INDENT + head + " = Field(") > LINE_LENGTH:
            raise SchemaError(f"{cls.name}.{f.py}: annotation too long to format")
        if rhs is None:
            lines.append(INDENT + head)
        else:
            lines.extend(render(rhs, 1, head + " = "))
        if f.doc:
            lines.extend(docstring(f.doc, 1))
    return lines


def emit_alias(alias: AliasIR) -> list[str]:
    lines: list[str] = []
    if alias.discriminator is not None:
        const, value = alias.discriminator
        lines.extend(render(value, 0, f"{const} = "))
    value = alias.value
    head = f"{alias.name}: TypeAlias = "
    if isinstance(value, Or) and len(head + flat(value)) > LINE_LENGTH:
        value = Seq("(", (value,), ")")  # ruff parenthesizes a long union on the right
    lines.extend(render(value, 0, head))
    doc = alias.doc or f"The ``{alias.name}`` type."
    if not alias.stable:
        doc += "\n\nOnly in the unstable schema (``schema.unstable.json``)."
    lines.extend(docstring(doc, 0))
    return lines


def emit_methods(methods: list[MethodIR]) -> list[str]:
    entries: list[Node] = []
    for m in methods:
        args: list[Node | str] = [
            f"name={py_str(m.name)}",
            f"side={py_str(m.side)}",
            f"kind={py_str(m.kind)}",
            f"params_type={m.params}",
            f"result_type={m.result}",
            f"stable={m.stable}",
        ]
        if m.notification_params is not None:
            args.append(f"notification_params_type={m.notification_params}")
        entries.append(call("MethodSpec", *args))
    table = Seq("(", tuple(entries), ")", magic=True)
    lines = render(table, 0, "METHODS: Final[tuple[MethodSpec, ...]] = ")
    lines.extend(
        docstring(
            "Every v1 method (stable and unstable), sorted by name; "
            "see :func:`subagents.protocol.acp.methods.method_table`.",
            0,
        )
    )
    return lines


def string_set(names: Iterable[str]) -> Node:
    items = tuple(Atom(py_str(n)) for n in sorted(names))
    if not items:
        return Atom("frozenset()")
    return call("frozenset", Seq("{", items, "}"))


def generate(inputs: Inputs) -> tuple[str, list[str]]:
    """(module source, exported names)."""
    gen = Generator(inputs)
    gen.build()
    methods = gen.methods()
    items = gen.ordered()
    if len(items) != len(gen.items):
        raise SchemaError("ordering lost items")

    unstable_names = sorted(i.name for i in items if not i.stable)
    unstable_fields = {
        i.name: i.unstable_fields for i in items if isinstance(i, ClassIR) and i.unstable_fields
    }
    exports = sorted(
        [i.name for i in items]
        + ["METHODS", "SCHEMA_RELEASE", "SCHEMA_SHA256", "UNSTABLE_FIELDS", "UNSTABLE_NAMES"],
        key=ruff_all_key,
    )

    typing_names = ["Final", "TypeAlias"]
    if gen.uses_annotated:
        typing_names.append("Annotated")
    if gen.uses_literal:
        typing_names.append("Literal")
    base_names = ["ACPModel", "Field", "JsonValue"]
    if gen.uses_tag:
        base_names.extend(("Tag", "tag_discriminator"))

    sha = inputs.sha256
    out: list[str] = [
        "# Generated by scripts/generate_acp_models.py from the vendored ACP JSON schema.",
        "# Do not edit by hand: change the generator or the schema, then regenerate.",
        "#",
        "# Schema file: src/subagents/protocol/acp/schema/v1/schema.unstable.json",
        f"#   sha256 {sha['schema.unstable.json']}",
        "# Stable subset: src/subagents/protocol/acp/schema/v1/schema.json",
        f"#   sha256 {sha['schema.json']}",
        f"# Release: ACP JSON schema v{inputs.release} (protocol version {PROTOCOL_VERSION}),",
        f"#   {inputs.repository} @ {inputs.commit}",
    ]
    out.extend(
        docstring(
            "Models for Agent Client Protocol v1 (generated; validated by ``pydantic_core``).\n\n"
            + textwrap.fill(
                "Generated from ``schema.unstable.json``, the superset of the stable schema: the "
                "definitions and fields that are not in the stable ``schema.json`` are listed in "
                ":data:`UNSTABLE_NAMES` and :data:`UNSTABLE_FIELDS` and say so in their "
                "docstrings. Import from :mod:`subagents.protocol.acp` rather than from this "
                "module.",
                width=96,
            ),
            0,
        )
    )
    out.append("")
    out.append("from collections.abc import Mapping")
    out.append(f"from typing import {', '.join(sorted(typing_names))}")
    out.append("")
    out.append(f"from {PACKAGE}._base import {', '.join(sorted(base_names, key=import_key))}")
    out.append(f"from {PACKAGE}.methods import MethodSpec")
    out.append("")
    out.extend(
        render(
            Seq("(", tuple(Atom(py_str(e)) for e in exports), ")", True),
            0,
            "__all__: tuple[str, ...] = ",
        )
    )
    out.append("")
    out.append(f"SCHEMA_RELEASE: Final = {py_str(inputs.release)}")
    out.append('"""The ACP JSON-schema release these models were generated from."""')
    out.append(f"SCHEMA_SHA256: Final = {py_str(sha['schema.unstable.json'])}")
    out.append('"""sha256 of the ``schema.unstable.json`` these models were generated from."""')

    for item in items:
        out.append("")
        out.append("")
        out.extend(emit_class(item) if isinstance(item, ClassIR) else emit_alias(item))

    out.append("")
    out.append("")
    out.extend(emit_methods(methods))
    out.append("")
    out.extend(render(string_set(unstable_names), 0, "UNSTABLE_NAMES: Final[frozenset[str]] = "))
    out.extend(docstring("Generated names (models and aliases) absent from ``schema.json``.", 0))
    out.append("")
    fields_node = Seq(
        "{",
        tuple(KV(py_str(k), string_set(v)) for k, v in sorted(unstable_fields.items())),
        "}",
        magic=True,
    )
    out.extend(render(fields_node, 0, "UNSTABLE_FIELDS: Final[Mapping[str, frozenset[str]]] = "))
    out.extend(
        docstring(
            "For models in ``schema.json``: the wire fields that only the unstable schema has.", 0
        )
    )
    return "\n".join(out) + "\n", [i.name for i in items]


def import_key(name: str) -> tuple[int, str, str]:
    """ruff isort's order-by-type: CONSTANTS, Classes, then the rest; case-insensitive."""
    if name.isupper():
        group = 0
    elif name[:1].isupper():
        group = 1
    else:
        group = 2
    return (group, name.lower(), name)


# --------------------------------------------------------------------------------------------
# The package __init__ export block


def import_lines(module: str, names: Iterable[str], indent: int) -> list[str]:
    """``from module import ...`` as ruff's isort writes it: one line if it fits, else one
    name per line."""
    atoms = tuple(Atom(n) for n in sorted(names, key=import_key))
    line = INDENT * indent + f"from {module} import {', '.join(a.text for a in atoms)}"
    if len(line) <= LINE_LENGTH:
        return [line]
    return render(Seq("(", atoms, ")", magic=True), indent, f"from {module} import ")


def init_block(exported: list[str]) -> str:
    """The package ``__init__``'s export block.

    Type checkers read the ``TYPE_CHECKING`` imports (every exported name, from its real
    module) and not the lazy ``__getattr__``, so a misspelt name is an error for them; at
    runtime the frozensets tell ``__getattr__`` which module each name comes from.
    """
    all_names = sorted(
        [*exported, *(n for ns in HANDWRITTEN_EXPORTS.values() for n in ns)], key=ruff_all_key
    )
    sources = {f"{PACKAGE}.{m}": ns for m, ns in HANDWRITTEN_EXPORTS.items()}
    sources[GENERATED_MODULE] = tuple(exported)
    lines = [INIT_BEGIN, "if TYPE_CHECKING:"]
    for module in sorted(sources, key=str.lower):
        lines.extend(import_lines(module, sources[module], 1))
    lines.append("")
    for module, names in HANDWRITTEN_EXPORTS.items():
        constant = f"_{module.strip('_').upper()}_EXPORTS"
        lines.extend(render(string_set(names), 0, f"{constant} = "))
    lines.append("")
    lines.extend(
        render(
            Seq("(", tuple(Atom(py_str(n)) for n in all_names), ")", True),
            0,
            "__all__: tuple[str, ...] = ",
        )
    )
    lines.append(INIT_END)
    return "\n".join(lines)


def replace_init_block(text: str, block: str) -> str:
    begin = text.find(INIT_BEGIN)
    end = text.find(INIT_END)
    if begin < 0 or end < begin:
        raise SchemaError(f"{INIT_FILE} has no generated-exports markers")
    return text[:begin] + block + text[end + len(INIT_END) :]


# --------------------------------------------------------------------------------------------
# CLI


def diff_summary(path: Path, old: str, new: str, limit: int = 40) -> Iterator[str]:
    diff = list(
        difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            f"{path} (checked in)",
            f"{path} (fresh)",
            lineterm="",
        )
    )
    added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    yield f"{path}: out of date (+{added} -{removed} lines)"
    yield from diff[:limit]
    if len(diff) > limit:
        yield f"... ({len(diff) - limit} more diff lines)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate the ACP v1 models from the vendored JSON schema."
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the checked-in output is out of date"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="write (or check) the module at this path instead of the package's"
        " _v1_generated.py; the package __init__ is then left alone",
    )
    args = parser.parse_args(argv)

    source, exported = generate(load_inputs())
    targets: list[tuple[Path, str]] = [(args.output or DEFAULT_OUTPUT, source)]
    if args.output is None:
        init_text = INIT_FILE.read_text(encoding="utf-8")
        targets.append((INIT_FILE, replace_init_block(init_text, init_block(exported))))

    if args.check:
        stale = False
        for path, fresh in targets:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != fresh:
                stale = True
                for line in diff_summary(path, current, fresh):
                    print(line)
        if stale:
            print("run: python scripts/generate_acp_models.py", file=sys.stderr)
            return 1
        print("up to date")
        return 0

    for path, fresh in targets:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != fresh:
            path.write_text(fresh, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
