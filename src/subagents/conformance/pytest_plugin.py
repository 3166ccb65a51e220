"""The conformance suite as a pytest plugin, for agent authors who prefer pytest.

Installed with the package (entry point ``pytest11``), inert unless ``--acp-agent`` is given.
From the directory that holds the agent, as its author's shell runs it::

    pytest --acp-agent "python my_agent.py"
    pytest --acp-agent "python my_agent.py" -k "INIT or CANCEL"
    pytest --acp-agent "python my_agent.py" -m "acp_mandatory and not acp_cancel"

Collection
    ``--acp-agent`` adds one collector to the session, after whatever else it collects: the
    registry of requirements, ``subagents/conformance/requirements.py`` (the module that
    defines them, named by its place in the package, so the ids do not depend on where the
    package is installed). It holds one item per requirement, named by its id::

        subagents/conformance/requirements.py::ACP-INIT-003

    "collected N items" counts them, and pytest's own ``-k``, ``-m``, ``--deselect`` and
    ``--lf`` select among them. ACP-SCHEMA-001/002 come last (see *Running*). Each item's
    location is the line of ``requirements.py`` that defines its requirement.

Markers (registered, so ``--strict-markers`` accepts them in ``-m``)
    ``acp_conformance`` on every item; the tier: ``acp_mandatory``, ``acp_capability``,
    ``acp_advisory``, ``acp_informational``; the area, the id's middle part in lower case:
    ``acp_init``, ``acp_cancel``, ``acp_mcp``, ... (``ACP-INFO-PARSE-001`` is ``acp_info``).

Running
    The agent runs as the user's shell would run it: the command is split with shell syntax
    and passed on unchanged, in the invocation directory (``--acp-cwd DIR`` for another), so
    ``python my_agent.py`` finds the script; only each check's ACP session directory is
    private. When the first selected item is set up, one probe starts the agent, then every
    selected check runs in a background event loop, at most ``--acp-jobs`` at once, each in
    fresh agent processes; each item waits for its own result. The schema requirements run
    after the others and judge every message the agent sent in the run's checks.

    An agent that cannot be started (a missing command, a process that exits at once, no
    answer to ``initialize`` within ``--acp-startup-timeout``) is ONE error, at the setup of
    the first item, saying why (cause, exit status, stderr tail, hint); nothing else runs and
    pytest exits non-zero.

Outcomes (as the ``subagents conformance`` verdicts)
    * a failing mandatory or capability requirement fails its test: the reason, the citation,
      the transcript's last lines, the stderr tail;
    * an advisory failure passes by default (CI stays green, as the CLI says conformant), with
      the finding in the test's ``user_properties`` (``acp_finding``; JUnit ``<properties>``)
      and in the terminal summary; ``--acp-advisory-failures`` makes it a failure;
    * skip, not-exercised, blocked, inconclusive and n/a are skips whose reason starts with the
      status and says the cause (``blocked by ACP-...: ...``); with ``--acp-strict`` an
      unjudged mandatory (or applicable capability) requirement fails instead;
    * the baseline's (``--acp-baseline``) expected and intermittent failures are xfails; a
      stale entry (expected to fail, passes) passes and is named in the terminal summary;
    * informational findings pass, with the observation in ``user_properties``
      (``acp_info``).

    Every item carries ``acp_status`` (the suite's status) and the check's notes (``acp_note``)
    in its ``user_properties``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import math
import re
import shlex
import tempfile
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import ExitStack
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import anyio.from_thread
import pytest

from .requirements import REQUIREMENTS, Requirement, Tier

if TYPE_CHECKING:
    from .framework import AgentPool, Options, Probe, StartFailure
    from .runner import Baseline, RequirementResult

# The runner, the checks and the harness are imported only when --acp-agent is given: the
# plugin is loaded into every pytest run of an environment that has the package installed.

__all__ = ("NODE_PATH", "ConformanceFailure", "ConformanceItem", "RequirementsFile")

NODE_PATH = "subagents/conformance/requirements.py"
"""The file part of every item's node id: the module that defines the requirements."""

_SUITE = pytest.StashKey["_Suite"]()
_T = TypeVar("_T")

_TRANSCRIPT_LINES = 25
"""How many lines of the transcript a failure shows (the JSON report of the CLI has it all)."""


