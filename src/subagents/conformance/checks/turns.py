"""Prompt turns: stop reasons, updates, content, cancellation, and what the agent asks."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, cast

from ..framework import CheckContext, check
from ..wire import AgentWire, ClientSide, Response, WireError
from ._common import ALL_CLIENT, HISTORY_UPDATES, index_of, update_kind, updates_between

_PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
_WAV_SILENCE = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="


@check("ACP-PROMPT-001")
async def prompt_ends_with_a_stop_reason(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        reason = ctx.stop_reason(await ctx.prompt(wire, session_id))
        ctx.note(f"stopReason {reason}")


@check("ACP-PROMPT-002")
async def updates_carry_the_session_id(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        start = len(wire.lines)
        response = await ctx.prompt(wire, session_id)
        await wire.quiet(ctx.options.quiet_period)
        updates = updates_between(wire, start, None)
        wrong = [u.get("sessionId") for u in updates if u.get("sessionId") != session_id]
        if wrong:
            ctx.fail(
                f"{len(wrong)} of {len(updates)} session/update(s) during the turn carry session "
                f"id {wrong[0]!r}, not the prompted {session_id!r}"
            )
        ctx.note(f"{len(updates)} update(s); prompt {response.describe()}")


_CONTENT_BLOCKS: dict[str, tuple[str, dict[str, Any]]] = {
    "ACP-PROMPT-003": (
        "a resource_link block",
        {"type": "resource_link", "uri": "file:///tmp/conformance.txt", "name": "conformance.txt"},
    ),
    "ACP-PROMPTCAP-001": (
        "an image block",
        {"type": "image", "mimeType": "image/png", "data": _PNG_1X1},
    ),
    "ACP-PROMPTCAP-002": (
        "an audio block",
        {"type": "audio", "mimeType": "audio/wav", "data": _WAV_SILENCE},
    ),
    "ACP-PROMPTCAP-003": (
        "an embedded resource",
        {
            "type": "resource",
            "resource": {
                "uri": "file:///tmp/conformance.txt",
                "mimeType": "text/plain",
                "text": "conformance suite embedded resource",
            },
        },
    ),
}
"""Requirement -> (what, a content block the agent must accept after a text block)."""


def _accepts(what: str, block: dict[str, Any]) -> Callable[[CheckContext], Awaitable[None]]:
    async def accepts(ctx: CheckContext) -> None:
        async with ctx.agent() as wire:
            await ctx.ready(wire)
            session_id = await ctx.new_session(wire)
            blocks = [{"type": "text", "text": ctx.options.prompt}, block]
            response = await ctx.prompt(wire, session_id, blocks)
            if not response.ok:
                ctx.fail(f"a prompt with {what} was refused: {response.describe()}")
            ctx.stop_reason(response)

    return accepts


for _id, (_what, _block) in _CONTENT_BLOCKS.items():
    check(_id)(_accepts(_what, _block))


@check("ACP-PROMPT-004")
async def large_prompts_are_survived(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        big = ctx.options.prompt + " " + "x" * (1024 * 1024)
        first = await ctx.prompt(wire, session_id, big)
        after = await ctx.prompt(wire, session_id)
        if not after.ok:
            ctx.fail(f"after a 1 MiB prompt the next prompt failed: {after.describe()}")
        ctx.note(f"1 MiB prompt: {first.describe()}")


@check("ACP-META-001")
async def meta_is_accepted(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        response = await ctx.prompt(
            wire, session_id, meta={"subagents.conformance": {"probe": True}}
        )
        if not response.ok:
            ctx.fail(f"a prompt carrying _meta was refused: {response.describe()}")


# -- cancellation ---------------------------------------------------------------------------


SETTLE = 0.2
"""How long a turn must keep running (after its first update) before the suite cancels it: a
turn still running then is not about to end by itself, so a late non-cancelled answer is the
agent's, not a race."""


async def _start_long_turn(ctx: CheckContext, wire: AgentWire, session_id: str) -> Any:
    """Start the cancel prompt, wait for its first update (bounded) and :data:`SETTLE` more;
    returns the request id."""
    start = len(wire.lines)
    request_id = await wire.start_request(
        "session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": ctx.options.cancel_prompt}]},
    )
    await wire.wait_for(
        lambda: bool(updates_between(wire, start, None, session_id)) or wire.answered(request_id),
        min(ctx.options.timeout, 5.0),
    )
    await wire.wait_for(lambda: wire.answered(request_id), SETTLE)
    return request_id


