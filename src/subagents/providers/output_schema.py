"""Output schemas, shared by the providers that enforce them: the schema is checked before a
child starts, and the child's final answer is parsed as JSON and validated after it ends."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, cast

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from ..protocol.jsonrpc import JsonValue
from .contract import SubagentError, SubagentErrorCode, SubagentOutcome

__all__ = (
    "check_output_schema",
    "output_instructions",
    "structured_outcome",
    "validated_outcome",
)

_FENCED: Final = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def check_output_schema(schema: Mapping[str, JsonValue], *, provider: str) -> None:
    """Raise ``SubagentError(INVALID_REQUEST)`` when ``schema`` is not a valid JSON schema."""
    validator = jsonschema.validators.validator_for(dict(schema))
    try:
        validator.check_schema(dict(schema))
    except jsonschema.exceptions.SchemaError as exc:
        raise SubagentError(
            SubagentErrorCode.INVALID_REQUEST,
            f"the output schema is not a valid JSON schema: {exc.message}",
            provider=provider,
        ) from exc


def output_instructions(schema: Mapping[str, JsonValue]) -> str:
    """What a model is told when its final answer must match ``schema``."""
    return (
        "Your final answer must be a single JSON value, and nothing else, that matches this "
        f"JSON schema:\n{json.dumps(schema, ensure_ascii=False, sort_keys=True)}"
    )


def structured_outcome(
    child_id: str,
    text: str,
    schema: Mapping[str, JsonValue],
    usage: Mapping[str, JsonValue] | None = None,
) -> SubagentOutcome:
    """``completed`` with the parsed answer when ``text`` is JSON (bare, or alone in one
    fenced block) matching ``schema``; else ``failed`` (kind ``turn``) naming what is wrong."""
    value: Any = None
    try:
        value = json.loads(text)
    except ValueError as exc:
        fenced = _FENCED.match(text)
        try:
            value = json.loads(fenced.group(1)) if fenced else None
        except ValueError:
            fenced = None
        if fenced is None:
            return SubagentOutcome.failed(
                child_id, "turn", f"the final answer is not JSON ({exc}): {text[:200]!r}", exc
            )
    return validated_outcome(child_id, cast(JsonValue, value), schema, usage)


def validated_outcome(
    child_id: str,
    value: JsonValue,
    schema: Mapping[str, JsonValue],
    usage: Mapping[str, JsonValue] | None = None,
    *,
    what: str = "the final answer",
) -> SubagentOutcome:
    """``completed`` with ``value`` when it matches ``schema``; else ``failed`` (kind
    ``turn``) naming what is wrong (``what``: the answer, in that message). For an answer that
    is already JSON (an A2A agent's data part); :func:`structured_outcome` parses text first."""
    errors = sorted(
        jsonschema.validators.validator_for(dict(schema))(dict(schema)).iter_errors(value),
        key=lambda error: list(error.absolute_path),
    )
    if errors:
        details = "; ".join(
            f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in errors[:5]
        )
        return SubagentOutcome.failed(
            child_id, "turn", f"{what} does not match the output schema: {details}"
        )
    return SubagentOutcome.completed(
        child_id, value, usage=dict(usage) if usage is not None else None
    )
