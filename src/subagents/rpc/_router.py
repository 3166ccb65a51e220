"""Method routing: which handler answers which method, and with which parameter type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar, cast, final, overload

from ..protocol.jsonrpc import JsonValue

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ("NotificationHandler", "ParamsError", "RequestHandler", "Route", "Router")

P = TypeVar("P")

RequestHandler = Callable[[Any], Awaitable[object]]
"""``async def handler(params) -> result``; the result is JSON or a pydantic model."""

NotificationHandler = Callable[[Any], Awaitable[None]]
"""``async def handler(params) -> None``."""


@lru_cache(maxsize=512)
def _adapter(tp: Any) -> TypeAdapter[Any]:
    # pydantic is imported on first use: a peer with raw JSON handlers never pays for it.
    from pydantic import TypeAdapter

    return TypeAdapter(tp)


@lru_cache(maxsize=512)
def _validator(tp: Any) -> Callable[[object], object]:
    if isinstance(tp, type):
        # A type may hand out the function that validates decoded JSON as it (an ACP model gives
        # its schema validator's ``validate_python``: no Python frame of its own per message).
        direct = getattr(tp, "__validate_json_value__", None)
        if callable(direct):
            return cast("Callable[[object], object]", direct())
        validate = getattr(tp, "model_validate", None)
        if callable(validate):
            return cast("Callable[[object], object]", validate)
    return _adapter(tp).validate_python


class ParamsError(Exception):
    """The params of a message failed validation; ``errors`` lists why (JSON-ready)."""

    def __init__(self, errors: list[JsonValue]) -> None:
        super().__init__(f"{len(errors)} validation error(s)")
        self.errors = errors


@final
@dataclass(frozen=True, slots=True)
class Route:
    """One method's handler and, optionally, the type its params are validated into."""

    handler: Callable[[Any], Awaitable[object]]
    params_type: object = None

    def parse_params(self, params: JsonValue) -> object:
        """Validate ``params`` into the route's type (raises :class:`ParamsError`)."""
        if self.params_type is None:
            return params
        validate = _validator(self.params_type)  # built on first use, then a cache hit
        try:
            return validate(params)
        except ValueError as exc:
            # pydantic_core's ValidationError (a ValueError) is pydantic's; pydantic itself is
            # imported only for a type that does not validate itself (a model class with
            # ``model_validate`` does), and nothing is imported per message.
            from pydantic_core import ValidationError

            if not isinstance(exc, ValidationError):
                raise
            raise ParamsError(
                [
                    {
                        "loc": [str(part) for part in err["loc"]],
                        "msg": err["msg"],
                        "type": err["type"],
                    }
                    for err in exc.errors(
                        include_url=False, include_context=False, include_input=False
                    )
                ]
            ) from exc


@final
class Router:
    """Maps method names to handlers, for the requests and notifications a peer receives.

    Without a ``params`` type a handler gets the raw JSON params (``None`` when absent); with
    one, the params are validated into it first, and a validation failure is answered with
    ``-32602 Invalid params`` whose ``data`` lists the errors. Registering a method twice is an
    error: replace a route explicitly with :meth:`remove` first.
    """

    __slots__ = ("_fallback_notification", "_fallback_request", "_notifications", "_requests")

    def __init__(self) -> None:
        self._requests: dict[str, Route] = {}
        self._notifications: dict[str, Route] = {}
        self._fallback_request: Callable[[str, JsonValue], Awaitable[object]] | None = None
        self._fallback_notification: Callable[[str, JsonValue], Awaitable[None]] | None = None

    @overload
    def on_request(
        self, method: str, handler: Callable[[JsonValue], Awaitable[object]]
    ) -> None: ...
    @overload
    def on_request(
        self, method: str, handler: Callable[[P], Awaitable[object]], *, params: type[P]
    ) -> None: ...
    def on_request(
        self,
        method: str,
        handler: Callable[[Any], Awaitable[object]],
        *,
        params: object = None,
    ) -> None:
        """Answer requests for ``method`` with ``handler``."""
        if method in self._requests:
            raise ValueError(f"a request handler for {method!r} is already registered")
        self._requests[method] = Route(handler, params)

    @overload
    def on_notification(
        self, method: str, handler: Callable[[JsonValue], Awaitable[None]]
    ) -> None: ...
    @overload
    def on_notification(
        self, method: str, handler: Callable[[P], Awaitable[None]], *, params: type[P]
    ) -> None: ...
    def on_notification(
        self,
        method: str,
        handler: Callable[[Any], Awaitable[None]],
        *,
        params: object = None,
    ) -> None:
        """Deliver notifications for ``method`` to ``handler``, in arrival order."""
        if method in self._notifications:
            raise ValueError(f"a notification handler for {method!r} is already registered")
        self._notifications[method] = Route(handler, params)

    def on_any_request(self, handler: Callable[[str, JsonValue], Awaitable[object]]) -> None:
        """Answer requests for methods without a route (default: ``-32601``)."""
        self._fallback_request = handler

    def on_any_notification(self, handler: Callable[[str, JsonValue], Awaitable[None]]) -> None:
        """Receive notifications for methods without a route (default: ignored)."""
        self._fallback_notification = handler

    def remove(self, method: str) -> None:
        """Forget every route for ``method``."""
        self._requests.pop(method, None)
        self._notifications.pop(method, None)

    def request_route(self, method: str) -> Route | None:
        route = self._requests.get(method)
        if route is None and self._fallback_request is not None:
            fallback = self._fallback_request

            async def call(params: JsonValue) -> object:
                return await fallback(method, params)

            return Route(call)
        return route

    def notification_route(self, method: str) -> Route | None:
        route = self._notifications.get(method)
        if route is None and self._fallback_notification is not None:
            fallback = self._fallback_notification

            async def call(params: JsonValue) -> None:
                await fallback(method, params)

            return Route(call)
        return route


def to_json(value: object) -> JsonValue:
    """A handler's result as JSON: pydantic models are dumped by alias, unset fields left out."""
    dump = getattr(value, "model_dump", None)
    if dump is not None and hasattr(value, "model_fields_set"):  # a pydantic model
        dumped: JsonValue = dump(mode="json", by_alias=True, exclude_unset=True)
        return dumped
    return value  # type: ignore[return-value]  # trusted to be JSON; the encoder checks
