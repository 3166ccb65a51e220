"""The JSON-RPC peer: correlation, dispatch, cancellation, errors and closing.

Every test runs on asyncio and on trio (the ``anyio_backend`` fixture), over real OS pipes.
"""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from subagents.protocol import ErrorCode, JsonValue, MessageTooLargeError, RemoteProtocolError
from subagents.rpc import ConnectionClosedError, Router, RPCError, open_peer
from subagents.transports import open_pipe_pair

from .wire import Wire, peer_and_wire, two_peers

pytestmark = pytest.mark.anyio


async def test_each_direction_has_its_own_id_space() -> None:
    """ACP transports: both sides may use id 0; requests and responses differ by `method`."""
    router = Router()

    async def echo(params: JsonValue) -> JsonValue:
        return {"echo": params}

    router.on_request("echo", echo)
    result: list[JsonValue] = []
    async with peer_and_wire(router) as (peer, wire):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    result.append(await peer.request("ping", {"n": 1}))

                tg.start_soon(call)
                outbound = await wire.read()
                assert outbound == {"jsonrpc": "2.0", "id": 0, "method": "ping", "params": {"n": 1}}
                await wire.write_json({"jsonrpc": "2.0", "id": 0, "method": "echo", "params": [7]})
                assert await wire.read() == {"jsonrpc": "2.0", "id": 0, "result": {"echo": [7]}}
                await wire.write_json({"jsonrpc": "2.0", "id": 0, "result": "pong"})
        assert result == ["pong"]


async def test_responses_are_matched_by_id_in_any_order() -> None:
    """JSON-RPC 2.0: responses may come back in any order."""
    async with peer_and_wire() as (peer, wire):
        results: dict[int, JsonValue] = {}
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for n in range(3):

                    async def call(n: int = n) -> None:
                        results[n] = await peer.request("m", {"n": n})

                    tg.start_soon(call)
                ids = [await wire.read() for _ in range(3)]
                by_n = {m["params"]["n"]: m["id"] for m in ids}  # type: ignore[index]
                for n in (2, 0, 1):
                    await wire.write_json({"jsonrpc": "2.0", "id": by_n[n], "result": n * 10})
        assert results == {0: 0, 1: 10, 2: 20}


async def test_requests_are_handled_concurrently() -> None:
    """A slow handler does not hold up other requests."""
    router = Router()
    release = anyio.Event()
    slow_started = anyio.Event()

    async def slow(params: JsonValue) -> JsonValue:
        slow_started.set()
        await release.wait()
        return "slow"

    async def fast(params: JsonValue) -> JsonValue:
        release.set()
        return "fast"

    router.on_request("slow", slow)
    router.on_request("fast", fast)
    async with two_peers(router_b=router) as (a, _b):
        order: list[JsonValue] = []
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call(method: str) -> None:
                    order.append(await a.request(method))

                tg.start_soon(call, "slow")
                await slow_started.wait()
                tg.start_soon(call, "fast")
        # Had the requests run one after the other, "slow" would wait forever (fail_after).
        assert sorted(order) == ["fast", "slow"]  # type: ignore[type-var]


async def test_notifications_are_delivered_in_arrival_order() -> None:
    """ACP transports: session/update notifications must be applied serially, in order."""
    router = Router()
    seen: list[JsonValue] = []
    done = anyio.Event()

    async def on_update(params: JsonValue) -> None:
        if isinstance(params, dict) and params["i"] == 0:
            await anyio.sleep(0.01)  # a slow first handler must not let later ones overtake
        seen.append(params)
        if len(seen) == 500:
            done.set()

    router.on_notification("session/update", on_update)
    async with two_peers(router_b=router) as (a, _b):
        for i in range(500):
            await a.notify("session/update", {"i": i})
        with anyio.fail_after(5):
            await done.wait()
    assert seen == [{"i": i} for i in range(500)]


