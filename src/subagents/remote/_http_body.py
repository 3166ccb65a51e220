"""A request body that httpx sends without an async generator.

httpx wraps ``content=bytes`` in a stream whose ``__aiter__`` is an async generator. When the
send is cancelled mid-body (a run cancelled while its POST is on the wire), that generator is
left suspended, and on trio its garbage collection is reported as a ``ResourceWarning``
("garbage collected before it had been exhausted") in the caller's program. :func:`post` sends
the same bytes through an iterator object instead: nothing is left to finalize.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import final

import httpx

__all__ = ("post",)


@final
class _Once:
    """Yields ``data`` once (a plain async iterator, not a generator)."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def __aiter__(self) -> _Once:
        return self

    async def __anext__(self) -> bytes:
        data, self._data = self._data, None
        if data is None:
            raise StopAsyncIteration
        return data


@final
class Body(httpx.AsyncByteStream):
    """``data`` as a request stream (see the module docstring)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _Once(self._data)


async def post(
    client: httpx.AsyncClient, url: str, body: bytes, headers: Mapping[str, str]
) -> httpx.Response:
    """``client.post(url, content=body, headers=headers)``, the body sent as :class:`Body`."""
    request = client.build_request("POST", url, content=body, headers=headers)
    request.stream = Body(body)
    return await client.send(request)
