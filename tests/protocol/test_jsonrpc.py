"""JSON-RPC 2.0 envelopes: decoding, validation and encoding (sans-IO)."""

from __future__ import annotations

import json

import pytest

from subagents.protocol import (
    ErrorCode,
    ErrorObject,
    ErrorResponse,
    InvalidMessageError,
    JsonValue,
    LocalProtocolError,
    Notification,
    Request,
    SuccessResponse,
    decode_message,
    encode_message,
)


def test_error_codes_are_the_jsonrpc_and_acp_values() -> None:
    """JSON-RPC 2.0 standard codes plus ACP's -32800, -32000 and -32002 (acp.md §7)."""
    assert ErrorCode.PARSE_ERROR == -32700
    assert ErrorCode.INVALID_REQUEST == -32600
    assert ErrorCode.METHOD_NOT_FOUND == -32601
    assert ErrorCode.INVALID_PARAMS == -32602
    assert ErrorCode.INTERNAL_ERROR == -32603
    assert ErrorCode.REQUEST_CANCELLED == -32800
    assert ErrorCode.AUTH_REQUIRED == -32000
    assert ErrorCode.RESOURCE_NOT_FOUND == -32002


@pytest.mark.parametrize("request_id", [0, 7, -3, "abc", ""])
def test_request_ids_may_be_integers_or_strings(request_id: int | str) -> None:
    """JSON-RPC 2.0: an id is a string or a number; it round-trips unchanged."""
    message = decode_message({"jsonrpc": "2.0", "id": request_id, "method": "m", "params": {}})
    assert message == Request(request_id, "m", {})
    assert json.loads(encode_message(message))["id"] == request_id


def test_each_message_shape_is_classified() -> None:
    """Request, notification, success and error responses are told apart by method and id."""
    assert decode_message({"jsonrpc": "2.0", "method": "n"}) == Notification("n")
    assert decode_message({"jsonrpc": "2.0", "id": 1, "result": None}) == SuccessResponse(1, None)
    error = decode_message({"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "x"}})
    assert error == ErrorResponse(None, ErrorObject(-1, "x"))


@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        ({"id": 1, "method": "m"}, 'missing "jsonrpc"'),
        ({"jsonrpc": "1.0", "id": 1, "method": "m"}, '"jsonrpc" must be "2.0"'),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, '"method" must be a string'),
        ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": 3}, '"params" must be an object'),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, '"id" must be an integer or a string'),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, '"id" must be an integer or a string'),
        ({"jsonrpc": "2.0"}, 'neither "method" nor "id"'),
        ({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {}}, "exactly one of"),
        ({"jsonrpc": "2.0", "id": 1}, "exactly one of"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}, "integer"),
        ({"jsonrpc": "2.0", "id": None, "result": 1}, 'non-null "id"'),
    ],
)
def test_invalid_envelopes_are_refused_with_invalid_request(
    obj: dict[str, JsonValue], reason: str
) -> None:
    """JSON-RPC 2.0 §5: an invalid request object is answered with -32600."""
    with pytest.raises(InvalidMessageError) as info:
        decode_message(obj)
    assert info.value.code == ErrorCode.INVALID_REQUEST
    assert info.value.kind == "invalid_envelope"
    assert reason in info.value.message


def test_an_invalid_request_keeps_its_id_for_the_answer() -> None:
    """An invalid request whose id is readable is answered with that id."""
    with pytest.raises(InvalidMessageError) as info:
        decode_message({"jsonrpc": "2.0", "id": 4, "method": "m", "params": "x"})
    assert info.value.request_id == 4
    assert info.value.answerable


def test_an_invalid_response_is_not_answered() -> None:
    """Responses are never answered, even when malformed (no reply loops)."""
    with pytest.raises(InvalidMessageError) as info:
        decode_message({"jsonrpc": "2.0", "id": 4, "result": 1, "error": {}})
    assert not info.value.answerable


def test_the_codex_dialect_omits_the_version_field() -> None:
    """require_version=False accepts messages without "jsonrpc" (Codex app-server JSONL)."""
    assert decode_message({"id": 1, "method": "m"}, require_version=False) == Request(1, "m")
    encoded = encode_message(Request(1, "m"), include_version=False)
    assert encoded == b'{"id":1,"method":"m"}\n'


def test_encoding_is_one_compact_utf8_line() -> None:
    """ACP transports: UTF-8, newline-delimited, no embedded newlines; non-ASCII not escaped."""
    line = encode_message(Notification("n", {"text": "héllo\nworld 🌍"}))
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert "héllo".encode() in line
    assert json.loads(line) == {
        "jsonrpc": "2.0",
        "method": "n",
        "params": {"text": "héllo\nworld 🌍"},
    }


def test_error_data_is_sent_only_when_present() -> None:
    """`data` is optional in an error object; `data: null` and no data stay distinct."""
    without = json.loads(encode_message(ErrorResponse(1, ErrorObject.of(-32601, "m"))))
    assert "data" not in without["error"]
    explicit_null = decode_message(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m", "data": None}}
    )
    assert isinstance(explicit_null, ErrorResponse)
    assert json.loads(encode_message(explicit_null))["error"] == {
        "code": 1,
        "message": "m",
        "data": None,
    }


@pytest.mark.parametrize("bad", [float("nan"), object()])
def test_encoding_a_non_json_payload_is_a_local_error(bad: object) -> None:
    """We never put invalid JSON on the wire."""
    with pytest.raises(LocalProtocolError):
        encode_message(Notification("n", {"x": bad}))  # type: ignore[dict-item]


def test_a_lone_surrogate_is_escaped_so_the_line_stays_valid_utf8_and_exact() -> None:
    """We never put invalid UTF-8 on the wire: a lone surrogate (legal in a JSON string, say
    in an id a peer sent) is written as an escape, and reads back as the same value."""
    line = encode_message(Notification("n", {"x": "\ud800 é"}))
    assert line.decode("ascii").endswith("\n")
    assert json.loads(line)["params"] == {"x": "\ud800 é"}


def test_a_circular_payload_is_a_local_error_and_the_encoder_stays_usable() -> None:
    """The kept C encoder (issue 17: one encoder per process, not per message) refuses what
    ``json`` refuses, with the same errors, and encodes the next message as if nothing
    happened: a circular payload, NaN, a non-JSON object, then a valid message."""
    circular: dict[str, object] = {}
    circular["self"] = circular
    for bad in (circular, {"x": float("inf")}, {"x": object()}):
        with pytest.raises(LocalProtocolError) as info:
            encode_message(Notification("n", bad))  # type: ignore[arg-type]
        with pytest.raises((TypeError, ValueError)) as by_json:
            json.dumps(bad, allow_nan=False)
        assert str(by_json.value) in str(info.value)
        nested: JsonValue = {"a": [{"b": [1, 2.5, None, True]}], "c": {"d": {"e": "é"}}}
        line = encode_message(Notification("n", nested))
        expected = json.dumps(
            {"jsonrpc": "2.0", "method": "n", "params": nested},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        assert line == expected.encode() + b"\n"