async def test_a_slow_notification_handler_does_not_block_responses() -> None:
    """Notifications run on their own task: a handler may itself await a request."""
    router_b = Router()
    router_a = Router()
    got: list[JsonValue] = []
    answered = anyio.Event()

    async def on_note(params: JsonValue) -> None:
        got.append(await b.request("ask"))
        answered.set()

    async def ask(params: JsonValue) -> JsonValue:
        return "answer"

    router_b.on_notification("note", on_note)
    router_a.on_request("ask", ask)
    async with two_peers(router_a, router_b) as (a, b):
        await a.notify("note")
        with anyio.fail_after(5):
            await answered.wait()
    assert got == ["answer"]


async def test_an_unparseable_line_is_answered_with_parse_error_and_the_connection_goes_on() -> (
    None
):
    """JSON-RPC 2.0: invalid JSON gets -32700 with id null; later messages still work."""
    errors: list[RemoteProtocolError] = []
    router = Router()

    async def ok(params: JsonValue) -> JsonValue:
        return "ok"

    router.on_request("ok", ok)
    async with peer_and_wire(router, on_protocol_error=errors.append) as (_peer, wire):
        await wire.write(b'{"this is not json\n\xff\xfe\n')
        assert await wire.read() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32700,
                "message": "line is not valid JSON: Unterminated string starting at (column 2)",
            },
        }
        assert await wire.read() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32700,
                "message": "line is not valid UTF-8 (invalid start byte at byte 0)",
            },
        }
        await wire.write_json({"jsonrpc": "2.0", "id": 1, "method": "ok"})
        assert await wire.read() == {"jsonrpc": "2.0", "id": 1, "result": "ok"}
    assert [e.kind for e in errors] == ["invalid_json", "invalid_utf8"]


@pytest.mark.parametrize(
    ("line", "expected_id", "needle"),
    [
        (b'[{"jsonrpc":"2.0","id":1,"method":"ok"}]', None, "batch"),
        (b"42", None, "not an object"),
        (b'{"jsonrpc":"2.0","id":5,"method":"ok","params":"x"}', 5, '"params" must be'),
        (b'{"id":6,"method":"ok"}', 6, '"jsonrpc"'),
    ],
)
async def test_invalid_requests_and_batches_are_answered_with_invalid_request(
    line: bytes, expected_id: int | None, needle: str
) -> None:
    """JSON-RPC 2.0 §5: -32600, with the request's id when it can be read, else null."""
    router = Router()

    async def ok(params: JsonValue) -> JsonValue:
        return "ok"

    router.on_request("ok", ok)
    async with peer_and_wire(router) as (_peer, wire):
        await wire.write(line + b"\n")
        answer = await wire.read()
        assert isinstance(answer, dict)
        assert answer["id"] == expected_id
        assert answer["error"]["code"] == ErrorCode.INVALID_REQUEST  # type: ignore[index]
        assert needle in answer["error"]["message"]  # type: ignore[index]
        await wire.write_json({"jsonrpc": "2.0", "id": 1, "method": "ok"})
        assert await wire.read() == {"jsonrpc": "2.0", "id": 1, "result": "ok"}


async def test_an_unknown_method_is_answered_with_method_not_found() -> None:
    """JSON-RPC 2.0: -32601 for a method nobody handles; data names the method."""
    async with peer_and_wire() as (_peer, wire):
        await wire.write_json({"jsonrpc": "2.0", "id": "x", "method": "no/such"})
        assert await wire.read() == {
            "jsonrpc": "2.0",
            "id": "x",
            "error": {"code": -32601, "message": "Method not found", "data": {"method": "no/such"}},
        }


