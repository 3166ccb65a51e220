"""``model_dump`` without pydantic_core's serializer gives exactly the serializer's dict."""

from __future__ import annotations

import enum
import itertools
from typing import Any

import pytest

from subagents.protocol import acp
from subagents.protocol.acp._base import _serializer  # pyright: ignore[reportPrivateUsage]

from .test_models import model_classes
from .test_recorded_exchanges import CANCELLED_TURN, ECHO_AGENT, constructed_messages, payloads


def corpus() -> list[acp.ACPModel]:
    models: list[acp.ACPModel] = [model for _, model in constructed_messages()]
    for transcript in (ECHO_AGENT, CANCELLED_TURN):
        for _, tp, data in payloads(transcript):
            models.append(acp.from_wire(tp, data))
    for cls in model_classes():
        if not any(info.is_required() for info in cls.model_fields.values()):
            models.append(cls.model_validate({}))
    # extras, explicit nulls, nested models in lists, assigned values
    note = acp.SessionNotification.model_validate(
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "tool_call",
                "toolCallId": "t",
                "title": "run",
                "content": [{"type": "content", "content": {"type": "text", "text": "x"}}],
                "locations": [{"path": "/a", "line": None}],
                "rawInput": {"k": [1, 2.5, None, {"z": None}]},
                "extra": None,
            },
            "_meta": {"a": None},
            "ext": {"n": None},
        }
    )
    models.append(note)
    block = acp.TextContentBlock(text="hi")
    block.annotations = None
    block.custom = [1, {"b": None}]
    models.append(block)
    return models


FLAGS = [
    dict(zip(("by_alias", "exclude_unset", "exclude_none"), combo, strict=True))
    for combo in itertools.product([False, True], repeat=3)
]


@pytest.mark.parametrize("mode", ["json", "python"])
def test_the_python_dump_equals_the_serializers_for_every_flag(mode: str) -> None:
    """Issue 17 (start-up and memory: no serializer per model, nothing imported by its first
    use): the dict ``model_dump`` and ``to_wire`` return is, key order included, the one
    pydantic_core's serializer gives, for recorded traffic, constructed messages, every model
    that validates from ``{}``, extras and explicit nulls, under every flag combination."""
    models = corpus()
    assert len(models) > 100
    for model, flags in itertools.product(models, FLAGS):
        expected = _serializer(type(model)).to_python(model, mode=mode, **flags)
        got = model.model_dump(mode=mode, **flags)  # type: ignore[arg-type]
        assert got == expected, (type(model).__name__, flags)
        assert list(got) == list(expected)  # the same key order


class _Level(enum.IntEnum):
    HIGH = 1


class _Name(str):
    pass


@pytest.mark.parametrize(
    "odd",
    [(1, 2), float("nan"), float("inf"), _Level.HIGH, _Name("x"), {1: "x"}, b"bytes"],
    ids=repr,
)
@pytest.mark.parametrize("mode", ["json", "python"])
def test_values_beyond_plain_json_are_dumped_by_the_serializer(odd: Any, mode: str) -> None:
    """A value that is not plain JSON (a tuple, NaN, an enum, a ``str`` subclass, a non-string
    key, bytes) anywhere in the model hands the whole dump to the serializer: the result never
    depends on which path dumped it."""
    note = acp.SessionNotification.model_validate(
        {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}}
    )
    note.meta = {"odd": odd, "nested": [{"odd": odd}]}
    for flags in FLAGS:
        expected = _serializer(type(note)).to_python(note, mode=mode, **flags)
        assert note.model_dump(mode=mode, **flags) == expected  # type: ignore[arg-type]
