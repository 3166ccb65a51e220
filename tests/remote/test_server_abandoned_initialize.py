"""A client that leaves while its ``initialize`` is answered (asyncio and trio).

Found by the scale-out test (``test_scale_out.py``): a run cancelled during its start left,
on a server fronting an agent command, a connection and its agent process until the idle
timeout (300 s by default): the client never got the ``Acp-Connection-Id``, so it could not
DELETE the connection.
"""

from __future__ import annotations

import os
import sys

import anyio
import pytest

from subagents.remote import agent_command
from tests.remote._server_helpers import WAIT, http_client, initialize_request, running_server

pytestmark = pytest.mark.anyio

SLOW_AGENT = [
    "sh",
    "-c",
    f'sleep 1; exec "{sys.executable}" -m subagents.agents.reference',
]
"""The reference agent, answering ``initialize`` a second late."""


async def test_a_client_gone_before_the_initialize_answer_ends_its_connection() -> None:
    """Issue 20 point 4 ("random cancels all settle, nothing leaks (processes ...) on either
    side"): the connection made for an ``initialize`` whose client disconnects before the
    answer is stopped and its agent process reaped at once, not after the idle timeout."""
    pids: list[int] = []
    async with running_server(agent_command(SLOW_AGENT)) as server:
        async with http_client() as http, anyio.create_task_group() as tg:

            async def initialize() -> None:
                await http.post(server.url, json=initialize_request())

            tg.start_soon(initialize)
            with anyio.fail_after(WAIT):
                while server.connection_count == 0:  # noqa: ASYNC110 - the server's state
                    await anyio.sleep(0.01)
            pids.extend(server.agent_pids())
            tg.cancel_scope.cancel()
        with anyio.fail_after(5.0):  # the agent answers after 1 s; the idle timeout is 300 s
            while server.connection_count or server.agent_pids():  # noqa: ASYNC110
                await anyio.sleep(0.05)
    [pid] = pids
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
