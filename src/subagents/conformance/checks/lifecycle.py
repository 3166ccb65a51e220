"""Initialization, authentication, session creation, MCP servers and process hygiene."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio

from .. import mcp_probe
from ..framework import CheckContext, check
from ..mcp_http import serve_mcp_http
from ..wire import AgentWire, Response, WireError
from ._common import (
    BASIC,
    EXIT_WAIT,
    POLL,
    basic_run,
    holds_soon,
    index_of,
    result_dict,
    update_kind,
    updates_between,
)


@check("ACP-INIT-001", shares=BASIC)
async def initialize_succeeds(ctx: CheckContext) -> None:
    ctx.about = "initialize"
    # The basic run's first message is initialize (version 1); its result is judged even when
    # a later step of that run (authenticate, session/new) failed.
    init = (await basic_run(ctx)).initialized()
    version = init.get("protocolVersion")
    if not isinstance(version, int) or isinstance(version, bool):
        # 1.0 is an integer to JSON Schema, not to typed clients (a u16 in Rust, say).
        ctx.fail(f"protocolVersion is not a JSON integer: {json.dumps(version)}")
    if "agentCapabilities" not in init:
        ctx.note("no agentCapabilities: every capability counts as unsupported")


@check("ACP-INIT-002", shares=BASIC)
async def version_one_is_kept(ctx: CheckContext) -> None:
    ctx.about = "initialize"
    init = (await basic_run(ctx)).initialized()  # initialize asked for version 1
    if init.get("protocolVersion") != 1:
        ctx.fail(
            f"protocol version 1 was requested; the agent answered {init.get('protocolVersion')!r}"
        )


@check("ACP-INIT-003")
async def unsupported_version_is_not_echoed(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        response = await ctx.call(
            wire,
            "initialize",
            wire.initialize_params(65535),
            timeout=ctx.options.startup_timeout,
        )
        if not response.ok:
            ctx.fail(
                "protocol version 65535 was answered with an error "
                f"({response.describe()}); "
                "the agent must answer with the latest version it supports"
            )
        version = result_dict(response).get("protocolVersion")
        if version == 65535:
            ctx.fail(
                "the agent echoed the unsupported protocol version 65535; it must answer with the "
                "latest version it supports (1 for an ACP v1 agent)"
            )
        if not isinstance(version, int) or isinstance(version, bool) or not 0 < version < 65535:
            ctx.fail(f"protocol version 65535 was answered with protocolVersion {version!r}")


@check("ACP-INIT-004", shares=BASIC)
async def agent_names_itself(ctx: CheckContext) -> None:
    ctx.about = "initialize"
    init = (await basic_run(ctx)).initialized()
    info = init.get("agentInfo")
    if not isinstance(info, dict):
        ctx.fail("the initialize result has no agentInfo")
    info = cast(dict[str, Any], info)
    missing = [
        key for key in ("name", "version") if not isinstance(info.get(key), str) or not info[key]
    ]
    if missing:
        ctx.fail(f"agentInfo lacks {', '.join(missing)}: {info}")
    ctx.note(f"agent {info['name']} {info['version']}")


@check("ACP-INIT-005")
async def session_new_before_initialize_is_refused(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        try:  # the first message: no initialize before it
            response = await wire.request(
                "session/new", wire.new_session_params(), timeout=ctx.options.startup_timeout
            )
        except WireError as exc:
            ctx.note(f"session/new before initialize: not served, no answer ({exc})")
            return
        if response.ok:
            ctx.fail(
                "session/new sent before initialize was served (the connection was never "
                f"initialized): {response.describe()}; refuse it with an error (the TS SDK "
                "answers -32600)"
            )
        ctx.note(f"session/new before initialize: {response.describe()}")


@check("ACP-AUTH-001", shares=BASIC)
async def auth_method_ids_are_unique(ctx: CheckContext) -> None:
    ctx.about = "initialize"
    init = (await basic_run(ctx)).initialized()
    methods = cast(list[Any], init.get("authMethods") or [])
    ids = [cast(dict[str, Any], m).get("id") for m in methods if isinstance(m, dict)]
    duplicates = sorted({str(i) for i in ids if ids.count(i) > 1})
    if duplicates:
        ctx.fail(f"authMethods repeat the id(s) {', '.join(duplicates)}")
    ctx.note(f"auth methods: {', '.join(map(str, ids)) or 'none'}")


@check("ACP-AUTH-002", shares=BASIC)
async def no_terminal_auth_unless_enabled(ctx: CheckContext) -> None:
    ctx.about = "initialize"
    # The suite's client does not enable terminal authentication.
    init = (await basic_run(ctx)).initialized()
    methods = cast(list[Any], init.get("authMethods") or [])
    terminal = [
        str(cast(dict[str, Any], m).get("id"))
        for m in methods
        if isinstance(m, dict) and cast(dict[str, Any], m).get("type") == "terminal"
    ]
    if terminal:
        ctx.fail(
            "auth method(s) of type terminal advertised to a client without "
            f"clientCapabilities.auth.terminal: {', '.join(terminal)}"
        )


@check("ACP-AUTH-003", pooled=True)
async def authenticate_then_session(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:  # authenticated with --auth-method
        await ctx.new_session(wire)


@check("ACP-AUTH-004")
async def logout_succeeds(ctx: CheckContext) -> None:
    if not ctx.options.allow_logout:
        ctx.skip("logout may revoke the credentials the agent uses: pass --allow-logout")
    async with ctx.agent() as wire:
        await ctx.ready(wire)  # authenticates first when --auth-method is given
        response = await ctx.call(wire, "logout", {})
        if not response.ok:
            ctx.fail(f"logout failed: {response.describe()}")
        if not isinstance(response.result, dict):
            ctx.fail(f"logout result is not an object: {response.describe()}")


@check("ACP-SESSION-001", shares=BASIC)
async def session_new_gives_an_id(ctx: CheckContext) -> None:
    ctx.about = "session/new"
    (await basic_run(ctx)).session()


@check("ACP-SESSION-002", pooled=True)
async def session_ids_are_unique(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        first = await ctx.new_session(wire)
        second = await ctx.new_session(wire)
        if first == second:
            ctx.fail(f"two session/new calls both returned the session id {first!r}")


@check("ACP-SESSION-003", pooled=True)
async def no_update_before_the_session_exists(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        for _ in range(2):  # two sessions: an agent that races its own response may win once
            start = len(wire.lines)
            response = await ctx.session_new_response(wire)
            if not response.ok:
                ctx.blocked_by("ACP-SESSION-001", f"session/new failed: {response.describe()}")
            session_id = _session_id_of(ctx, response)
            early = updates_between(wire, start, index_of(wire, response.line), session_id)
            if early:
                kinds = sorted({str(update_kind(u)) for u in early})
                ctx.fail(
                    f"{len(early)} session/update(s) ({', '.join(kinds)}) for session "
                    f"{session_id!r} arrived before the session/new response that creates it: "
                    "the client does not know that session yet (real clients drop such updates "
                    "or reject them)"
                )


@dataclass(frozen=True)
class _McpProbe:
    """One stdio MCP server of the suite (:mod:`..mcp_probe`) and the files that tell what
    happened to it: ``<marker>.pid`` once started, ``<marker>`` once sent MCP initialize,
    ``<marker>.env`` the token it found in its environment."""

    name: str
    marker: Path
    token: str

    @classmethod
    def at(cls, wire: AgentWire, name: str) -> _McpProbe:
        return cls(name, wire.cwd / f"{name}.log", f"{name}-{os.getpid()}-{id(wire)}")

    def entry(self, *, linger: float = 0) -> dict[str, Any]:
        """The ``mcpServers`` entry: an absolute command, the probe as a stdlib-only script."""
        lingering = ["--linger", str(linger)] if linger else []
        return {
            "name": self.name,
            "command": sys.executable,
            "args": ["-I", _PROBE_SCRIPT, *lingering, str(self.marker)],
            "env": [{"name": mcp_probe.TOKEN_VARIABLE, "value": self.token}],
        }

    @property
    def pid_file(self) -> Path:
        return Path(f"{self.marker}.pid")

    def started(self) -> bool:
        return self.pid_file.exists()

    def initialized(self) -> bool:
        return self.marker.exists()

    def env_token(self) -> str | None:
        try:
            return Path(f"{self.marker}.env").read_text(encoding="utf-8")
        except OSError:
            return None


_PROBE_SCRIPT = str(Path(mcp_probe.__file__).resolve())
_MCP_GRACE = 0.5
"""How long after the first prompt turn ends a stdio MCP server still counts as used."""
_MCP_LINGER = 30.0
"""How long the stubborn probe of ACP-SHUTDOWN-003 outlives its stdin (unless signalled)."""
_AFTER_KILL_WAIT = 2.0
"""How long an agent that lingered after EOF gets to exit once its MCP server is gone."""


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


async def _mcp_used(
    ctx: CheckContext, wire: AgentWire, session_id: str, condition: Callable[[], bool]
) -> bool:
    """Whether ``condition`` (about the session's MCP servers) holds at session setup, or by
    the end of the session's first prompt turn plus :data:`_MCP_GRACE` (some agents connect
    lazily, at the first prompt): decided as soon as it holds, or as soon as the turn ended
    and the grace passed."""
    if condition():
        return True
    request_id = await wire.start_request(
        "session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": ctx.options.prompt}]},
    )
    with anyio.move_on_after(ctx.options.timeout):
        while not wire.answered(request_id) and not wire.eof:
            if condition():
                return True
            await wire.wait_for(lambda: wire.answered(request_id), POLL)
    return await holds_soon(condition, _MCP_GRACE)


def _session_id_of(ctx: CheckContext, response: Response) -> str:
    session_id = result_dict(response).get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        ctx.fail(f"session/new returned no sessionId: {response.describe()}")
    return session_id


_BY_THE_END = "by the end of the first prompt turn, plus 0.5 s"


@check("ACP-MCP-001", pooled=True)
async def stdio_mcp_servers_are_used(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        probe = _McpProbe.at(wire, "conformance-probe")
        response = await ctx.session_new_response(wire, setup=False, mcpServers=[probe.entry()])
        if not response.ok:
            ctx.fail(f"session/new with a stdio MCP server failed: {response.describe()}")
        session_id = _session_id_of(ctx, response)
        if await _mcp_used(ctx, wire, session_id, probe.initialized):
            return
        if probe.started():
            ctx.fail(
                "the agent started the stdio MCP server given in session/new but never sent it "
                f"an MCP initialize ({_BY_THE_END})"
            )
        ctx.fail(
            "the agent accepted session/new with a stdio MCP server but never started it "
            f"({_BY_THE_END}): all agents MUST support stdio MCP servers"
        )


@check("ACP-MCP-002", pooled=True)
async def every_mcp_server_is_connected(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        probes = [_McpProbe.at(wire, f"conformance-probe-{n}") for n in ("a", "b")]
        response = await ctx.session_new_response(
            wire, mcpServers=[probe.entry() for probe in probes]
        )
        if not response.ok:
            single = await ctx.session_new_response(wire, mcpServers=[probes[0].entry()])
            if not single.ok:
                ctx.blocked_by(
                    "ACP-MCP-001", f"session/new with a stdio MCP server fails: {single.describe()}"
                )
            ctx.fail(
                "session/new with two stdio MCP servers failed (with one it works): "
                f"{response.describe()}"
            )
        session_id = _session_id_of(ctx, response)
        await _mcp_used(ctx, wire, session_id, lambda: all(p.initialized() for p in probes))
        missing = [p.name for p in probes if not p.initialized()]
        if len(missing) == len(probes):
            ctx.blocked_by(
                "ACP-MCP-001",
                f"the agent connected to none of the stdio MCP servers given ({_BY_THE_END})",
            )
        if missing:
            connected = [p.name for p in probes if p.name not in missing]
            ctx.fail(
                f"of the stdio MCP servers given in session/new, the agent connected to "
                f"{', '.join(connected)} but never sent {', '.join(missing)} an MCP "
                f"initialize ({_BY_THE_END})"
            )


@check("ACP-MCP-005", pooled=True)
async def stdio_mcp_servers_get_their_env(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        probe = _McpProbe.at(wire, "conformance-probe")
        response = await ctx.session_new_response(wire, mcpServers=[probe.entry()])
        if not response.ok:
            ctx.blocked_by(
                "ACP-MCP-001", f"session/new with a stdio MCP server fails: {response.describe()}"
            )
        session_id = _session_id_of(ctx, response)
        if not await _mcp_used(ctx, wire, session_id, probe.started):
            ctx.blocked_by(
                "ACP-MCP-001", f"the agent never started the stdio MCP server ({_BY_THE_END})"
            )
        seen = probe.env_token()
        if seen != probe.token:
            found = "it was unset" if not seen else f"it was {seen[:80]!r}"
            ctx.fail(
                f"the stdio MCP server was started without the env entry "
                f"{mcp_probe.TOKEN_VARIABLE}={probe.token} given in session/new ({found})"
            )


async def _remote_mcp_session(ctx: CheckContext, kind: str) -> None:
    async with serve_mcp_http() as server, ctx.ready_agent() as wire:
        url = server.http_url if kind == "http" else server.sse_url
        entry: dict[str, Any] = {
            "type": kind,
            "name": f"conformance-{kind}",
            "url": url,
            "headers": [],
        }
        response = await ctx.session_new_response(wire, setup=False, mcpServers=[entry])
        if not response.ok:
            ctx.fail(f"session/new with an {kind} MCP server failed: {response.describe()}")
        session_id = _session_id_of(ctx, response)
        # Advertising the transport is a claim that the agent connects over it: accepting the
        # entry and never contacting the server is the "passes without anything happening"
        # that a capability check must not call a pass.
        if not await _mcp_used(ctx, wire, session_id, lambda: "initialize" in server.methods):
            contacted = ", ".join(server.methods) or "nothing"
            ctx.fail(
                f"the agent advertises mcpCapabilities.{kind} and accepted the {kind} MCP server, "
                f"but never sent it an MCP initialize ({_BY_THE_END}; it received: {contacted})"
            )
        ctx.note(f"the agent connected to the {kind} MCP server: {', '.join(server.methods)}")


@check("ACP-MCP-003", pooled=True)
async def http_mcp_servers_are_accepted(ctx: CheckContext) -> None:
    await _remote_mcp_session(ctx, "http")


@check("ACP-MCP-004", pooled=True)
async def sse_mcp_servers_are_accepted(ctx: CheckContext) -> None:
    await _remote_mcp_session(ctx, "sse")


@check("ACP-SHUTDOWN-001", shares=BASIC)
async def exits_on_stdin_eof(ctx: CheckContext) -> None:
    run = await basic_run(ctx)
    if run.error is not None:  # the exchange broke off: judge EOF on a session alone
        async with ctx.agent() as wire:
            await ctx.ready(wire)
            await ctx.new_session(wire)
            await wire.close_stdin()
            started = time.monotonic()
            exit_ = await wire.wait_exit(EXIT_WAIT)
            after = time.monotonic() - started
    else:
        exit_, after = run.exit, run.exit_after
    if exit_ is None:
        ctx.fail(f"the agent was still running {EXIT_WAIT:g} s after its stdin was closed")
    ctx.note(f"exited {after:.2f} s after stdin EOF ({exit_.describe()})")


@check("ACP-SHUTDOWN-002", shares=BASIC)
async def leaves_no_process_behind(ctx: CheckContext) -> None:
    run = await basic_run(ctx)
    if run.error is not None:
        raise run.error
    if run.exit is None:
        ctx.blocked_by(
            "ACP-SHUTDOWN-001",
            f"the agent was still running {EXIT_WAIT:g} s after its stdin was closed",
        )
    if run.left_behind:
        ctx.fail(
            f"after the agent exited, process(es) {run.left_behind} of its group were still running"
        )


@check("ACP-SHUTDOWN-003", shares=BASIC)
async def mcp_servers_end_with_the_agent(ctx: CheckContext) -> None:
    run = await basic_run(ctx)
    if run.error is None and run.exit is None:  # known without a second process
        ctx.blocked_by(
            "ACP-SHUTDOWN-001",
            f"the agent was still running {EXIT_WAIT:g} s after its stdin was closed (with no "
            "MCP server), so what it does with its MCP servers at exit cannot be told",
        )
    ctx.wires.remove(run.wire)  # judged on a process of its own below
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        probe = _McpProbe.at(wire, "conformance-stubborn")
        session_id = await ctx.new_session(wire, mcpServers=[probe.entry(linger=_MCP_LINGER)])
        if not await _mcp_used(ctx, wire, session_id, probe.started):
            ctx.blocked_by(
                "ACP-MCP-001",
                f"the agent never started the stdio MCP server it was given ({_BY_THE_END}): "
                "there is no server to outlive it",
            )
        await wire.close_stdin()
        pids = [int(word) for word in probe.pid_file.read_text().split()]
        if await wire.wait_exit(EXIT_WAIT) is None:
            # Still running: waiting for its server (which outlives its stdin), or not ending
            # on EOF at all? End the server and see.
            for pid in pids:
                with suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if await wire.wait_exit(_AFTER_KILL_WAIT) is None:
                ctx.blocked_by(
                    "ACP-SHUTDOWN-001",
                    f"the agent was still running {EXIT_WAIT:g} s after its stdin was closed, "
                    "and still after the suite ended its MCP server",
                )
            ctx.fail(
                f"after stdin EOF the agent did not exit within {EXIT_WAIT:g} s while the stdio "
                "MCP server it started was still running (the probe outlives its stdin), and "
                "exited once the suite killed that server: it waits for its MCP servers instead "
                "of ending them"
            )
        await holds_soon(lambda: not any(map(_running, pids)), 5.0)
        left = [pid for pid in pids if _running(pid)]
        for pid in left:
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # the suite cleans up after the agent
        if left:
            ctx.fail(
                f"the MCP server(s) it started (pid {', '.join(map(str, left))}; the probe "
                "outlives its stdin) were still running 5 s after the agent exited"
            )


@check("ACP-TIMING-001", shares=BASIC)
async def answers_within_the_timeouts(ctx: CheckContext) -> None:
    run = await basic_run(ctx)
    run.exchanged()
    initialize, new, prompt = run.times
    ctx.note(f"initialize {initialize:.3f} s, session/new {new:.3f} s, prompt {prompt:.3f} s")


@check("ACP-STDERR-001", shares=BASIC)
async def stderr_volume(ctx: CheckContext) -> None:
    run = await basic_run(ctx)
    run.exchanged()
    ctx.note(f"{run.stderr_bytes} bytes on stderr during a basic exchange")
