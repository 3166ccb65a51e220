"""Lazy exports are visible to type checkers (issue 19, point 4: types catch typos).

``subagents.protocol.acp``, ``subagents.protocol.codex``, ``subagents.transports``,
``subagents.conformance`` and ``subagents.harness.llm`` load their exports on first use through
a module ``__getattr__``; type checkers see ``TYPE_CHECKING`` imports instead, so a misspelt
name is an error under strict pyright while the packages stay lazy at run time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

LAZY_PACKAGES = (
    "subagents.conformance",
    "subagents.harness.llm",
    "subagents.protocol.acp",
    "subagents.protocol.codex",
    "subagents.transports",
)

# One statement a line; a line tagged ``# typo: NAME`` must get an error naming NAME, every
# other line (after the imports) none at all.
CLIENT = textwrap.dedent(
    """\
    from subagents import conformance, transports
    from subagents.conformance import Nope  # typo: Nope
    from subagents.conformance import run_suite
    from subagents.harness import llm
    from subagents.protocol import acp, codex
    from subagents.protocol.acp import NoSuchModel  # typo: NoSuchModel
    from subagents.transports import connect_agent

    a = transports.connect_agnet  # typo: connect_agnet
    b = acp.NoSuchModel  # typo: NoSuchModel
    c = codex.NoSuchItem  # typo: NoSuchItem
    d = llm.AnthropicAdaptor  # typo: AnthropicAdaptor
    e = conformance.run_suit  # typo: run_suit
    ok = (
        transports.connect_agent,
        transports.ClientSandbox,
        connect_agent,
        acp.SessionNotification,
        acp.PROTOCOL_VERSION,
        acp.from_wire,
        acp.JsonValue,
        codex.ThreadStartParams,
        codex.to_wire,
        llm.AnthropicAdapter,
        llm.OpenAIChatAdapter,
        conformance.Options,
        run_suite,
    )
    reveal_type(acp.SessionNotification)
    reveal_type(transports.connect_agent)
    """
)


def test_pyright_reports_misspelt_lazy_exports_and_accepts_the_real_ones(tmp_path: Path) -> None:
    """Issue 19 (point 4): lazy exports are visible to type checkers, so strict pyright
    reports a misspelt name (attribute or ``from`` import) of a lazy package as an error and
    types the real names."""
    (tmp_path / "client.py").write_text(CLIENT, encoding="utf-8")
    (tmp_path / "pyrightconfig.json").write_text(
        json.dumps({"typeCheckingMode": "strict", "pythonVersion": "3.11"}), encoding="utf-8"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--outputjson",
            "--pythonpath",
            sys.executable,
            "--project",
            str(tmp_path),
            str(tmp_path / "client.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=50,
        check=False,
    )
    report = json.loads(result.stdout)
    errors: dict[int, list[str]] = {}
    infos: list[str] = []
    for diag in report["generalDiagnostics"]:
        line = diag["range"]["start"]["line"] + 1
        if diag["severity"] == "error":
            errors.setdefault(line, []).append(diag["message"])
        else:
            infos.append(diag["message"])

    lines = CLIENT.splitlines()
    first_use = lines.index("") + 1
    for number, text in enumerate(lines, start=1):
        if "# typo: " in text:
            typo = text.rsplit("# typo: ", 1)[1]
            assert any(typo in message for message in errors.get(number, [])), (text, errors)
        elif number > first_use:
            assert number not in errors, (text, errors[number])
    assert not {n for n in errors if n <= first_use and "# typo: " not in lines[n - 1]}, errors
    assert any("type[SessionNotification]" in message for message in infos), infos
    assert any("AgentConnection" in message for message in infos), infos  # connect_agent's type


def test_the_lazy_packages_still_import_nothing_heavy() -> None:
    """Runtime is unchanged: importing the lazy packages loads neither pydantic nor httpx,
    nor the ACP and Codex models, nor the transports' endpoints."""
    code = textwrap.dedent(
        f"""\
        import json, sys
        for name in {LAZY_PACKAGES!r}:
            __import__(name)
        heavy = ("pydantic", "pydantic_core", "httpx", "subagents.protocol.acp._v1_generated",
                 "subagents.protocol.codex._models", "subagents.transports.acp_client",
                 "subagents.transports.acp_agent", "subagents.conformance.runner")
        print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=50
    )
    assert json.loads(result.stdout) == []
