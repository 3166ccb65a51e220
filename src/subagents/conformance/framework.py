"""What a check is: a coroutine bound to one requirement, run against fresh agent processes.

A check receives a :class:`CheckContext`. It opens as many agent processes as it needs with
:meth:`CheckContext.agent` (each a fresh process in a private directory, recorded for the
report), uses the helpers for the common steps, and ends in one of:

* returning normally: the requirement holds (``pass``; ``info`` for informational ones, with
  what was observed in :meth:`CheckContext.note`);
* :meth:`CheckContext.fail` (``fail``);
* :meth:`CheckContext.skip` (``skip``: the behaviour could not be exercised this time, say a
  turn that ended before the cancel could act);
* :meth:`CheckContext.not_exercised` (``not-exercised``: the agent never did what the
  requirement is about, say it never made a file request, so there was nothing to judge; never
  a pass);
* :meth:`CheckContext.blocked_by` (``blocked``: a precondition another requirement judges
  failed, say the agent does not exit on stdin EOF for a check about what it leaves behind;
  that requirement carries the failure, this one is not judged) or :class:`BlockedByAuth`
  (``blocked``: the agent wants authentication the run did not give);
* :class:`CheckInconclusive` (``inconclusive``): a set-up step (initialize, authenticate,
  session/new) timed out although the probe's succeeded, which is load on the machine, not a
  failure of the requirement. The runner retries such a check once.

Set-up steps are :meth:`CheckContext.ready` and :meth:`CheckContext.new_session` (a check that
judges them passes ``setup=False``, and their timeouts then fail it).

Checks that judge the same exchange (the transcript of one ordinary session, say) share it:
registered with ``@check(ID, shares=KEY)``, they get it from :meth:`CheckContext.shared`, which
runs it once per run (and once more for the retry of an inconclusive attempt); the runner runs
the checks of one key one after the other in one job, so the exchange costs one agent process,
not one per requirement.

Checks that need an initialized agent but judge only their own sessions and requests (session
methods, modes, content blocks, error answers, ...) are registered with ``@check(ID,
pooled=True)`` and take their agent from :meth:`CheckContext.ready_agent`: the runner runs them
one after the other on one initialized process (per client configuration: an
:class:`AgentPool`), each in a private directory, as a client runs many sessions in one agent.
The probe's process (initialized, one session of its own) is the first shared process of
the default client. A process that has ended is replaced. Checks that send what may leave the
agent in a bad state (malformed input) are registered ``@check(ID, pooled=True,
disruptive=True)``: they run after the other pooled checks, and drop the shared process
(:meth:`CheckContext.discard_shared`) when the agent no longer answers as before.
A pooled check that fails (or is blocked or inconclusive) runs once more on a process of its
own and that verdict stands, so a defect shows under the requirement it breaks, not under the
check that happened to come after it; when the two verdicts differ, the shared processes are
replaced.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn, TypeVar, cast

import anyio
import anyio.abc

from .._owned import OwnedTaskGroup
from .requirements import REQUIREMENTS, Requirement
from .wire import AgentWire, ClientSide, Line, Response, WireError, WireTimeout, open_wire

__all__ = (
    "CHECKS",
    "DISRUPTIVE",
    "LONG",
    "POOLED",
    "SESSION_RESULT_GATE",
    "SHARES",
    "AgentPool",
    "BlockedByAuth",
    "CheckBlocked",
    "CheckContext",
    "CheckFailed",
    "CheckInconclusive",
    "CheckNotExercised",
    "CheckSkipped",
    "Options",
    "Probe",
    "SharedExchanges",
    "StartFailure",
    "check",
)

_T = TypeVar("_T")

STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
AUTH_REQUIRED = -32000


class CheckFailed(Exception):
    """The requirement does not hold; the message says how."""


class CheckSkipped(Exception):
    """The requirement could not be exercised this time; the message says why."""


class CheckNotExercised(Exception):
    """The agent never did what the requirement is about: nothing to judge (never a pass)."""


class CheckBlocked(Exception):
    """A precondition that another requirement judges failed; :attr:`by` names it."""

    def __init__(self, by: str, message: str) -> None:
        super().__init__(message)
        self.by = by


class BlockedByAuth(Exception):
    """The agent asks for authentication before it creates a session."""


class CheckInconclusive(Exception):
    """A set-up step did not finish in time although the probe's did: load, not a finding."""


