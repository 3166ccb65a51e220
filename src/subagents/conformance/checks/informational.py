"""Spec gaps: what the agent does where the spec is silent. Recorded, never judged.

(session/new before initialize is judged, as an advisory spec gap: ACP-INIT-005.)
"""

from __future__ import annotations

import json

from ..framework import CheckContext, check
from ..wire import AgentWire, WireError


def _after(wire: AgentWire, start: int) -> str:
    lines = [line for line in wire.lines[start:] if line.direction == "agent"]
    if not lines:
        return "nothing"
    return "; ".join(line.raw[:200].decode("utf-8", "replace") for line in lines[:3])


async def _still_answers(ctx: CheckContext, wire: AgentWire) -> str:
    """Whether the agent still serves session/new after what the check sent, in words; the run's
    shared process is dropped when it does not (the checks after this one get a new one)."""
    try:
        response = await wire.request("session/new", wire.new_session_params())
    except WireError as exc:
        ctx.discard_shared(wire)
        return f"then no answer to session/new ({exc})"
    if not response.ok:
        ctx.discard_shared(wire)
        return f"then session/new fails: {response.describe()}"
    return "then session/new works"


@check("ACP-INFO-PARSE-001", pooled=True, disruptive=True)
async def malformed_json(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        start = len(wire.lines)
        # An id of its own (the process may be the run's shared one): the line is cut short.
        await wire.send_raw(f'{{"jsonrpc": "2.0", "id": {wire.next_id()}, "method": \n'.encode())
        await wire.quiet(ctx.options.quiet_period)
        ctx.note(
            f"a malformed line got: {_after(wire, start + 1)}; {await _still_answers(ctx, wire)}"
        )


@check("ACP-INFO-INVALIDREQ-001", pooled=True, disruptive=True)
async def not_an_envelope(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        start = len(wire.lines)
        await wire.send_raw(b'{"foo": "bar"}\n')
        await wire.quiet(ctx.options.quiet_period)
        ctx.note(
            f"a JSON object that is no JSON-RPC message got: {_after(wire, start + 1)}; "
            f"{await _still_answers(ctx, wire)}"
        )


@check("ACP-INFO-BATCH-001", pooled=True, disruptive=True)
async def batch(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        start = len(wire.lines)
        params = wire.new_session_params()
        batch = [
            {"jsonrpc": "2.0", "id": wire.next_id(), "method": "session/new", "params": params},
            {"jsonrpc": "2.0", "id": wire.next_id(), "method": "session/new", "params": params},
        ]
        await wire.send_raw(json.dumps(batch).encode() + b"\n")
        await wire.quiet(ctx.options.quiet_period)
        ctx.note(
            f"a batch of two session/new got: {_after(wire, start + 1)}; "
            f"{await _still_answers(ctx, wire)}"
        )


@check("ACP-INFO-UNKNOWNSESSION-001", pooled=True)
async def unknown_session(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        response = await ctx.call(
            wire,
            "session/prompt",
            {
                "sessionId": "conformance-no-such-session",
                "prompt": [{"type": "text", "text": ctx.options.prompt}],
            },
        )
        ctx.note(f"a prompt for an unknown session: {response.describe()}")


_LOOK = 3.0
"""How long ACP-INFO-CONCURRENT-001 watches for each answer it records."""


@check("ACP-INFO-CONCURRENT-001", long=True)
async def second_prompt_while_one_runs(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)
        session_id = await ctx.new_session(wire)
        first = await wire.start_request(
            "session/prompt",
            {
                "sessionId": session_id,
                "prompt": [{"type": "text", "text": ctx.options.cancel_prompt}],
            },
        )
        await wire.quiet(0.2)
        second = await wire.start_request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": ctx.options.prompt}]},
        )
        await wire.wait_for(lambda: wire.answered(second), min(ctx.options.timeout, _LOOK))
        await wire.notify("session/cancel", {"sessionId": session_id})
        # Recorded, not judged: a few seconds after the cancel are enough to tell.
        await wire.wait_for(
            lambda: wire.answered(first) and wire.answered(second),
            min(ctx.options.timeout, _LOOK),
        )
        outcomes: list[str] = []
        for name, request_id in (("first", first), ("second", second)):
            try:
                answer = await wire.wait_response(request_id, 0.0)
                outcomes.append(f"{name}: {answer.describe()}")
            except WireError:
                outcomes.append(f"{name}: no answer")
        ctx.note("two prompts at once (then a cancel): " + "; ".join(outcomes))


@check("ACP-INFO-IDLECANCEL-001", pooled=True)
async def cancel_of_idle_session(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id = await ctx.new_session(wire)
        start = len(wire.lines)
        await wire.notify("session/cancel", {"sessionId": session_id})
        await wire.quiet(ctx.options.quiet_period)
        reaction = _after(wire, start + 1)
        response = await ctx.prompt(wire, session_id)
        ctx.note(
            f"session/cancel of an idle session got: {reaction}; "
            f"the next prompt: {response.describe()}"
        )


@check("ACP-INFO-RELATIVECWD-001", pooled=True)
async def relative_cwd(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        response = await ctx.call(wire, "session/new", {"cwd": "relative/dir", "mcpServers": []})
        ctx.auth_blocked("session/new", response)
        ctx.note(f"session/new with a relative cwd: {response.describe()}")
