"""``subagents serve``'s ``--allow-origin`` and ``--allow-host`` (issue 34): a value that is
not an origin or a host name refuses to start, one line and exit 2, for ``--listen`` and
``--a2a`` alike (the values reach the servers' shared check)."""

from __future__ import annotations

import pytest

from subagents.cli import main


@pytest.mark.parametrize("server", ["--listen", "--a2a"])
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--allow-origin", "*"),
        ("--allow-origin", "null"),
        ("--allow-origin", "https://app.example/page"),
        ("--allow-host", "evil.example/x"),
        ("--allow-host", ""),
    ],
)
def test_a_malformed_origin_or_host_refuses_to_start(
    server: str, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 34: ``--allow-origin ORIGIN`` and ``--allow-host NAME`` say what is wrong with a
    value (``*`` and ``null`` would let every page in) instead of serving without it."""
    if server == "--a2a":
        pytest.importorskip("a2a.server")
    assert main(["serve", server, "127.0.0.1:0", option, value]) == 2
    err = capsys.readouterr().err
    assert option in err
    assert len(err.strip().splitlines()) == 1
