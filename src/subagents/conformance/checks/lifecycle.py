"""Initialization, authentication, session creation, MCP servers and process hygiene."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any, cast

import anyio

from ..framework import CheckContext, check
from ..mcp_http import serve_mcp_http
from ..wire import AgentWire
from ._common import basic_exchange, result_dict


@check("ACP-INIT-001")
async def initialize_succeeds(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        response = await ctx.call(
            wire,
            "initialize",
            wire.initialize_params(1),
            timeout=ctx.options.startup_timeout,
        )
        if not response.ok:
            ctx.fail(f"initialize failed: {response.describe()}")
        result = result_dict(response)
        version = result.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool):
            # 1.0 is an integer to JSON Schema, not to typed clients (a u16 in Rust, say).
            ctx.fail(f"protocolVersion is not a JSON integer: {json.dumps(version)}")
        if "agentCapabilities" not in result:
            ctx.note("no agentCapabilities: every capability counts as unsupported")


@check("ACP-INIT-002")
async def version_one_is_kept(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        init = await ctx.ready(wire, protocol_version=1)
        if init.get("protocolVersion") != 1:
            ctx.fail(
                "protocol version 1 was requested; "
                f"the agent answered {init.get('protocolVersion')!r}"
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


@check("ACP-INIT-004")
async def agent_names_itself(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        init = await ctx.ready(wire)
        info = init.get("agentInfo")
        if not isinstance(info, dict):
            ctx.fail("the initialize result has no agentInfo")
        info = cast(dict[str, Any], info)
        missing = [
            key
            for key in ("name", "version")
            if not isinstance(info.get(key), str) or not info[key]
        ]
        if missing:
            ctx.fail(f"agentInfo lacks {', '.join(missing)}: {info}")
        ctx.note(f"agent {info['name']} {info['version']}")


@check("ACP-AUTH-001")
async def auth_method_ids_are_unique(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        init = await ctx.ready(wire)
        methods = cast(list[Any], init.get("authMethods") or [])
        ids = [cast(dict[str, Any], m).get("id") for m in methods if isinstance(m, dict)]
        duplicates = sorted({str(i) for i in ids if ids.count(i) > 1})
        if duplicates:
            ctx.fail(f"authMethods repeat the id(s) {', '.join(duplicates)}")
        ctx.note(f"auth methods: {', '.join(map(str, ids)) or 'none'}")


@check("ACP-AUTH-002")
async def no_terminal_auth_unless_enabled(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        init = await ctx.ready(wire)  # this client does not enable terminal authentication
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


@check("ACP-AUTH-003")
async def authenticate_then_session(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)  # authenticates with --auth-method
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


@check("ACP-SESSION-001")
async def session_new_gives_an_id(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        await ctx.new_session(wire)


@check("ACP-SESSION-002")
async def session_ids_are_unique(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        first = await ctx.new_session(wire)
        second = await ctx.new_session(wire)
        if first == second:
            ctx.fail(f"two session/new calls both returned the session id {first!r}")


def _mcp_server(marker: str, *, linger: float = 0) -> dict[str, Any]:
    lingering = ["--linger", str(linger)] if linger else []
    return {
        "name": "conformance-probe",
        "command": sys.executable,
        "args": ["-m", "subagents.conformance.mcp_probe", *lingering, marker],
        "env": [],
    }


_MCP_LINGER = 30.0
"""How long the stubborn probe of ACP-SHUTDOWN-003 outlives its stdin (unless signalled)."""


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


async def _appears(path: anyio.Path, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while not await path.exists():  # noqa: ASYNC110 - no event exists for a file appearing
            await anyio.sleep(0.05)
        return True
    return False


async def _probe_started(
    ctx: CheckContext, wire: AgentWire, session_id: str, path: anyio.Path, first_wait: float
) -> bool:
    """Whether the probe writes ``path`` within ``first_wait`` of session setup, or else
    after a prompt (some agents connect lazily, at the first prompt)."""
    if await _appears(path, first_wait):
        return True
    await ctx.prompt(wire, session_id)
    return await _appears(path, ctx.options.timeout)


@check("ACP-MCP-001")
async def stdio_mcp_servers_are_accepted(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        marker = wire.cwd / "mcp-probe.log"
        response = await ctx.call(
            wire, "session/new", wire.new_session_params(mcpServers=[_mcp_server(str(marker))])
        )
        if not response.ok:
            ctx.fail(f"session/new with a stdio MCP server failed: {response.describe()}")


@check("ACP-MCP-002")
async def stdio_mcp_servers_are_connected(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        marker = wire.cwd / "mcp-probe.log"
        session_id = await ctx.new_session(wire, mcpServers=[_mcp_server(str(marker))])
        if not await _probe_started(ctx, wire, session_id, anyio.Path(marker), ctx.options.timeout):
            ctx.fail("the stdio MCP server given in session/new was never sent an MCP initialize")


async def _remote_mcp_session(ctx: CheckContext, kind: str) -> None:
    async with serve_mcp_http() as server, ctx.agent() as wire:
        await ctx.ready(wire)
        url = server.http_url if kind == "http" else server.sse_url
        entry: dict[str, Any] = {
            "type": kind,
            "name": f"conformance-{kind}",
            "url": url,
            "headers": [],
        }
        response = await ctx.call(wire, "session/new", wire.new_session_params(mcpServers=[entry]))
        if not response.ok:
            ctx.fail(f"session/new with an {kind} MCP server failed: {response.describe()}")
        if server.methods:
            ctx.note(f"the agent connected to the {kind} MCP server: {', '.join(server.methods)}")
        else:
            ctx.note(f"the agent did not contact the {kind} MCP server before session/new ended")


@check("ACP-MCP-003")
async def http_mcp_servers_are_accepted(ctx: CheckContext) -> None:
    await _remote_mcp_session(ctx, "http")


@check("ACP-MCP-004")
async def sse_mcp_servers_are_accepted(ctx: CheckContext) -> None:
    await _remote_mcp_session(ctx, "sse")


@check("ACP-SHUTDOWN-001")
async def exits_on_stdin_eof(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        await ctx.new_session(wire)
        await wire.close_stdin()
        started = time.monotonic()
        exit_ = await wire.wait_exit(5.0)
        if exit_ is None:
            ctx.fail("the agent was still running 5 s after its stdin was closed")
        ctx.note(f"exited {time.monotonic() - started:.2f} s after stdin EOF ({exit_.describe()})")


def _group_members(pgid: int) -> list[int]:
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - not Linux
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is the state, fields[2] the process group.
        if int(fields[2]) == pgid and fields[0] != b"Z":
            members.append(int(entry))
    return members


@check("ACP-SHUTDOWN-002")
async def leaves_no_process_behind(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await basic_exchange(ctx, wire)
        await wire.close_stdin()
        if await wire.wait_exit(5.0) is None:
            ctx.skip("the agent did not exit on stdin EOF (see ACP-SHUTDOWN-001)")
        pgid = wire.process.pid
        with anyio.move_on_after(1.0):
            while _group_members(pgid):  # noqa: ASYNC110 - no event exists for non-children
                await anyio.sleep(0.05)
        left = _group_members(pgid)
        if left:
            ctx.fail(f"after the agent exited, process(es) {left} of its group were still running")


@check("ACP-SHUTDOWN-003")
async def mcp_servers_end_with_the_agent(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        marker = wire.cwd / "mcp-stubborn.log"
        pid_file = anyio.Path(f"{marker}.pid")
        server = _mcp_server(str(marker), linger=_MCP_LINGER)
        session_id = await ctx.new_session(wire, mcpServers=[server])
        if not await _probe_started(ctx, wire, session_id, pid_file, 1.0):
            ctx.skip("the agent never started the MCP server it was given (ACP-MCP-002)")
        await wire.close_stdin()
        if await wire.wait_exit(5.0) is None:
            ctx.skip("the agent did not exit on stdin EOF (see ACP-SHUTDOWN-001)")
        pids = [int(word) for word in (await pid_file.read_text()).split()]
        with anyio.move_on_after(5.0):
            while any(map(_running, pids)):  # noqa: ASYNC110 - no event for a non-child's exit
                await anyio.sleep(0.05)
        left = [pid for pid in pids if _running(pid)]
        for pid in left:
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # the suite cleans up after the agent
        if left:
            ctx.fail(
                f"the MCP server(s) it started (pid {', '.join(map(str, left))}; the probe "
                "outlives its stdin) were still running 5 s after the agent exited"
            )


@check("ACP-TIMING-001")
async def answers_within_the_timeouts(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        started = time.monotonic()
        await ctx.ready(wire)
        initialized = time.monotonic()
        session_id = await ctx.new_session(wire)
        created = time.monotonic()
        await ctx.prompt(wire, session_id)
        answered = time.monotonic()
        ctx.note(
            f"initialize {initialized - started:.3f} s, session/new {created - initialized:.3f} s, "
            f"prompt {answered - created:.3f} s"
        )


@check("ACP-STDERR-001")
async def stderr_volume(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await basic_exchange(ctx, wire)
        ctx.note(f"{wire.process.stderr_bytes} bytes on stderr during a basic exchange")
