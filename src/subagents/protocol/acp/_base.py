"""Foundations shared by the generated ACP models: the base class and the wire helpers.

Every generated model derives from :class:`ACPModel`. Python attributes are snake_case and the
wire names (camelCase, and ``_meta``) are validation/serialization aliases, so

* ``Model(session_id=...)`` and ``Model.model_validate({"sessionId": ...})`` both work;
* unknown fields sent by a peer are kept (``extra="allow"``) and written back unchanged;
* validation is strict: no coercion between JSON types (``"1"`` is not an integer).

The models are plain classes validated and dumped by ``pydantic_core`` directly: the core
schema of a model is written here from its annotations the first time the model is used, in
microseconds, and nothing of ``pydantic`` itself is imported. (Building pydantic ``BaseModel``
classes and their validators cost a process about 150 ms of CPU on first use, most of an ACP
agent's start-up.) The methods a caller meets keep pydantic's names and meaning:
``model_validate``, ``model_dump``, ``model_copy``, ``model_fields_set``, ``model_extra``;
errors are ``pydantic_core.ValidationError``, which is ``pydantic.ValidationError``.

:func:`to_wire` and :func:`from_wire` are the two conversions the protocol layer needs.
"""

from __future__ import annotations

import inspect
import math
import threading
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Final,
    Literal,
    TypeVar,
    cast,
    dataclass_transform,
    final,
    get_args,
    get_origin,
    overload,
)

from pydantic_core import SchemaSerializer, SchemaValidator, ValidationError
from pydantic_core import core_schema as cs

if TYPE_CHECKING:
    from typing import Self

    from subagents.protocol.jsonrpc import JsonValue as JsonValue
else:
    # ``subagents.protocol.jsonrpc.JsonValue`` is a string-form recursive alias, right for type
    # checkers; at run time a JSON value field accepts any value (what arrives from the wire is
    # JSON by construction, and the encoder checks what leaves).
    JsonValue = Any

__all__ = (
    "ACPModel",
    "Field",
    "FieldInfo",
    "JsonValue",
    "Tag",
    "ValidationError",
    "from_wire",
    "prepare",
    "tag_discriminator",
    "tag_picker",
    "to_wire",
)

ModelT = TypeVar("ModelT", bound="ACPModel")

_NO_TAG: Any = object()
_MISSING: Any = object()


@final
class FieldInfo:
    """What :func:`Field` records about one field: default, wire names, constraints."""

    __slots__ = (
        "annotation",
        "default",
        "default_factory",
        "discriminator",
        "ge",
        "le",
        "min_length",
        "serialization_alias",
        "validation_alias",
    )

    def __init__(
        self,
        *,
        default: Any = _MISSING,
        default_factory: Callable[[], Any] | None = None,
        validation_alias: str | None = None,
        serialization_alias: str | None = None,
        discriminator: str | None = None,
        ge: float | None = None,
        le: float | None = None,
        min_length: int | None = None,
    ) -> None:
        self.annotation: Any = None
        self.default = default
        self.default_factory = default_factory
        self.validation_alias = validation_alias
        self.serialization_alias = serialization_alias
        self.discriminator = discriminator
        self.ge = ge
        self.le = le
        self.min_length = min_length

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    def __repr__(self) -> str:
        shown = {
            name: getattr(self, name)
            for name in self.__slots__
            if name != "annotation" and getattr(self, name) not in (None, _MISSING)
        }
        return f"FieldInfo({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def Field(
    default: Any = _MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    validation_alias: str | None = None,
    serialization_alias: str | None = None,
    discriminator: str | None = None,
    ge: float | None = None,
    le: float | None = None,
    min_length: int | None = None,
) -> Any:
    """A model field's default, wire names and constraints (``pydantic.Field``'s subset)."""
    return FieldInfo(
        default=default,
        default_factory=default_factory,
        validation_alias=validation_alias,
        serialization_alias=serialization_alias,
        discriminator=discriminator,
        ge=ge,
        le=le,
        min_length=min_length,
    )


@final
@dataclass(frozen=True, slots=True)
class Tag:
    """Marks a union variant (``Annotated[Variant, Tag("x")]``) for a callable discriminator."""

    tag: str


@final
@dataclass(frozen=True, slots=True)
class _Discriminator:
    pick: Callable[[object], str | None]