class ConformanceFailure(Exception):
    """A requirement failed (or, with ``--acp-strict``, could not be judged)."""

    def __init__(self, result: RequirementResult, *, unjudged: bool = False) -> None:
        super().__init__(result.message)
        self.result = result
        self.unjudged = unjudged


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-conformance", "ACP conformance suite (subagents)")
    group.addoption(
        "--acp-agent",
        metavar="COMMAND",
        help="run the conformance suite against this agent command (shell syntax, run in the "
        "invocation directory as the shell would)",
    )
    group.addoption(
        "--acp-cwd",
        metavar="DIR",
        help="the agent's working directory (default: the invocation directory)",
    )
    group.addoption(
        "--acp-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable for the agent (repeatable)",
    )
    group.addoption(
        "--acp-jobs",
        type=int,
        metavar="N",
        help="checks run at once (default: the cores this process may use)",
    )
    group.addoption("--acp-auth-method", metavar="ID", help="authenticate with this method first")
    group.addoption(
        "--acp-allow-logout",
        action="store_true",
        help="exercise logout when advertised (it may revoke the credentials the agent uses)",
    )
    group.addoption(
        "--acp-baseline", metavar="FILE", help="expected failures (JSON baseline): xfails"
    )
    group.addoption(
        "--acp-strict",
        action="store_true",
        help="fail a mandatory requirement that could not be judged (skipped, blocked, ...)",
    )
    group.addoption(
        "--acp-advisory-failures",
        action="store_true",
        help="fail the tests of failing advisory requirements (default: they pass, with the "
        "finding in user_properties and the terminal summary)",
    )
    for flag, (_, kind, metavar, what) in _SUITE_OPTIONS.items():
        group.addoption(flag, type=kind, metavar=metavar, help=f"{what} (default: the CLI's)")


