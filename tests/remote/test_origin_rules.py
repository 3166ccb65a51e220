"""The Origin and Host rules and the envelope check as functions (issue 34): what is served,
what is refused, at the edges (no server: the servers' tests drive them over the wire)."""

from __future__ import annotations

import json

import pytest

from subagents.remote._envelope import MAX_DEPTH, BadMessage, decode_message
from subagents.remote._origin import OriginPolicy


def refusal(policy: OriginPolicy, host: str, origin: str | None = None) -> int | None:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    scope = {"type": "http", "scheme": "http", "path": "/acp", "headers": headers}
    found = policy.refusal(scope)
    return None if found is None else found[0]


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8765",
        "127.0.0.2",
        "[::1]:8765",
        "[::1]",
        "localhost",
        "LOCALHOST.:8765",
        "10.1.2.3:80",
        "devbox:8765",
        "acp.example.com",
    ],
)
def test_ip_addresses_localhost_the_bound_host_and_public_url_host_are_served(host: str) -> None:
    """Issue 34: "a Host that is not the bound address, a loopback name or the --public-url
    host is refused": those are served, whatever the port (a rebinding needs a name)."""
    policy = OriginPolicy.make(bound_host="devbox", public_url="https://acp.example.com/a2a")
    assert refusal(policy, host) is None


@pytest.mark.parametrize(
    "host",
    ["evil.example:8765", "evil.example", "localhost.evil.example", "a b", "x:port", "[::1"],
)
def test_other_names_and_malformed_hosts_are_refused_421(host: str) -> None:
    """Issue 34: the DNS rebinding guard: any other name, or a Host that does not parse."""
    policy = OriginPolicy.make(bound_host="127.0.0.1")
    assert refusal(policy, host) == 421


def test_any_host_is_served_with_a_star() -> None:
    """Issue 34: ``--allow-host '*'`` turns the Host check off (the Origin check stays)."""
    policy = OriginPolicy.make(bound_host="127.0.0.1", allowed_hosts=["*"])
    assert refusal(policy, "evil.example") is None
    assert refusal(policy, "evil.example", "http://evil.example") == 403


def test_decode_message_refuses_one_level_too_deep() -> None:
    """Issue 34: nesting up to :data:`MAX_DEPTH` levels (the message itself counts) is a
    message; one more is refused with ``-32600``, not passed on."""

    def nested(levels: int) -> bytes:  # the params object holds levels - 2 more lists
        inner = "[" * (levels - 2) + "]" * (levels - 2)
        return f'{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":{inner}}}}}'.encode()

    assert isinstance(decode_message(nested(MAX_DEPTH)), dict)
    too_deep = decode_message(nested(MAX_DEPTH + 1))
    assert isinstance(too_deep, BadMessage)
    assert too_deep.code == -32600


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": "a", "method": "m"},
        {"jsonrpc": "2.0", "id": -(2**63), "method": "m", "params": {}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}},
        {"jsonrpc": "2.0", "id": 3, "result": None},
        {"jsonrpc": "2.0", "id": "x", "error": {"code": -32000, "message": "no"}},
    ],
)
def test_decode_message_passes_good_requests_notifications_and_answers(message: object) -> None:
    """Issue 34: the check refuses only what no peer could answer or route."""
    assert decode_message(json.dumps(message)) == message


def test_a_bad_message_with_a_good_id_is_answered_with_that_id() -> None:
    """Issue 34: a request whose id is valid but whose params are not an object gets its
    error under its own id (the client can match it)."""
    bad = decode_message(b'{"jsonrpc":"2.0","id":9,"method":"session/new","params":[]}')
    assert isinstance(bad, BadMessage)
    assert bad.response()["id"] == 9