class Greeting(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    times: int


async def test_bad_params_are_answered_with_invalid_params_listing_the_errors() -> None:
    """-32602 with the validation errors in `data`; the handler never runs."""
    router = Router()
    ran: list[Greeting] = []

    async def greet(params: Greeting) -> JsonValue:
        ran.append(params)
        return params.name * params.times

    router.on_request("greet", greet, params=Greeting)
    async with peer_and_wire(router) as (_peer, wire):
        await wire.write_json({"jsonrpc": "2.0", "id": 1, "method": "greet", "params": {"name": 3}})
        answer = await wire.read()
        assert isinstance(answer, dict)
        error = answer["error"]
        assert isinstance(error, dict)
        assert (error["code"], error["message"]) == (-32602, "Invalid params")
        assert error["data"] == {
            "errors": [
                {"loc": ["name"], "msg": "Input should be a valid string", "type": "string_type"},
                {"loc": ["times"], "msg": "Field required", "type": "missing"},
            ]
        }
        await wire.write_json(
            {"jsonrpc": "2.0", "id": 2, "method": "greet", "params": {"name": "a", "times": 2}}
        )
        assert await wire.read() == {"jsonrpc": "2.0", "id": 2, "result": "aa"}
    assert len(ran) == 1


async def test_a_crashing_handler_becomes_internal_error_and_the_connection_survives() -> None:
    """One exception→wire boundary: any exception is -32603; RPCError passes through as is."""
    router = Router()

    async def crash(params: JsonValue) -> JsonValue:
        raise KeyError("boom")

    async def refuse(params: JsonValue) -> JsonValue:
        raise RPCError.resource_not_found({"sessionId": "s1"})

    async def ok(params: JsonValue) -> JsonValue:
        return "ok"

    router.on_request("crash", crash)
    router.on_request("refuse", refuse)
    router.on_request("ok", ok)
    async with two_peers(router_b=router) as (a, _b):
        with pytest.raises(RPCError) as info:
            await a.request("crash")
        assert info.value.code == ErrorCode.INTERNAL_ERROR
        assert info.value.data == {"error": "KeyError: 'boom'"}
        with pytest.raises(RPCError) as info:
            await a.request("refuse")
        assert (info.value.code, info.value.data) == (-32002, {"sessionId": "s1"})
        assert await a.request("ok") == "ok"


async def test_a_crashing_notification_handler_does_not_stop_later_notifications() -> None:
    """Nothing a handler does can kill the connection."""
    router = Router()
    seen: list[int] = []
    both = anyio.Event()

    async def on_note(params: JsonValue) -> None:
        assert isinstance(params, dict)
        n = params["n"]
        assert isinstance(n, int)
        seen.append(n)
        if len(seen) == 2:
            both.set()
        if n == 0:
            raise RuntimeError("first one fails")

    router.on_notification("note", on_note)
    async with two_peers(router_b=router) as (a, _b):
        await a.notify("note", {"n": 0})
        await a.notify("note", {"n": 1})
        with anyio.fail_after(5):
            await both.wait()
    assert seen == [0, 1]


async def test_cancelling_the_caller_sends_cancel_request() -> None:
    """ACP cancellation.mdx: cancelling the task awaiting a request sends $/cancel_request."""
    request: dict[str, JsonValue] = {}
    async with peer_and_wire() as (peer, wire):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await peer.request("slow")

                tg.start_soon(call)
                request = await wire.read()
                assert isinstance(request, dict)
                tg.cancel_scope.cancel()
            assert await wire.read() == {
                "jsonrpc": "2.0",
                "method": "$/cancel_request",
                "params": {"requestId": request["id"]},
            }
            # The late answer is dropped quietly, and the connection still works.
            await wire.write_json({"jsonrpc": "2.0", "id": request["id"], "result": "late"})
            async with anyio.create_task_group() as tg:

                async def again() -> None:
                    assert await peer.request("again") == "fine"

                tg.start_soon(again)
                second = await wire.read()
                assert isinstance(second, dict)
                await wire.write_json({"jsonrpc": "2.0", "id": second["id"], "result": "fine"})
        assert peer.statistics().protocol_errors == 0


async def test_a_request_timeout_raises_and_sends_cancel_request() -> None:
    """Every wait can be bounded; a timed-out request is cancelled on the other side too."""
    async with peer_and_wire() as (peer, wire):
        with pytest.raises(TimeoutError):
            await peer.request("slow", timeout=0.05)
        request = await wire.read()
        cancel = await wire.read()
        assert isinstance(request, dict)
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": request["id"]},
        }