_SUITE_OPTIONS: dict[str, tuple[str, type, str, str]] = {
    "--acp-timeout": ("timeout", float, "SECONDS", "bound on each answer"),
    "--acp-startup-timeout": (
        "startup_timeout",
        float,
        "SECONDS",
        "bound on the answer to initialize",
    ),
    "--acp-check-timeout": (
        "check_timeout",
        float,
        "SECONDS",
        "bound on one check; twice it for the checks that start several agent processes or run "
        "many turns",
    ),
    "--acp-prompt": ("prompt", str, "TEXT", "an ordinary prompt"),
    "--acp-cancel-prompt": (
        "cancel_prompt",
        str,
        "TEXT",
        "a prompt the agent works on long enough to be cancelled",
    ),
    "--acp-cancel-rounds": (
        "cancel_rounds",
        int,
        "N",
        "cancelled turns of the cancel checks, each cancelled at another moment",
    ),
    "--acp-fs-prompt": (
        "fs_prompt",
        str,
        "TEXT",
        "a prompt that makes the agent read and write files through the client",
    ),
    "--acp-terminal-prompt": (
        "terminal_prompt",
        str,
        "TEXT",
        "a prompt that makes the agent run a command in a client terminal",
    ),
    "--acp-tool-prompt": (
        "tool_prompt",
        str,
        "TEXT",
        "a prompt that makes the agent call a tool that asks the client's permission",
    ),
    "--acp-plan-prompt": ("plan_prompt", str, "TEXT", "a prompt that makes the agent send a plan"),
    "--acp-elicitation-prompt": (
        "elicitation_prompt",
        str,
        "TEXT",
        "a prompt that makes the agent ask the user (elicitation/create)",
    ),
}
"""Options that set a field of :class:`~.framework.Options`: flag -> (field, type, metavar,
help). Unset, the field keeps the suite's default (the same as ``subagents conformance``)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "acp_conformance: a requirement of the ACP conformance suite"
    )
    for tier in Tier:
        config.addinivalue_line(
            "markers", f"acp_{tier.value}: an ACP conformance requirement of the {tier.value} tier"
        )
    for area in sorted({r.area for r in REQUIREMENTS.values()}):
        config.addinivalue_line(
            "markers", f"acp_{area.lower()}: the ACP conformance requirements ACP-{area}-..."
        )
    agent = cast("str | None", config.getoption("--acp-agent"))
    if agent is None:
        return
    suite = _Suite(
        _options(config, agent),
        jobs=_jobs(config),
        baseline=_baseline(config),
        strict=bool(config.getoption("--acp-strict")),
        advisory_failures=bool(config.getoption("--acp-advisory-failures")),
    )
    config.stash[_SUITE] = suite
    config.add_cleanup(suite.close)


def _options(config: pytest.Config, agent: str) -> Options:
    try:
        command = shlex.split(agent)
    except ValueError as exc:
        raise pytest.UsageError(f"--acp-agent {agent!r}: {exc}") from exc
    if not command:
        raise pytest.UsageError("--acp-agent: give the agent command")
    invoked_in = config.invocation_params.dir
    cwd = invoked_in
    given = cast("str | None", config.getoption("--acp-cwd"))
    if given is not None:
        cwd = (invoked_in / given).resolve()
        if not cwd.is_dir():
            raise pytest.UsageError(f"--acp-cwd {given}: no such directory")
    env: dict[str, str] = {}
    for item in cast(list[str], config.getoption("--acp-env")):
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise pytest.UsageError(f"--acp-env wants NAME=VALUE, got {item!r}")
        env[name] = value
    fields: dict[str, Any] = {}
    for flag, (field, *_) in _SUITE_OPTIONS.items():
        value = config.getoption(flag)
        if value is not None:
            fields[field] = value
    if fields.get("cancel_rounds", 1) < 1:
        raise pytest.UsageError("--acp-cancel-rounds must be at least 1")
    from .framework import Options

    return Options(
        command=tuple(command),
        env=env,
        cwd=cwd,
        auth_method=cast("str | None", config.getoption("--acp-auth-method")),
        allow_logout=bool(config.getoption("--acp-allow-logout")),
        **fields,
    )


def _jobs(config: pytest.Config) -> int:
    jobs = cast("int | None", config.getoption("--acp-jobs"))
    if jobs is None:
        from .runner import default_jobs

        return default_jobs()
    if jobs < 1:
        raise pytest.UsageError("--acp-jobs must be at least 1")
    return jobs


def _baseline(config: pytest.Config) -> Baseline:
    from .report import load_baseline
    from .runner import Baseline

    path = cast("str | None", config.getoption("--acp-baseline"))
    if not path:
        return Baseline({})
    try:
        baseline = load_baseline(Path(config.invocation_params.dir, path))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc
    unknown = sorted(set(baseline) - set(REQUIREMENTS))
    if unknown:
        raise pytest.UsageError(
            f"--acp-baseline {path} names unknown requirement(s) {', '.join(unknown)}"
        )
    return baseline


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Add the suite to what the session collects (after the rest), when --acp-agent is given."""
    report = yield
    if isinstance(collector, pytest.Session) and _SUITE in collector.config.stash and report.passed:
        report.result.append(RequirementsFile.from_parent(collector))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A skip of a requirement is reported at the line that defines it (not in this module)."""
    report = yield
    if isinstance(item, ConformanceItem) and report.skipped and isinstance(report.longrepr, tuple):
        path, line, _ = item.location
        if line is not None:  # location lines count from 0, a skip's from 1
            report.longrepr = (str(item.config.rootpath / path), line + 1, report.longrepr[2])
    return report


class RequirementsFile(pytest.File):
    """The registry of requirements as a test file: one item per requirement."""

    @classmethod
    def from_parent(cls, parent: pytest.Session, **kwargs: Any) -> RequirementsFile:  # pyright: ignore[reportIncompatibleMethodOverride]
        # Its path is the invocation directory, so the conftest files that apply there apply
        # to the suite's items too; its id is the registry module's place in the package.
        return cast(
            RequirementsFile,
            super().from_parent(  # pyright: ignore[reportUnknownMemberType]
                parent,
                path=parent.config.invocation_params.dir,
                name=NODE_PATH,
                nodeid=NODE_PATH,
                **kwargs,
            ),
        )

    def collect(self) -> Iterator[ConformanceItem]:
        from .runner import RUN_WIDE

        ordered = sorted(REQUIREMENTS.values(), key=lambda r: r.id in RUN_WIDE)
        for requirement in ordered:
            yield ConformanceItem.from_parent(self, requirement=requirement)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return (_registry_path(), None, "ACP conformance requirements")


class ConformanceItem(pytest.Item):
    """One requirement of the suite, run as a test."""

    def __init__(self, *, requirement: Requirement, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType]
        self.requirement = requirement
        for marker in _markers(requirement):
            self.add_marker(marker)

    @classmethod
    def from_parent(  # pyright: ignore[reportIncompatibleMethodOverride]
        cls, parent: RequirementsFile, *, requirement: Requirement
    ) -> ConformanceItem:
        return cast(
            ConformanceItem,
            super().from_parent(  # pyright: ignore[reportUnknownMemberType]
                parent, name=requirement.id, requirement=requirement
            ),
        )

    def setup(self) -> None:
        suite = self.config.stash[_SUITE]
        suite.start([i.requirement for i in self.session.items if isinstance(i, ConformanceItem)])
        failure = suite.start_failure()
        if failure is not None:
            # The run's one error: a setup error of the first item (pytest renders it from the
            # message alone), and the session stops after it.
            self.session.shouldfail = f"the agent could not be started: {failure.describe()}"
            pytest.fail(_describe_start_failure(failure, suite.options), pytrace=False)

    def runtest(self) -> None:
        from .runner import UNJUDGED, Status

        suite = self.config.stash[_SUITE]
        result = suite.result(self.requirement)
        self.user_properties.append(("acp_status", result.status.value))
        self.user_properties.extend(("acp_note", note) for note in result.notes)
        expected = suite.baseline.get(self.requirement.id)
        tier = self.requirement.tier
        if result.status is Status.FAIL:
            if expected is not None:
                pytest.xfail(f"expected by the baseline: {expected}")
            if tier is Tier.INFORMATIONAL or (
                tier is Tier.ADVISORY and not suite.advisory_failures
            ):
                self.user_properties.append(("acp_finding", result.message))
                self.user_properties.append(("acp_citation", self.requirement.citation))
                return
            raise ConformanceFailure(result)
        if result.status in UNJUDGED or result.status is Status.NOT_APPLICABLE:
            if suite.strict and result.unjudged and expected is None:
                raise ConformanceFailure(result, unjudged=True)
            pytest.skip(_reason(result))
        if result.status is Status.INFO:
            self.user_properties.append(("acp_info", result.message))

    def repr_failure(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            return _describe_failure(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return (_registry_path(), _definition_lines().get(self.requirement.id), self.name)


def _markers(requirement: Requirement) -> tuple[str, ...]:
    return ("acp_conformance", f"acp_{requirement.tier.value}", f"acp_{requirement.area.lower()}")


@cache
def _registry_path() -> str:
    from . import requirements

    return str(Path(requirements.__file__).resolve())


@cache
def _definition_lines() -> Mapping[str, int]:
    """Requirement id -> the (0-based) line of requirements.py that defines it."""
    lines: dict[str, int] = {}
    text = Path(_registry_path()).read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines()):
        found = re.fullmatch(r'\s*"(ACP-[A-Z-]+-\d{3})",\s*', line)
        if found:
            lines.setdefault(found.group(1), number)
    return lines


def _reason(result: RequirementResult) -> str:
    """A skip's reason: the status, then the cause."""
    status, message = result.status.value, _as_plugin_flags(result.message)
    if message.startswith((status, "blocked by")):
        return message
    return f"{status}: {message}" if message else status


