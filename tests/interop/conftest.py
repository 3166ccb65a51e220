"""Fixtures for the interop suite: the official ACP Python SDK's agents and ours, as commands."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK_VERSION = "0.12.1"
SDK_EXAMPLES = REPO / ".cache" / f"acp-sdk-{SDK_VERSION}-examples"
"""The SDK's example agents, extracted from its sdist by ``scripts/setup`` (not committed)."""

SDK_SLOW_AGENT = Path(__file__).with_name("sdk_slow_agent.py")
REFERENCE_AGENT = (sys.executable, "-m", "subagents.agents.reference")


@pytest.fixture
def sdk_echo_agent() -> list[str]:
    """The command that runs the SDK's ``examples/echo_agent.py`` with this venv's Python."""
    script = SDK_EXAMPLES / "echo_agent.py"
    if not script.is_file():
        pytest.fail(f"{script} is missing: run ./scripts/setup (it fetches the SDK's examples)")
    return [sys.executable, str(script)]


@pytest.fixture
def sdk_slow_agent() -> list[str]:
    """The command that runs ``sdk_slow_agent.py`` (ticks until cancelled) on the SDK."""
    return [sys.executable, str(SDK_SLOW_AGENT)]
