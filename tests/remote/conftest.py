"""Fixtures of the remote ACP tests (helpers: ``_server_helpers.py``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest

from subagents.remote import RemoteServer
from tests.remote._server_helpers import running_server


@pytest.fixture
async def reference_server() -> AsyncGenerator[RemoteServer, None]:
    """A server on 127.0.0.1 (port 0) fronting the reference agent, one process per
    connection; stopped (drained) when the test ends."""
    async with running_server() as server:
        yield server