@dataclass
class Options:
    """How to run the agent under test, and the suite's bounds."""

    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict[str, str])
    cwd: Path = field(default_factory=Path.cwd)
    """The agent process's working directory: the caller's, so the command's relative paths
    mean what they mean in the user's shell (``python my_agent.py``)."""
    workdir: Path = Path("/tmp")
    """Where each check's private directory is made (absolute): the ACP session's ``cwd`` and
    the root of the client's file system, never the process's working directory."""
    timeout: float = 15.0
    """Bound on each answer the suite waits for."""
    startup_timeout: float = 30.0
    """Bound on the answer to ``initialize`` (includes process start)."""
    check_timeout: float = 90.0
    """Bound on one whole check (twice it for a :data:`LONG` one: see :meth:`check_bound`)."""
    auth_method: str | None = None
    allow_logout: bool = False
    """Exercise ``logout`` (it may revoke the credentials the agent runs with)."""
    prompt: str = "Hello"
    """The text of an ordinary prompt."""
    cancel_prompt: str = "slow"
    """A prompt the agent works on long enough to be cancelled."""
    cancel_rounds: int = 6
    """How many cancelled turns the cancel checks run, each cancelled at a different moment
    (a race that shows up one time in three slips through six rounds 9% of the time)."""
    fs_prompt: str = "fs"
    """A prompt that makes the agent read and write files through the client."""
    terminal_prompt: str = "terminal"
    """A prompt that makes the agent run a command in a client terminal."""
    tool_prompt: str = "tool"
    """A prompt that makes the agent call a tool that asks the client's permission."""
    plan_prompt: str = "plan"
    """A prompt that makes the agent send a plan."""
    elicitation_prompt: str = "elicit"
    """A prompt that makes the agent ask the user something (``elicitation/create``)."""
    quiet_period: float = 0.3
    """How long "nothing arrives" is watched for."""

    def check_bound(self, requirement_id: str) -> float:
        """The bound on the whole check of ``requirement_id``: :attr:`check_timeout`, twice it
        for a :data:`LONG` check (one that starts several agent processes or runs many turns:
        reopening a session costs two starts and three turns, each with its own bound)."""
        return self.check_timeout * (2 if requirement_id in LONG else 1)


@dataclass(frozen=True)
class StartFailure:
    """Why the agent could not be started or did not answer ``initialize``: the one answer a
    run gives when nothing else can be judged."""

    cause: str
    """What went wrong, in one line."""
    hint: str
    """What to try."""
    exit_status: str | None = None
    """How the process ended (``exited with status 1``), when it did."""
    stderr_tail: str = ""
    stdout_lines: tuple[str, ...] = ()
    """The first lines it wrote to stdout (when it wrote something that was not an answer)."""

    def describe(self) -> str:
        parts = [self.cause]
        if self.exit_status:
            parts.append(f"the process {self.exit_status}")
        return "; ".join(parts)


@dataclass
class Probe:
    """What one initial connection learned about the agent (drives the capability gates)."""

    init: dict[str, Any] | None = None
    session: dict[str, Any] | None = None
    auth_required: bool = False
    error: str | None = None
    start_failure: StartFailure | None = None
    """Set when the agent could not be started or did not answer ``initialize``: the run
    judges nothing else."""

    def auth_methods(self) -> list[str]:
        """The ids of the auth methods ``initialize`` advertised."""
        methods = self.value("authMethods")
        return [
            str(cast(dict[str, Any], m).get("id"))
            for m in cast(list[Any], methods if isinstance(methods, list) else [])
            if isinstance(m, dict)
        ]

    def auth_advice(self) -> str:
        """What to do about an "authentication required" answer."""
        methods = self.auth_methods()
        if methods:
            return f"pass --auth-method (advertised: {', '.join(methods)})"
        return (
            "the agent advertises no auth methods in initialize, so no client can authenticate "
            "(a defect of the agent: log it in first, or give it credentials with --env)"
        )

    def value(self, path: str) -> Any:
        """A value of the initialize result by dotted path (``None`` if absent)."""
        node: Any = self.init
        for part in path.split("."):
            if not isinstance(node, dict):
                return None
            node = cast(dict[str, Any], node).get(part)
        return node

    def gate_open(self, gate: str, options: Options) -> bool:
        if gate == "--auth-method":
            return options.auth_method is not None
        if gate.startswith(SESSION_RESULT_GATE):
            key = gate.removeprefix(SESSION_RESULT_GATE)
            return bool(self.session and self.session.get(key))
        value = self.value(gate)
        return value is not None and value is not False


