"""The public API is what `__all__` says, and every name in it exists."""

from __future__ import annotations

import importlib

import pytest

PUBLIC_MODULES = [
    "subagents",
    "subagents.cancel",
    "subagents.protocol",
    "subagents.protocol.acp",
    "subagents.protocol.claude",
    "subagents.protocol.errors",
    "subagents.protocol.framing",
    "subagents.protocol.jsonrpc",
    "subagents.rpc",
    "subagents.transports",
    "subagents.transports.acp_agent",
    "subagents.transports.acp_client",
    "subagents.transports.acp_sandbox",
    "subagents.transports.process",
    "subagents.agents",
    "subagents.harness",
    "subagents.providers",
    "subagents.providers.acp",
    "subagents.providers.probe",
    "subagents.providers.scripted",
    "subagents.testing",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_name_in_all_exists_and_all_is_a_sorted_tuple(name: str) -> None:
    """House style: public API in a tuple `__all__`; internals are underscored."""
    module = importlib.import_module(name)
    exported = module.__all__
    assert isinstance(exported, tuple)
    missing = [attr for attr in exported if not hasattr(module, attr)]
    assert missing == []
    assert len(set(exported)) == len(exported)


def test_the_console_script_reports_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`subagents --version` works from the installed entry point."""
    from subagents import __version__
    from subagents.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"subagents {__version__}\n"


def test_cancel_signal_is_one_class_under_each_of_its_names() -> None:
    """Issue 18 (clean edges): ``CancelSignal`` lives in the neutral ``subagents.cancel``;
    ``subagents``, ``subagents.providers`` and ``subagents.providers.contract`` name the same
    class."""
    import subagents
    from subagents import providers
    from subagents.cancel import CancelSignal
    from subagents.providers import contract

    assert subagents.CancelSignal is providers.CancelSignal is contract.CancelSignal
    assert contract.CancelSignal is CancelSignal