def _describe_failure(failure: ConformanceFailure) -> str:
    result = failure.result
    requirement = result.requirement
    first = _as_plugin_flags(result.message)
    if failure.unjudged:
        first = f"not judged (--acp-strict): {_reason(result)}"
    lines = [
        f"{first} [{requirement.tier.value}: {requirement.citation}]",
        f"requirement: {requirement.id} [{requirement.tier.value}] {requirement.text}",
        f"citation: {requirement.citation}",
        f"what the suite does: {_as_plugin_flags(requirement.checks)}",
        f"how to fix: {_as_plugin_flags(requirement.fix)}",
    ]
    transcript = [entry for entry in result.transcript if "from" in entry]
    if transcript:
        omitted = len(transcript) - _TRANSCRIPT_LINES
        more = f", {omitted} earlier not shown" if omitted > 0 else ""
        lines.append(f"transcript (last lines{more}; <- from the agent, -> to it):")
        for entry in transcript[-_TRANSCRIPT_LINES:]:
            arrow = "<-" if entry.get("from") == "agent" else "->"
            body = str(entry.get("text", "<not UTF-8>"))
            if len(body) > 300:
                body = body[:300] + "..."
            lines.append(f"  [{entry.get('process')}] {arrow} {body}")
    if result.stderr_tail:
        lines.append("stderr tail:")
        lines.append(result.stderr_tail[-1500:])
    return "\n".join(lines)


