"""Tool arguments checked against the tool's JSON schema before the tool runs.

:func:`argument_problems` says what is wrong with a call's arguments, in words a model can act
on (``missing required field 'arguments'``, ``wrong type at 'tool': expected string, got
integer``, ``unknown field 'x' (known fields: ...)`` when the schema forbids extras), or
``None`` when they match. The agent loop answers a call that does not match with an error
result naming the problems, and the tool does not run; the task runtime refuses to start such
a call in the background, and the task and subagent tools check their own arguments the same
way when called directly.

A validator is built once per schema and kept (by the schema object, then by its content, in
bounded caches), not once per call. ``jsonschema`` is imported on the first check, not when
the harness is imported. A schema that is not a valid JSON schema (a broken MCP server's)
cannot be checked: that is the tool's problem, not the model's, so it is logged once and its
calls run unchecked, as does a call whose check fails for another reason (an unresolvable
``$ref``).
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from ..protocol.jsonrpc import JsonValue
from .tools import ToolSpec

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = ("argument_problems",)

logger = logging.getLogger(__name__)

_CACHE_SIZE: Final = 256
_MAX_SHOWN: Final = 5
_MAX_MESSAGE: Final = 200

_by_identity: OrderedDict[int, tuple[Mapping[str, JsonValue], Validator | None]] = OrderedDict()
_by_content: OrderedDict[str, Validator | None] = OrderedDict()


def argument_problems(spec: ToolSpec, arguments: Mapping[str, JsonValue]) -> str | None:
    """``None`` when ``arguments`` match ``spec.input_schema`` (or it cannot be checked);
    otherwise an error text for the model naming every problem (the first few of them)."""
    validator = _validator(spec.name, spec.input_schema)
    if validator is None:
        return None
    try:
        errors = sorted(validator.iter_errors(dict(arguments)), key=_order)
    except Exception as exc:  # the schema's fault (an unresolvable $ref), not the model's
        logger.warning(
            "the arguments of the tool %r could not be checked against its schema: %s: %s",
            spec.name,
            type(exc).__name__,
            exc,
        )
        return None
    if not errors:
        return None
    problems = list(dict.fromkeys(_describe(error) for error in errors))
    shown = "; ".join(problems[:_MAX_SHOWN])
    more = len(problems) - _MAX_SHOWN
    if more > 0:
        shown += f"; and {more} more"
    return (
        f"invalid arguments for {spec.name!r}: {shown}. The tool did not run: call it again "
        "with arguments that match its input schema."
    )


def _validator(tool: str, schema: Mapping[str, JsonValue]) -> Validator | None:
    """The validator of ``schema`` (``None``: it cannot be checked), built once and kept."""
    key = id(schema)
    entry = _by_identity.get(key)
    if entry is not None and entry[0] is schema:
        _by_identity.move_to_end(key)
        return entry[1]
    content = json.dumps(schema, sort_keys=True, default=repr)
    if content in _by_content:
        validator = _by_content[content]
        _by_content.move_to_end(content)
    else:
        validator = _build(tool, schema)
        _remember(_by_content, content, validator)
    # The entry holds the schema, so its id cannot be reused by another object meanwhile.
    _remember(_by_identity, key, (schema, validator))
    return validator


def _remember(cache: OrderedDict[Any, Any], key: object, value: object) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)


def _build(tool: str, schema: Mapping[str, JsonValue]) -> Validator | None:
    import jsonschema.exceptions  # lazily: the harness's import path stays light
    import jsonschema.validators

    as_dict = dict(schema)
    cls = jsonschema.validators.validator_for(as_dict)
    try:
        cls.check_schema(as_dict)
    except jsonschema.exceptions.SchemaError as exc:
        logger.warning(
            "the input schema of the tool %r is not a valid JSON schema (%s): its arguments "
            "are not checked",
            tool,
            exc.message,
        )
        return None
    return cls(as_dict)


def _order(error: ValidationError) -> tuple[str, str]:
    return (_path(error.absolute_path), str(error.validator))


def _path(parts: Iterable[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _describe(error: ValidationError) -> str:
    path = _path(error.absolute_path)
    inside = f" in {path!r}" if path else ""
    keyword = error.validator
    value: object = error.validator_value
    instance: object = error.instance
    if keyword == "required" and isinstance(instance, dict) and isinstance(value, list):
        present = cast(dict[str, object], instance)
        missing = [str(name) for name in cast(list[object], value) if name not in present]
        if missing:
            noun = "field" if len(missing) == 1 else "fields"
            return f"missing required {noun} {_names(missing)}{inside}"
    if keyword == "type":
        expected = (
            " or ".join(str(t) for t in cast(list[object], value))
            if isinstance(value, list)
            else str(value)
        )
        where = repr(path) if path else "the top level"
        return f"wrong type at {where}: expected {expected}, got {_json_type(error.instance)}"
    if keyword == "additionalProperties" and value is False and isinstance(instance, dict):
        unknown = _unknown_fields(cast(dict[str, object], instance), error.schema)
        if unknown:
            noun = "field" if len(unknown) == 1 else "fields"
            known = _known_fields(error.schema)
            hint = f" (known fields: {', '.join(known)})" if known else " (it takes none)"
            return f"unknown {noun} {_names(unknown)}{inside}{hint}"
    message = error.message
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 3] + "..."
    return f"{message} at {path!r}" if path else message


def _names(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names)


def _known_fields(schema: object) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    properties = cast(Mapping[str, object], schema).get("properties")
    if not isinstance(properties, Mapping):
        return []
    return [str(name) for name in cast(Mapping[object, object], properties)]


def _unknown_fields(instance: Mapping[str, object], schema: object) -> list[str]:
    known = set(_known_fields(schema))
    patterns: list[str] = []
    if isinstance(schema, Mapping):
        declared = cast(Mapping[str, object], schema).get("patternProperties")
        if isinstance(declared, Mapping):
            patterns = [str(p) for p in cast(Mapping[object, object], declared)]
    unknown: list[str] = []
    for name in instance:
        if name in known:
            continue
        try:
            if any(re.search(pattern, name) for pattern in patterns):
                continue
        except re.error:
            pass
        unknown.append(name)
    return sorted(unknown)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