async def _cancelled_turn(
    ctx: CheckContext, wire: AgentWire, how: str = "session/cancel"
) -> tuple[str, Response, int]:
    """A long turn interrupted by ``how``; returns (session, prompt response, index of the
    interrupting message). Skips honestly when the turn ended before it could act."""
    await ctx.ready(wire)
    session_id = await ctx.new_session(wire)
    request_id = await _start_long_turn(ctx, wire, session_id)
    if wire.answered(request_id):
        ctx.skip(
            f"the {ctx.options.cancel_prompt!r} turn ended before it could be cancelled "
            "(use --cancel-prompt to give a prompt the agent works on longer)"
        )
    if how == "session/cancel":
        await wire.notify("session/cancel", {"sessionId": session_id})
    else:
        await wire.start_request("session/close", {"sessionId": session_id})
    sent_at = len(wire.lines) - 1
    try:
        response = await wire.wait_response(request_id)
    except WireError as exc:
        ctx.fail(f"after {how} the prompt was not answered: {exc}")
    return session_id, response, sent_at


def _judge_cancelled(
    ctx: CheckContext, wire: AgentWire, response: Response, sent_at: int, how: str
) -> None:
    if not response.ok:
        ctx.fail(
            f"after {how} the prompt was answered with an error ({response.describe()}), not "
            'stopReason "cancelled"'
        )
    result = response.result
    reason = cast(dict[str, Any], result).get("stopReason") if isinstance(result, dict) else None
    if reason == "cancelled":
        # "SHOULD stop ... as soon as possible": how soon is recorded (not judged: it depends
        # on the machine and on what the agent was doing).
        latency = response.line.t - wire.lines[sent_at].t
        ctx.note(f"answered cancelled {latency * 1000:.0f} ms after {how}")
    if reason != "cancelled":
        if index_of(wire, response.line) < sent_at:
            ctx.skip(f"the turn ended ({reason!r}) before {how} was sent")
        gap = response.line.t - wire.lines[sent_at].t
        ctx.fail(
            f"the turn had run {SETTLE:g} s past its first update when {how} was sent, yet it "
            f'was answered {gap * 1000:.0f} ms later with stopReason {reason!r}, not "cancelled"'
        )


