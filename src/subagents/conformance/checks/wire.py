"""Transport, JSON-RPC, schema, error shape and extension checks."""

from __future__ import annotations

import json
from typing import Any, cast

from ..framework import CheckContext, CheckInconclusive, check
from ..wire import AgentWire, Line
from ._common import BASIC, basic_run, first_lines


def _fragments(wire: AgentWire) -> tuple[list[Line], list[list[Line]]]:
    """Agent lines that are not JSON, split into (stray lines, multi-line messages).

    A run of consecutive non-JSON lines that parses as JSON once joined with newlines is one
    message spread over several lines (an embedded newline), not garbage.
    """
    lines = wire.agent_lines()
    stray: list[Line] = []
    spread: list[list[Line]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.json_ok or not line.utf8:
            index += 1
            continue
        joined_at = None
        for end in range(index + 1, min(index + 400, len(lines))):
            if lines[end].json_ok or not lines[end].utf8:
                break
            text = b"\n".join(part.raw for part in lines[index : end + 1])
            try:
                json.loads(text)
            except ValueError:
                continue
            joined_at = end
            break
        if joined_at is None:
            stray.append(line)
            index += 1
        else:
            spread.append(lines[index : joined_at + 1])
            index = joined_at + 1
    return stray, spread


@check("ACP-TRANSPORT-001", shares=BASIC)
async def stdout_carries_only_messages(ctx: CheckContext) -> None:
    wire, _ = (await basic_run(ctx)).exchanged()
    stray, _ = _fragments(wire)
    bad = stray + [line for line in wire.agent_lines() if line.json_ok and line.jsonrpc_problem]
    if bad:
        problems = {line.jsonrpc_problem or "not JSON" for line in bad}
        ctx.fail(
            f"{len(bad)} line(s) on stdout are not JSON-RPC messages "
            f"({', '.join(sorted(problems))}): {first_lines(bad)}"
        )


@check("ACP-TRANSPORT-002", shares=BASIC)
async def stdout_is_utf8(ctx: CheckContext) -> None:
    wire, _ = (await basic_run(ctx)).exchanged()
    bad = [line for line in wire.agent_lines() if not line.utf8]
    if bad:
        ctx.fail(f"{len(bad)} line(s) on stdout are not valid UTF-8: {first_lines(bad)}")


@check("ACP-TRANSPORT-003", shares=BASIC)
async def messages_have_no_embedded_newline(ctx: CheckContext) -> None:
    wire, _ = (await basic_run(ctx)).exchanged()
    _, spread = _fragments(wire)
    if spread:
        first = spread[0]
        ctx.fail(
            f"{len(spread)} message(s) were spread over several lines (embedded newlines); "
            f"the first took {len(first)} lines starting {first[0].raw[:120]!r}"
        )


@check("ACP-JSONRPC-001")
async def response_ids_echo_request_ids(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        request_id = await wire.start_request(
            "initialize",
            wire.initialize_params(),
            id="conformance-init-1",
        )
        await _expect_echo(ctx, wire, "initialize", request_id, ctx.options.startup_timeout)
        for method, new_id in (("session/new", 7), ("session/new", "conformance-new-2")):
            request_id = await wire.start_request(method, wire.new_session_params(), id=new_id)
            await _expect_echo(ctx, wire, method, request_id, ctx.options.timeout)


_NEAR_MISS_GRACE = 1.0
"""How long the right answer may still come after a response with another id arrived."""


async def _expect_echo(
    ctx: CheckContext, wire: AgentWire, method: str, request_id: Any, timeout: float
) -> None:
    # A response to no request of ours (another id) is the event: the answer, with the id
    # changed. Decide then, after a short grace for a late right answer.
    seen = len(wire.unmatched_responses)
    await wire.wait_for(
        lambda: wire.answered(request_id) or len(wire.unmatched_responses) > seen, timeout
    )
    if not wire.answered(request_id) and len(wire.unmatched_responses) > seen:
        await wire.wait_for(lambda: wire.answered(request_id), _NEAR_MISS_GRACE)
    if wire.answered(request_id):
        return
    messages: list[Any] = [line.message for line in wire.unmatched_responses]
    near = [cast(dict[str, Any], m).get("id") for m in messages if isinstance(m, dict)]
    if near:
        ctx.fail(
            f"{method} sent with id {request_id!r} ({type(request_id).__name__}) was answered "
            f"with id {near[-1]!r} ({type(near[-1]).__name__})"
        )
    if isinstance(request_id, str) and not wire.eof:
        await _unanswered_string_id(ctx, method, request_id, timeout)
    ctx.fail(f"{method} sent with id {request_id!r} got no response within {timeout:g} s")


async def _unanswered_string_id(
    ctx: CheckContext, method: str, request_id: str, timeout: float
) -> None:
    """A request with a string id went unanswered: is it the id, or a slow machine? The same
    ``initialize`` with an integer id in a fresh process tells: answered, the agent drops
    string ids (a failure); unanswered too, the agent is just slow to start right now (load:
    inconclusive, retried once by the runner), never a finding about ids."""
    if method != "initialize":
        return
    async with ctx.agent() as control:
        answered = await _answers_integer_initialize(control, timeout)
    if not answered:
        raise CheckInconclusive(
            f"initialize got no response within {timeout:g} s, with a string id "
            f"({request_id!r}) or an integer one (a fresh process): the agent is slow to start "
            "right now"
        )
    ctx.fail(
        f"initialize sent with the string id {request_id!r} got no response within "
        f"{timeout:g} s, while the same initialize with an integer id was answered"
    )


async def _answers_integer_initialize(wire: AgentWire, timeout: float) -> bool:
    request_id = await wire.start_request("initialize", wire.initialize_params(), id=1)
    return await wire.wait_for(lambda: wire.answered(request_id), timeout)


def _is_response(message: Any) -> bool:
    """Whether a decoded line is a JSON object without a method."""
    return isinstance(message, dict) and "method" not in message


@check("ACP-JSONRPC-002", pooled=True)
async def responses_are_well_formed(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        await wire.start_request("conformance/no-such-method", {})
        await wire.start_request("session/prompt", {"sessionId": 42, "prompt": "not a list"})
        await wire.start_request("session/new", wire.new_session_params())
        await wire.wait_for(lambda: not wire.pending_methods(), ctx.options.timeout)
        bad = [
            line
            for line in ctx.lines_of(wire)
            if line.direction == "agent"
            and line.json_ok
            and _is_response(line.message)
            and line.jsonrpc_problem is not None
        ]
        if bad:
            ctx.fail(f"malformed response(s): {bad[0].jsonrpc_problem}: {first_lines(bad)}")
        if methods := wire.pending_methods():
            ctx.fail(f"no response to {', '.join(methods)} within {ctx.options.timeout:g} s")


@check("ACP-JSONRPC-003", pooled=True)
async def notifications_get_no_response(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id = await ctx.new_session(wire)
        before = len(wire.unmatched_responses)
        await wire.notify("session/cancel", {"sessionId": session_id})
        await wire.notify("_conformance/notice", {"probe": True})
        await wire.notify("conformance/unknown-notification", {})
        # A request after them: its answer shows the agent has read the notifications (an
        # answer to one of them may still come: the quiet period after it watches for that).
        await ctx.call(wire, "session/new", wire.new_session_params())
        await wire.quiet(ctx.options.quiet_period)
        answered = wire.unmatched_responses[before:]
        nameless = [
            line
            for line in ctx.lines_of(wire)
            if line.direction == "agent"
            and line.jsonrpc_problem == "neither a request, a notification nor a response"
        ]
        if answered or nameless:
            ctx.fail(f"the agent answered notification(s): {first_lines(answered + nameless)}")


@check("ACP-JSONRPC-004", pooled=True)
async def unknown_method_is_method_not_found(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        for method in ("conformance/no-such-method", "_conformance/no-such-method"):
            response = await ctx.call(wire, method, {})
            if response.error_code != -32601:
                ctx.fail(
                    f"the unknown method {method} was answered with "
                    f"{response.describe()}, not -32601"
                )


@check("ACP-JSONRPC-005", pooled=True)
async def connection_survives_errors(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        await ctx.call(wire, "conformance/no-such-method", {})
        await ctx.call(wire, "session/new", {"cwd": 42, "mcpServers": "none"})
        response = await ctx.session_new_response(wire)
        if not response.ok:
            ctx.fail(f"after two erroneous requests, session/new failed: {response.describe()}")


@check("ACP-SCHEMA-001", shares=BASIC)
async def messages_validate_against_the_schema(ctx: CheckContext) -> None:
    wire, _ = (await basic_run(ctx)).exchanged()
    errors = [error for line in wire.agent_lines() for error in line.schema_errors]
    if errors:
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        ctx.fail("schema violations: " + "; ".join(errors[:5]) + more)


@check("ACP-SCHEMA-002", shares=BASIC)
async def no_fields_outside_the_schema(ctx: CheckContext) -> None:
    wire, _ = (await basic_run(ctx)).exchanged()
    extra = [found for line in wire.agent_lines() for found in line.unknown_fields]
    unstable = sorted({found for line in wire.agent_lines() for found in line.unstable_fields})
    if unstable:  # opt-in draft features: recorded (informational), never a finding
        ctx.note("unstable schema used: " + "; ".join(unstable[:5]))
    if extra:
        ctx.fail("; ".join(sorted(set(extra))[:5]))


@check("ACP-ERROR-001", pooled=True)
async def error_messages_are_single_lines(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        responses = [
            await ctx.call(wire, "conformance/no-such-method", {}),
            await ctx.call(wire, "session/new", {"cwd": 42}),
            await ctx.call(
                wire,
                "session/prompt",
                {"sessionId": "conformance-unknown", "prompt": [{"type": "text", "text": "x"}]},
            ),
        ]
        errors = [r.error for r in responses if r.error is not None]
        if not errors:  # nothing to judge: the agent sent no error at all
            ctx.not_exercised("the agent answered none of the erroneous requests with an error")
        for error in errors:
            message = error.get("message")
            if not isinstance(message, str) or not message.strip():
                ctx.fail(f"an error has an empty message: {json.dumps(error)[:300]}")
            if "\n" in message:
                ctx.fail(f"an error message spans several lines: {message[:300]!r}")


@check("ACP-EXT-001", pooled=True)
async def extension_requests_are_answered(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        response = await ctx.call(wire, "_conformance/ping", {"probe": True})
        # The wire ensures it: a defensive check, never true.
        if not isinstance(response.message, dict):  # pyright: ignore[reportUnnecessaryIsInstance]  # pragma: no cover
            ctx.fail("no response")
        ctx.note(f"_conformance/ping: {response.describe()}")