SESSION_RESULT_GATE = "session/new result: "
"""The prefix of a gate on a key of the probe's ``session/new`` result (``modes``)."""

_dirs = itertools.count(1)


class SharedExchanges:
    """The exchanges several checks judge, each run once per run and attempt (see the module
    docstring); one instance per suite run."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, int], anyio.Lock] = {}
        self._done: dict[tuple[str, int], Any] = {}

    async def get(self, key: str, attempt: int, make: Callable[[], Awaitable[_T]]) -> _T:
        """What ``make()`` returned the first time ``key`` was asked for in ``attempt``
        (``make`` records a failure in what it returns: it must not raise)."""
        lock = self._locks.setdefault((key, attempt), anyio.Lock())
        async with lock:
            if (key, attempt) not in self._done:
                self._done[(key, attempt)] = await make()
            return cast(_T, self._done[(key, attempt)])


@dataclass
class _Shared:
    """One process of an :class:`AgentPool`."""

    wire: AgentWire
    stop: anyio.Event
    ready: bool = False

    @property
    def ended(self) -> bool:
        return self.wire.eof or self.wire.process.exit is not None


class AgentPool:
    """The initialized agent processes that the pooled checks of a run use one after the other
    (see the module docstring): one per client configuration (:class:`ClientSide`) asked for.
    An ``async with`` block owns them: each runs in a task of this object's and is stopped (the
    shutdown ladder of :func:`open_wire`) when the block ends or when :meth:`retire` drops it."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.processes = 0
        """How many processes it started."""
        self._shared: dict[str, _Shared] = {}
        self._running: set[anyio.Event] = set()
        """The stop events of every process still running (also one whose start's caller was
        cancelled before it could keep it)."""
        self._owned = OwnedTaskGroup("an AgentPool")

    async def __aenter__(self) -> AgentPool:
        await self._owned.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        self._shared.clear()
        for stop in self._running:
            stop.set()
        return await self._owned.close(exc_type, exc, traceback)

    def retire(self) -> None:
        """Stop every process (in the background): the next check gets new ones."""
        for shared in self._shared.values():
            shared.stop.set()
        self._shared.clear()

    async def acquire(self, ctx: CheckContext, client: ClientSide) -> tuple[AgentWire, int]:
        """The shared process offered ``client``, initialized by ``ctx``
        (:meth:`CheckContext.ready`) when it is new (a new one when the last has ended or its
        set-up failed), and the index of its first line that is ``ctx``'s (0 when ``ctx``
        initialized it)."""
        key = repr(client)
        shared = self._shared.get(key)
        if shared is not None and shared.ended:
            shared.stop.set()
            shared = None
        if shared is None:
            wire, stop = await self.start(client)
            shared = self._shared[key] = _Shared(wire, stop)
        if shared.ready:
            return shared.wire, len(shared.wire.lines)
        try:
            await ctx.ready(shared.wire)
        except BaseException:
            shared.stop.set()
            del self._shared[key]
            raise
        shared.ready = True
        return shared.wire, 0

    async def start(self, client: ClientSide) -> tuple[AgentWire, anyio.Event]:
        """A new process offered ``client`` and the event that stops it (the block's end
        stops it too), not shared: :meth:`share` makes it the shared process once it is
        initialized."""
        group = self._owned.group
        if group is None:
            raise RuntimeError("an AgentPool is used inside its async with block")
        return await group.start(self._serve, client)

    def share(self, client: ClientSide, wire: AgentWire, stop: anyio.Event) -> None:
        """Make ``wire`` (from :meth:`start`, initialized and authenticated as
        :meth:`CheckContext.ready` does it) the shared process offered ``client``; the one it
        replaces is stopped."""
        key = repr(client)
        old = self._shared.get(key)
        if old is not None and old.wire is not wire:
            old.stop.set()
        self._shared[key] = _Shared(wire, stop, ready=True)

    def discard(self, wire: AgentWire) -> None:
        """Stop ``wire`` if it is a shared process (in the background): the next check that
        asks gets a new one."""
        for key, shared in list(self._shared.items()):
            if shared.wire is wire:
                shared.stop.set()
                del self._shared[key]

    async def _serve(
        self,
        client: ClientSide,
        *,
        task_status: anyio.abc.TaskStatus[tuple[AgentWire, anyio.Event]],
    ) -> None:
        self.processes += 1
        stop = anyio.Event()
        self._running.add(stop)
        try:
            async with open_wire(
                self.options.command,
                cwd=self.options.cwd,
                session_dir=self.options.workdir / f"shared-{next(_dirs)}",
                env=self.options.env,
                client=client,
                timeout=self.options.timeout,
            ) as wire:
                task_status.started((wire, stop))
                await stop.wait()
        finally:
            self._running.discard(stop)