@check("ACP-CANCEL-001")
async def cancel_ends_the_turn_cancelled(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        _, response, sent_at = await _cancelled_turn(ctx, wire)
        _judge_cancelled(ctx, wire, response, sent_at, "session/cancel")


@check("ACP-CANCEL-002")
async def no_update_after_the_cancelled_response(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        session_id, response, _ = await _cancelled_turn(ctx, wire)
        await wire.quiet(max(ctx.options.quiet_period, 0.5))
        # Session-level state (available commands, mode, config, session info) may change any
        # time; the turn's own updates (messages, thoughts, tool calls, plan) may not come late.
        late = [
            u
            for u in updates_between(wire, index_of(wire, response.line) + 1, None, session_id)
            if update_kind(u) in HISTORY_UPDATES
        ]
        if late:
            kinds = ", ".join(str(update_kind(u)) for u in late[:5])
            ctx.fail(f"{len(late)} session/update(s) arrived after the prompt's response: {kinds}")


@check("ACP-CANCEL-003")
async def prompt_after_cancel_works(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        session_id, _, _ = await _cancelled_turn(ctx, wire)
        ctx.stop_reason(await ctx.prompt(wire, session_id))


@check("ACP-CLOSE-002")
async def close_cancels_the_running_turn(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        _, response, sent_at = await _cancelled_turn(ctx, wire, "session/close")
        _judge_cancelled(ctx, wire, response, sent_at, "session/close")
        await wire.wait_for(lambda: not wire.pending_methods(), ctx.options.timeout)
        if wire.pending_methods():
            ctx.fail("session/close itself was never answered")


# -- what the agent asks of the client ------------------------------------------------------

_CAPABILITY_PROMPTS = ("fs", "terminal")
"""Prompts that make the reference agent use the client's file system and terminals (other
agents take them as ordinary text)."""


async def _turns_without_capabilities(ctx: CheckContext) -> AgentWire:
    async with ctx.agent(ClientSide()) as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        for text in (ctx.options.prompt, *_CAPABILITY_PROMPTS):
            await ctx.prompt(wire, session_id, text)
        await wire.quiet(ctx.options.quiet_period)
        return wire


def _called(wire: AgentWire, prefix: str) -> list[str]:
    return [
        str(r.get("method")) for r in wire.agent_requests if str(r.get("method")).startswith(prefix)
    ]


@check("ACP-CLIENTCAP-001")
async def no_fs_without_the_capability(ctx: CheckContext) -> None:
    wire = await _turns_without_capabilities(ctx)
    if calls := _called(wire, "fs/"):
        ctx.fail(
            "the client offered no file system, yet the agent called "
            f"{', '.join(sorted(set(calls)))}"
        )


@check("ACP-CLIENTCAP-002")
async def no_terminal_without_the_capability(ctx: CheckContext) -> None:
    wire = await _turns_without_capabilities(ctx)
    if calls := _called(wire, "terminal/"):
        ctx.fail(
            f"the client offered no terminals, yet the agent called {', '.join(sorted(set(calls)))}"
        )


@check("ACP-CLIENTCAP-003")
async def no_elicitation_without_the_capability(ctx: CheckContext) -> None:
    wire = await _turns_without_capabilities(ctx)
    if calls := _called(wire, "elicitation/"):
        ctx.fail(
            "the client offered no elicitation, yet the agent called "
            f"{', '.join(sorted(set(calls)))}"
        )


@check("ACP-TERMINAL-001")
async def terminals_are_released(ctx: CheckContext) -> None:
    async with ctx.agent(ALL_CLIENT) as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        for text in ("terminal", ctx.options.prompt):
            await ctx.prompt(wire, session_id, text)
        await wire.quiet(ctx.options.quiet_period)
        if not wire.terminals:
            ctx.note("the agent created no terminal (nothing to release)")
            return
        unreleased = sorted(t for t, state in wire.terminals.items() if not state["released"])
        if unreleased:
            ctx.fail(
                f"terminal(s) {', '.join(unreleased)} were never released with terminal/release"
            )


def _paths(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, path) for every file path in an agent message."""
    found: list[tuple[str, str]] = []
    method = message.get("method")
    params = message.get("params")
    if not isinstance(params, dict):
        return found
    params = cast(dict[str, Any], params)
    if isinstance(method, str) and method.startswith("fs/") and isinstance(params.get("path"), str):
        found.append((f"{method} path", params["path"]))
    if method == "terminal/create" and isinstance(params.get("cwd"), str):
        found.append(("terminal/create cwd", params["cwd"]))
    if method in ("session/update", "session/request_permission"):
        call = params.get("update") if method == "session/update" else params.get("toolCall")
        if isinstance(call, dict):
            call = cast(dict[str, Any], call)
            for location in cast(list[Any], call.get("locations") or []):
                if not isinstance(location, dict):
                    continue
                path = cast(dict[str, Any], location).get("path")
                if isinstance(path, str):
                    found.append(("tool call location", path))
            for content in cast(list[Any], call.get("content") or []):
                if not isinstance(content, dict):
                    continue
                content = cast(dict[str, Any], content)
                if content.get("type") == "diff":
                    path = content.get("path")
                    if isinstance(path, str):
                        found.append(("diff path", path))
    return found


@check("ACP-PATHS-001")
async def paths_are_absolute(ctx: CheckContext) -> None:
    async with ctx.agent(ALL_CLIENT) as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        for text in (ctx.options.prompt, *_CAPABILITY_PROMPTS, "tool"):
            await ctx.prompt(wire, session_id, text)
        await wire.quiet(ctx.options.quiet_period)
        relative = [
            (where, path)
            for message in wire.messages()
            for where, path in _paths(message)
            if not path.startswith("/")
        ]
        if relative:
            where, path = relative[0]
            ctx.fail(f"{len(relative)} relative path(s), the first a {where}: {path!r}")


@check("ACP-PLAN-001")
async def plans_are_sent_complete(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        start = len(wire.lines)
        await ctx.prompt(wire, session_id, "plan")
        plans = [
            cast(dict[str, Any], u["update"]).get("entries")
            for u in updates_between(wire, start, None, session_id)
            if update_kind(u) == "plan"
        ]
        seen: set[str] = set()
        for number, entries in enumerate(plans, 1):
            contents = {
                json.dumps(cast(dict[str, Any], e).get("content"))
                for e in cast(list[Any], entries or [])
                if isinstance(e, dict)
            }
            dropped = seen - contents
            if dropped:
                ctx.fail(
                    f"plan update {number} of the turn drops entr(ies) "
                    f"{', '.join(sorted(dropped))}: "
                    "each plan update must list every entry"
                )
            seen |= contents
        ctx.note(f"{len(plans)} plan update(s)")


@check("ACP-PERMISSION-001")
async def rejected_permission_ends_the_turn_normally(ctx: CheckContext) -> None:
    async with ctx.agent(ClientSide(permission="reject")) as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        response = await ctx.prompt(wire, session_id, "tool")
        asked = [r for r in wire.agent_requests if r.get("method") == "session/request_permission"]
        if not asked:
            ctx.note("the agent asked no permission (nothing to reject)")
            return
        if not response.ok:
            ctx.fail(f"after a rejected permission the prompt failed: {response.describe()}")
        ctx.stop_reason(response)
