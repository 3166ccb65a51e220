"""Advertised session capabilities: load, resume, list, delete, close, modes, config options.

The capability gates live in the registry; a check here runs only when its gate is open, so
each one exercises what the agent claims ("no false advertising").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from ..framework import CheckContext, check
from ..wire import AgentWire, Response
from ._common import HISTORY_UPDATES, index_of, update_kind, updates_between


async def _session_with_history(ctx: CheckContext, wire: AgentWire) -> str:
    """session/new and one answered prompt turn (on an initialized agent): the session id."""
    session_id = await ctx.new_session(wire)
    ctx.stop_reason(await ctx.prompt(wire, session_id))
    return session_id


def _texts(updates: list[dict[str, Any]], kind: str) -> str:
    parts: list[str] = []
    for params in updates:
        update = cast(dict[str, Any], params.get("update"))
        if update.get("sessionUpdate") == kind:
            content = update.get("content")
            text = cast(dict[str, Any], content).get("text") if isinstance(content, dict) else None
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


_EXIT_WAIT = 2.0
"""How long the first process gets to exit once its stdin is closed (then it is stopped with
SIGTERM, as a client stops an agent that lingers: an agent that saves on exit saves then)."""


@dataclass
class _Reopened:
    """A session reopened the way a client reopens one: made (with a prompt turn) by an agent
    process that has since exited, then loaded or resumed in a new process, then prompted. The
    checks of one method share it (``@check(..., shares="session/load")``)."""

    wires: list[AgentWire] = field(default_factory=list[AgentWire])
    """The first process, then the new one."""
    error: Exception | None = None
    """What a step up to the load or resume raised (re-raised by every check)."""
    session_id: str = ""
    response: Response | None = None
    """The answer to ``session/load`` or ``session/resume``."""
    start: int = 0
    """Index in the new process's lines of the load or resume request."""
    settled: int = 0
    """Index in those lines after the quiet period that followed the answer (before the
    prompt that followed it)."""
    prompt: Response | None = None
    """The answer to a prompt in the reopened session (when it reopened)."""
    prompt_error: Exception | None = None

    @property
    def wire(self) -> AgentWire:
        return self.wires[-1]

    def answered(self) -> Response:
        """The load or resume answer; re-raises what the steps before it raised."""
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


_REOPENED = ("session/load", "session/resume")
"""The methods that reopen a session made by an earlier process (one such session each)."""


@dataclass
class _Made:
    """The sessions the reopen checks reopen: one per method of :data:`_REOPENED`, each with a
    prompt turn, made by one agent process that has since exited (shared by the load and the
    resume checks: one process start less)."""

    wire: AgentWire | None = None
    sessions: dict[str, str] = field(default_factory=dict[str, str])
    error: Exception | None = None


async def _made(ctx: CheckContext) -> _Made:
    """The run's :class:`_Made` (made by the first reopen check that asks)."""

    async def make() -> _Made:
        made = _Made()
        try:
            async with ctx.agent() as first:
                made.wire = first
                await ctx.ready(first)
                for method in _REOPENED:
                    made.sessions[method] = await _session_with_history(ctx, first)
                await first.close_stdin()
                await first.wait_exit(_EXIT_WAIT)
        except Exception as exc:  # recorded: every reopen check re-raises it
            made.error = exc
        return made

    return await ctx.shared("reopen/made", make)


async def _reopened(ctx: CheckContext, method: str) -> _Reopened:
    """Process 1 (:func:`_made`, shared by the load and resume checks): a session per method
    with one prompt turn, then stdin closed and the exit waited for (the shutdown ladder stops
    it otherwise); process 2: initialize, then ``method`` (``session/load`` or
    ``session/resume``) of its session, with its cwd, a quiet period, and a prompt in the
    reopened session. Made once per run and shared by the checks of ``method``."""

    async def make() -> _Reopened:
        run = _Reopened()
        made = await _made(ctx)
        if made.wire is not None:
            run.wires.append(made.wire)
        try:
            if made.error is not None:
                raise made.error
            assert made.wire is not None
            run.session_id, cwd = made.sessions[method], made.wire.cwd
            async with ctx.agent() as wire:
                run.wires.append(wire)
                await ctx.ready(wire)
                run.start = len(wire.lines)
                params: dict[str, Any] = {
                    "sessionId": run.session_id,
                    "cwd": str(cwd),
                    "mcpServers": [],
                }
                run.response = response = await ctx.call(wire, method, params)
                ctx.auth_blocked(method, response)
                await wire.quiet(ctx.options.quiet_period)
                run.settled = len(wire.lines)
                if response.ok:
                    try:
                        run.prompt = await ctx.prompt(wire, run.session_id)
                    except Exception as exc:  # judged by the check that needs the answer
                        run.prompt_error = exc
        except Exception as exc:  # recorded: every sharing check re-raises it
            run.error = exc
        return run

    run = await ctx.shared(method, make)
    for wire in run.wires:
        ctx.adopt(wire)
    return run


