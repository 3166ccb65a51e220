"""A2A bench client: ours (``subagents.providers.a2a.A2AProvider``) or the official
``a2a-sdk``'s own client (``A2ACardResolver`` + ``ClientFactory(ClientConfig(streaming=True))``
+ ``Client.send_message``, the way the SDK's tutorial does it), against ``a2a_server.py``.

    python a2a_client.py --client ours|sdk --url URL --out FILE [--turns K] [--spawned-ns T]
                         [--expect TEXT]

One process per measurement, so both clients pay their imports and first use the same way:

* ``import_ms``: the client's imports (ours: ``subagents.providers.a2a``; the SDK's:
  ``a2a.client``, ``a2a.types``, ``httpx``);
* the first turn (``cold_*``), timed from the client's set-up: ours ``A2AProvider(url)``
  entered, then ``provider.start(SubagentRequest(...))`` (it resolves the card itself); the
  SDK's ``httpx.AsyncClient()`` (which its ``ClientConfig`` takes), then
  ``A2ACardResolver.get_agent_card()``, ``ClientFactory(...).create(card)`` and
  ``send_message``; ``first`` is the first text in hand (ours: the first ``TextProgress`` from
  ``run.progress()``; the SDK's: the first artifact text in the stream), ``turn`` the final
  result in hand (ours: ``await run.result()`` returned; the SDK's: its stream ended after the
  final state);
* ``K`` later turns (``warm_*``, medians) in the same process, each as a user of that client
  does it: ours ``provider.start`` again (each run opens its own HTTP client and fetches the
  card again: that is how ``A2AProvider`` works), the SDK's ``send_message`` on its client
  (card and connection kept); ``warm_cpu_ms`` is the client's CPU per later turn;
* ``proc_*``: from ``--spawned-ns`` (the orchestrator's ``CLOCK_MONOTONIC`` just before it
  spawned this process) to the first turn's first text and result: interpreter start, imports,
  card discovery and the first turn; ``interpreter_ms``, from it to this script's first line.

Writes one JSON object to ``--out``; any failure exits non-zero with the reason on stderr.
"""

from __future__ import annotations

import time

T_START_NS = time.monotonic_ns()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

PROMPT = "hello"


def _now() -> int:
    return time.monotonic_ns()


@dataclass
class Turn:
    first_ns: int
    """When the first text was in hand (0: none came)."""
    end_ns: int
    text: str


TurnFn = Callable[[], Awaitable[Turn]]


async def _measure(
    opened: Callable[[], Awaitable[TurnFn]], turns: int, expect: str | None
) -> dict[str, Any]:
    """The first turn (``opened`` sets the client up and returns a function doing one turn:
    both are timed), then ``turns`` later turns."""
    t0 = _now()
    turn = await opened()
    first = await turn()
    out: dict[str, Any] = {"cold_t0_ns": t0, "cold_first_ns": first.first_ns}
    out["cold_end_ns"] = first.end_ns
    out["text"] = first.text
    if expect is not None and first.text != expect:
        raise RuntimeError(f"the answer was {first.text!r}, not {expect!r}")
    firsts: list[float] = []
    ends: list[float] = []
    cpu0 = time.process_time()
    for _ in range(turns):
        t = _now()
        later = await turn()
        if not later.first_ns:
            raise RuntimeError("a later turn gave no text")
        firsts.append((later.first_ns - t) / 1e6)
        ends.append((later.end_ns - t) / 1e6)
    cpu = time.process_time() - cpu0
    if turns:
        out.update(
            warm_n=turns,
            warm_first_ms=statistics.median(firsts),
            warm_turn_ms=statistics.median(ends),
            warm_turn_max_ms=max(ends),
            warm_cpu_ms=cpu * 1e3 / turns,
        )
    return out


# ---------------------------------------------------------------- ours


def ours(url: str, turns: int, expect: str | None) -> dict[str, Any]:
    t = _now()
    import anyio

    from subagents.providers import CancelSignal, SubagentRequest, TextProgress
    from subagents.providers.a2a import A2AProvider

    imported = _now()

    async def main() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            providers: list[A2AProvider] = []

            async def turn() -> Turn:
                run = await providers[0].start(SubagentRequest(PROMPT), cancel=CancelSignal())
                feed = run.progress()
                assert feed is not None
                first = 0
                async for event in feed:
                    if not first and isinstance(event, TextProgress) and event.text:
                        first = _now()
                outcome = await run.result()
                end = _now()
                await run.dispose()
                if outcome.status != "completed":
                    raise RuntimeError(f"the run ended {outcome.status}: {outcome.message}")
                return Turn(first, end, str(outcome.output or ""))

            async def opened() -> TurnFn:
                provider = A2AProvider(url, name="bench")
                providers.append(await stack.enter_async_context(provider))
                return turn

            return await _measure(opened, turns, expect)

    res = anyio.run(main)
    res["import_ms"] = (imported - t) / 1e6
    return res


# ---------------------------------------------------------------- the SDK's


def sdk(url: str, turns: int, expect: str | None) -> dict[str, Any]:
    t = _now()
    import asyncio
    import uuid

    import httpx
    from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

    imported = _now()

    async def main() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            clients: list[Client] = []

            async def turn() -> Turn:
                request = SendMessageRequest(
                    message=Message(
                        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=PROMPT)]
                    )
                )
                first = 0
                chunks: list[str] = []
                state = TaskState.TASK_STATE_UNSPECIFIED
                message = False
                async for event in clients[0].send_message(request):
                    kind = event.WhichOneof("payload")
                    text = ""
                    if kind == "artifact_update":
                        text = "".join(p.text for p in event.artifact_update.artifact.parts)
                        chunks.append(text)
                    elif kind == "message":
                        text = "".join(p.text for p in event.message.parts)
                        chunks.append(text)
                        message = True
                    elif kind == "status_update":
                        state = event.status_update.status.state
                    elif kind == "task":
                        state = event.task.status.state
                    if text and not first:
                        first = _now()
                end = _now()
                if state != TaskState.TASK_STATE_COMPLETED and not message:
                    raise RuntimeError(f"the task ended {TaskState.Name(state)}")
                return Turn(first, end, "".join(chunks))

            async def opened() -> TurnFn:
                http = await stack.enter_async_context(httpx.AsyncClient())
                card = await A2ACardResolver(http, url).get_agent_card()
                config = ClientConfig(httpx_client=http, streaming=True)
                clients.append(await stack.enter_async_context(ClientFactory(config).create(card)))
                return turn

            return await _measure(opened, turns, expect)

    res = asyncio.run(main())
    res["import_ms"] = (imported - t) / 1e6
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", choices=("ours", "sdk"), required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--spawned-ns", type=int, default=None)
    ap.add_argument("--expect", default=None)
    args = ap.parse_args()
    run = ours if args.client == "ours" else sdk
    res = run(args.url, args.turns, args.expect)
    t0, first, end = res.pop("cold_t0_ns"), res.pop("cold_first_ns"), res.pop("cold_end_ns")
    if not first:
        raise SystemExit("the first turn gave no text")
    res.update(cold_first_ms=(first - t0) / 1e6, cold_turn_ms=(end - t0) / 1e6)
    spawned: int | None = args.spawned_ns
    if spawned is not None:
        res.update(proc_first_ms=(first - spawned) / 1e6, proc_turn_ms=(end - spawned) / 1e6)
    res["client"] = args.client
    if spawned is not None:
        res["interpreter_ms"] = (T_START_NS - spawned) / 1e6
    args.out.write_text(json.dumps(res))
    sys.exit(0)


if __name__ == "__main__":
    main()
