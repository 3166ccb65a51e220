"""``SDK_NAMES`` translates the official ACP SDK's class names to ours (issue 19, point 4)."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import acp.schema as sdk_schema
import pydantic

from subagents.protocol import acp
from subagents.protocol.acp._base import ACPModel
from subagents.protocol.acp.sdk_names import SDK_NAMES, SDK_ONLY

Shape = dict[str, object]
"""Wire field name -> its constant (a single-value ``Literal``), or ``None``."""


def literal_value(annotation: Any) -> object:
    if typing.get_origin(annotation) is typing.Literal:
        args = typing.get_args(annotation)
        if len(args) == 1:
            return args[0]
    return None


def sdk_shape(cls: type[pydantic.BaseModel]) -> Shape:
    return {
        info.alias or name: literal_value(info.annotation)
        for name, info in cls.model_fields.items()
    }


def our_shape(cls: type[ACPModel]) -> Shape:
    return {
        info.validation_alias or name: literal_value(info.annotation)
        for name, info in cls.model_fields.items()
    }


def sdk_classes() -> dict[str, type]:
    """The public classes ``acp.schema`` defines (not the ones it imports, not ``_private``)."""
    return {
        name: obj
        for name, obj in vars(sdk_schema).items()
        if inspect.isclass(obj)
        and obj.__module__ == sdk_schema.__name__
        and name.isidentifier()
        and not name.startswith("_")
    }


def fits(sdk_cls: type, ours: object) -> bool:
    """Whether our export can carry what the SDK class does: the SDK's wire fields are among
    ours, with the same constants (variant tags) where both have one. Root models, enums and
    aliases are not compared."""
    if not (
        issubclass(sdk_cls, pydantic.BaseModel)
        and not issubclass(sdk_cls, pydantic.RootModel)
        and isinstance(ours, type)
        and issubclass(ours, ACPModel)
    ):
        return True
    theirs, mine = sdk_shape(sdk_cls), our_shape(ours)
    return all(
        wire in mine and (value is None or mine[wire] is None or mine[wire] == value)
        for wire, value in theirs.items()
    )


def test_every_key_is_an_sdk_schema_class() -> None:
    """Each key of ``SDK_NAMES`` (and of ``SDK_ONLY``) names a public ``acp.schema`` class."""
    classes = sdk_classes()
    assert sorted(set(SDK_NAMES) - set(classes)) == []
    assert sorted(SDK_ONLY - set(classes)) == []
    assert sorted(SDK_ONLY & set(SDK_NAMES)) == []


def test_every_value_names_one_of_our_exports() -> None:
    """Each value of ``SDK_NAMES`` is in ``subagents.protocol.acp.__all__`` and resolves."""
    assert sorted(set(SDK_NAMES.values()) - set(acp.__all__)) == []
    for ours in SDK_NAMES.values():
        assert getattr(acp, ours) is not None
    assert sorted(SDK_ONLY & set(acp.__all__)) == []


def test_each_mapping_has_the_sdk_class_wire_shape() -> None:
    """Our class for an SDK name has the SDK class's wire fields and variant tags (so, e.g.,
    ``DeniedOutcome`` cannot be mapped to the ``selected`` outcome)."""
    classes = sdk_classes()
    wrong = [
        f"{sdk} -> {ours}"
        for sdk, ours in SDK_NAMES.items()
        if not fits(classes[sdk], getattr(acp, ours))
    ]
    assert wrong == []


def test_the_mapping_is_complete() -> None:
    """Every public SDK schema class is mapped, in ``SDK_ONLY``, or one of ours with the same
    name and shape: a false friend (same name, another shape) must be in ``SDK_NAMES``."""
    unaccounted = [
        name
        for name, cls in sdk_classes().items()
        if name not in SDK_NAMES
        and name not in SDK_ONLY
        and not (name in acp.__all__ and fits(cls, getattr(acp, name)))
    ]
    assert unaccounted == []


def test_known_names_from_the_issue() -> None:
    """The examples of issue 19: the permission outcomes and the message chunk."""
    assert SDK_NAMES["AllowedOutcome"] == "SelectedRequestPermissionOutcome"
    assert SDK_NAMES["DeniedOutcome"] == "CancelledRequestPermissionOutcome"
    assert SDK_NAMES["AgentMessageChunk"] == "AgentMessageChunkSessionUpdate"