_ELSEWHERE = "in a new agent process, after the one that made it (with a prompt turn) exited"


def _prompted(ctx: CheckContext, run: _Reopened) -> None:
    """The reopened session took a prompt turn (fails the check otherwise)."""
    if run.prompt_error is not None:
        raise run.prompt_error
    assert run.prompt is not None
    ctx.stop_reason(run.prompt)


@check("ACP-LOAD-001", shares="session/load", long=True)
async def load_succeeds(ctx: CheckContext) -> None:
    loaded = await _reopened(ctx, "session/load")
    response = loaded.answered()
    if not response.ok:
        ctx.fail(
            f"session/load of session {loaded.session_id!r} {_ELSEWHERE}, failed: "
            f"{response.describe()}"
        )
    _prompted(ctx, loaded)


@check("ACP-LOAD-002", shares="session/load", long=True)
async def load_replays_before_answering(ctx: CheckContext) -> None:
    loaded = await _reopened(ctx, "session/load")
    wire, response = loaded.wire, loaded.answered()
    if not response.ok:
        ctx.blocked_by("ACP-LOAD-001", f"session/load failed: {response.describe()}")
    answer_at = index_of(wire, response.line)
    before = updates_between(wire, loaded.start, answer_at, loaded.session_id)
    after = [
        u
        for u in updates_between(wire, answer_at + 1, loaded.settled, loaded.session_id)
        if update_kind(u) in HISTORY_UPDATES
    ]
    if after:
        ctx.fail(
            f"{len(after)} history update(s) ({update_kind(after[0])}, ...) arrived after the "
            "session/load response: the whole replay must come before it"
        )
    if ctx.options.prompt not in _texts(before, "user_message_chunk"):
        kinds = sorted({str(update_kind(u)) for u in before}) or ["none"]
        ctx.fail(
            f"session/load ({_ELSEWHERE}) did not replay the user's earlier prompt as "
            f"user_message_chunk before answering (replayed update kinds: {', '.join(kinds)})"
        )


@check("ACP-LOAD-003", shares="session/load", long=True)
async def load_result_is_an_object(ctx: CheckContext) -> None:
    response = (await _reopened(ctx, "session/load")).answered()
    if not response.ok:
        ctx.blocked_by("ACP-LOAD-001", f"session/load failed: {response.describe()}")
    if not isinstance(response.result, dict):
        ctx.fail(f"session/load was answered with {response.describe()}, not an object")