async def test_an_inbound_cancel_request_cancels_the_handler_and_answers_minus_32800() -> None:
    """ACP cancellation.mdx: MUST answer the cancelled request, with a result or -32800."""
    router = Router()
    started = anyio.Event()
    cancelled = anyio.Event()

    async def slow(params: JsonValue) -> JsonValue:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    router.on_request("slow", slow)
    async with peer_and_wire(router) as (_peer, wire):
        await wire.write_json({"jsonrpc": "2.0", "id": 3, "method": "slow"})
        with anyio.fail_after(5):
            await started.wait()
        await wire.write_json(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 3}}
        )
        assert await wire.read() == {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {"code": -32800, "message": "Request cancelled"},
        }
        assert cancelled.is_set()


async def test_a_handler_may_still_answer_after_its_cancel_request() -> None:
    """ACP cancellation.mdx: a valid response is an allowed answer to $/cancel_request."""
    router = Router()
    started = anyio.Event()

    async def stubborn(params: JsonValue) -> JsonValue:
        started.set()
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0.05)
        return "finished anyway"

    router.on_request("stubborn", stubborn)
    async with peer_and_wire(router) as (_peer, wire):
        await wire.write_json({"jsonrpc": "2.0", "id": 1, "method": "stubborn"})
        with anyio.fail_after(5):
            await started.wait()
        await wire.write_json(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}
        )
        assert await wire.read() == {"jsonrpc": "2.0", "id": 1, "result": "finished anyway"}


async def test_end_of_stream_fails_every_pending_request_at_once() -> None:
    """On EOF every pending request fails with a typed error; nothing waits forever."""
    async with peer_and_wire() as (peer, wire):
        failures: list[BaseException] = []
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for _ in range(3):

                    async def call() -> None:
                        try:
                            await peer.request("m")
                        except ConnectionClosedError as exc:
                            failures.append(exc)

                    tg.start_soon(call)
                for _ in range(3):
                    await wire.read()
                await wire.close()
            await peer.wait_closed()
        assert len(failures) == 3
        assert all("end of stream" in str(f) for f in failures)
        assert peer.closed
        with pytest.raises(ConnectionClosedError):
            await peer.request("after")
        await peer.notify("dropped")  # notifications after close are dropped, not raised


async def test_abort_fails_pending_requests_with_the_given_reason() -> None:
    """Transports report why the other side is gone (exit status, stderr tail)."""
    async with peer_and_wire() as (peer, wire):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    with pytest.raises(ConnectionClosedError, match="exit status 3"):
                        await peer.request("m")

                tg.start_soon(call)
                await wire.read()
                peer.abort("agent exited with exit status 3; stderr: boom")
        with pytest.raises(ConnectionClosedError, match="exit status 3"):
            await peer.request("later")


async def test_closing_the_peer_answers_requests_in_progress_with_request_cancelled() -> None:
    """ACP cancellation.mdx: internal cancellation (shutdown) SHOULD answer -32800."""
    router = Router()
    started = anyio.Event()

    async def forever(params: JsonValue) -> JsonValue:
        started.set()
        await anyio.sleep_forever()

    router.on_request("forever", forever)
    peer_in, wire_out = await open_pipe_pair()
    wire_in, peer_out = await open_pipe_pair()
    wire = Wire(wire_in, wire_out)
    try:
        async with open_peer(peer_in, peer_out, router=router):
            await wire.write_json({"jsonrpc": "2.0", "id": 8, "method": "forever"})
            with anyio.fail_after(5):
                await started.wait()
        assert await wire.read() == {
            "jsonrpc": "2.0",
            "id": 8,
            "error": {"code": -32800, "message": "Request cancelled"},
        }
        with pytest.raises(anyio.EndOfStream):
            await wire.receive.receive()
    finally:
        for stream in (peer_in, wire_in, wire_out):
            await stream.aclose()


