"""Probing an agent: start it, initialize it, shut it down, and say whether it can take a prompt.

A capability of the providers' kinds, read by ``subagents agents --probe`` (which only prints
the answer) and by ``subagents run`` (Codex's account, before a turn). Each probe is bounded
(``timeout`` seconds, start to shutdown) and classified like the official ACP registry's
protocol matrix: ``ok``; ``not installed`` (the command is not found: checked before anything
is spawned); ``needs credentials``, ``not logged in`` or ``no network`` (the agent runs but
cannot take a prompt; the reason says what it said, ``hint`` what to do), found with each
protocol's own query: Codex's ``account/read``, the ``account`` of Claude Code's initialize
answer, and for ACP agents a ``session/new`` in a temporary directory (``-32000``, auth
required); ``failed`` (with a one-line reason). A Codex or Claude agent that has credentials
is then asked nothing more: its model API (the URL it would call, from Codex's own
``modelProvider/list`` or the agent's configuration) gets one bounded ``HEAD`` with no
credentials, through the agent's proxy, and ``no network`` when nothing answers
(:mod:`._model_api`): no model is called, no token spent. Codex and Claude agents run with
their state in the user's own ``~/.codex`` or ``~/.claude`` when it exists, else in a private
temporary directory: a probe creates nothing in the home directory.

The out-of-process kinds (``acp``, ``codex``, ``claude-code``) each have their probe in
:data:`CHILD_PROBES`; in-process kinds and plugins are built, entered and left.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, cast, final

import anyio

from .._exception_groups import first_leaf
from ._model_api import ModelApi, codex_api, configured_api, model_api_cause
from ._readiness import (
    Cause,
    NotReady,
    agent_home,
    classify,
    claude_account,
    claude_login_absent,
    codex_account,
)

if TYPE_CHECKING:
    from ..config import AgentSpec
    from ..protocol import acp
    from ..transports.acp_client import AgentConnection

__all__ = (
    "AUTH_REQUIRED_CODE",
    "CHILD_PROBES",
    "NOT_READY",
    "ChildProbe",
    "ProbeResult",
    "ProbeStatus",
    "acp_capabilities",
    "find_command",
    "missing_command",
    "one_line",
    "probe_agent",
    "probe_all",
)

ProbeStatus: TypeAlias = Literal[
    "ok",
    "not installed",
    "unreachable",
    "needs credentials",
    "not logged in",
    "no network",
    "failed",
]
NOT_READY: Final[frozenset[ProbeStatus]] = frozenset(
    {"needs credentials", "not logged in", "no network"}
)
"""The statuses of an agent that runs but cannot take a prompt."""
AUTH_REQUIRED_CODE = -32000
"""The ACP error code of ``auth_required``."""
_REASON_CHARS = 160
_MEMBER_SHARE = 0.9
"""The share of a probe's bound each URL of an entry with ``urls`` gets (probed at once)."""
_EXIT_GRACE = 1.0
"""How long a failed start waits for the child's exit, to name its status."""


@final
@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one probe found."""

    name: str
    provider: str
    status: ProbeStatus
    reason: str = ""
    """Why it is not ``ok`` (one line)."""
    version: str | None = None
    capabilities: tuple[str, ...] = ()
    auth_methods: tuple[str, ...] = ()
    start_ms: int | None = None
    """From spawning (or building) to an initialized connection, in milliseconds."""
    protocol_version: int | None = None
    hint: str = ""
    """What to do when it is not ``ok`` (one line)."""
    url: str | None = None
    """The server probed, for one URL of an entry with ``urls``."""
    members: tuple[ProbeResult, ...] = ()
    """For an entry with ``urls``: each URL's own result, in the entry's order (the entry's
    ``status`` is ``ok`` only when every one is; else the first one's that is not)."""
    card: Mapping[str, object] | None = None
    """For an ``a2a`` entry: what its agent card says (``name``, ``version``, ``skills`` as
    ``{id, name}``, ``streaming``)."""

    @property
    def not_ready(self) -> NotReady | None:
        """The cause, when the agent runs but cannot take a prompt."""
        if self.status in NOT_READY:
            return NotReady(cast("Cause", self.status), self.reason, self.hint)
        return None

    def with_cause(self, cause: NotReady | None) -> ProbeResult:
        if cause is None:
            return self
        return replace(self, status=cause.cause, reason=one_line(cause.detail), hint=cause.hint)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "provider": self.provider,
            "status": self.status,
            "reason": self.reason or None,
            "version": self.version,
            "protocol_version": self.protocol_version,
            "capabilities": list(self.capabilities),
            "auth_methods": list(self.auth_methods),
            "start_ms": self.start_ms,
            "hint": self.hint or None,
            "url": self.url,
            "members": [member.to_json() for member in self.members],
            "card": dict(self.card) if self.card is not None else None,
        }


