"""AcpProvider on a URL passes the provider kit: our server (``subagents serve --listen``, a
process: the kit counts the test process's tasks and descriptors) fronting the reference
agent, one agent process per connection."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import replace

import pytest

from subagents.providers import SubagentRequest
from subagents.providers.acp import AcpProvider
from subagents.testing import (
    ProviderCheck,
    ProviderCheckSkipped,
    ProviderScenarios,
    provider_checks,
)
from tests._ports import closed_port, silent_server

REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]


@contextmanager
def served_reference() -> Iterator[str]:
    """``subagents serve --listen 127.0.0.1:0 -- REFERENCE`` until the block ends; its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "subagents", "serve", "--listen", "127.0.0.1:0", "--", *REFERENCE],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        seen = b""
        while not (found := re.search(rb"listening on (http://\S+/acp)\n", seen)):
            line = process.stderr.readline()  # bounded: the server writes it or exits
            if not line:
                raise RuntimeError(f"subagents serve did not start: {seen!r}")
            seen += line
        yield found.group(1).decode()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


@pytest.fixture(scope="module")
def reference_url() -> Iterator[str]:
    """One server for the module's checks (each opens connections of its own, and the server
    starts an agent process per connection): starting one per check cost ~0.3 s of CPU each."""
    with served_reference() as url:
        yield url


pytestmark = pytest.mark.anyio

SCENARIOS = ProviderScenarios(
    good=SubagentRequest("echo hello"),
    good_output="echo hello",
    slow=SubagentRequest("slow"),
    failing=SubagentRequest("crash"),
    # Over HTTP our server answers the prompt of an agent that died with an error (a failed
    # turn) before it ends the streams; over WebSocket it closes the socket (see below).
    failing_kind="turn",
    timeout=20.0,
    quiescence_grace=3.0,
)


@asynccontextmanager
async def silent_url() -> AsyncGenerator[str, None]:
    """A URL whose server accepts connections and never answers: a start caught midway."""
    async with silent_server() as port:
        yield f"http://127.0.0.1:{port}/acp"


NOT_APPLICABLE = {
    "a_failing_result_and_a_failing_disposal_both_surface": (
        "an ACP run cannot be made to fail both result() and dispose() (as for a command)"
    ),
    "an_unexpected_fault_inside_one_run_fails_only_that_run": (
        "the fault is injected into the provider's turn mapping, the same for a command and a "
        "URL: checked in tests/providers/test_acp_provider.py"
    ),
    "dispose_never_returns_silently_with_the_child_running": (
        "the agent of a URL runs on the server's side: disposing a run closes its connection "
        "(bounded), and the server stops that agent (tests/remote/test_server_lifecycle.py)"
    ),
}
APPLICABLE = [c for c in provider_checks() if c.name not in NOT_APPLICABLE]


@pytest.mark.parametrize("transport", ["http", "ws"])
@pytest.mark.parametrize("check", APPLICABLE, ids=lambda check: check.name)
async def test_the_acp_provider_on_a_url_passes_the_provider_kit(
    check: ProviderCheck, transport: str, reference_url: str
) -> None:
    """Issue 20 point 4: "an AcpProvider run with check_provider against a URL" (the rules
    about a failed or interrupted start: a refused port, a server that never answers)."""
    async with silent_url() as silent:
        url = "ws" + reference_url.removeprefix("http") if transport == "ws" else reference_url
        await _check(check, url, silent)


async def _check(check: ProviderCheck, url: str, silent: str) -> None:
    """One rule of the kit: a URL agent, or a refused port / a silent server for the rules
    about a failed or interrupted start."""
    factories: dict[
        str, tuple[Callable[[], AbstractAsyncContextManager[AcpProvider]], ProviderScenarios]
    ] = {
        "failure_before_publication_raises_and_leaves_nothing": (
            lambda: AcpProvider(f"http://127.0.0.1:{closed_port()}/acp", name="acp"),
            replace(SCENARIOS, failing_start=SubagentRequest("hi")),
        ),
        "a_signal_fired_during_start_cancels_the_start": (
            lambda: AcpProvider(silent, name="acp"),
            replace(SCENARIOS, slow_start=SubagentRequest("hi")),
        ),
    }
    # Over HTTP and WebSocket alike, an agent that dies behind the server has its turn in
    # flight answered with an error before the connection ends: a turn failure.
    factory, scenarios = factories.get(
        check.name, (lambda: AcpProvider(url, name="acp"), SCENARIOS)
    )
    try:
        await check.run(factory, scenarios)
    except ProviderCheckSkipped as skip:
        pytest.fail(f"every applicable check must run for a URL: {skip}")
