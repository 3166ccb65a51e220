"""Runs the checks against an agent command: a probe, then the checks in their own processes.

:func:`run_suite` starts one probe connection (initialize and session/new) to learn what the
agent advertises, then runs the checks concurrently (at most ``jobs`` at once; each check starts
its own agent processes, so they do not interfere), each bounded by ``Options.check_bound``
(``check_timeout``, twice it for a long check). Checks that judge one shared exchange run one
after the other in one job, and so do the pooled checks, on the shared processes of an
:class:`~.framework.AgentPool` (:func:`batches`, :func:`run_batch`). A requirement whose
capability gate is closed is ``n/a``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import os
import shlex
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from .._exception_groups import sole_leaf
from ..transports.process import ProcessStartError
from . import checks as _checks  # registers every check
from .framework import (
    AUTH_REQUIRED,
    CHECKS,
    DISRUPTIVE,
    LONG,
    POOLED,
    SESSION_RESULT_GATE,
    SHARES,
    AgentPool,
    BlockedByAuth,
    CheckBlocked,
    CheckContext,
    CheckFailed,
    CheckInconclusive,
    CheckNotExercised,
    CheckSkipped,
    Options,
    Probe,
    SharedExchanges,
    StartFailure,
)
from .requirements import REQUIREMENTS, Requirement, Tier
from .wire import AgentWire, ClientSide, WireError, open_wire

if TYPE_CHECKING:
    from .remote import ThroughBridge

__all__ = (
    "AUTHENTICATION",
    "RUN_WIDE",
    "TRANSCRIPTS",
    "UNJUDGED",
    "AgentIdentity",
    "Baseline",
    "RequirementResult",
    "Status",
    "SuiteReport",
    "batches",
    "default_jobs",
    "identify",
    "judge_run_wide",
    "probe_agent",
    "probe_pool",
    "run_batch",
    "run_check",
    "run_suite",
)

del _checks

TRANSCRIPT_LINES = 400
"""At most this many lines of each process's transcript go into a report."""


