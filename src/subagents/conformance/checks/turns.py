"""Prompt turns: stop reasons, updates, content, cancellation, and what the agent asks."""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn, cast

import anyio

from ..framework import CheckContext, check
from ..wire import AgentWire, ClientSide, Response, WireError, WireTimeout
from ._common import (
    ALL_CLIENT,
    BASIC,
    HISTORY_UPDATES,
    basic_run,
    index_of,
    sent_index,
    update_kind,
    updates_between,
)

_PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
_WAV_SILENCE = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="


@check("ACP-PROMPT-001", shares=BASIC)
async def prompt_ends_with_a_stop_reason(ctx: CheckContext) -> None:
    _, exchange = (await basic_run(ctx)).exchanged()
    ctx.note(f"stopReason {ctx.stop_reason(exchange.prompt)}")


@check("ACP-PROMPT-002", shares=BASIC)
async def updates_carry_the_session_id(ctx: CheckContext) -> None:
    run = await basic_run(ctx)
    wire, exchange = run.exchanged()
    session_id, start, response = exchange.session_id, run.prompt_start, exchange.prompt
    # The turn's updates all come before its response (prompt-turn.mdx): no wait after it.
    updates = updates_between(wire, start, index_of(wire, response.line))
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
        async with ctx.ready_agent() as wire:
            session_id = await ctx.new_session(wire)
            blocks = [{"type": "text", "text": ctx.options.prompt}, block]
            response = await ctx.prompt(wire, session_id, blocks)
            if not response.ok:
                ctx.fail(f"a prompt with {what} was refused: {response.describe()}")
            ctx.stop_reason(response)

    return accepts


for _id, (_what, _block) in _CONTENT_BLOCKS.items():
    check(_id, pooled=True)(_accepts(_what, _block))


_PROSE_WORDS = """
    the a an this that these those some every each other another first last next same agent
    client session prompt turn update message answer question request response file folder
    path line word sentence paragraph chapter story report table list note river mountain
    harbour garden kitchen window lantern bridge market station library morning evening
    winter summer season weather storm cloud light shadow colour sound reads writes opens
    closes builds breaks finds keeps sends brings carries follows explains describes
    remembers forgets measures compares returns changes waits works quickly slowly carefully
    quietly often rarely almost already still again together small large old new early late
    bright dark warm cold simple careful patient curious because although while before after
    until unless whenever since if when where and but or so yet nor with without under over
    between through across around beside function variable module parser buffer stream
    socket thread process queue cache error warning result value number string object array
    record field index version teacher traveller engineer gardener baker sailor painter
    doctor neighbour stranger ninety seven twelve forty three hundred thousand several many
    few most none
"""
_VOCABULARY = tuple(_PROSE_WORDS.split())
"""Words for :func:`realistic_text` (varied lengths and kinds, nothing repeated)."""


@functools.cache
def realistic_text(size: int, seed: int = 20260822) -> str:
    """``size`` characters of deterministic prose: sentences of 5 to 24 varied words with
    commas and different endings, grouped in paragraphs (what a pasted document looks like to
    a tokenizer, unlike one character repeated)."""
    state = seed

    def below(n: int) -> int:
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        return (state >> 33) % n

    parts: list[str] = []
    length = 0
    while length < size:
        for _ in range(3 + below(5)):
            words = [_VOCABULARY[below(len(_VOCABULARY))] for _ in range(5 + below(20))]
            words[0] = words[0].capitalize()
            if len(words) > 8 and below(2):
                words[3 + below(len(words) - 6)] += ","
            sentence = " ".join(words) + ".?!."[below(4)] + " "
            parts.append(sentence)
            length += len(sentence)
        parts.append("\n\n")
        length += 2
    return "".join(parts)[:size]