class CheckContext:
    """Everything a check needs; see the module docstring."""

    def __init__(
        self,
        requirement: Requirement,
        options: Options,
        probe: Probe,
        *,
        shared: SharedExchanges | None = None,
        attempt: int = 1,
        pool: AgentPool | None = None,
    ) -> None:
        self.requirement = requirement
        self.options = options
        self.probe = probe
        self.wires: list[AgentWire] = []
        self.notes: list[str] = []
        self.attempt = attempt
        """1, or 2 for the retry of an inconclusive first attempt."""
        self.pool = pool
        """The run's shared process for a pooled check (:meth:`ready_agent`), else ``None``."""
        self.pooled = False
        """Whether the check used the shared process."""
        self.about: str | None = None
        """The method whose exchange the verdict is about, for a check that judges one step
        of a longer exchange (say the initialize result of the shared ordinary exchange): the
        report's failure line shows that request, not the exchange's last one."""
        self._shared = shared if shared is not None else SharedExchanges()
        self._since: dict[int, int] = {}

    async def shared(self, key: str, make: Callable[[], Awaitable[_T]]) -> _T:
        """The exchange ``key`` of this run and attempt, made by ``make()`` if no check has
        asked for it yet (see :class:`SharedExchanges`)."""
        return await self._shared.get(key, self.attempt, make)

    def adopt(self, wire: AgentWire, *, since: int = 0) -> None:
        """Record a process another check started (a shared exchange, the shared process) as
        one this check judged: its transcript and schema findings from line ``since`` on go
        into this check's result."""
        if wire not in self.wires:
            self.wires.append(wire)
            self._since[id(wire)] = since

    def lines_of(self, wire: AgentWire) -> list[Line]:
        """The lines of ``wire`` this check judged (all of them, but for the shared process
        the ones from the check's own start on)."""
        return wire.lines[self._since.get(id(wire), 0) :]

    # -- outcomes --------------------------------------------------------------------------

    def fail(self, message: str) -> NoReturn:
        raise CheckFailed(message)

    def skip(self, message: str) -> NoReturn:
        raise CheckSkipped(message)

    def not_exercised(self, message: str) -> NoReturn:
        """The behaviour never happened (say no ``fs/*`` request was ever made): unjudged."""
        raise CheckNotExercised(message)

    def blocked_by(self, requirement_id: str, message: str) -> NoReturn:
        """A precondition judged by ``requirement_id`` failed: this one cannot be judged."""
        if requirement_id not in REQUIREMENTS:
            raise KeyError(f"no requirement {requirement_id!r} in the registry")
        raise CheckBlocked(requirement_id, message)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def discard_shared(self, wire: AgentWire) -> None:
        """What this check did may have left ``wire``'s agent in a bad state: when it is the
        run's shared process, the checks after this one get a new one (a fresh process of
        the check's own is stopped at the check's end anyway)."""
        if self.pooled and self.pool is not None:
            self.pool.discard(wire)

    # -- agents ----------------------------------------------------------------------------

    @asynccontextmanager
    async def agent(self, client: ClientSide | None = None) -> AsyncGenerator[AgentWire, None]:
        """A fresh agent process, started in ``Options.cwd`` (as the user's shell would start
        it), with a private directory for its sessions and files, recorded for the report."""
        directory = self.options.workdir / f"{self.requirement.id.lower()}-{next(_dirs)}"
        async with open_wire(
            self.options.command,
            cwd=self.options.cwd,
            session_dir=directory,
            env=self.options.env,
            client=client,
            timeout=self.options.timeout,
        ) as wire:
            self.wires.append(wire)
            yield wire

    @asynccontextmanager
    async def ready_agent(
        self, client: ClientSide | None = None
    ) -> AsyncGenerator[AgentWire, None]:
        """An initialized agent (:meth:`ready` done) offered ``client`` (the default
        :class:`ClientSide` when ``None``) with a private directory (:attr:`AgentWire.cwd`) for
        the check's own sessions: the run's shared process when the check runs in a pool (see
        the module docstring), else a fresh process. The check must judge only its own sessions,
        requests and lines (:meth:`lines_of`) on it."""
        if self.pool is None:
            async with self.agent(client) as wire:
                await self.ready(wire)
                yield wire
            return
        self.pooled = True
        wire, since = await self.pool.acquire(self, client or ClientSide())
        directory = self.options.workdir / f"{self.requirement.id.lower()}-{next(_dirs)}"
        directory.mkdir(parents=True, exist_ok=True)
        self.adopt(wire, since=since)
        wire.cwd = directory.resolve()
        yield wire

    async def call(
        self, wire: AgentWire, method: str, params: Any = None, *, setup: bool = False, **kw: Any
    ) -> Response:
        """A request whose lack of an answer fails the check (with the cause); with ``setup``
        a timeout makes the check inconclusive instead (see :class:`CheckInconclusive`)."""
        try:
            return await wire.request(method, params, **kw)
        except WireTimeout as exc:
            if setup and not wire.eof and self.probe.init is not None:
                raise CheckInconclusive(f"set-up step {exc}") from exc
            self.fail(str(exc))
        except WireError as exc:
            self.fail(str(exc))

    async def ready(
        self, wire: AgentWire, protocol_version: int = 1, *, setup: bool = True
    ) -> dict[str, Any]:
        """``initialize`` (and ``authenticate`` when configured); the initialize result."""
        result = await self.initialize(wire, protocol_version, setup=setup)
        await self.authenticate(wire, setup=setup)
        return result

    async def initialize(
        self, wire: AgentWire, protocol_version: int = 1, *, setup: bool = True
    ) -> dict[str, Any]:
        """``initialize`` alone (the first half of :meth:`ready`); its result."""
        response = await self.call(
            wire,
            "initialize",
            wire.initialize_params(protocol_version),
            timeout=self.options.startup_timeout,
            setup=setup,
        )
        result = response.result
        if not response.ok or not isinstance(result, dict):
            self.fail(f"initialize failed: {response.describe()}")
        return cast(dict[str, Any], result)

    async def authenticate(self, wire: AgentWire, *, setup: bool = True) -> None:
        """``authenticate`` with ``--auth-method`` when the run was given one (the second half
        of :meth:`ready`)."""
        if self.options.auth_method is not None:
            auth = await self.call(
                wire, "authenticate", {"methodId": self.options.auth_method}, setup=setup
            )
            if not auth.ok:
                self.fail(f"authenticate {self.options.auth_method!r} failed: {auth.describe()}")

    def auth_blocked(self, what: str, response: Response) -> None:
        """Raise :class:`BlockedByAuth` when ``response`` says authentication is required
        and the run was given no ``--auth-method``."""
        if response.error_code == AUTH_REQUIRED and self.options.auth_method is None:
            raise BlockedByAuth(f"{what}: {response.describe()}")

    async def session_new_response(
        self, wire: AgentWire, *, setup: bool = True, **overrides: Any
    ) -> Response:
        """``session/new`` in the check's directory, answered any way but "authentication
        required" (which blocks the check, as in every other check)."""
        response = await self.call(
            wire, "session/new", wire.new_session_params(**overrides), setup=setup
        )
        self.auth_blocked("session/new", response)
        return response

    async def new_session(self, wire: AgentWire, *, setup: bool = True, **overrides: Any) -> str:
        """``session/new`` in the check's directory; the session id."""
        response = await self.session_new_response(wire, setup=setup, **overrides)
        result = response.result
        if not response.ok or not isinstance(result, dict):
            self.fail(f"session/new failed: {response.describe()}")
        session_id = cast(dict[str, Any], result).get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            self.fail(f"session/new returned no sessionId: {response.describe()}")
        return session_id

    async def prompt(
        self,
        wire: AgentWire,
        session_id: str,
        prompt: str | Sequence[dict[str, Any]] | None = None,
        *,
        meta: dict[str, Any] | None = None,
    ) -> Response:
        """One prompt turn, answered (any answer); the response."""
        blocks = _blocks(self.options.prompt if prompt is None else prompt)
        params: dict[str, Any] = {"sessionId": session_id, "prompt": blocks}
        if meta is not None:
            params["_meta"] = meta
        return await self.call(wire, "session/prompt", params)

    def stop_reason(self, response: Response) -> str:
        """The stop reason of a successful prompt response (fails the check otherwise)."""
        if not response.ok:
            self.fail(f"session/prompt was answered with an error: {response.describe()}")
        result = response.result
        reason = (
            cast(dict[str, Any], result).get("stopReason") if isinstance(result, dict) else None
        )
        if reason not in STOP_REASONS:
            self.fail(f"session/prompt result has no valid stopReason: {json.dumps(result)[:300]}")
        return cast(str, reason)