def one_line(text: str) -> str:
    """``text`` on one line, shortened."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _REASON_CHARS else flat[: _REASON_CHARS - 1] + "…"


def _reason(exc: BaseException) -> str:
    leaf = first_leaf(exc)
    return one_line(str(leaf) or type(leaf).__name__)


def find_command(spec: AgentSpec) -> str | None:
    """The executable ``spec.command[0]`` resolves to (looked up on the ``PATH`` the child
    gets, relative to the entry's ``cwd`` when it has a slash), or None."""
    from ..transports.process import build_child_env

    program = spec.command[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program).expanduser()
        if not path.is_absolute():
            path = Path(spec.cwd or os.getcwd()) / path
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    search = build_child_env(spec.env).get("PATH") or os.environ.get("PATH")
    return shutil.which(program, path=search)


def _shown(path: str) -> str:
    home = str(Path.home())
    if home != os.sep and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def missing_command(spec: AgentSpec) -> tuple[str, str] | None:
    """What keeps ``spec``'s command from starting, as ``(what, hint)``: the exact program
    or path looked up and where it comes from (``./agent.sh (relative to FILE) does not
    exist``, ```foo` is not on PATH``, a ``cwd`` that is no directory), and what to do;
    ``None`` when the command is found."""
    from ..npm_agents import BUILTIN_NPM_AGENTS, install_hint

    if not spec.command:
        return None
    from_file = spec.source != "built-in" and os.path.isabs(spec.source)
    entry = f"agents.{spec.name} in {_shown(spec.source)}" if from_file else spec.name
    if find_command(spec) is not None:
        if spec.cwd is not None and not Path(spec.cwd).expanduser().is_dir():
            return (
                f"the working directory {spec.cwd} (cwd of {entry}) does not exist",
                f"create it (mkdir -p {spec.cwd}), or fix the cwd of {entry}",
            )
        return None
    program = spec.command[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program).expanduser()
        if not path.is_absolute():
            path = Path(spec.cwd or os.getcwd()) / path
        if path.is_file():
            return f"{path} is not executable", f"make it executable: chmod +x {path}"
        written = str(path)
        if from_file:
            folder = Path(spec.source).parent
            if path.is_relative_to(folder):
                written = f"./{path.relative_to(folder)} (relative to {_shown(spec.source)})"
        where = f"agents.{spec.name}" if from_file else spec.name
        return (
            f"{written} does not exist",
            f"fix the command of {where} (a path relative to its file, or a program on PATH)",
        )
    npm = BUILTIN_NPM_AGENTS.get(spec.name)
    if npm is not None and program == os.path.basename(npm[1]):
        return f"`{program}` is not on PATH (nor in the npm prefix)", install_hint(spec.name)
    hint = f"install it, or give the command of {entry} the program's full path"
    return f"`{program}` is not on PATH", hint


def _ms(since: float) -> int:
    return round((time.monotonic() - since) * 1000)


def acp_capabilities(caps: acp.AgentCapabilities) -> tuple[str, ...]:
    """A short summary of an ACP agent's ``agentCapabilities``: ``loadSession``, the optional
    session methods (``session:list/resume/close``), the prompt content beyond text
    (``prompt:image/audio/embedded``) and the MCP transports (``mcp:stdio+http``)."""
    found: list[str] = []
    if caps.load_session:
        found.append("loadSession")
    session = caps.session_capabilities
    methods = [
        name
        for name in ("list", "resume", "close", "fork", "delete")
        if getattr(session, name, None) is not None
    ]
    if methods:
        found.append("session:" + "/".join(methods))
    prompt = caps.prompt_capabilities
    content = [
        label
        for name, label in (
            ("image", "image"),
            ("audio", "audio"),
            ("embedded_context", "embedded"),
        )
        if getattr(prompt, name, False)
    ]
    if content:
        found.append("prompt:" + "/".join(content))
    mcp = caps.mcp_capabilities
    found.append(
        "mcp:" + "+".join(["stdio", *(t for t in ("http", "sse") if getattr(mcp, t, False))])
    )
    return tuple(found)


async def _probe_acp(
    spec: AgentSpec, timeout: float, login: NotReady | None
) -> tuple[ProbeResult, ModelApi | None]:
    """The probe (``login``: what the entry as configured says of a Claude login, for an
    agent that has no account query), and the model API it would use when it is ready."""
    if spec.urls:
        return await _acp_urls(spec, timeout), None
    if spec.url is not None:
        return await _acp_url_connection(spec, spec.url, timeout), None
    found = await _acp_connection(spec, timeout)
    if found.status == "ok":
        found = found.with_cause(login)
    return found, configured_api(spec) if found.status == "ok" else None


async def _acp_connection(spec: AgentSpec, timeout: float) -> ProbeResult:
    from ..transports.acp_client import connect_agent_over
    from ..transports.process import exit_reason_for, open_agent_process

    started = time.monotonic()
    async with open_agent_process(
        spec.command,
        env=dict(spec.env) or None,
        cwd=spec.cwd,
        start_timeout=timeout,
        name=spec.name,
    ) as process:
        try:
            async with connect_agent_over(
                process.stdout,
                process.stdin,
                initialize_timeout=timeout,
                eof_reason=exit_reason_for(process, f"agent {spec.name!r}"),
                process=process,
                name=spec.name,
            ) as agent:
                return await _acp_session(spec, agent, started)
        except Exception as exc:
            # A child that exits at once can break the pipe before its exit is observed:
            # wait for the exit (briefly) so that the reason names the status.
            with anyio.move_on_after(_EXIT_GRACE):
                await process.wait()
            reason = _reason(exc)
            if process.exit is not None and "exited" not in reason:
                reason = one_line(f"{reason}; agent {process.exit.describe()}")
            return ProbeResult(spec.name, spec.provider, "failed", reason)


async def _acp_url_connection(spec: AgentSpec, url: str, timeout: float) -> ProbeResult:
    """An agent served at ``url``: ``unreachable`` (connection refused, name not found),
    ``needs credentials`` (401), else as over stdio."""
    try:
        from ..remote.client import RemoteStartupError, connect_agent_url, token_from_env
    except ImportError as exc:
        return ProbeResult(spec.name, spec.provider, "failed", _reason(exc))
    token = token_from_env(spec.token_env)
    started = time.monotonic()
    try:
        async with connect_agent_url(
            url, token=token, timeout=timeout, initialize_timeout=timeout, name=spec.name
        ) as agent:
            return await _acp_session(spec, agent, started)
    except RemoteStartupError as exc:
        if exc.unreachable:
            return ProbeResult(
                spec.name,
                spec.provider,
                "unreachable",
                _reason(exc),
                hint=f"start the agent's server at {url} (subagents serve --listen), "
                f"or fix the entry's {'urls' if spec.urls else 'url'}",
            )
        if exc.status in (401, 403):
            if spec.token_env is None:
                hint = 'the server wants a token: set token_env = "VARIABLE" holding it'
            elif token is None:
                hint = f"set ${spec.token_env} to the server's token"
            else:
                hint = f"${spec.token_env} does not hold a token the server accepts"
            return ProbeResult(
                spec.name, spec.provider, "needs credentials", _reason(exc), hint=hint
            )
        return ProbeResult(spec.name, spec.provider, "failed", _reason(exc))


async def _acp_urls(spec: AgentSpec, timeout: float) -> ProbeResult:
    """An agent served at each of ``spec.urls``: every URL probed at once, each result kept
    in ``members``; ``ok`` when all are, else the status, reason and hint of the first URL
    that is not (the reason says how many are not)."""
    urls = spec.urls
    found: list[ProbeResult | None] = [None] * len(urls)

    bound = timeout * _MEMBER_SHARE  # each URL's verdict comes before the entry's bound

    async def one(index: int, url: str) -> None:
        result = ProbeResult(spec.name, spec.provider, "failed", f"timed out after {bound:g} s")
        try:
            with anyio.move_on_after(bound):
                result = await _acp_url_connection(spec, url, bound)
        except Exception as exc:
            result = ProbeResult(spec.name, spec.provider, "failed", _reason(exc))
        found[index] = replace(result, url=url)

    async with anyio.create_task_group() as tg:
        for index, url in enumerate(urls):
            tg.start_soon(one, index, url)
    members = tuple(result for result in found if result is not None)
    ready = [m for m in members if m.status == "ok"]
    bad = [m for m in members if m.status != "ok"]
    model = ready[0] if ready else members[0]
    entry = replace(model, url=None, members=members)
    if not bad:
        return entry
    first = bad[0]
    return replace(
        entry,
        status=first.status,
        reason=one_line(
            f"{len(bad)} of {len(members)} servers not ok: {first.url}: {first.reason}"
        ),
        hint=first.hint,
    )


async def _acp_session(spec: AgentSpec, agent: AgentConnection, started: float) -> ProbeResult:
    from ..rpc import RPCError

    start_ms = _ms(started)
    info = agent.agent_info
    methods = tuple(str(getattr(m, "id", m)) for m in agent.auth_methods)
    found = ProbeResult(
        spec.name,
        spec.provider,
        "ok",
        version=info.version if info is not None else None,
        capabilities=acp_capabilities(agent.capabilities),
        auth_methods=methods,
        start_ms=start_ms,
        protocol_version=agent.protocol_version,
    )
    with tempfile.TemporaryDirectory(prefix="subagents-probe-") as scratch:
        try:
            await agent.new_session(scratch)
        except RPCError as exc:
            if exc.code == AUTH_REQUIRED_CODE:
                cause = classify(spec, exc.message) or NotReady(
                    "needs credentials",
                    exc.message,
                    f"{spec.name} needs credentials: log in with it, or set its API key",
                )
                if cause.cause == "not logged in" or cause.cause == "needs credentials":
                    detail = f"session/new: {exc.message}"
                    return found.with_cause(replace(cause, detail=detail))
            reason = f"session/new refused: {one_line(str(exc))}"
            found = replace(found, status="failed", reason=reason)
            return found.with_cause(classify(spec, str(exc)))
    return found


async def _probe_codex(
    spec: AgentSpec, timeout: float, login: NotReady | None
) -> tuple[ProbeResult, ModelApi | None]:
    """The probe, and the model API Codex says it would use (None when it cannot say)."""
    from ..transports.codex_app_server import connect_codex

    started = time.monotonic()
    async with connect_codex(
        spec.command,
        env=dict(spec.env) or None,
        cwd=spec.cwd,
        startup_timeout=timeout,
        name=spec.name,
    ) as codex:
        found = ProbeResult(
            spec.name,
            spec.provider,
            "ok",
            version=codex.version,
            capabilities=("app-server",),
            start_ms=_ms(started),
        )
        from ..rpc import RPCError

        try:
            account = await codex.request("account/read", {"refreshToken": False})
        except RPCError:  # an older codex without it: nothing more to learn
            return found, configured_api(spec)
        found = found.with_cause(codex_account(spec, account))
        if found.status != "ok":
            return found, None
        try:
            providers = await codex.request("modelProvider/list", {})
        except RPCError:  # an older codex: read its configuration instead
            return found, configured_api(spec)
        return found, codex_api(spec, providers, account)


async def _probe_claude(
    spec: AgentSpec, timeout: float, login: NotReady | None
) -> tuple[ProbeResult, ModelApi | None]:
    """The probe, and the model API Claude Code would use (None for a cloud provider)."""
    from ..transports.claude_code import ClaudeOptions, connect_claude

    if not spec.model:
        return ProbeResult(spec.name, spec.provider, "failed", "claude-code needs a model"), None
    started = time.monotonic()
    options = ClaudeOptions(model=spec.model, extra_args=tuple(spec.command[1:]))
    async with connect_claude(
        spec.command[0],
        options,
        env=dict(spec.env) or None,
        cwd=spec.cwd,
        startup_timeout=timeout,
        name=spec.name,
    ) as claude:
        init = claude.init_response
        version = init.get("claude_code_version")
        capabilities = ["stream-json"]
        for key in ("models", "commands", "agents"):
            value = init.get(key)
            if isinstance(value, list):
                capabilities.append(f"{len(value)} {key}")
        found = ProbeResult(
            spec.name,
            spec.provider,
            "ok",
            version=version if isinstance(version, str) else None,
            capabilities=tuple(capabilities),
            start_ms=_ms(started),
        ).with_cause(claude_account(spec, init))
        account = init.get("account")
        provider = (
            cast(dict[str, object], account).get("apiProvider", "firstParty")
            if isinstance(account, dict)
            else "firstParty"
        )
        first_party = provider == "firstParty"
        return found, configured_api(spec) if found.status == "ok" and first_party else None


ChildProbe: TypeAlias = Callable[
    ["AgentSpec", float, NotReady | None], Awaitable[tuple[ProbeResult, ModelApi | None]]
]
"""The probe of an out-of-process kind: ``(spec, timeout, login)`` to what it found and the
model API the agent would use (None when it is not ready or cannot say)."""


def _a2a_token_hint(spec: AgentSpec) -> str:
    if spec.token_env is None:
        return 'the agent wants a token: set token_env = "VARIABLE" holding it'
    return f"set ${spec.token_env} to a token the agent accepts"


async def _probe_a2a(
    spec: AgentSpec, timeout: float, login: NotReady | None
) -> tuple[ProbeResult, ModelApi | None]:
    """An ``a2a`` entry: fetch its agent card, then make one cheap authenticated request to
    the endpoint the card names (``GetTask`` of a random id: "task not found" means the token
    is accepted). ``unreachable``; ``needs credentials`` on a 401 or 403 to either (the card
    may be public while the endpoint wants a token), or when ``token_env`` is not set; else
    ``ok`` with the card's name, version, skills and streaming support."""
    del login
    try:
        import httpx
        from a2a.client.errors import AgentCardResolutionError
        from a2a.utils.errors import A2AError

        from .a2a import A2AProvider
    except ImportError as exc:
        return ProbeResult(spec.name, spec.provider, "failed", _reason(exc)), None
    if spec.url is None:
        return ProbeResult(spec.name, spec.provider, "failed", "no url"), None
    if spec.token_env is not None and not os.environ.get(spec.token_env):
        reason = f"${spec.token_env} (token_env) is not set"
        hint = f"set ${spec.token_env} to the agent's token"
        return ProbeResult(spec.name, spec.provider, "needs credentials", reason, hint=hint), None
    card_url = spec.options.get("card_url")
    provider = A2AProvider(
        spec.url,
        name=spec.name,
        token_env=spec.token_env,
        card_url=str(card_url) if card_url is not None else None,
        connect_timeout=timeout,
    )
    started = time.monotonic()
    with anyio.fail_after(timeout):
        async with provider:  # its one HTTP client, closed when the probe is done
            try:
                card = await provider.card()
            except AgentCardResolutionError as exc:
                if exc.status_code in (401, 403):
                    return ProbeResult(
                        spec.name,
                        spec.provider,
                        "needs credentials",
                        _reason(exc),
                        hint=_a2a_token_hint(spec),
                    ), None
                status: ProbeStatus = "unreachable" if exc.status_code is None else "failed"
                hint = f"start the A2A agent at {spec.url}, or fix the entry's url"
                return ProbeResult(spec.name, spec.provider, status, _reason(exc), hint=hint), None
            start_ms = _ms(started)
            try:
                refused = await provider.endpoint_refusal()
            except (A2AError, httpx.HTTPError) as exc:
                reason = f"the card was fetched, but its endpoint did not answer: {_reason(exc)}"
                hint = "check the endpoint URL in the agent's card: this machine cannot reach it"
                return ProbeResult(
                    spec.name, spec.provider, "failed", one_line(reason), hint=hint
                ), None
    if refused is not None:
        sent = "the token" if spec.token_env is not None else "the request without a token"
        reason = f"the agent's endpoint refused {sent} (HTTP {refused} to GetTask)"
        return ProbeResult(
            spec.name, spec.provider, "needs credentials", reason, hint=_a2a_token_hint(spec)
        ), None
    streaming = bool(card.capabilities.streaming)
    skills = [{"id": skill.id, "name": skill.name} for skill in card.skills]
    summary = (
        f"card {card.name}",
        "streaming" if streaming else "no streaming",
        "skills " + (" ".join(skill.id for skill in card.skills) or "none"),
    )
    found = ProbeResult(
        spec.name,
        spec.provider,
        "ok",
        version=card.version or None,
        capabilities=summary,
        start_ms=start_ms,
        card={
            "name": card.name,
            "version": card.version,
            "skills": skills,
            "streaming": streaming,
        },
    )
    return found, None


CHILD_PROBES: Final[Mapping[str, ChildProbe]] = {
    "acp": _probe_acp,
    "a2a": _probe_a2a,
    "codex": _probe_codex,
    "claude-code": _probe_claude,
}
"""The probe of each provider kind that runs its agent as a child process (its ``command``
is looked up before anything is spawned)."""


async def _probe_built(spec: AgentSpec) -> ProbeResult:
    """In-process runtimes and plugins: build the provider, enter and leave it."""
    from .. import __version__
    from .contract import START_TIME_FEATURES
    from .factory import build_provider, plugin_factories

    started = time.monotonic()
    provider = build_provider(spec)
    async with provider:
        pass
    start_ms = _ms(started)
    caps = provider.capabilities
    summary = ["in-process"] if spec.provider in ("spawn", "fork") else ["plugin"]
    summary += [name for name in START_TIME_FEATURES if caps.supports(name)]
    version: str | None = __version__
    if spec.provider not in ("spawn", "fork"):
        entry_point = plugin_factories().get(spec.provider)
        dist = entry_point.dist if entry_point is not None else None
        version = dist.version if dist is not None else None
    return ProbeResult(
        spec.name,
        spec.provider,
        "ok",
        version=version,
        capabilities=tuple(summary),
        start_ms=start_ms,
    )


async def probe_agent(spec: AgentSpec, timeout: float, *, network: bool = True) -> ProbeResult:
    """Probe one agent, bounded by ``timeout`` seconds; never raises for the agent's faults.
    ``network``: check that a Codex or Claude agent with credentials reaches its model API."""
    login = claude_login_absent(spec)  # the entry as configured: before agent_home
    with agent_home(spec) as homed:
        return await _probe_agent(homed, timeout, login=login, network=network)


async def _probe_agent(
    spec: AgentSpec, timeout: float, *, login: NotReady | None, network: bool
) -> ProbeResult:
    child_probe = CHILD_PROBES.get(spec.provider)
    if child_probe is not None and not spec.agent_urls:
        if not spec.command:
            return ProbeResult(spec.name, spec.provider, "failed", "no command")
        missing = missing_command(spec)
        if missing is not None:
            what, hint = missing
            status: ProbeStatus = "not installed" if find_command(spec) is None else "failed"
            return ProbeResult(spec.name, spec.provider, status, what, hint=f"{what}; {hint}")
    result: ProbeResult | None = None
    try:
        with anyio.move_on_after(timeout):
            api: ModelApi | None = None
            if child_probe is not None:
                found, api = await child_probe(spec, timeout, login)
            else:
                found = await _probe_built(spec)
            if network and found.status == "ok":
                found = found.with_cause(await model_api_cause(spec, api))
            result = found
    except Exception as exc:
        failed = ProbeResult(spec.name, spec.provider, "failed", _reason(exc))
        return failed.with_cause(classify(spec, str(exc)))
    if result is None:
        return ProbeResult(spec.name, spec.provider, "failed", f"timed out after {timeout:g} s")
    return result


async def probe_all(
    specs: Sequence[AgentSpec],
    timeout: float,
    *,
    jobs: int,
    on_done: Callable[[ProbeResult, int], None] | None = None,
) -> list[ProbeResult]:
    """Probe ``specs`` concurrently (at most ``jobs`` at a time); the results in the order of
    ``specs``. ``on_done(result, finished)`` is called as each one ends."""
    results: list[ProbeResult | None] = [None] * len(specs)
    limiter = anyio.CapacityLimiter(max(1, jobs))
    finished = 0

    async def one(index: int, spec: AgentSpec) -> None:
        nonlocal finished
        async with limiter:
            result = await probe_agent(spec, timeout)
        results[index] = result
        finished += 1
        if on_done is not None:
            on_done(result, finished)

    async with anyio.create_task_group() as tg:
        for index, spec in enumerate(specs):
            tg.start_soon(one, index, spec)
    return [r for r in results if r is not None]