@check("ACP-PROMPT-004", pooled=True)
async def large_prompts_are_survived(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id = await ctx.new_session(wire)
        big = ctx.options.prompt + "\n\n" + realistic_text(1024 * 1024)
        first = await ctx.prompt(wire, session_id, big)
        after = await ctx.prompt(wire, session_id)
        if not after.ok:
            ctx.fail(f"after a 1 MiB prompt the next prompt failed: {after.describe()}")
        ctx.note(f"1 MiB prompt: {first.describe()}")


@check("ACP-META-001", pooled=True)
async def meta_is_accepted(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id = await ctx.new_session(wire)
        response = await ctx.prompt(
            wire, session_id, meta={"subagents.conformance": {"probe": True}}
        )
        if not response.ok:
            ctx.fail(f"a prompt carrying _meta was refused: {response.describe()}")


# -- cancellation ---------------------------------------------------------------------------

SETTLE = 0.2
"""How long a turn has run past its first update when the "settled" cancel is sent: a turn
still running then is not about to end by itself, so a late non-cancelled answer is the
agent's, not a race."""
FIRST_UPDATE_WAIT = 5.0
"""Bound on the wait for a turn's first update (the cancel is sent anyway after it)."""
AFTER_CLOSE = 5.0
"""How long the interrupted prompt may stay unanswered once ``session/close`` has been
answered (the session is gone for the agent then; its turn must have been cancelled)."""
GRACE = 0.25
"""How long updates are watched for after the last cancelled turn's response (earlier
rounds' sessions are watched until the check ends)."""

TURN_UPDATES = HISTORY_UPDATES | {"usage_update"}
"""``sessionUpdate`` kinds a prompt turn sends: message and thought chunks, tool calls, plan,
usage (what the "first update" of a turn is)."""
SESSION_STATE_UPDATES = frozenset(
    {
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
    }
)
"""``sessionUpdate`` kinds that describe the session's state, not a turn: they may come at any
time. Every other update (unknown kinds too) belongs to the turn it is sent in."""


@dataclass(frozen=True)
class _Moment:
    """When a round interrupts its turn."""

    label: str
    delay: float | None
    """Seconds after the turn's first update; ``None``: right after the prompt is sent."""


_MOMENTS = (
    _Moment(f"{SETTLE:g} s after the turn's first update", SETTLE),
    _Moment("right after the prompt was sent", None),
    _Moment("at the turn's first update", 0.0),
)
"""The moments rounds 1, 2, 3, 4, ... cancel at (in turn). The settled one comes first, so
that a single round (``--cancel-rounds 1``) still judges a late non-cancelled answer."""


@dataclass
class _Round:
    """One interrupted turn, in a session of its own (and the prompt after it, if sent)."""

    number: int
    moment: _Moment
    how: str
    session_id: str
    request_id: Any
    prompt_at: int
    """Index of the prompt in the transcript."""
    sent_at: int | None = None
    """Index of the interrupting message (``None``: the turn ended before it was sent)."""
    first_update: bool = False
    """Whether a turn update arrived before the interrupt."""
    waited_out: bool = False
    """The wait for the first update ran out, the turn still running (a silent turn)."""
    settled: bool = False
    """The interrupt came when the turn was not about to end by itself: :data:`SETTLE` past
    its first update, or after the whole wait for one."""
    response: Response | None = None
    error: str | None = None
    """Why the interrupted prompt got no answer."""
    close_error: str | None = None
    follow_up_at: int | None = None
    follow_up: Response | None = None
    follow_up_error: str | None = None

    @property
    def name(self) -> str:
        return f"round {self.number} ({self.how} {self.moment.label})"

    @property
    def stop_reason(self) -> str | None:
        result = self.response.result if self.response is not None else None
        reason = (
            cast(dict[str, Any], result).get("stopReason") if isinstance(result, dict) else None
        )
        return reason if isinstance(reason, str) else None

    def ended_first(self, wire: AgentWire) -> bool:
        """The turn was answered before the interrupt was sent (nothing to judge)."""
        return self.response is not None and (
            self.sent_at is None or index_of(wire, self.response.line) < self.sent_at
        )

    def cancelled(self, wire: AgentWire) -> bool:
        """Interrupted, and answered ``cancelled``."""
        return (
            not self.ended_first(wire)
            and self.response is not None
            and self.response.ok
            and self.stop_reason == "cancelled"
        )

    def gap_ms(self, wire: AgentWire) -> float:
        assert self.response is not None
        assert self.sent_at is not None
        return (self.response.line.t - wire.lines[self.sent_at].t) * 1000


def _turn_updates(
    wire: AgentWire, start: int, end: int | None, session_id: str
) -> list[dict[str, Any]]:
    return [
        u for u in updates_between(wire, start, end, session_id) if update_kind(u) in TURN_UPDATES
    ]


def _prompt_params(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


async def _interrupted_turn(
    ctx: CheckContext, wire: AgentWire, number: int, how: str, *, silent: bool = False
) -> _Round:
    """A new session, the cancel prompt, interrupted by ``how`` at the round's moment (with
    ``silent``, an earlier turn sent no update in time: the moment counts from the prompt)."""
    session_id = await ctx.new_session(wire)
    moment = _MOMENTS[(number - 1) % len(_MOMENTS)]
    prompt_at = len(wire.lines)
    try:
        request_id = await wire.start_request(
            "session/prompt", _prompt_params(session_id, ctx.options.cancel_prompt)
        )
    except WireError as exc:
        ctx.fail(f"round {number}: the {ctx.options.cancel_prompt!r} prompt: {exc}")
    turn = _Round(number, moment, how, session_id, request_id, prompt_at)
    if moment.delay is not None and not silent:
        turn.waited_out = not await wire.wait_for(
            lambda: (
                bool(_turn_updates(wire, prompt_at, None, session_id)) or wire.answered(request_id)
            ),
            min(ctx.options.timeout, FIRST_UPDATE_WAIT),
        )
    if moment.delay:
        await wire.wait_for(lambda: wire.answered(request_id), moment.delay)
    turn.first_update = bool(_turn_updates(wire, prompt_at, None, session_id))
    turn.settled = moment.delay == SETTLE and (turn.first_update or turn.waited_out)
    if wire.answered(request_id):
        turn.response = await wire.wait_response(request_id)
        return turn
    close_id: Any = None
    try:
        if how == "session/cancel":
            await wire.notify("session/cancel", {"sessionId": session_id})
            turn.sent_at = sent_index(wire, "session/cancel")
        else:
            close_id = await wire.start_request("session/close", {"sessionId": session_id})
            turn.sent_at = sent_index(wire, "session/close", close_id)
            await _prompt_or_close_answered(wire, request_id, close_id, ctx.options.timeout)
        turn.response = await wire.wait_response(request_id)
    except WireError as exc:
        turn.error = str(exc)
    if close_id is not None and turn.error is None:
        try:
            await wire.wait_response(close_id)
        except WireError as exc:
            turn.close_error = str(exc)
    return turn


async def _prompt_or_close_answered(
    wire: AgentWire, prompt_id: Any, close_id: Any, timeout: float
) -> None:
    """Wait until the prompt is answered; once the close is answered, at most
    :data:`AFTER_CLOSE` s more (:class:`WireTimeout` then: the answer is known not to come)."""
    await wire.wait_for(lambda: wire.answered(prompt_id) or wire.answered(close_id), timeout)
    closed = wire.answered(close_id) and not wire.answered(prompt_id)
    if closed and not await wire.wait_for(lambda: wire.answered(prompt_id), AFTER_CLOSE):
        raise WireTimeout(
            f"the prompt was still unanswered {AFTER_CLOSE:g} s after session/close was answered"
        )


async def _follow_up(ctx: CheckContext, wire: AgentWire, turn: _Round) -> None:
    """The ordinary prompt, in the session of the cancelled turn."""
    turn.follow_up_at = len(wire.lines)
    try:
        request_id = await wire.start_request(
            "session/prompt", _prompt_params(turn.session_id, ctx.options.prompt)
        )
        turn.follow_up = await wire.wait_response(request_id)
    except WireError as exc:
        turn.follow_up_error = str(exc)


Judge = Callable[[_Round], str | None]
"""Judges one round: returns ``None`` when it was judged (and held), or why it could not be;
fails the check when it does not hold."""


async def _interrupted_rounds(
    ctx: CheckContext, wire: AgentWire, how: str, *, follow_up: bool = False
) -> list[_Round]:
    """``Options.cancel_rounds`` interrupted turns (each cancelled turn followed by the
    ordinary prompt with ``follow_up``); stops early when a turn is not answered."""
    rounds: list[_Round] = []
    silent = False
    for number in range(1, max(1, ctx.options.cancel_rounds) + 1):
        turn = await _interrupted_turn(ctx, wire, number, how, silent=silent)
        rounds.append(turn)
        silent = silent or turn.waited_out
        if follow_up and turn.cancelled(wire):
            await _follow_up(ctx, wire, turn)
        if turn.error is not None:
            break  # the agent is stuck in that turn: later rounds would only wait
    return rounds


def _judge_rounds(
    ctx: CheckContext, wire: AgentWire, rounds: list[_Round], judge: Judge
) -> list[_Round]:
    """Judge each round (a failure ends the check); returns the judged ones. Skips, naming
    the real cause, when no round could be judged."""
    judged: list[_Round] = []
    unjudged: list[str] = []
    for turn in rounds:
        why = judge(turn)
        if why is None:
            judged.append(turn)
        else:
            unjudged.append(f"{turn.name}: {why}")
    if not judged:
        for turn in rounds:
            if turn.error is not None:
                ctx.blocked_by("ACP-CANCEL-001", f"{turn.name}: the prompt was not answered")
        _none_judged(ctx, wire, rounds, unjudged)
    if unjudged:
        ctx.note(f"{len(unjudged)} round(s) not judged: {'; '.join(unjudged)}")
    return judged


@dataclass
class _CancelRounds:
    """The cancelled turns several cancel checks judge: one agent process, (with follow-ups)
    a control session, then :func:`_interrupted_rounds`."""

    wire: AgentWire | None = None
    rounds: list[_Round] = field(default_factory=list[_Round])
    control: _Control | None = None
    error: Exception | None = None


async def _cancel_rounds(
    ctx: CheckContext, *, follow_up: bool
) -> tuple[AgentWire, list[_Round], _Control | None]:
    """The run's shared cancelled turns: without follow-ups (ACP-CANCEL-001/002: what comes
    after a cancelled answer is the cancelled turn's, watched until the check ends), or with
    them and a two-turn control session (ACP-CANCEL-003/004)."""

    async def make() -> _CancelRounds:
        run = _CancelRounds()
        try:
            async with ctx.agent() as wire:
                run.wire = wire
                await ctx.ready(wire)
                if follow_up:
                    run.control = await _control(ctx, wire, 2)
                run.rounds = await _interrupted_rounds(
                    ctx, wire, "session/cancel", follow_up=follow_up
                )
                # Each round has its own session, so an earlier round's late updates are
                # watched while the later rounds run; the last one gets a short grace.
                await wire.quiet(GRACE)
        except Exception as exc:  # recorded: every sharing check re-raises it
            run.error = exc
        return run

    run = await ctx.shared(CANCEL_FOLLOWED if follow_up else CANCEL, make)
    if run.wire is not None:
        ctx.adopt(run.wire)
    if run.error is not None:
        raise run.error
    assert run.wire is not None
    return run.wire, run.rounds, run.control


CANCEL = "session/cancel"
"""The key of the shared cancelled turns without follow-ups."""
CANCEL_FOLLOWED = "session/cancel, then a prompt"
"""The key of the shared cancelled turns with follow-ups."""


def _none_judged(
    ctx: CheckContext, wire: AgentWire, rounds: list[_Round], why: list[str]
) -> NoReturn:
    """Skip: no round could be judged; say why in the agent's terms."""
    prompt = ctx.options.cancel_prompt
    count = f"{len(rounds)} round(s)"
    own = any(_turn_updates(wire, r.prompt_at, None, r.session_id) for r in rounds)
    ours = {r.session_id for r in rounds}
    others = sorted(
        {
            str(u.get("sessionId"))
            for u in updates_between(wire, rounds[0].prompt_at, None)
            if u.get("sessionId") not in ours
        }
    )
    if not own and others:
        ctx.skip(
            f"no session/update for the prompted session arrived in any of the {prompt!r} turns "
            f"({count}): the updates carried session id(s) {', '.join(map(repr, others[:3]))} "
            "instead, so no turn could be caught running (see ACP-PROMPT-002)"
        )
    hint = "use --cancel-prompt to give a prompt the agent works on longer"
    if not own:
        ctx.skip(
            f"the {prompt!r} turn sent no session/update and ended before it could be "
            f"interrupted, in all {count} ({hint})"
        )
    ctx.skip(
        f"the {prompt!r} turn ended by itself before the interrupt could act, in all {count} "
        f"({why[0]}; {hint})"
    )


def _judge_interrupted(ctx: CheckContext, wire: AgentWire, turn: _Round) -> str | None:
    """The interrupted prompt is answered ``cancelled`` (CANCEL-001, CLOSE-002)."""
    how = turn.how
    if turn.error is not None:
        ctx.fail(f"{turn.name}: after {how} the prompt was not answered: {turn.error}")
    response = turn.response
    assert response is not None
    reason = turn.stop_reason
    if turn.ended_first(wire):
        return f"the turn ended ({reason or response.describe()}) before {how} was sent"
    if not response.ok:
        ctx.fail(
            f"{turn.name}: after {how} the prompt was answered with an error "
            f'({response.describe()}), not stopReason "cancelled"'
        )
    if reason == "cancelled":
        return None
    gap = turn.gap_ms(wire)
    if turn.settled:
        ran = wire.lines[cast(int, turn.sent_at)].t - wire.lines[turn.prompt_at].t
        past = f"{SETTLE:g} s past its first update" if turn.first_update else "silently"
        ctx.fail(
            f"{turn.name}: the turn had run {ran:.2f} s ({past}) when {how} was sent, yet it "
            f'was answered {gap:.0f} ms later with stopReason {reason!r}, not "cancelled"'
        )
    return f"answered {reason!r} {gap:.0f} ms after {how}: it may have been ending by itself"


def _latencies(wire: AgentWire, rounds: Iterable[_Round]) -> str:
    gaps = sorted(turn.gap_ms(wire) for turn in rounds)
    return f"{gaps[0]:.0f} ms" if len(gaps) == 1 else f"{gaps[0]:.0f}-{gaps[-1]:.0f} ms"


@check("ACP-CANCEL-001", shares=CANCEL, long=True)
async def cancel_ends_the_turn_cancelled(ctx: CheckContext) -> None:
    wire, rounds, _ = await _cancel_rounds(ctx, follow_up=False)
    judged = _judge_rounds(ctx, wire, rounds, lambda turn: _judge_interrupted(ctx, wire, turn))
    # "SHOULD stop ... as soon as possible": how soon is recorded (not judged: it depends
    # on the machine and on what the agent was doing).
    ctx.note(
        f"answered cancelled {_latencies(wire, judged)} after session/cancel, in "
        f"{len(judged)} of {len(rounds)} round(s)"
    )


def _cancelled_turn(wire: AgentWire, turn: _Round) -> str | None:
    """Whether the round's turn was cancelled (answered ``cancelled``, or anyhow after a
    settled cancel: its updates are a cancelled turn's either way)."""
    if turn.error is not None:
        return f"not answered ({turn.error})"
    assert turn.response is not None
    if turn.ended_first(wire):
        return f"the turn ended ({turn.stop_reason or turn.response.describe()}) first"
    if turn.stop_reason != "cancelled" and not turn.settled:
        return f"{_answer(turn)} after the cancel (it may have been ending by itself)"
    return None


def _answer(turn: _Round) -> str:
    """``answered 'end_turn'``, or the error the prompt was answered with."""
    assert turn.response is not None
    if turn.stop_reason is not None:
        return f"answered {turn.stop_reason!r}"
    return f"answered {turn.response.describe()}"


@check("ACP-CANCEL-002", shares=CANCEL, long=True)
async def no_update_after_the_cancelled_response(ctx: CheckContext) -> None:
    wire, rounds, _ = await _cancel_rounds(ctx, follow_up=False)
    judged = _judge_rounds(ctx, wire, rounds, lambda turn: _cancelled_turn(wire, turn))
    # An earlier round's late updates were watched while the later rounds ran (up to
    # the next prompt for the same id, should the agent hand out one id twice).
    late: list[tuple[_Round, list[str]]] = []
    for turn in judged:
        assert turn.response is not None
        after = index_of(wire, turn.response.line) + 1
        same = [r.prompt_at for r in rounds if r.session_id == turn.session_id]
        end = min((at for at in same if at > after), default=None)
        kinds = [
            str(update_kind(u))
            for u in updates_between(wire, after, end, turn.session_id)
            if update_kind(u) not in SESSION_STATE_UPDATES
        ]
        if kinds:
            late.append((turn, kinds))
    if late:
        turn, kinds = late[0]
        rounds_ = ", ".join(str(t.number) for t, _ in late)
        ctx.fail(
            f"session/update(s) of the cancelled turn arrived after the prompt's response in "
            f"{len(late)} of {len(judged)} round(s) ({rounds_}); {turn.name}: "
            f"{len(kinds)}, {', '.join(kinds[:5])}"
        )
    ctx.note(f"no late update in {len(judged)} cancelled turn(s)")


# -- the turn after a cancelled one -----------------------------------------------------------


@dataclass
class _Content:
    """What a turn said: its text (message and thought chunks, in order) and the ids of its
    messages and tool calls."""

    text: str = ""
    message_ids: set[str] = field(default_factory=set[str])
    tool_call_ids: set[str] = field(default_factory=set[str])
    updates: int = 0

    @property
    def empty(self) -> bool:
        return not (self.text.strip() or self.message_ids or self.tool_call_ids)


def _content(wire: AgentWire, session_id: str, start: int, end: int | None) -> _Content:
    found = _Content()
    parts: list[str] = []
    for params in _turn_updates(wire, start, end, session_id):
        found.updates += 1
        update = cast(dict[str, Any], params.get("update"))
        kind = update_kind(params)
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            block = update.get("content")
            if isinstance(block, dict):
                text = cast(dict[str, Any], block).get("text")
                if isinstance(text, str):
                    parts.append(text)
            message_id = update.get("messageId")
            if isinstance(message_id, str) and message_id:
                found.message_ids.add(message_id)
        elif kind in ("tool_call", "tool_call_update"):
            tool_call_id = update.get("toolCallId")
            if isinstance(tool_call_id, str) and tool_call_id:
                found.tool_call_ids.add(tool_call_id)
    found.text = "".join(parts)
    return found


@dataclass
class _Control:
    """The ordinary prompt, twice, in a fresh session of the same process."""

    first: _Content
    second: _Content
    stop_reason: str | None

    @property
    def text(self) -> str:
        return self.first.text + "\n" + self.second.text

    @property
    def quotes_history(self) -> bool:
        """The second answer repeats the first within more (an agent that quotes earlier
        turns of its own accord: shared text then proves nothing)."""
        first = self.first.text.strip()
        return bool(first) and self.second.text != self.first.text and first in self.second.text


async def _control(ctx: CheckContext, wire: AgentWire, turns: int) -> _Control:
    session_id = await ctx.new_session(wire)
    contents: list[_Content] = []
    reason: str | None = None
    for _ in range(turns):
        start = len(wire.lines)
        try:
            response = await wire.request(
                "session/prompt", _prompt_params(session_id, ctx.options.prompt)
            )
        except WireError as exc:
            ctx.blocked_by("ACP-PROMPT-001", f"the control prompt in a fresh session: {exc}")
        result = response.result
        reason = (
            cast(dict[str, Any], result).get("stopReason") if isinstance(result, dict) else None
        )
        if not response.ok or not isinstance(reason, str):
            ctx.blocked_by(
                "ACP-PROMPT-001",
                f"the control prompt in a fresh session was answered {response.describe()}",
            )
        contents.append(_content(wire, session_id, start, index_of(wire, response.line)))
    return _Control(contents[0], contents[-1], reason)


def _cancel_not_judged(ctx: CheckContext, wire: AgentWire, turn: _Round) -> str | None:
    """Why a round gives no cancelled turn to follow up (blocking on CANCEL-001's failures)."""
    if turn.cancelled(wire):
        return None
    if turn.error is not None:
        ctx.blocked_by("ACP-CANCEL-001", f"{turn.name}: the cancelled prompt was not answered")
    assert turn.response is not None
    if turn.ended_first(wire):
        return f"the turn ended ({turn.stop_reason or turn.response.describe()}) first"
    if not turn.response.ok or turn.settled:
        ctx.blocked_by(
            "ACP-CANCEL-001",
            f"{turn.name}: the cancelled prompt was answered {turn.response.describe()}, "
            'not stopReason "cancelled"',
        )
    return f"{_answer(turn)} after the cancel (it may have been ending by itself)"


def _follow_up_response(ctx: CheckContext, turn: _Round) -> Response:
    if turn.follow_up_error is not None or turn.follow_up is None:
        ctx.fail(
            f"{turn.name}: after the cancelled turn the next prompt was not answered: "
            f"{turn.follow_up_error}"
        )
    return turn.follow_up


@check("ACP-CANCEL-003", shares=CANCEL_FOLLOWED, long=True)
async def prompt_after_cancel_works(ctx: CheckContext) -> None:
    wire, rounds, control = await _cancel_rounds(ctx, follow_up=True)
    assert control is not None

    def judge(turn: _Round) -> str | None:
        why = _cancel_not_judged(ctx, wire, turn)
        if why is not None:
            return why
        response = _follow_up_response(ctx, turn)
        if not response.ok:
            ctx.fail(
                f"{turn.name}: after the cancelled turn the next prompt failed: "
                f"{response.describe()}"
            )
        reason = ctx.stop_reason(response)
        if reason == "cancelled" and control.stop_reason != "cancelled":
            ctx.fail(
                f"{turn.name}: the next prompt, never cancelled, was answered stopReason "
                f'"cancelled" (the same prompt in a fresh session ends '
                f"{control.stop_reason!r}): the cancel outlived its turn"
            )
        after = _content(
            wire, turn.session_id, cast(int, turn.follow_up_at), index_of(wire, response.line)
        )
        if after.updates == 0 and control.first.text.strip():
            ctx.fail(
                f"{turn.name}: the next prompt was answered {reason!r} without a single "
                "update, where the same prompt in a fresh session gets an answer "
                f"({control.first.text[:80]!r})"
            )
        return None

    judged = _judge_rounds(ctx, wire, rounds, judge)
    ctx.note(f"the next prompt worked after {len(judged)} of {len(rounds)} cancelled turn(s)")


MIN_LEFTOVER = 12
"""Shortest text of a cancelled turn that counts as showing up in the next one."""
LONG_LEFTOVER = 64
"""A run of this many characters of a cancelled turn in the next one counts even when the
cancelled turn said more."""


def _leftover(cancelled: _Content, after: _Content, control: _Control) -> str | None:
    """How the next turn carries the cancelled turn's content, if it does."""
    if ids := sorted(after.message_ids & cancelled.message_ids):
        return f"its message chunks carry the cancelled turn's messageId {ids[0]!r}"
    if ids := sorted(after.tool_call_ids & cancelled.tool_call_ids):
        return f"it updates the cancelled turn's tool call {ids[0]!r}"
    if control.quotes_history:
        return None
    a, b = cancelled.text[:20000], after.text[:20000]
    match = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(
        0, len(a), 0, len(b)
    )
    shared = a[match.a : match.a + match.size]
    needed = min(len(a.strip()), LONG_LEFTOVER)
    if len(shared.strip()) >= max(MIN_LEFTOVER, needed) and shared.strip() not in control.text:
        return (
            f"its text contains {shared[:120]!r} from the cancelled turn (the same prompt in a "
            "fresh session says no such thing)"
        )
    return None


@check("ACP-CANCEL-004", shares=CANCEL_FOLLOWED, long=True)
async def the_turn_after_a_cancel_is_its_own(ctx: CheckContext) -> None:
    wire, rounds, control = await _cancel_rounds(ctx, follow_up=True)
    assert control is not None

    def judge(turn: _Round) -> str | None:
        why = _cancel_not_judged(ctx, wire, turn)
        if why is not None:
            return why
        response = turn.follow_up
        if response is None or not response.ok:
            what = turn.follow_up_error if response is None else response.describe()
            ctx.blocked_by(
                "ACP-CANCEL-003", f"{turn.name}: the next prompt was not answered ({what})"
            )
        assert turn.response is not None
        cancelled = _content(
            wire, turn.session_id, turn.prompt_at, index_of(wire, turn.response.line)
        )
        if cancelled.empty:
            return "the cancelled turn said nothing that could show up later"
        after = _content(
            wire, turn.session_id, cast(int, turn.follow_up_at), index_of(wire, response.line)
        )
        if how := _leftover(cancelled, after, control):
            ctx.fail(
                f"{turn.name}: the next turn's answer carries the cancelled turn's content: {how}"
            )
        return None

    judged = _judge_rounds(ctx, wire, rounds, judge)
    guard = (
        " (judged on message and tool call ids only: the agent repeats earlier answers)"
        if control.quotes_history
        else ""
    )
    ctx.note(
        f"the next turn had its own answer after {len(judged)} of {len(rounds)} cancelled "
        f"turn(s){guard}"
    )


@check("ACP-CLOSE-002")
async def close_cancels_the_running_turn(ctx: CheckContext) -> None:
    async with ctx.agent() as wire:
        await ctx.ready(wire)

        def judge(turn: _Round) -> str | None:
            why = _judge_interrupted(ctx, wire, turn)
            if turn.close_error is not None:
                ctx.fail(
                    f"{turn.name}: session/close itself was never answered: {turn.close_error}"
                )
            return why

        rounds = await _interrupted_rounds(ctx, wire, "session/close")
        judged = _judge_rounds(ctx, wire, rounds, judge)
        ctx.note(
            f"answered cancelled {_latencies(wire, judged)} after session/close, in "
            f"{len(judged)} of {len(rounds)} round(s)"
        )


# -- what the agent asks of the client ------------------------------------------------------


def _elicitation_prompt(ctx: CheckContext) -> str:
    return ctx.options.elicitation_prompt


def _called(ctx: CheckContext, wire: AgentWire, prefix: str) -> list[str]:
    """The methods starting with ``prefix`` the agent called on ``wire`` during the check."""
    return sorted(
        {
            str(message.get("method"))
            for message in _sent(ctx, wire)
            if "id" in message and str(message.get("method")).startswith(prefix)
        }
    )


def _sent(ctx: CheckContext, wire: AgentWire) -> list[dict[str, Any]]:
    """The well-formed messages the agent sent on ``wire`` during the check."""
    return [
        cast(dict[str, Any], line.message)
        for line in ctx.lines_of(wire)
        if line.direction == "agent" and line.is_message
    ]


async def _turns(
    ctx: CheckContext, client: ClientSide, prompts: Iterable[str], *, fresh: bool = False
) -> AgentWire:
    """An agent offered ``client`` (a fresh one with ``fresh``, else the run's shared one when
    the check is pooled), one session, the ``prompts`` in turn (each answered any way)."""
    if fresh:
        async with ctx.agent(client) as wire:
            await ctx.ready(wire)
            await _prompted(ctx, wire, prompts)
            return wire
    async with ctx.ready_agent(client) as wire:
        await _prompted(ctx, wire, prompts)
        return wire


async def _prompted(ctx: CheckContext, wire: AgentWire, prompts: Iterable[str]) -> None:
    session_id = await ctx.new_session(wire)
    for text in prompts:
        await ctx.prompt(wire, session_id, text)


async def _not_without_capability(
    ctx: CheckContext, *, prefix: str, what: str, offered: ClientSide, option: str, prompt: str
) -> None:
    """The agent calls no ``prefix`` method when the client offers no ``what`` (fail); and
    does call one for the same prompt when it is offered, in a fresh process run at the same
    time (else nothing was exercised: an agent that never calls them passes for nothing)."""
    wires: dict[bool, AgentWire] = {}

    async def run(offer: bool) -> None:
        if offer:
            wires[offer] = await _turns(ctx, offered, [prompt], fresh=True)
        else:
            wires[offer] = await _turns(ctx, ClientSide(), [prompt])

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, False)
        tg.start_soon(run, True)
    calls = _called(ctx, wires[False], prefix)
    if calls:
        ctx.fail(f"the client offered no {what}, yet the agent called {', '.join(calls)}")
    calls = _called(ctx, wires[True], prefix)
    if not calls:
        ctx.not_exercised(
            f"the agent made no {prefix}* request, even when offered {what}, for {option} "
            f"{prompt!r}"
        )
    ctx.note(f"offered {what}, the agent called {', '.join(calls)}; not offered, nothing")


@check("ACP-CLIENTCAP-001", long=True, pooled=True)
async def no_fs_without_the_capability(ctx: CheckContext) -> None:
    await _not_without_capability(
        ctx,
        prefix="fs/",
        what="the file system",
        offered=ClientSide(read_text_file=True, write_text_file=True),
        option="--fs-prompt",
        prompt=ctx.options.fs_prompt,
    )


@check("ACP-CLIENTCAP-002", long=True, pooled=True)
async def no_terminal_without_the_capability(ctx: CheckContext) -> None:
    await _not_without_capability(
        ctx,
        prefix="terminal/",
        what="terminals",
        offered=ClientSide(terminal=True),
        option="--terminal-prompt",
        prompt=ctx.options.terminal_prompt,
    )


@check("ACP-CLIENTCAP-003", long=True, pooled=True)
async def no_elicitation_without_the_capability(ctx: CheckContext) -> None:
    await _not_without_capability(
        ctx,
        prefix="elicitation/",
        what="elicitation",
        offered=ClientSide(elicitation=True),
        option="--elicitation-prompt",
        prompt=_elicitation_prompt(ctx),
    )


def _released(ctx: CheckContext, wire: AgentWire) -> set[str]:
    """Terminal ids the agent sent ``terminal/release`` for during the check (its requests,
    not our answers: those are written by a task that may not have run yet)."""
    released: set[str] = set()
    for request in _sent(ctx, wire):
        params = request.get("params")
        if request.get("method") == "terminal/release" and isinstance(params, dict):
            released.add(str(cast(dict[str, Any], params).get("terminalId")))
    return released


@check("ACP-TERMINAL-001", pooled=True)
async def terminals_are_released(ctx: CheckContext) -> None:
    async with ctx.ready_agent(ALL_CLIENT) as wire:
        session_id = await ctx.new_session(wire)
        prompt = ctx.options.terminal_prompt
        await ctx.prompt(wire, session_id, prompt)

        def created() -> set[str]:
            return {t for t, info in wire.terminals.items() if info.get("session") == session_id}

        if not created():
            ctx.not_exercised(
                "the agent created no terminal, even when offered terminals, for "
                f"--terminal-prompt {prompt!r}"
            )
        if created() - _released(ctx, wire):
            # Released after the answer, by the time the next turn ends, is late but let be.
            await ctx.prompt(wire, session_id)
        unreleased = sorted(created() - _released(ctx, wire))
        if unreleased:
            ctx.fail(
                f"terminal(s) {', '.join(unreleased)} were never released with terminal/release"
            )
        ctx.note(f"{len(created())} terminal(s), all released")


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


@check("ACP-PATHS-001", pooled=True)
async def paths_are_absolute(ctx: CheckContext) -> None:
    options = ctx.options
    prompts = {
        "--prompt": options.prompt,
        "--fs-prompt": options.fs_prompt,
        "--terminal-prompt": options.terminal_prompt,
        "--tool-prompt": options.tool_prompt,
    }
    wire = await _turns(ctx, ALL_CLIENT, prompts.values())
    paths = [found for message in _sent(ctx, wire) for found in _paths(message)]
    if not paths:
        asked = ", ".join(f"{option} {text!r}" for option, text in prompts.items())
        ctx.not_exercised(
            "the agent sent no file path at all (no fs/* request, tool call location, diff or "
            f"terminal cwd), offered the file system and terminals, for {asked}"
        )
    relative = [(where, path) for where, path in paths if not path.startswith("/")]
    if relative:
        where, path = relative[0]
        ctx.fail(f"{len(relative)} relative path(s), the first a {where}: {path!r}")
    ctx.note(f"{len(paths)} path(s), all absolute")


@check("ACP-PLAN-001", pooled=True)
async def plans_are_sent_complete(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:
        session_id = await ctx.new_session(wire)
        start = len(wire.lines)
        prompt = ctx.options.plan_prompt
        response = await ctx.prompt(wire, session_id, prompt)
        plans = [
            cast(dict[str, Any], u["update"]).get("entries")
            for u in updates_between(wire, start, index_of(wire, response.line), session_id)
            if update_kind(u) == "plan"
        ]
        if len(plans) < 2:
            ctx.not_exercised(
                f"the agent sent {len(plans) or 'no'} plan update(s) for --plan-prompt "
                f"{prompt!r}: it takes two in one turn to see an entry dropped"
            )
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


@check("ACP-PERMISSION-001", pooled=True)
async def rejected_permission_ends_the_turn_normally(ctx: CheckContext) -> None:
    async with ctx.ready_agent() as wire:  # the default client rejects every permission
        assert wire.client.permission == "reject"
        session_id = await ctx.new_session(wire)
        prompt = ctx.options.tool_prompt
        response = await ctx.prompt(wire, session_id, prompt)
        asked = [
            r
            for r in wire.agent_requests
            if r.get("method") == "session/request_permission"
            and cast(dict[str, Any], r.get("params") or {}).get("sessionId") == session_id
        ]
        if not asked:
            ctx.not_exercised(
                "the agent asked no permission (session/request_permission) for --tool-prompt "
                f"{prompt!r}"
            )
        if not response.ok:
            ctx.fail(f"after a rejected permission the prompt failed: {response.describe()}")
        ctx.stop_reason(response)
        ctx.note(
            f"{len(asked)} permission request(s) rejected; the turn ended {response.describe()}"
        )