@dataclass_transform(kw_only_default=True, field_specifiers=(Field,))
class ACPModel:
    """Base class of every ACP model.

    Unknown fields are preserved and round-trip; ``_meta`` is the ``meta`` attribute. Fields
    that tag a union variant (``type``, ``sessionUpdate``, ...) have their constant as default
    and always count as set, so ``exclude_unset`` dumps (:func:`to_wire`) keep them.
    """

    # The attribute names are the ones pydantic_core's model validator and serializer use.
    __slots__ = (
        "__dict__",
        "__pydantic_extra__",
        "__pydantic_fields_set__",
        "__pydantic_private__",
    )

    if TYPE_CHECKING:
        __pydantic_extra__: dict[str, Any] | None
        __pydantic_fields_set__: set[str]
        __pydantic_private__: None

    _acp_tags: ClassVar[tuple[str, ...]] = ()
    """Names of the fields holding this variant's union tag (set by the generator)."""

    __acp_fields__: ClassVar[dict[str, FieldInfo]] = {}

    model_fields: ClassVar[Mapping[str, FieldInfo]] = {}
    """The fields by attribute name, in definition order."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls.__acp_fields__)  # inherited, in definition order
        annotations: dict[str, Any] = inspect.get_annotations(cls)
        for name, annotation in annotations.items():
            if isinstance(annotation, str):
                raise TypeError(
                    f"{cls.__qualname__}.{name}: ACP models need evaluated annotations "
                    "(define them in a module without `from __future__ import annotations`)"
                )
            if annotation is ClassVar or get_origin(annotation) is ClassVar:
                continue
            value = cls.__dict__.get(name, _MISSING)
            info = value if isinstance(value, FieldInfo) else FieldInfo(default=value)
            if value is not _MISSING:
                delattr(cls, name)
            info.annotation = annotation
            fields[name] = info
        cls.__acp_fields__ = fields
        cls.model_fields = types.MappingProxyType(fields)

    def __init__(self, /, **data: Any) -> None:
        _validator(type(self)).validate_python(data, self_instance=self)

    # -- pydantic's names, for the few callers that use them ----------------------------------

    @classmethod
    def model_validate(cls, obj: object) -> Self:
        """Validate ``obj`` (decoded JSON, or an instance) as this model."""
        return _validator(cls).validate_python(obj)

    @classmethod
    def __validate_json_value__(cls) -> Callable[[object], Self]:
        """The function :meth:`model_validate` calls, for a caller that validates many messages
        (the JSON-RPC router): one Python call less per message."""
        return cast("Callable[[object], Self]", _validator(cls).validate_python)

    def model_dump(
        self,
        *,
        mode: Literal["json", "python"] = "python",
        by_alias: bool = False,
        exclude_unset: bool = False,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        """The model as a dict (attribute names unless ``by_alias``; JSON values in ``json``)."""
        try:
            return _Dump(by_alias, exclude_unset, exclude_none).model(self)
        except _NotPlainJson:
            pass
        dumped = _serializer(type(self)).to_python(
            self,
            mode=mode,
            by_alias=by_alias,
            exclude_unset=exclude_unset,
            exclude_none=exclude_none,
        )
        return cast("dict[str, Any]", dumped)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, with ``update`` applied (not validated, as in pydantic) and counted as set."""
        clone = self.__deepcopy__({}) if deep else self.__copy__()
        for name, value in (update or {}).items():
            setattr(clone, name, value)
        return clone

    @property
    def model_fields_set(self) -> set[str]:
        """The fields given, parsed or assigned (and the union tags), as attribute names."""
        return self.__pydantic_fields_set__

    @property
    def model_extra(self) -> dict[str, Any] | None:
        """The unknown fields kept from the wire, by their wire names."""
        return self.__pydantic_extra__

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any, /) -> Any:
        # An ACP model inside a pydantic model or TypeAdapter validates with its own schema.
        return _closed_schema(cls)

    def model_post_init(self, context: Any, /) -> None:
        if self._acp_tags:
            self.__pydantic_fields_set__.update(self._acp_tags)

    # -- object protocol -----------------------------------------------------------------------

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            extra = object.__getattribute__(self, "__pydantic_extra__")
            if extra is not None and name in extra:
                return extra[name]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self).__acp_fields__:
            self.__dict__[name] = value
            self.__pydantic_fields_set__.add(name)
        elif name.startswith("__pydantic_"):
            object.__setattr__(self, name, value)
        else:
            extra = self.__pydantic_extra__
            if extra is None:
                extra = {}
                object.__setattr__(self, "__pydantic_extra__", extra)
            extra[name] = value
            self.__pydantic_fields_set__.add(name)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, ACPModel)
        return self.__dict__ == other.__dict__ and (self.__pydantic_extra__ or {}) == (
            other.__pydantic_extra__ or {}
        )

    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # mutable, like pydantic's

    def __repr__(self) -> str:
        shown = [f"{name}={value!r}" for name, value in self.__dict__.items()]
        shown += [f"{name}={value!r}" for name, value in (self.__pydantic_extra__ or {}).items()]
        return f"{type(self).__name__}({', '.join(shown)})"

    def __copy__(self) -> Self:
        extra = self.__pydantic_extra__
        return self._clone(dict(self.__dict__), None if extra is None else dict(extra))

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        import copy

        extra = copy.deepcopy(self.__pydantic_extra__, memo)
        return self._clone(copy.deepcopy(self.__dict__, memo), extra)

    def _clone(self, fields: dict[str, Any], extra: dict[str, Any] | None) -> Self:
        clone = type(self).__new__(type(self))
        clone.__setstate__(
            {
                "__dict__": fields,
                "__pydantic_fields_set__": set(self.__pydantic_fields_set__),
                "__pydantic_extra__": extra,
            }
        )
        return clone

    def __getstate__(self) -> dict[str, Any]:
        return {
            "__dict__": self.__dict__,
            "__pydantic_fields_set__": self.__pydantic_fields_set__,
            "__pydantic_extra__": self.__pydantic_extra__,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__"):
            object.__setattr__(self, name, state[name])
        object.__setattr__(self, "__pydantic_private__", None)


def to_wire(model: ACPModel) -> dict[str, JsonValue]:
    """Dump ``model`` as the JSON object that goes on the wire.

    Wire names, JSON-compatible values, and only the fields that were set (given, parsed, or a
    union tag), so a parsed message dumps back to what was received.
    """
    return cast("dict[str, JsonValue]", model.model_dump(by_alias=True, exclude_unset=True))


class _NotPlainJson(Exception):
    """A value :class:`_Dump` leaves to pydantic_core's serializer (a tuple, a non-finite float,
    a ``str`` subclass, a non-string key, any other object)."""


@final
class _Dump:
    """``model_dump`` in Python for models that hold plain JSON values (every message parsed
    from the wire, and what the endpoints build): the same dict pydantic_core's serializer
    gives, in either mode, without building a serializer per model (about 1 MiB and 2 ms for
    an endpoint's models) or loading what its first use imports (``uuid``, ``pathlib``,
    ``ipaddress``...: 5–7 ms, 1 MiB). Anything else raises :class:`_NotPlainJson`, and the
    serializer does the whole dump: what a caller gets never depends on the path taken."""

    __slots__ = ("by_alias", "exclude_none", "exclude_unset")

    def __init__(self, by_alias: bool, exclude_unset: bool, exclude_none: bool) -> None:
        self.by_alias = by_alias
        self.exclude_unset = exclude_unset
        self.exclude_none = exclude_none

    def model(self, model: ACPModel) -> dict[str, Any]:
        out: dict[str, Any] = {}
        values = model.__dict__
        given = model.__pydantic_fields_set__ if self.exclude_unset else None
        exclude_none = self.exclude_none
        for name, key in _dump_keys(type(model), self.by_alias):
            if given is not None and name not in given:
                continue
            value = values[name]
            if value is None:
                if not exclude_none:
                    out[key] = None
            else:
                out[key] = self.value(value)
        extra = model.__pydantic_extra__
        if extra:  # always dumped, as the serializer does
            for key, value in extra.items():
                if value is None:
                    if not exclude_none:
                        out[key] = None
                else:
                    out[key] = self.value(value)
        return out

    def value(self, value: object) -> Any:
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            return value
        if kind is float:
            if math.isfinite(cast(float, value)):
                return value
            raise _NotPlainJson
        if isinstance(value, ACPModel):
            return self.model(value)
        if kind is list:
            return [self.value(item) for item in cast("list[object]", value)]
        if kind is dict:
            items = cast("dict[object, object]", value)
            out: dict[str, Any] = {}
            for key, item in items.items():
                if type(key) is not str:
                    raise _NotPlainJson
                out[key] = self.value(item)
            return out
        raise _NotPlainJson


def _dump_keys(cls: type[ACPModel], by_alias: bool) -> tuple[tuple[str, str], ...]:
    """``(attribute name, dumped key)`` of each field, in definition order."""
    attr = "__acp_alias_keys__" if by_alias else "__acp_name_keys__"
    keys = cls.__dict__.get(attr)
    if keys is None:
        keys = tuple(
            (name, (info.serialization_alias or name) if by_alias else name)
            for name, info in cls.__acp_fields__.items()
        )
        type.__setattr__(cls, attr, keys)
    return cast("tuple[tuple[str, str], ...]", keys)


@overload
def from_wire(tp: type[ModelT], data: object) -> ModelT: ...
@overload
def from_wire(tp: object, data: object) -> Any: ...
def from_wire(tp: object, data: object) -> Any:
    """Validate decoded JSON ``data`` as ``tp``.

    ``tp`` is a model class or any type built from the models, JSON scalars, ``list``, ``dict``,
    ``Literal`` and unions, including the generated union aliases (``SessionUpdate``,
    ``ContentBlock``, ...). Raises :class:`pydantic_core.ValidationError`.
    """
    if isinstance(tp, type) and issubclass(tp, ACPModel):
        return _validator(tp).validate_python(data)
    return _type_validator(cast("object", tp)).validate_python(data)


def tag_picker(
    wire_name: str,
    attr_name: str,
    tags: tuple[str, ...],
    *,
    missing: str | None = None,
    unknown: str | None = None,
) -> Callable[[object], str | None]:
    """The tag chooser of a union whose tag is optional or open.

    Some unions have a default variant chosen when the tag is absent (ACP's ``McpServer``
    without ``type`` is stdio) or a catch-all for unknown tags (``"other"``). Known ``tags``
    select their variant; an absent tag selects ``missing`` and any other value selects
    ``unknown`` (``None`` rejects the value). Works on decoded JSON and on model instances.
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

    return pick


def tag_discriminator(
    wire_name: str,
    attr_name: str,
    tags: tuple[str, ...],
    *,
    missing: str | None = None,
    unknown: str | None = None,
) -> Any:
    """The discriminator of an ACP union chosen by :func:`tag_picker`.

    Used as ``Annotated[Annotated[A, Tag("a")] | Annotated[B, Tag("b")], tag_discriminator(...)]``.
    """
    return _Discriminator(tag_picker(wire_name, attr_name, tags, missing=missing, unknown=unknown))


# -- core schemas, written from the annotations on first use ---------------------------------

_CONFIG = cs.CoreConfig(
    strict=True,
    extra_fields_behavior="allow",
    validate_by_name=True,
    validate_by_alias=True,
    serialize_by_alias=True,
)

_SCALARS: dict[object, Callable[[], cs.CoreSchema]] = {
    str: lambda: cs.str_schema(strict=True),
    int: lambda: cs.int_schema(strict=True),
    float: lambda: cs.float_schema(strict=True),
    bool: lambda: cs.bool_schema(strict=True),
    type(None): cs.none_schema,
    None: cs.none_schema,
    Any: cs.any_schema,
    object: cs.any_schema,
}

_model_schemas: dict[type[ACPModel], list[cs.CoreSchema]] = {}
_model_deps: dict[type[ACPModel], frozenset[type[ACPModel]]] = {}
_building: set[type[ACPModel]] = set()
_type_validators: dict[int, tuple[object, SchemaValidator]] = {}


def _ref(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}:{id(cls)}"


_build_lock = threading.RLock()
"""Held while schemas are written (:func:`prepare` may run in a worker thread beside the event
loop: the recursion bookkeeping above is not safe to share between two builders)."""


def _validator(cls: type[ACPModel]) -> SchemaValidator:
    validator = cls.__dict__.get("__acp_validator__")
    if validator is None:
        with _build_lock:
            validator = cls.__dict__.get("__acp_validator__")
            if validator is None:
                validator = SchemaValidator(_closed_schema(cls))
                type.__setattr__(cls, "__acp_validator__", validator)
    return cast("SchemaValidator", validator)


def _serializer(cls: type[ACPModel]) -> SchemaSerializer:
    serializer = cls.__dict__.get("__acp_serializer__")
    if serializer is None:
        with _build_lock:
            serializer = cls.__dict__.get("__acp_serializer__")
            if serializer is None:
                serializer = SchemaSerializer(_closed_schema(cls))
                type.__setattr__(cls, "__acp_serializer__", serializer)
    return cast("SchemaSerializer", serializer)


def prepare(*models: type[ACPModel]) -> None:
    """Build the validators of ``models`` now, so that their first message writes no schema
    (dumping needs none: see :class:`_Dump`). Thread-safe: the client endpoint calls it in a
    worker thread before its first connection, so that a harness's event loop never stalls on
    the class and schema building a process's first ACP connection costs."""
    for model in models:
        _validator(model)


def _closed_schema(cls: type[ACPModel]) -> cs.CoreSchema:
    deps: set[type[ACPModel]] = set()
    _model_reference(cls, deps)
    return _with_definitions(cs.definition_reference_schema(_ref(cls)), deps)


def _type_validator(tp: object) -> SchemaValidator:
    # Keyed by identity: the aliases are module-level singletons, and Annotated aliases carrying
    # a FieldInfo are not hashable. The entry keeps ``tp`` alive, so its id cannot be reused.
    entry = _type_validators.get(id(tp))
    if entry is not None and entry[0] is tp:
        return entry[1]
    with _build_lock:
        deps: set[type[ACPModel]] = set()
        schema = _with_definitions(_schema(tp, deps), deps)
        validator = SchemaValidator(schema)
        _type_validators[id(tp)] = (tp, validator)
    return validator


def _with_definitions(schema: cs.CoreSchema, deps: set[type[ACPModel]]) -> cs.CoreSchema:
    closure: set[type[ACPModel]] = set()
    pending = list(deps)
    while pending:
        model = pending.pop()
        if model not in closure:
            closure.add(model)
            pending.extend(_model_deps[model])
    if not closure:
        return schema
    ordered = sorted(closure, key=_ref)
    return cs.definitions_schema(
        schema, [definition for model in ordered for definition in _model_schemas[model]]
    )


def _model_reference(
    cls: type[ACPModel], deps: set[type[ACPModel]], *, tag_given: bool = False
) -> cs.CoreSchema:
    """A reference to ``cls``'s schema. ``tag_given``: ``cls`` is chosen by a tagged union that
    reads its tag from the input, so the tag is in the input and counts as set by itself."""
    deps.add(cls)
    if cls not in _model_schemas and cls not in _building:
        _building.add(cls)
        try:
            own: set[type[ACPModel]] = set()
            fields: dict[str, cs.ModelField] = {}
            for name, info in cls.__acp_fields__.items():
                inner = _constrained(_schema(info.annotation, own), info)
                if info.default_factory is not None:
                    inner = cs.with_default_schema(inner, default_factory=info.default_factory)
                elif info.default is not _MISSING:
                    inner = cs.with_default_schema(inner, default=info.default)
                fields[name] = cs.model_field(
                    inner,
                    validation_alias=info.validation_alias,
                    serialization_alias=info.serialization_alias,
                )
            fields_schema = cs.model_fields_schema(
                fields, model_name=cls.__name__, extra_behavior="allow"
            )
            tagged = bool(cls._acp_tags)  # pyright: ignore[reportPrivateUsage] - its own class
            definitions: list[cs.CoreSchema] = [
                cs.model_schema(
                    cls,
                    fields_schema,
                    # Only union variants have tags to count as set: no Python call for the rest.
                    post_init="model_post_init" if tagged else None,
                    config=_CONFIG,
                    extra_behavior="allow",
                    ref=_ref(cls),
                )
            ]
            if tagged:
                # Chosen by its tag from the input (the hot path: every session/update and
                # content block), the tag is set already: no model_post_init call (~0.5 µs).
                definitions.append(
                    cs.model_schema(
                        cls,
                        fields_schema,
                        config=_CONFIG,
                        extra_behavior="allow",
                        ref=_ref(cls) + _TAG_GIVEN,
                    )
                )
            _model_schemas[cls] = definitions
            _model_deps[cls] = frozenset(own)
        finally:
            _building.discard(cls)
    if tag_given and cls._acp_tags:  # pyright: ignore[reportPrivateUsage] - its own module
        return cs.definition_reference_schema(_ref(cls) + _TAG_GIVEN)
    return cs.definition_reference_schema(_ref(cls))


_TAG_GIVEN: Final = ":tag-given"


def _constrained(schema: cs.CoreSchema, info: FieldInfo) -> Any:
    if info.ge is None and info.le is None and info.min_length is None:
        return schema
    target: Any = schema
    while target["type"] == "nullable":
        target = target["schema"]
    if info.ge is not None:
        target["ge"] = info.ge
    if info.le is not None:
        target["le"] = info.le
    if info.min_length is not None:
        target["min_length"] = info.min_length
    return schema


def _schema(tp: Any, deps: set[type[ACPModel]]) -> cs.CoreSchema:
    """The core schema of one annotation."""
    try:
        scalar = _SCALARS.get(tp)
    except TypeError:  # an unhashable annotation is no scalar
        scalar = None
    if scalar is not None:
        return scalar()
    if isinstance(tp, type) and issubclass(tp, ACPModel):
        return _model_reference(tp, deps)
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Annotated:
        base, *metadata = args
        discriminator = next((m for m in metadata if isinstance(m, _Discriminator)), None)
        info = next((m for m in metadata if isinstance(m, FieldInfo)), None)
        if discriminator is not None:
            return _callable_union(base, discriminator, deps)
        if info is not None and info.discriminator is not None:
            return _tagged_union(base, info.discriminator, deps)
        schema = _schema(base, deps)
        return _constrained(schema, info) if info is not None else schema
    if origin is Literal:
        return cs.literal_schema(list(args))
    if origin is list:
        return cs.list_schema(_schema(args[0], deps) if args else cs.any_schema(), strict=True)
    if origin is dict:
        key, value = args if args else (str, Any)
        return cs.dict_schema(_schema(key, deps), _schema(value, deps), strict=True)
    if origin is typing.Union or origin is types.UnionType:
        present = [arg for arg in args if arg is not type(None)]
        if len(present) == 1:
            inner = _schema(present[0], deps)
        else:
            inner = cs.union_schema([_schema(arg, deps) for arg in present])
        return cs.nullable_schema(inner) if len(present) < len(args) else inner
    if origin is Mapping or tp is dict:
        return cs.dict_schema(cs.str_schema(), cs.any_schema())
    if tp is list:
        return cs.list_schema(cs.any_schema())
    raise TypeError(f"ACP models cannot describe the annotation {tp!r}")


def _variants(union: Any) -> tuple[Any, ...]:
    if get_origin(union) is typing.Union or get_origin(union) is types.UnionType:
        return get_args(union)
    return (union,)


def _tagged_union(union: Any, attr_name: str, deps: set[type[ACPModel]]) -> cs.CoreSchema:
    choices: dict[Any, cs.CoreSchema] = {}
    wire_name = attr_name
    for variant in _variants(union):
        if not (isinstance(variant, type) and issubclass(variant, ACPModel)):
            raise TypeError(f"a discriminated union member must be a model: {variant!r}")
        info = variant.__acp_fields__[attr_name]
        wire_name = info.validation_alias or attr_name
        # The tag is read from the input (by wire or attribute name): it is there, and set.
        tagged = variant._acp_tags == (attr_name,)  # pyright: ignore[reportPrivateUsage] - its own module
        for tag in get_args(info.annotation):
            choices[tag] = _model_reference(variant, deps, tag_given=tagged)
    paths: list[list[str | int]] = (
        [[wire_name]] if wire_name == attr_name else [[wire_name], [attr_name]]
    )
    return cs.tagged_union_schema(choices, discriminator=paths)


def _callable_union(
    union: Any, discriminator: _Discriminator, deps: set[type[ACPModel]]
) -> cs.CoreSchema:
    choices: dict[Any, cs.CoreSchema] = {}
    for member in _variants(union):
        if get_origin(member) is not Annotated:
            raise TypeError(f"a variant of a tag_discriminator union needs a Tag: {member!r}")
        base, *metadata = get_args(member)
        tag = next(m for m in metadata if isinstance(m, Tag))
        choices[tag.tag] = _schema(base, deps)
    return cs.tagged_union_schema(choices, discriminator=discriminator.pick)
