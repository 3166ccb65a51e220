"""The conformance suite as a pytest plugin, for agent authors who prefer pytest.

Installed with the package (entry point ``pytest11``), inert unless ``--acp-agent`` is given::

    pytest --acp-agent "python -m my_agent" -k "INIT or CANCEL"

adds one test item per requirement (named by its id, e.g. ``ACP-INIT-003``) to the session.
Each runs the same check as ``subagents conformance`` in fresh agent processes. A failing
mandatory or capability requirement fails its test (with the transcript's last lines); an
advisory failure fails too, marked by its tier in the message; skipped checks, closed gates
and authentication blocks are skips; the baseline's expected failures are xfails;
informational findings pass and are attached as the test's ``user_properties``. The schema
requirements (ACP-SCHEMA-001/002) run last: they judge every message the agent sent in the
session's earlier checks too.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from .framework import Options, Probe
from .requirements import REQUIREMENTS, Requirement
from .runner import RUN_WIDE, RequirementResult, Status, judge_run_wide, probe_agent, run_check

__all__ = ("ConformanceFailure", "ConformanceItem")

_PROBE = pytest.StashKey[Probe]()
_WORKDIR = pytest.StashKey[Path]()
_RESULTS = pytest.StashKey[dict[str, RequirementResult]]()


class ConformanceFailure(Exception):
    def __init__(self, result: RequirementResult) -> None:
        super().__init__(result.message)
        self.result = result


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-conformance", "ACP conformance suite (subagents)")
    group.addoption("--acp-agent", metavar="COMMAND", help="agent command to check (shell syntax)")
    group.addoption("--acp-auth-method", metavar="ID", help="authenticate with this method first")
    group.addoption(
        "--acp-allow-logout",
        action="store_true",
        help="exercise logout when advertised (it may revoke the credentials the agent uses)",
    )
    group.addoption("--acp-timeout", type=float, default=15.0, help="bound on each answer")
    group.addoption("--acp-startup-timeout", type=float, default=30.0, help="bound on initialize")
    group.addoption("--acp-prompt", default="Hello", help="text of an ordinary prompt")
    group.addoption(
        "--acp-cancel-prompt", default="slow", help="a prompt that runs long enough to cancel"
    )
    group.addoption("--acp-baseline", metavar="FILE", help="expected failures (JSON baseline)")


def _options(config: pytest.Config) -> Options:
    command = shlex.split(cast(str, config.getoption("--acp-agent")))
    if command and "/" in command[0]:
        command[0] = str(Path(command[0]).absolute())
    workdir = config.stash.get(_WORKDIR, None)
    if workdir is None:
        import tempfile

        workdir = Path(tempfile.mkdtemp(prefix="acp-conformance-")).resolve()
        config.stash[_WORKDIR] = workdir
    return Options(
        command=tuple(command),
        workdir=workdir,
        timeout=cast(float, config.getoption("--acp-timeout")),
        startup_timeout=cast(float, config.getoption("--acp-startup-timeout")),
        auth_method=config.getoption("--acp-auth-method"),
        allow_logout=bool(config.getoption("--acp-allow-logout")),
        prompt=cast(str, config.getoption("--acp-prompt")),
        cancel_prompt=cast(str, config.getoption("--acp-cancel-prompt")),
    )


def _baseline(config: pytest.Config) -> Mapping[str, str]:
    path = config.getoption("--acp-baseline")
    if not path:
        return {}
    from .report import load_baseline

    return load_baseline(path)


class ConformanceItem(pytest.Item):
    """One requirement of the suite, run as a test."""

    def __init__(self, *, requirement: Requirement, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType]
        self.requirement = requirement
        self.add_marker(pytest.mark.acp_conformance)

    def runtest(self) -> None:
        config = self.config
        options = _options(config)
        probe = config.stash.get(_PROBE, None)
        if probe is None:
            probe = anyio.run(probe_agent, options)
            config.stash[_PROBE] = probe
        result = anyio.run(run_check, self.requirement, options, probe)
        # The schema requirements are judged over every message of the session's checks:
        # they run last (see pytest_collection_modifyitems) and see the results before them.
        earlier = config.stash.setdefault(_RESULTS, {})
        earlier[self.requirement.id] = result
        if self.requirement.id in RUN_WIDE:
            judge_run_wide({**earlier, self.requirement.id: result})
        expected = _baseline(config).get(self.requirement.id)
        for note in result.notes:
            self.user_properties.append(("note", note))
        if result.status is Status.FAIL:
            if expected is not None:
                pytest.xfail(f"expected by the baseline: {expected}")
            raise ConformanceFailure(result)
        if result.status in (Status.SKIP, Status.NOT_APPLICABLE, Status.BLOCKED):
            pytest.skip(f"{result.status.value}: {result.message}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            result = excinfo.value.result
            requirement = result.requirement
            lines = [
                f"{requirement.id} [{requirement.tier.value}] {requirement.text}",
                f"citation: {requirement.citation}",
                f"FAILED: {result.message}",
            ]
            if result.transcript:
                lines.append("transcript (last lines):")
                for entry in result.transcript[-25:]:
                    arrow = "<-" if entry.get("from") == "agent" else "->"
                    body = entry.get("text", "<not UTF-8>")
                    lines.append(f"  [{entry.get('process')}] {arrow} {str(body)[:300]}")
            if result.stderr_tail:
                lines.append("stderr tail:")
                lines.append(result.stderr_tail[-1500:])
            return "\n".join(lines)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return ("acp-conformance", None, f"{self.requirement.id}: {self.requirement.text}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "acp_conformance: a requirement of the ACP conformance suite"
    )


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.getoption("--acp-agent"):
        return
    added: list[pytest.Item] = [
        ConformanceItem.from_parent(  # pyright: ignore[reportUnknownMemberType]
            session, name=requirement.id, requirement=requirement
        )
        for requirement in REQUIREMENTS.values()
    ]
    added.sort(key=lambda item: cast(ConformanceItem, item).requirement.id in RUN_WIDE)
    keyword = config.getoption("keyword")
    if keyword:
        from _pytest.mark import KeywordMatcher  # pyright: ignore[reportPrivateImportUsage]
        from _pytest.mark.expression import Expression

        expression = Expression.compile(keyword)
        added = [item for item in added if expression.evaluate(KeywordMatcher.from_item(item))]
    items.extend(added)