async def test_an_oversized_request_is_answered_and_the_connection_goes_on() -> None:
    """Explicit max message size: the one message is rejected, the connection stays usable."""
    router = Router()

    async def ok(params: JsonValue) -> JsonValue:
        return "ok"

    router.on_request("ok", ok)
    async with peer_and_wire(router, max_message_bytes=1000) as (_peer, wire):
        big = {"jsonrpc": "2.0", "id": 4, "method": "ok", "params": {"x": "y" * 5000}}
        await wire.write_json(big)
        answer = await wire.read()
        assert isinstance(answer, dict)
        assert answer["id"] == 4
        assert answer["error"]["code"] == -32600  # type: ignore[index]
        assert "exceeds the limit of 1000 bytes" in answer["error"]["message"]  # type: ignore[index]
        await wire.write_json({"jsonrpc": "2.0", "id": 5, "method": "ok"})
        assert await wire.read() == {"jsonrpc": "2.0", "id": 5, "result": "ok"}


async def test_an_oversized_response_fails_its_request_at_once() -> None:
    """The caller gets a clear error naming the size and limit, not a hang."""
    async with peer_and_wire(max_message_bytes=1000) as (peer, wire):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    with pytest.raises(MessageTooLargeError, match="exceeds the limit of 1000"):
                        await peer.request("big")

                tg.start_soon(call)
                request = await wire.read()
                assert isinstance(request, dict)
                await wire.write_json({"jsonrpc": "2.0", "id": request["id"], "result": "z" * 4000})
        assert not peer.closed


async def test_a_response_for_an_unknown_id_is_reported_not_answered() -> None:
    """Responses are never answered (no reply loops); the stray one is reported."""
    errors: list[RemoteProtocolError] = []
    router = Router()

    async def ok(params: JsonValue) -> JsonValue:
        return "ok"

    router.on_request("ok", ok)
    async with peer_and_wire(router, on_protocol_error=errors.append) as (_peer, wire):
        await wire.write_json({"jsonrpc": "2.0", "id": 99, "result": 1})
        await wire.write_json({"jsonrpc": "2.0", "id": 1, "method": "ok"})
        assert await wire.read() == {"jsonrpc": "2.0", "id": 1, "result": "ok"}
    assert ["unknown request id 99" in e.message for e in errors] == [True]


async def test_results_may_be_pydantic_models_dumped_by_alias() -> None:
    """Handlers may return models; they go out by alias, unset fields left out."""

    class Reply(BaseModel):
        stop_reason: str = "x"
        extra_note: str | None = None

        model_config = ConfigDict(
            alias_generator=lambda s: "".join(
                w if i == 0 else w.title() for i, w in enumerate(s.split("_"))
            ),
            populate_by_name=True,
        )

    router = Router()

    async def prompt(params: JsonValue) -> Reply:
        return Reply(stop_reason="end_turn")

    router.on_request("session/prompt", prompt)
    async with two_peers(router_b=router) as (a, _b):
        assert await a.request("session/prompt") == {"stopReason": "end_turn"}


async def test_inbound_request_concurrency_is_bounded() -> None:
    """No queue is unbounded: beyond max_concurrent_requests the peer stops reading."""
    router = Router()
    running = 0
    peak = 0
    gate = anyio.Event()
    four_running = anyio.Event()

    async def hold(params: JsonValue) -> JsonValue:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 4:
            four_running.set()
        await gate.wait()
        running -= 1
        return None

    router.on_request("hold", hold)
    async with peer_and_wire(router, max_concurrent_requests=4) as (peer, wire):
        for i in range(10):
            await wire.write_json({"jsonrpc": "2.0", "id": i, "method": "hold"})
        with anyio.fail_after(5):
            await four_running.wait()
        await anyio.sleep(0.05)  # room for a fifth handler to start, if the bound were broken
        assert peer.statistics().handlers_running == 4
        gate.set()
        answers = [await wire.read() for _ in range(10)]
    assert peak == 4
    assert sorted(a["id"] for a in answers) == list(range(10))  # type: ignore[index]


