"""The one connect tail of the stdio dialect clients (``transports/_child_connection``),
driven with a scripted link: issue 18 (one child-connection base: start-up deadline,
exit-vs-end-of-stream race, lost-connection fan-out, errors naming the exit status and stderr
tail, exceptions re-raised unwrapped). The dialects' own tests cover it through their
clients."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from subagents.transports._child_connection import (
    ChildCommand,
    ChildDialect,
    open_child_connection,
)

pytestmark = pytest.mark.anyio


class StartupError(Exception):
    pass


class Closed(Exception):
    pass


class Refused(Exception):
    pass


DIALECT = ChildDialect(kind="toy", startup_error=StartupError, closed=(Closed,), refused=(Refused,))


class Link:
    """A link whose stream ends when the test says so; records what the base told it."""

    def __init__(self) -> None:
        self.closed = False
        self._ended = anyio.Event()
        self.lost: list[str] = []
        self.was_lost = anyio.Event()
        self.events: list[str] = []

    async def wait_closed(self) -> None:
        await self._ended.wait()

    def end(self) -> None:
        self.closed = True
        self._ended.set()


def opener(link: Link) -> Any:
    return lambda _tg, _reason: nullcontext(link)


def lose(link: Link, reason: str) -> None:
    link.lost.append(reason)
    link.was_lost.set()


async def hello(link: Link) -> str:
    return "hello"


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (Closed("gone"), "toy exited before answering initialize: gone"),
        (Refused("no"), "toy refused initialize: no"),
    ],
)
async def test_a_handshake_that_fails_is_the_dialect_s_startup_error(
    raised: Exception, message: str
) -> None:
    """Start-up errors: the connection closing first, or a refusal, becomes the dialect's
    start-up error naming it, caused by what the handshake raised."""

    async def failing(link: Link) -> str:
        raise raised

    with anyio.fail_after(5), pytest.raises(StartupError) as info:
        async with open_child_connection(DIALECT, opener(Link()), failing, lost=lose, name="t"):
            pytest.fail("connected through a failed handshake")
    assert str(info.value) == message
    assert info.value.__cause__ is raised


async def test_a_handshake_past_the_start_up_deadline_names_the_deadline() -> None:
    """Start-up deadline: a silent child is a start-up error naming the bound."""

    async def silent(link: Link) -> str:
        await anyio.sleep_forever()
        return "never"

    with anyio.fail_after(5), pytest.raises(StartupError) as info:
        async with open_child_connection(
            DIALECT, opener(Link()), silent, lost=lose, name="t", startup_timeout=0.05
        ):
            pytest.fail("connected through a silent handshake")
    assert str(info.value) == "toy 't' did not answer initialize within 0.05 s"


async def test_the_end_of_the_stream_is_fanned_out_once_as_the_lost_connection() -> None:
    """Lost-connection fan-out: when the link's stream ends, ``lost`` hears why (with no
    child to name, that the connection closed)."""
    link = Link()
    with anyio.fail_after(5):
        async with open_child_connection(
            DIALECT, opener(link), hello, lost=lose, name="t"
        ) as child:
            assert child.hello == "hello"
            link.end()
            await link.was_lost.wait()
    assert link.lost == ["toy 't' closed the connection"]


async def test_an_exception_from_the_block_is_re_raised_as_itself_after_close() -> None:
    """Exceptions re-raised unwrapped (not in an ExceptionGroup); the dialect's ``close``
    runs first, shielded."""
    link = Link()

    async def close(closing: Link) -> None:
        await anyio.lowlevel.checkpoint()
        closing.events.append("closed")

    with anyio.fail_after(5), pytest.raises(KeyError):
        async with open_child_connection(
            DIALECT, opener(link), hello, lost=lose, name="t", close=close
        ):
            raise KeyError("boom")
    assert link.events == ["closed"]


async def test_a_child_that_exits_with_its_stdout_held_open_is_reported_by_its_exit() -> None:
    """Exit-vs-end-of-stream race: a child that dies while a grandchild keeps its stdout open
    is noticed by its exit; ``lost`` hears the exit status and the stderr tail."""
    script = "import os, subprocess, sys; subprocess.Popen(['sleep', '30']); " + (
        "sys.stderr.write('dying on purpose\\n'); sys.stderr.flush(); os._exit(3)"
    )
    link = Link()
    command = ChildCommand([sys.executable, "-c", script], None, False, None, 10.0)
    with anyio.fail_after(10):
        async with (
            command.spawn("toy") as process,
            open_child_connection(
                DIALECT, opener(link), hello, lost=lose, name="t", process=process
            ),
        ):
            await link.was_lost.wait()
    [reason] = link.lost
    assert reason.startswith(f"toy 't' (pid {process.pid}) exited with status 3")
    assert "dying on purpose" in reason