def _describe_start_failure(failure: StartFailure, options: Options) -> str:
    lines = [
        f"could not start the agent: {failure.describe()}",
        f"command: {shlex.join(options.command)}",
        f"in: {options.cwd}",
    ]
    if failure.stdout_lines:
        lines.append("its first lines on stdout:")
        lines.extend(f"  {line}" for line in failure.stdout_lines)
    if failure.stderr_tail.strip():
        lines.append("stderr tail:")
        lines.append(failure.stderr_tail.rstrip())
    else:
        lines.append("stderr: (nothing)")
    lines.append(f"hint: {_as_plugin_flags(failure.hint)}")
    lines.append("nothing else was run")
    return "\n".join(lines)


_CLI_FLAGS = re.compile(
    r"(?<![\w-])--(startup-timeout|check-timeout|timeout|cwd|env|auth-method|allow-logout|jobs"
    r"|strict|baseline|cancel-rounds|[a-z]+-prompt|prompt)\b"
)


def _as_plugin_flags(text: str) -> str:
    """A message of the suite with the CLI's flags named as this plugin's (``--acp-cwd``)."""
    text = text.replace(
        "subagents conformance -- python my_agent.py", 'pytest --acp-agent "python my_agent.py"'
    )
    return _CLI_FLAGS.sub(r"--acp-\1", text)