def _blocks(prompt: str | Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt}]
    return list(prompt)


@asynccontextmanager
async def ready_session(
    ctx: CheckContext, client: ClientSide | None = None
) -> AsyncGenerator[tuple[AgentWire, str], None]:
    """A fresh agent, initialized, with one session: ``(wire, session_id)``."""
    async with ctx.agent(client) as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        yield wire, session_id


CheckFunction = Callable[[CheckContext], Awaitable[None]]
CHECKS: dict[str, CheckFunction] = {}
"""Requirement id -> the check that implements it."""
SHARES: dict[str, str] = {}
"""Requirement id -> the key of the shared exchange its check judges (see the module
docstring); the runner runs the checks of one key in one job."""
POOLED: set[str] = set()
"""Requirement ids whose checks run on the run's shared process (see the module docstring)."""
DISRUPTIVE: set[str] = set()
"""Pooled requirement ids whose checks send what may leave the agent in a bad state: they run
after the other pooled checks (see the module docstring)."""
LONG: set[str] = set()
"""Requirement ids whose checks take several agent processes or many turns: the runner starts
them first, so that a run does not end waiting on one long check started last."""


def check(
    requirement_id: str,
    *,
    shares: str | None = None,
    long: bool = False,
    pooled: bool = False,
    disruptive: bool = False,
) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated coroutine as the check of ``requirement_id``; ``shares``: the
    key of the shared exchange it judges (which :meth:`CheckContext.shared` makes); ``long``:
    see :data:`LONG`; ``pooled``: see :data:`POOLED` (the check takes its agent from
    :meth:`CheckContext.ready_agent`); ``disruptive`` (pooled checks only): see
    :data:`DISRUPTIVE`."""
    if shares is not None and pooled:
        raise ValueError("a check judges a shared exchange or runs pooled, not both")
    if disruptive and not pooled:
        raise ValueError("only a pooled check is disruptive (it runs after the other ones)")
    if requirement_id not in REQUIREMENTS:
        raise KeyError(f"no requirement {requirement_id!r} in the registry")

    def register(function: CheckFunction) -> CheckFunction:
        if requirement_id in CHECKS:
            raise ValueError(f"two checks for {requirement_id}")
        CHECKS[requirement_id] = function
        if shares is not None:
            SHARES[requirement_id] = shares
        if long:
            LONG.add(requirement_id)
        if pooled:
            POOLED.add(requirement_id)
        if disruptive:
            DISRUPTIVE.add(requirement_id)
        function.requirement_id = requirement_id  # type: ignore[attr-defined]
        return function

    return register
