"""Foundations shared by the generated ACP models: the base class and the wire helpers.

Every generated model derives from :class:`ACPModel`. Python attributes are snake_case and the
wire names (camelCase, and ``_meta``) are validation/serialization aliases, so

* ``Model(session_id=...)`` and ``Model.model_validate({"sessionId": ...})`` both work;
* unknown fields sent by a peer are kept (``extra="allow"``) and written back unchanged;
* models are built on first use (``defer_build=True``), so importing them stays cheap;
* validation is strict: no coercion between JSON types (``"1"`` is not an integer).

:func:`to_wire` and :func:`from_wire` are the two conversions the protocol layer needs.
"""

from collections.abc import Callable
from types import GenericAlias
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, Discriminator, TypeAdapter

if TYPE_CHECKING:
    from subagents.protocol.jsonrpc import JsonValue as JsonValue
else:
    # ``subagents.protocol.jsonrpc.JsonValue`` is a string-form recursive alias: right for type
    # checkers, but pydantic cannot build a validator from it (it recurses forever). At run time
    # the models use pydantic's JsonValue, which describes the same set of values.
    from pydantic import JsonValue as JsonValue

__all__ = ("ACPModel", "JsonValue", "from_wire", "tag_discriminator", "to_wire")

ModelT = TypeVar("ModelT", bound=BaseModel)

_NO_TAG: Any = object()


class ACPModel(BaseModel):
    """Base class of every ACP model.

    Unknown fields are preserved and round-trip; ``_meta`` is the ``meta`` attribute. Fields
    that tag a union variant (``type``, ``sessionUpdate``, ...) have their constant as default
    and always count as set, so ``exclude_unset`` dumps (:func:`to_wire`) keep them.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
        frozen=False,
        # No type coercion ("1" is not an integer, 0 is not a boolean): what validates is what
        # the schema allows, and it dumps back unchanged. Dicts still validate as models.
        strict=True,
    )

    _acp_tags: ClassVar[tuple[str, ...]] = ()
    """Names of the fields holding this variant's union tag (set by the generator)."""

    def model_post_init(self, context: Any, /) -> None:
        if self._acp_tags:
            self.__pydantic_fields_set__.update(self._acp_tags)


def to_wire(model: BaseModel) -> dict[str, JsonValue]:
    """Dump ``model`` as the JSON object that goes on the wire.

    Wire names, JSON-compatible values, and only the fields that were set (given, parsed, or a
    union tag), so a parsed message dumps back to what was received.
    """
    data = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return cast("dict[str, JsonValue]", data)


@overload
def from_wire(tp: type[ModelT], data: object) -> ModelT: ...
@overload
def from_wire(tp: object, data: object) -> Any: ...
def from_wire(tp: object, data: object) -> Any:
    """Validate decoded JSON ``data`` as ``tp``.

    ``tp`` is a model class or any type pydantic accepts, including the generated union aliases
    (``SessionUpdate``, ``ContentBlock``, ...). Raises :class:`pydantic.ValidationError`.
    """
    if isinstance(tp, type) and not isinstance(tp, GenericAlias):
        cls = cast("type[object]", tp)
        if issubclass(cls, BaseModel):
            return cls.model_validate(data)
    return _adapter(tp).validate_python(data)


_adapters: dict[int, tuple[object, TypeAdapter[Any]]] = {}


def _adapter(tp: object) -> TypeAdapter[Any]:
    # Keyed by identity: the aliases are module-level singletons, and Annotated aliases carrying a
    # FieldInfo are not hashable. The entry keeps ``tp`` alive, so its id cannot be reused.
    entry = _adapters.get(id(tp))
    if entry is not None and entry[0] is tp:
        return entry[1]
    adapter: TypeAdapter[Any] = TypeAdapter(cast("Any", tp))
    _adapters[id(tp)] = (tp, adapter)
    return adapter


def tag_discriminator(
    wire_name: str,
    attr_name: str,
    tags: tuple[str, ...],
    *,
    missing: str | None = None,
    unknown: str | None = None,
) -> Discriminator:
    """A callable discriminator for a union whose tag is optional or open.

    Some ACP unions have a default variant chosen when the tag is absent (``McpServer`` without
    ``type`` is stdio) or a catch-all for unknown tags (``"other"``). Known ``tags`` select their
    variant; an absent tag selects ``missing`` and any other value selects ``unknown`` (``None``
    rejects the value). Variants are marked with :class:`pydantic.Tag` using the same strings.
    """
    known = frozenset(tags)

    def pick(value: object) -> str | None:
        tag: object
        if isinstance(value, dict):
            items = cast("dict[str, object]", value)
            tag = items.get(wire_name, items.get(attr_name, _NO_TAG))
        else:
            tag = getattr(value, attr_name, _NO_TAG)
        if tag is _NO_TAG:
            return missing
        if isinstance(tag, str) and tag in known:
            return tag
        return unknown

    chooser: Callable[[object], str | None] = pick
    return Discriminator(chooser)