class Status(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    """Could not be exercised this time (a race the agent won, an option not given)."""
    NOT_APPLICABLE = "n/a"
    BLOCKED = "blocked"
    """A precondition failed elsewhere (:attr:`RequirementResult.blocked_by`)."""
    NOT_EXERCISED = "not-exercised"
    """The agent never did what the requirement is about: nothing was judged."""
    INCONCLUSIVE = "inconclusive"
    """A set-up step timed out twice although the probe's succeeded (load on the machine)."""
    INFO = "info"


UNJUDGED = frozenset({Status.SKIP, Status.BLOCKED, Status.NOT_EXERCISED, Status.INCONCLUSIVE})
"""Statuses of an applicable requirement that was not judged (neither pass nor fail)."""

AUTHENTICATION = "authentication"
""":attr:`RequirementResult.blocked_by` of a check the agent's login requirement blocked."""


class Baseline(Mapping[str, str]):
    """Requirements an agent is known to fail, id -> reason: ``expected`` ones fail every run
    (a pass is reported as a stale entry), ``intermittent`` ones fail in some runs only (a race
    in the agent observed by the suite: a failure is expected, a pass is not stale)."""

    def __init__(
        self, expected: Mapping[str, str], intermittent: Mapping[str, str] | None = None
    ) -> None:
        self.expected = dict(expected)
        self.intermittent = dict(intermittent or {})
        both = sorted(set(self.expected) & set(self.intermittent))
        if both:
            raise ValueError(f"listed both as expected and as intermittent: {', '.join(both)}")

    def __getitem__(self, key: str) -> str:
        if key in self.intermittent:
            return self.intermittent[key]
        return self.expected[key]

    def __iter__(self) -> Iterator[str]:
        yield from self.expected
        yield from self.intermittent

    def __len__(self) -> int:
        return len(self.expected) + len(self.intermittent)


@dataclass
class RequirementResult:
    requirement: Requirement
    status: Status
    message: str = ""
    duration: float = 0.0
    notes: list[str] = field(default_factory=list[str])
    transcript: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """The exchange of each process the check started (kept for fail, skip and blocked)."""
    stderr_tail: str = ""
    expected_failure: str | None = None
    """The baseline's reason, when the baseline expects this requirement to fail."""
    intermittent: bool = False
    """The baseline knows this requirement fails only sometimes: a pass is not stale."""
    schema_errors: list[str] = field(default_factory=list[str])
    """Schema violations in the messages the agent sent during this check (each with the
    line), judged by ACP-SCHEMA-001 over the whole run."""
    unknown_fields: list[str] = field(default_factory=list[str])
    """Fields outside the schema in those messages (judged by ACP-SCHEMA-002)."""
    unstable_fields: list[str] = field(default_factory=list[str])
    """Fields of the protocol's unstable schema in those messages (informational)."""
    blocked_by: str | None = None
    """For ``blocked``: the requirement whose failure blocked this one, or
    :data:`AUTHENTICATION`."""
    attempts: int = 1
    """How many times the check ran (an inconclusive set-up is retried once)."""
    about: str | None = None
    """The method whose exchange the verdict is about (:attr:`CheckContext.about`)."""

    @property
    def judged(self) -> bool:
        """Whether a failure here makes the agent non-conformant."""
        return self.requirement.tier in (Tier.MANDATORY, Tier.CAPABILITY)

    @property
    def unjudged(self) -> bool:
        """A mandatory (or applicable capability) requirement that was neither passed nor
        failed: skipped, blocked, not exercised or inconclusive."""
        return self.judged and self.status in UNJUDGED

    @property
    def unexpected_failure(self) -> bool:
        return self.status is Status.FAIL and self.judged and self.expected_failure is None

    @property
    def stale_baseline(self) -> bool:
        """The baseline expects a failure, but the requirement passes now."""
        return (
            self.expected_failure is not None
            and not self.intermittent
            and self.status is Status.PASS
        )


@dataclass
class AgentIdentity:
    """The agent under test: how it was started, and what it said it is."""

    command: tuple[str, ...]
    cwd: str
    """The working directory it ran in."""
    name: str | None = None
    version: str | None = None
    title: str | None = None

    def describe(self) -> str:
        """``name version``, or the command when the agent sent no ``agentInfo``."""
        if self.name:
            return " ".join(part for part in (self.name, self.version) if part)
        return shlex.join(self.command)


@dataclass
class SuiteReport:
    command: tuple[str, ...]
    results: list[RequirementResult]
    duration: float
    agent: AgentIdentity | None = None
    probe_error: str | None = None
    auth_required: bool = False
    start_failure: StartFailure | None = None
    """The agent could not be started or did not answer ``initialize``: nothing was judged."""
    strict: bool = False
    """An unjudged mandatory requirement counts as a failure."""
    started_at: str = ""
    """When the run started (ISO 8601, UTC)."""
    bridge: ThroughBridge | None = None
    """The agent is served at a URL and was judged through ``subagents bridge``."""

    @property
    def unjudged(self) -> list[RequirementResult]:
        """Mandatory and applicable capability requirements that could not be judged."""
        return [r for r in self.results if r.unjudged and r.expected_failure is None]

    @property
    def verdict(self) -> str:
        if self.start_failure is not None:
            return "could not start"
        if any(r.unexpected_failure for r in self.results):
            return "non-conformant"
        if self.strict and self.unjudged:
            return "non-conformant"
        if any(
            r.status is Status.BLOCKED and r.judged and r.blocked_by == AUTHENTICATION
            for r in self.results
        ):
            return "blocked by authentication"
        return "conformant"

    @property
    def exit_code(self) -> int:
        """0 conformant; 1 non-conformant (a mandatory or applicable capability requirement
        failed unexpectedly, or with ``strict`` could not be judged); 3 blocked by
        authentication; 4 the agent could not be started (or did not answer initialize)."""
        return {
            "conformant": 0,
            "non-conformant": 1,
            "blocked by authentication": 3,
            "could not start": 4,
        }[self.verdict]

    def counts(self) -> dict[str, dict[str, int]]:
        """tier -> status -> count."""
        table: dict[str, dict[str, int]] = {}
        for result in self.results:
            row = table.setdefault(result.requirement.tier.value, {})
            row[result.status.value] = row.get(result.status.value, 0) + 1
        return table


def _transcript(ctx: CheckContext) -> tuple[list[dict[str, Any]], str]:
    entries: list[dict[str, Any]] = []
    tails: list[str] = []
    for number, wire in enumerate(ctx.wires, 1):
        judged = ctx.lines_of(wire)
        lines = judged[-TRANSCRIPT_LINES:]
        if len(judged) > len(lines):
            entries.append({"process": number, "omitted_lines": len(judged) - len(lines)})
        for line in lines:
            entry: dict[str, Any] = {
                "process": number,
                "t": round(line.t, 4),
                "from": line.direction,
            }
            try:
                text = line.raw.decode("utf-8")
            except UnicodeDecodeError:
                entry["base64"] = base64.b64encode(line.raw).decode()
            else:
                if len(text) > 20000:
                    entry["text"] = text[:20000]
                    entry["truncated_from"] = len(line.raw)
                else:
                    entry["text"] = text
            entries.append(entry)
        tail = wire.process.stderr_tail()[-4096:]
        if tail:
            tails.append(f"[process {number}] {tail}")
    return entries, "\n".join(tails)


async def probe_agent(options: Options, *, pool: AgentPool | None = None) -> Probe:
    """initialize (+ authenticate) and session/new once, to learn what the agent offers; a
    :class:`StartFailure` when it cannot be started or does not answer ``initialize``.

    With ``pool``, the probe's process is one of the pool's: once initialized (and
    authenticated) it stays, as the pool's shared process of the default client (one start
    less for the pooled checks); otherwise it is stopped before this returns."""
    probe = Probe()
    if pool is None:
        with tempfile.TemporaryDirectory(prefix="probe-", dir=options.workdir) as directory:
            try:
                async with open_wire(
                    options.command,
                    cwd=options.cwd,
                    session_dir=Path(directory),
                    env=options.env,
                    client=ClientSide(),
                    timeout=options.timeout,
                ) as wire:
                    await _probe_on(wire, options, probe)
            except WireError as exc:
                probe.error = str(exc)
            except (ProcessStartError, OSError) as exc:
                probe.start_failure = _cannot_start(options, exc)
                probe.error = probe.start_failure.describe()
        return probe
    try:
        wire, stop = await pool.start(ClientSide())
    except (ProcessStartError, OSError) as exc:
        probe.start_failure = _cannot_start(options, exc)
        probe.error = probe.start_failure.describe()
        return probe
    ready = False
    try:
        ready = await _probe_on(wire, options, probe)
    except WireError as exc:
        probe.error = str(exc)
    finally:
        if ready and not wire.eof:
            pool.share(ClientSide(), wire, stop)
        else:
            stop.set()
    return probe


async def _probe_on(wire: AgentWire, options: Options, probe: Probe) -> bool:
    """The probe's exchange on ``wire``, recorded in ``probe``; whether the agent was
    initialized (and authenticated) there."""
    try:
        init = await wire.initialize(timeout=options.startup_timeout)
    except WireError as exc:
        probe.start_failure = await _start_failure(options, wire, exc)
        probe.error = probe.start_failure.describe()
        return False
    init_result = init.result
    if not init.ok or not isinstance(init_result, dict):
        probe.error = f"initialize failed: {init.describe()}"
        return False
    probe.init = cast(dict[str, Any], init_result)
    if options.auth_method is not None:
        auth = await wire.request("authenticate", {"methodId": options.auth_method})
        if not auth.ok:
            probe.error = f"authenticate {options.auth_method!r} failed: {auth.describe()}"
            return False
    # Still start-up: a first session/new may be slow (an agent builds what it needs lazily).
    session = await wire.request(
        "session/new", wire.new_session_params(), timeout=options.startup_timeout
    )
    if session.error_code == AUTH_REQUIRED:
        probe.auth_required = True
    elif session.ok and isinstance(session_result := session.result, dict):
        probe.session = cast(dict[str, Any], session_result)
    else:
        probe.error = f"session/new failed: {session.describe()}"
    return True


def _gate_unknown(gate: str, probe: Probe) -> bool:
    """Whether the probe could not tell if ``gate`` holds although the agent initialized: a
    gate on the ``session/new`` result when the probe's ``session/new`` failed (say timed out
    on a loaded machine). Such a check runs: it opens its own session and judges the result
    it gets (not applicable when that result does not offer what the gate names)."""
    return (
        gate.startswith(SESSION_RESULT_GATE) and probe.session is None and not probe.auth_required
    )


def probe_pool(pool: AgentPool, requirements: Iterable[Requirement]) -> AgentPool | None:
    """The pool that keeps the probe's process (:func:`probe_agent`): the run's ``pool`` when
    a pooled check is among ``requirements``, else none (the process would only idle)."""
    return pool if any(requirement.id in POOLED for requirement in requirements) else None


def _cannot_start(options: Options, exc: OSError) -> StartFailure:
    program = options.command[0] if options.command else ""
    cause = str(exc)
    if "/" in program:
        where = Path(program) if Path(program).is_absolute() else options.cwd / program
        hint = (
            f"{where} does not exist or is not executable (a relative path is taken from "
            f"{options.cwd}; run the suite from the agent's directory or pass --cwd)"
        )
    else:
        hint = (
            f"{program!r} is not on PATH or not executable; give its path, or the interpreter "
            "and the script (subagents conformance -- python my_agent.py)"
        )
    return StartFailure(cause, hint)


async def _start_failure(options: Options, wire: AgentWire, exc: WireError) -> StartFailure:
    """Why ``initialize`` went unanswered: the process ended, or wrote no answer in time."""
    exit_ = wire.process.exit
    if exit_ is None and wire.eof:
        exit_ = await wire.wait_exit(1.0)
    stdout = tuple(line.raw[:300].decode("utf-8", "replace") for line in wire.agent_lines()[:5])
    noise = [line for line in wire.agent_lines() if not line.is_message]
    stderr_tail = wire.process.stderr_tail()[-2000:]
    command = shlex.join(options.command)
    if exit_ is not None:
        cause = "the agent exited before answering initialize"
        hint = f"run it by hand to see why: cd {shlex.quote(str(options.cwd))} && {command}"
        if not stderr_tail.strip() and exit_.returncode == 0:
            hint = (
                "it exited at once with status 0: an ACP agent keeps reading requests on "
                "stdin until it closes"
            )
        return StartFailure(
            cause,
            hint,
            exit_status=exit_.describe().split(";")[0],
            stderr_tail=stderr_tail,
            stdout_lines=stdout,
        )
    cause = f"the agent did not answer initialize within {options.startup_timeout:g} s"
    if noise:
        hint = (
            f"it wrote {len(noise)} line(s) to stdout that are not JSON-RPC messages: an ACP "
            "agent writes only ACP messages to stdout (logs go to stderr)"
        )
    elif wire.agent_lines():
        hint = "it wrote messages, but none answered initialize"
    else:
        hint = (
            "it wrote nothing to stdout; make sure it speaks ACP over stdio (some agents need "
            "a flag such as --acp), or raise --startup-timeout if it is slow to start"
        )
    return StartFailure(cause, hint, stderr_tail=stderr_tail, stdout_lines=stdout)


async def _unwrapped(check: Callable[[CheckContext], Awaitable[None]], ctx: CheckContext) -> None:
    """Run ``check``; an outcome raised inside a task group (say the block of a server the
    check runs) comes out as itself, not wrapped in an exception group."""
    try:
        await check(ctx)
    except BaseExceptionGroup as group:
        leaf = sole_leaf(group)
        if leaf is not group and isinstance(leaf, Exception):
            raise leaf from group
        raise


TRANSCRIPTS = ("failures", "all", "none")
"""Which checks' transcripts a report keeps: every check that did not pass (the default),
every check, or none."""


async def run_check(
    requirement: Requirement,
    options: Options,
    probe: Probe,
    *,
    transcripts: str = "failures",
    shared: SharedExchanges | None = None,
    pool: AgentPool | None = None,
) -> RequirementResult:
    """Run one requirement's check (or judge it not applicable); a check whose set-up timed
    out although the probe's succeeded runs once more, then is ``inconclusive``. ``shared``:
    the run's shared exchanges (a fresh set when not given); ``pool``: the shared processes a
    pooled check runs on (a check that used one and failed, or was blocked or inconclusive
    (:data:`SUSPECT`), runs again on a process of its own, and that verdict stands; when it
    differs, the shared processes are replaced, since the agent may be in a bad state)."""
    if transcripts not in TRANSCRIPTS:
        raise ValueError(f"transcripts must be one of {', '.join(TRANSCRIPTS)}")
    if probe.start_failure is not None:
        return RequirementResult(
            requirement, Status.NOT_APPLICABLE, f"not run: {probe.start_failure.describe()}"
        )
    if (
        requirement.gate is not None
        and probe.init is not None
        and not probe.gate_open(requirement.gate, options)
        and not _gate_unknown(requirement.gate, probe)
    ):
        return RequirementResult(
            requirement, Status.NOT_APPLICABLE, f"not advertised: {requirement.gate}"
        )
    if requirement.gate is not None and probe.init is None and requirement.tier is Tier.CAPABILITY:
        return RequirementResult(
            requirement,
            Status.NOT_APPLICABLE,
            f"unknown whether {requirement.gate} holds: {probe.error}",
        )
    shared = shared if shared is not None else SharedExchanges()
    if pool is not None and requirement.id in POOLED:
        result, pooled = await _run_once(requirement, options, probe, transcripts, shared, 1, pool)
        if not pooled or result.status not in SUSPECT or result.blocked_by == AUTHENTICATION:
            return result
        first = result
        result = await _run_attempts(requirement, options, probe, transcripts, shared)
        if result.status is not first.status:
            # The shared process did not behave as a fresh one: it may be in a bad state.
            # (When the fresh one confirms the verdict, the failure is the agent's answer to
            # this check, and the shared process stays: a later check it fails is judged
            # again too.)
            pool.retire()
            result.notes.append(
                f"on the run's shared agent process ({first.status.value}): {first.message}"
            )
        return result
    return await _run_attempts(requirement, options, probe, transcripts, shared)


SUSPECT = frozenset({Status.FAIL, Status.BLOCKED, Status.INCONCLUSIVE})
"""Outcomes of a pooled check that an earlier check's damage to the shared process could
cause (an answer that never came, a server that was not started): judged again on a process
of the check's own. A pass, an agent that did not do what the check asked (not exercised,
skipped), or one that wants authentication the run did not give (blocked by
:data:`AUTHENTICATION`: no pooled check logs out), stands."""


async def _run_attempts(
    requirement: Requirement,
    options: Options,
    probe: Probe,
    transcripts: str,
    shared: SharedExchanges,
) -> RequirementResult:
    result, _ = await _run_once(requirement, options, probe, transcripts, shared, 1)
    if result.status is Status.INCONCLUSIVE:
        first = result.message
        result, _ = await _run_once(requirement, options, probe, transcripts, shared, 2)
        result.attempts = 2
        if result.status is Status.INCONCLUSIVE:
            result.message = f"{result.message} (twice; first: {first})"
    return result


async def _run_once(
    requirement: Requirement,
    options: Options,
    probe: Probe,
    transcripts: str,
    shared: SharedExchanges,
    attempt: int,
    pool: AgentPool | None = None,
) -> tuple[RequirementResult, bool]:
    """The check's result, and whether it used the shared process."""
    ctx = CheckContext(requirement, options, probe, shared=shared, attempt=attempt, pool=pool)
    started = time.monotonic()
    status = Status.INFO if requirement.tier is Tier.INFORMATIONAL else Status.PASS
    message = ""
    blocked_by: str | None = None
    bound = options.check_bound(requirement.id)
    try:
        with anyio.fail_after(bound):
            await _unwrapped(CHECKS[requirement.id], ctx)
    except CheckFailed as exc:
        status, message = Status.FAIL, str(exc)
    except CheckSkipped as exc:
        status, message = Status.SKIP, str(exc)
    except CheckNotExercised as exc:
        status, message = Status.NOT_EXERCISED, str(exc)
    except CheckBlocked as exc:
        status, message, blocked_by = Status.BLOCKED, f"blocked by {exc.by}: {exc}", exc.by
    except BlockedByAuth as exc:
        status, blocked_by = Status.BLOCKED, AUTHENTICATION
        message = f"blocked by authentication ({exc}); {probe.auth_advice()}"
    except CheckInconclusive as exc:
        status, message = Status.INCONCLUSIVE, f"inconclusive: {exc}"
    except TimeoutError:
        status, message = (
            Status.FAIL,
            f"the check did not finish within {bound:g} s",
        )
    except WireError as exc:
        status, message = Status.FAIL, str(exc)
    except ProcessStartError as exc:
        status, message = Status.FAIL, f"cannot start the agent: {exc}"
    except Exception as exc:  # a defect of the suite, or an agent answer it did not foresee
        status, message = Status.FAIL, f"the check raised {type(exc).__name__}: {exc}"
    if requirement.tier is Tier.INFORMATIONAL and status is Status.PASS:
        status = Status.INFO
    duration = time.monotonic() - started
    result = RequirementResult(requirement, status, message, duration, list(ctx.notes))
    result.blocked_by = blocked_by
    result.about = ctx.about
    result.schema_errors, result.unknown_fields, result.unstable_fields = _schema_findings(ctx)
    keep = transcripts == "all" or (
        transcripts == "failures" and status not in (Status.PASS, Status.INFO)
    )
    if keep:
        result.transcript, result.stderr_tail = _transcript(ctx)
    if status is Status.INFO and not message:
        result.message = "; ".join(ctx.notes)
    return result, ctx.pooled


SCHEMA_FINDINGS_KEPT = 20
"""At most this many schema findings of one check are kept for the run-wide judgement."""


def _schema_findings(ctx: CheckContext) -> tuple[list[str], list[str], list[str]]:
    errors: list[str] = []
    unknown: list[str] = []
    unstable: list[str] = []
    for wire in ctx.wires:
        for line in ctx.lines_of(wire):
            if line.direction != "agent":
                continue
            errors.extend(e for e in line.schema_errors if e not in errors)
            unknown.extend(u for u in line.unknown_fields if u not in unknown)
            unstable.extend(u for u in line.unstable_fields if u not in unstable)
    kept = SCHEMA_FINDINGS_KEPT
    return errors[:kept], unknown[:kept], unstable[:kept]


RUN_WIDE: dict[str, tuple[str, Callable[[RequirementResult], list[str]]]] = {
    "ACP-SCHEMA-001": ("schema violation", lambda result: result.schema_errors),
    "ACP-SCHEMA-002": ("field outside the schema", lambda result: result.unknown_fields),
}
"""Requirements judged over every message of the run, not only their own check's exchange:
what each finds, and where a check's result keeps it."""


def judge_run_wide(results: Mapping[str, RequirementResult]) -> None:
    """Fail ACP-SCHEMA-001/002 (when they ran) for findings in any other check's exchange
    that their own exchange did not show, naming the finding and the checks where it was seen
    (so a bad session/list result fails the schema requirement even though the basic exchange
    was clean)."""
    for requirement_id, (what, findings_of) in RUN_WIDE.items():
        judged = results.get(requirement_id)
        if judged is None or judged.status is Status.NOT_APPLICABLE:
            continue
        own = set(findings_of(judged))
        seen_in: dict[str, list[str]] = {}
        for other_id, other in results.items():
            if other_id != requirement_id:
                for finding in findings_of(other):
                    if finding not in own:
                        seen_in.setdefault(finding, []).append(other_id)
        if not seen_in:
            continue
        described = [
            f"{finding} (in {', '.join(checks[:3])}{' and others' if len(checks) > 3 else ''})"
            for finding, checks in seen_in.items()
        ]
        judged.notes.extend(described)
        plural = "s" if len(described) > 1 else ""
        summary = (
            f"{len(described)} {what}{plural} in the exchanges of other checks: "
            + "; ".join(described[:3])
            + (f" (and {len(described) - 3} more)" if len(described) > 3 else "")
        )
        if judged.status is Status.FAIL:
            judged.message = f"{judged.message}; and {summary}"
        elif judged.status in (Status.PASS, Status.SKIP):
            judged.status, judged.message = Status.FAIL, summary


def _in_workdir(options: Options, root: str) -> Options:
    """``options`` for a run whose checks get their private directories under ``root`` (the
    agent's own working directory stays ``options.cwd``, made absolute)."""
    return dataclasses.replace(options, cwd=options.cwd.resolve(), workdir=Path(root).resolve())


def batches(requirements: Iterable[Requirement]) -> list[list[Requirement]]:
    """The jobs that run ``requirements``: the checks that share an exchange together, one
    after the other (one agent process for all of them), the pooled checks together (on the
    shared processes of an :class:`AgentPool`), every other check alone; the batches of several
    checks and the long checks first (so that the run does not end on one long job started
    last), otherwise in the given order."""
    shared: dict[str, list[Requirement]] = {}
    alone: list[list[Requirement]] = []
    for requirement in requirements:
        key = POOL if requirement.id in POOLED else SHARES.get(requirement.id)
        if key is None:
            alone.append([requirement])
        else:
            shared.setdefault(key, []).append(requirement)
    if POOL in shared:  # the disruptive pooled checks last (see framework.DISRUPTIVE)
        shared[POOL].sort(key=lambda requirement: requirement.id in DISRUPTIVE)
    jobs = [*shared.values(), *alone]
    return sorted(jobs, key=lambda batch: not any(_long(r.id) for r in batch))


def _long(requirement_id: str) -> bool:
    return requirement_id in LONG or requirement_id in SHARES or requirement_id in POOLED


POOL = "\0pooled"
"""The key under which :func:`batches` groups the pooled checks (no shared exchange's key)."""


async def run_batch(
    batch: Iterable[Requirement],
    options: Options,
    probe: Probe,
    on_result: Callable[[Requirement, RequirementResult | Exception], None],
    *,
    shared: SharedExchanges,
    transcripts: str = "failures",
    pool: AgentPool | None = None,
) -> None:
    """Run the checks of one batch (of :func:`batches`) one after the other, the pooled ones
    on the shared processes of ``pool`` (the run's, whose first process may be the probe's:
    they are stopped when the batch ends), or of an :class:`AgentPool` this call owns;
    ``on_result`` gets each result, or the exception a check's run raised (a defect of the
    suite)."""
    batch = list(batch)
    if pool is None:
        async with AgentPool(options) as own:
            await run_batch(
                batch, options, probe, on_result, shared=shared, transcripts=transcripts, pool=own
            )
        return
    try:
        for requirement in batch:
            try:
                result = await run_check(
                    requirement,
                    options,
                    probe,
                    transcripts=transcripts,
                    shared=shared,
                    pool=pool,
                )
            except Exception as exc:
                on_result(requirement, exc)
            else:
                on_result(requirement, result)
    finally:
        if any(requirement.id in POOLED for requirement in batch):
            pool.retire()


def default_jobs() -> int:
    """Checks run at once by default: the cores this process may use (each check has its own
    agent process; more would make answers late and load look like a finding)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, cores)


async def run_suite(
    options: Options,
    *,
    jobs: int | None = None,
    only: Iterable[str] | None = None,
    baseline: Mapping[str, str] | None = None,
    on_result: Callable[[RequirementResult, int, int], None] | None = None,
    strict: bool = False,
    transcripts: str = "failures",
) -> SuiteReport:
    """Run the suite (every requirement, or those in ``only``); see the module docstring.

    ``jobs`` defaults to :func:`default_jobs`. ``baseline`` maps requirement ids expected to
    fail to the reason (a :class:`Baseline` also knows the intermittent ones). ``on_result(result,
    done, total)`` is called as each check finishes (for progress displays). With ``strict``
    an unjudged mandatory requirement makes the agent non-conformant. ``transcripts``: see
    :data:`TRANSCRIPTS`. When the agent cannot be started (or does not answer
    ``initialize``), no check runs: the report's ``start_failure`` says why.
    """
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    if transcripts not in TRANSCRIPTS:
        raise ValueError(f"transcripts must be one of {', '.join(TRANSCRIPTS)}")
    if only is None:
        wanted = list(REQUIREMENTS.values())
    else:
        chosen = {REQUIREMENTS[i].id for i in only}  # an unknown id is a KeyError
        wanted = [r for r in REQUIREMENTS.values() if r.id in chosen]  # in the registry's order
    started = time.monotonic()
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="acp-conformance-") as root:
        options = _in_workdir(options, root)
        async with AgentPool(options) as pool:
            probe = await probe_agent(options, pool=probe_pool(pool, wanted))
            results: dict[str, RequirementResult] = {}
            if probe.start_failure is None:
                limiter = anyio.CapacityLimiter(jobs)
                shared = SharedExchanges()

                def record(requirement: Requirement, result: RequirementResult | Exception) -> None:
                    if isinstance(result, Exception):
                        raise result
                    if baseline and requirement.id in baseline:
                        result.expected_failure = baseline[requirement.id]
                        result.intermittent = (
                            isinstance(baseline, Baseline)
                            and requirement.id in baseline.intermittent
                        )
                    results[requirement.id] = result
                    if on_result is not None:
                        on_result(result, len(results), len(wanted))

                async def one(batch: list[Requirement]) -> None:
                    async with limiter:
                        await run_batch(
                            batch,
                            options,
                            probe,
                            record,
                            shared=shared,
                            transcripts=transcripts,
                            pool=pool,
                        )

                async with anyio.create_task_group() as tg:
                    for batch in batches(wanted):
                        tg.start_soon(one, batch)
                judge_run_wide(results)
    return SuiteReport(
        command=options.command,
        results=[results[r.id] for r in wanted if r.id in results],
        duration=time.monotonic() - started,
        agent=identify(options, probe),
        probe_error=probe.error,
        auth_required=probe.auth_required,
        start_failure=probe.start_failure,
        strict=strict,
        started_at=started_at,
    )


def identify(options: Options, probe: Probe) -> AgentIdentity:
    """The agent as the report names it: its command and cwd, and its ``agentInfo``."""
    identity = AgentIdentity(options.command, str(options.cwd))
    info = probe.value("agentInfo") if probe.init is not None else None
    if isinstance(info, dict):
        info = cast(dict[str, Any], info)
        for key in ("name", "version", "title"):
            value = info.get(key)
            if isinstance(value, str) and value:
                setattr(identity, key, value)
    return identity