async def test_messages_are_one_compact_line_each_on_the_wire() -> None:
    """ACP transports: one JSON message per line, UTF-8, no embedded newline."""
    async with peer_and_wire() as (peer, wire):
        await peer.notify("session/update", {"text": "a\nb é"})
        with anyio.fail_after(5):
            while b"\n" not in wire.buffer:
                wire.buffer += await wire.receive.receive()
        assert wire.buffer == (
            json.dumps(
                {"jsonrpc": "2.0", "method": "session/update", "params": {"text": "a\nb é"}},
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode()
            + b"\n"
        )


async def test_a_result_that_is_not_json_is_answered_with_internal_error() -> None:
    """A handler bug never puts invalid JSON on the wire; the caller gets -32603."""
    router = Router()

    async def bad(params: JsonValue) -> object:
        return {"value": object()}

    router.on_request("bad", bad)
    async with two_peers(router_b=router) as (a, _b):
        with pytest.raises(RPCError) as info:
            await a.request("bad")
        assert info.value.code == ErrorCode.INTERNAL_ERROR
        assert info.value.data == {"error": "result is not JSON"}


async def test_the_notification_buffer_is_bounded() -> None:
    """No queue is unbounded: with the handler stuck, the peer stops reading at the bound."""
    router = Router()
    gate = anyio.Event()
    delivered: list[JsonValue] = []
    all_done = anyio.Event()

    async def on_note(params: JsonValue) -> None:
        await gate.wait()
        delivered.append(params)
        if len(delivered) == 50:
            all_done.set()

    router.on_notification("note", on_note)
    async with peer_and_wire(router, notification_buffer=4) as (peer, wire):
        for i in range(50):
            await wire.write_json({"jsonrpc": "2.0", "method": "note", "params": [i]})
        with anyio.fail_after(5):
            while peer.statistics().notifications_queued < 4:
                await anyio.wait_all_tasks_blocked()
        await anyio.wait_all_tasks_blocked()  # a broken bound would keep filling the buffer
        stats = peer.statistics()
        assert stats.notifications_queued == 4
        assert stats.messages_received <= 4 + 2  # one in the handler, one waiting to be queued
        gate.set()
        with anyio.fail_after(5):
            await all_done.wait()
    assert delivered == [[i] for i in range(50)]


async def test_a_request_is_handled_only_after_the_notifications_before_it() -> None:
    """ACP tool calls: the agent sends the ``tool_call`` update, then asks permission for it;
    the client's permission handler already knows the tool call (the notifications received
    before a request are handled before its handler starts), however slow the update handler."""
    router = Router()
    handled: list[JsonValue] = []

    async def on_update(params: JsonValue) -> None:
        await anyio.sleep(0.01)  # a slow handler: the request is read long before it is done
        handled.append(params)

    async def on_permission(params: JsonValue) -> JsonValue:
        return {"updates_known": len(handled)}

    router.on_notification("session/update", on_update)
    router.on_request("session/request_permission", on_permission)
    async with peer_and_wire(router) as (_, wire):
        lines = [
            json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": [i]})
            for i in range(5)
        ]
        lines.append(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/request_permission"})
        )
        await wire.write("\n".join(lines).encode() + b"\n")
        with anyio.fail_after(5):
            answer = await wire.read()
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"updates_known": 5}}


async def test_a_result_is_returned_only_after_the_notifications_before_it_were_handled() -> None:
    """ACP prompt turn: a client sees every update of a turn before the turn's result."""
    router = Router()
    handled: list[JsonValue] = []

    async def on_update(params: JsonValue) -> None:
        await anyio.sleep(0.001)  # slow handlers: the response line arrives long before
        handled.append(params)

    router.on_notification("session/update", on_update)
    seen_at_result: list[int] = []
    async with peer_and_wire(router) as (peer, wire):
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await peer.request("session/prompt")
                    seen_at_result.append(len(handled))

                tg.start_soon(call)
                request = await wire.read()
                lines = [
                    json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": [i]})
                    for i in range(50)
                ]
                lines.append(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
                await wire.write("\n".join(lines).encode() + b"\n")
        assert seen_at_result == [50]