class _Suite:
    """The checks of one pytest session, run in a background event loop.

    :meth:`start` (at the setup of the first selected item) probes the agent and starts every
    selected check, at most ``jobs`` at once; each item then waits in :meth:`result` for its
    own requirement. :meth:`close` (at the end of the session) cancels what still runs: every
    agent process gets its shutdown ladder.
    """

    def __init__(
        self,
        options: Options,
        *,
        jobs: int,
        baseline: Baseline,
        strict: bool,
        advisory_failures: bool,
    ) -> None:
        self.options = options
        self.jobs = jobs
        self.baseline = baseline
        self.strict = strict
        self.advisory_failures = advisory_failures
        self.results: dict[str, RequirementResult] = {}
        """Every result published so far (for the terminal summary)."""
        self.probe: Probe | None = None
        self._stack = ExitStack()
        self._started = False
        self._deadline = math.inf
        self._probed: Future[Probe] = Future()
        self._futures: dict[str, Future[RequirementResult]] = {}
        self._task: Future[None] | None = None

    def start(self, requirements: Sequence[Requirement]) -> None:
        """Probe the agent and start the checks of ``requirements`` (once per session)."""
        if self._started:
            return
        self._started = True
        workdir = self._stack.enter_context(tempfile.TemporaryDirectory(prefix="acp-conformance-"))
        options = dataclasses.replace(self.options, workdir=Path(workdir).resolve())
        self._futures = {r.id: Future() for r in requirements}
        # A bound on the whole run, never reached unless the suite itself hangs: every check
        # is bounded by its check_bound and retried at most once.
        rounds = math.ceil(len(requirements) / self.jobs) + 1
        longest = max((options.check_bound(r.id) for r in requirements), default=0.0)
        self._deadline = time.monotonic() + options.startup_timeout + 2 * longest * rounds + 60
        portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
        self._stack.callback(self._cancel, portal)
        self._task = portal.start_task_soon(self._run, options, list(requirements))

    def start_failure(self) -> StartFailure | None:
        """Wait for the probe; why the agent could not be started, if it could not."""
        return self._wait(self._probed, "the probe").start_failure

    def result(self, requirement: Requirement) -> RequirementResult:
        """Wait for the result of ``requirement``'s check."""
        future = self._futures.get(requirement.id)
        if future is None:
            raise RuntimeError(f"{requirement.id} was not selected when the suite started")
        return self._wait(future, requirement.id)

    def close(self) -> None:
        self._stack.close()

    def _wait(self, future: Future[_T], what: str) -> _T:
        assert self._task is not None
        remaining = max(0.0, self._deadline - time.monotonic())
        waited: list[Future[Any]] = [future, self._task]
        concurrent.futures.wait(
            waited, timeout=remaining, return_when=concurrent.futures.FIRST_COMPLETED
        )
        if future.done():
            return future.result()
        if self._task.done():
            self._task.result()  # the suite's own defect, raised here
            raise RuntimeError(f"the suite ended without an answer for {what}")
        raise TimeoutError(f"no answer for {what} within the suite's bound")

    @staticmethod
    def _cancel(portal: anyio.from_thread.BlockingPortal) -> None:
        with contextlib.suppress(RuntimeError):  # already stopped
            portal.call(portal.stop, True)

    async def _run(self, options: Options, requirements: list[Requirement]) -> None:
        from .framework import AgentPool

        async with AgentPool(options) as pool:
            await self._probe_and_run(options, requirements, pool)

    async def _probe_and_run(
        self, options: Options, requirements: list[Requirement], pool: AgentPool
    ) -> None:
        from .framework import SharedExchanges
        from .runner import RUN_WIDE, batches, judge_run_wide, probe_agent, probe_pool, run_batch

        try:
            probe = await probe_agent(options, pool=probe_pool(pool, requirements))
        except Exception as exc:
            self._probed.set_exception(exc)
            raise
        self.probe = probe
        self._probed.set_result(probe)
        if probe.start_failure is not None:
            return
        limiter = anyio.CapacityLimiter(self.jobs)
        shared = SharedExchanges()
        done: dict[str, RequirementResult] = {}

        async def one(batch: list[Requirement], publish: bool) -> None:
            def record(requirement: Requirement, result: RequirementResult | Exception) -> None:
                if isinstance(result, Exception):  # a defect of the suite: the item shows it
                    self._futures[requirement.id].set_exception(result)
                    return
                if requirement.id in self.baseline:
                    result.expected_failure = self.baseline[requirement.id]
                    result.intermittent = requirement.id in self.baseline.intermittent
                done[requirement.id] = result
                if publish:
                    self._publish(result)

            async with limiter:
                await run_batch(batch, options, probe, record, shared=shared, pool=pool)

        # The schema requirements judge every message of the other checks: they run after them
        # (their shared exchange is the one the first round made).
        async with anyio.create_task_group() as tg:
            for batch in batches(r for r in requirements if r.id not in RUN_WIDE):
                tg.start_soon(one, batch, True)
        run_wide = [r for r in requirements if r.id in RUN_WIDE]
        async with anyio.create_task_group() as tg:
            for batch in batches(run_wide):
                tg.start_soon(one, batch, False)
        judge_run_wide(done)
        for requirement in run_wide:
            if requirement.id in done:
                self._publish(done[requirement.id])

    def _publish(self, result: RequirementResult) -> None:
        self.results[result.requirement.id] = result
        self._futures[result.requirement.id].set_result(result)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    suite = terminalreporter.config.stash.get(_SUITE, None)
    if suite is None or not suite.results:
        return
    from .runner import Status

    results = sorted(suite.results.values(), key=lambda r: r.requirement.id)
    advisory = [
        r
        for r in results
        if r.status is Status.FAIL
        and r.expected_failure is None
        and r.requirement.tier is Tier.ADVISORY
        and not suite.advisory_failures
    ]
    unjudged = [r for r in results if r.unjudged and r.expected_failure is None]
    stale = [r for r in results if r.stale_baseline]
    if not (advisory or unjudged or stale):
        return
    write = terminalreporter.write_line
    terminalreporter.write_sep("=", "ACP conformance")
    if advisory:
        write(
            f"{len(advisory)} advisory finding(s), passed (--acp-advisory-failures makes them "
            "failures):"
        )
        for r in advisory:
            write(f"  {r.requirement.id}: {r.message} [{r.requirement.citation}]")
    if unjudged:
        how = "failed (--acp-strict)" if suite.strict else "--acp-strict makes them failures"
        write(f"{len(unjudged)} mandatory requirement(s) could not be judged ({how}):")
        for r in unjudged:
            write(f"  {r.requirement.id}: {_reason(r)}")
    if stale:
        write(
            "stale baseline entries (expected to fail, now pass): "
            + ", ".join(r.requirement.id for r in stale)
        )