@check("ACP-ADDDIRS-001", pooled=True)
async def additional_directories_are_accepted(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        extra = wire.cwd / "additional-root"
        extra.mkdir(exist_ok=True)
        session_id = await ctx.new_session(wire, additionalDirectories=[str(extra)])
        ctx.stop_reason(await ctx.prompt(wire, session_id))


@check("ACP-LOAD-004", pooled=True)
async def load_of_unknown_session_fails(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        response = await ctx.call(
            wire,
            "session/load",
            {"sessionId": "conformance-no-such-session", "cwd": str(wire.cwd), "mcpServers": []},
        )
        ctx.auth_blocked("session/load", response)
        if response.ok:
            ctx.fail("session/load of a session id that never existed succeeded")
        ctx.note(f"unknown session: {response.describe()}")


@check("ACP-RESUME-001", shares="session/resume", long=True)
async def resume_succeeds(ctx: CheckContext) -> None:
    resumed = await _reopened(ctx, "session/resume")
    response = resumed.answered()
    if not response.ok:
        ctx.fail(
            f"session/resume of session {resumed.session_id!r} {_ELSEWHERE}, failed: "
            f"{response.describe()}"
        )
    _prompted(ctx, resumed)


@check("ACP-RESUME-002", shares="session/resume", long=True)
async def resume_does_not_replay(ctx: CheckContext) -> None:
    resumed = await _reopened(ctx, "session/resume")
    wire, response = resumed.wire, resumed.answered()
    if not response.ok:
        ctx.blocked_by("ACP-RESUME-001", f"session/resume failed: {response.describe()}")
    replayed = [
        u
        for u in updates_between(
            wire, resumed.start, index_of(wire, response.line), resumed.session_id
        )
        if update_kind(u) in HISTORY_UPDATES
    ]
    if replayed:
        ctx.fail(
            f"session/resume replayed {len(replayed)} history update(s) "
            f"({update_kind(replayed[0])}, ...) before responding"
        )


def _listed(response: Response) -> list[str]:
    result = response.result
    sessions = cast(dict[str, Any], result).get("sessions") if isinstance(result, dict) else None
    if not isinstance(sessions, list):
        return []
    return [
        str(cast(dict[str, Any], s).get("sessionId"))
        for s in cast(list[Any], sessions)
        if isinstance(s, dict)
    ]


@check("ACP-LIST-001", pooled=True)
async def list_includes_a_new_session(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id = await _session_with_history(ctx, wire)
        response = await ctx.call(wire, "session/list", {"cwd": str(wire.cwd)})
        if not response.ok:
            ctx.fail(f"session/list failed: {response.describe()}")
        if not isinstance(cast(dict[str, Any], response.result).get("sessions"), list):
            ctx.fail(f"session/list has no sessions array: {response.describe()}")
        if session_id not in _listed(response):
            ctx.fail(
                f"session/list (cwd {wire.cwd}) does not include "
                f"the session {session_id!r} just made"
            )


@check("ACP-LIST-002", pooled=True)
async def list_of_nothing_is_empty(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        await _session_with_history(ctx, wire)
        unused = wire.cwd / "no-session-here"
        unused.mkdir(exist_ok=True)
        response = await ctx.call(wire, "session/list", {"cwd": str(unused)})
        if not response.ok:
            ctx.fail(f"session/list failed: {response.describe()}")
        result = response.result
        sessions = (
            cast(dict[str, Any], result).get("sessions") if isinstance(result, dict) else None
        )
        if sessions != []:
            ctx.fail(
                "session/list for a cwd no session uses returned "
                f"{json.dumps(sessions)[:300]}, not []"
            )


@check("ACP-LIST-003", pooled=True)
async def list_rejects_an_invalid_cursor(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        response = await ctx.call(wire, "session/list", {"cursor": "conformance-invalid-cursor"})
        if response.ok:
            ctx.fail(
                "session/list accepted a cursor it never issued "
                f"({response.describe()}); session-list.mdx: "
                '"Agents SHOULD return an error if the cursor is invalid"'
            )
        ctx.note(f"an invalid cursor: {response.describe()}")


@check("ACP-DELETE-001", pooled=True)
async def delete_removes_a_session(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id = await _session_with_history(ctx, wire)
        response = await ctx.call(wire, "session/delete", {"sessionId": session_id})
        if not response.ok:
            ctx.fail(f"session/delete failed: {response.describe()}")
        if ctx.probe.gate_open("agentCapabilities.sessionCapabilities.list", ctx.options):
            listed = await ctx.call(wire, "session/list", {"cwd": str(wire.cwd)})
            if session_id in _listed(listed):
                ctx.fail(f"session {session_id!r} is still listed after session/delete")


@check("ACP-DELETE-002", pooled=True)
async def delete_of_unknown_session_is_silent(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        response = await ctx.call(
            wire, "session/delete", {"sessionId": "conformance-no-such-session"}
        )
        if not response.ok:
            ctx.fail(f"deleting a session that never existed failed: {response.describe()}")


@check("ACP-CLOSE-001", pooled=True)
async def close_of_idle_session_succeeds(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id = await _session_with_history(ctx, wire)
        response = await ctx.call(wire, "session/close", {"sessionId": session_id})
        if not response.ok:
            ctx.fail(f"session/close failed: {response.describe()}")


# -- modes and configuration options --------------------------------------------------------


async def _new_session_result(ctx: CheckContext, wire: AgentWire) -> tuple[str, dict[str, Any]]:
    response = await ctx.session_new_response(wire)
    result = response.result
    if not response.ok or not isinstance(result, dict):
        ctx.fail(f"session/new failed: {response.describe()}")
    result = cast(dict[str, Any], result)
    return str(result.get("sessionId")), result


def _mode_ids(result: dict[str, Any]) -> list[str]:
    modes = result.get("modes")
    available = (
        cast(dict[str, Any], modes).get("availableModes") if isinstance(modes, dict) else None
    )
    return [
        str(cast(dict[str, Any], m).get("id"))
        for m in cast(list[Any], available or [])
        if isinstance(m, dict)
    ]


@check("ACP-MODES-001", pooled=True)
async def current_mode_is_available(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        _, result = await _new_session_result(ctx, wire)
        if not result.get("modes"):
            ctx.skip("this session/new result has no modes")
        current = cast(dict[str, Any], result["modes"]).get("currentModeId")
        if current not in _mode_ids(result):
            ctx.fail(
                f"currentModeId {current!r} is not one of the available modes {_mode_ids(result)}"
            )


@check("ACP-MODES-002", pooled=True)
async def set_mode_succeeds(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id, result = await _new_session_result(ctx, wire)
        ids = _mode_ids(result)
        if not ids:
            ctx.skip("this session/new result lists no modes")
        current = cast(dict[str, Any], result["modes"]).get("currentModeId")
        target = next((m for m in ids if m != current), ids[0])
        response = await ctx.call(
            wire, "session/set_mode", {"sessionId": session_id, "modeId": target}
        )
        if not response.ok:
            ctx.fail(
                f"session/set_mode to the available mode {target!r} failed: {response.describe()}"
            )


def _option_values(option: dict[str, Any]) -> list[Any]:
    values: list[Any] = []
    for item in cast(list[Any], option.get("options") or []):
        if not isinstance(item, dict):
            continue
        item = cast(dict[str, Any], item)
        if "value" in item:
            values.append(item["value"])
        for inner in cast(list[Any], item.get("options") or []):  # a group of options
            if isinstance(inner, dict) and "value" in inner:
                values.append(cast(dict[str, Any], inner)["value"])
    return values


def _options(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        cast(dict[str, Any], o)
        for o in cast(list[Any], result.get("configOptions") or [])
        if isinstance(o, dict)
    ]


@check("ACP-CONFIG-001", pooled=True)
async def config_options_have_defaults(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        _, result = await _new_session_result(ctx, wire)
        for option in _options(result):
            if option.get("currentValue") is None:
                ctx.fail(f"config option {option.get('id')!r} has no current (default) value")
            if option.get("type") == "select" and option["currentValue"] not in _option_values(
                option
            ):
                ctx.fail(
                    f"config option {option.get('id')!r} has current value "
                    f"{option['currentValue']!r}, "
                    "not one of its options"
                )


@check("ACP-CONFIG-002", pooled=True)
async def set_config_option_answers_the_full_list(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id, result = await _new_session_result(ctx, wire)
        options = _options(result)
        select = next((o for o in options if o.get("type") == "select" and _option_values(o)), None)
        if select is None:
            ctx.skip("no select config option to set")
        values = _option_values(select)
        target = next((v for v in values if v != select.get("currentValue")), values[0])
        response = await ctx.call(
            wire,
            "session/set_config_option",
            {"sessionId": session_id, "configId": select["id"], "value": target},
        )
        if not response.ok:
            ctx.fail(
                f"session/set_config_option {select['id']}={target!r} failed: {response.describe()}"
            )
        answered = {o.get("id") for o in _options(cast(dict[str, Any], response.result))}
        missing = sorted(str(o.get("id")) for o in options if o.get("id") not in answered)
        if missing:
            ctx.fail(
                f"session/set_config_option left out option(s) {', '.join(missing)}: "
                "it must answer the complete list"
            )


@check("ACP-CONFIG-003", pooled=True)
async def no_boolean_options_unless_advertised(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        _, result = await _new_session_result(ctx, wire)
        booleans = [str(o.get("id")) for o in _options(result) if o.get("type") == "boolean"]
        if booleans:
            ctx.fail(
                f"config option(s) {', '.join(booleans)} have type boolean, "
                "which the client did not "
                "advertise support for"
            )
