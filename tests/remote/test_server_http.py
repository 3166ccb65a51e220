"""The ``/acp`` endpoint's status codes and headers, each from the RFD's routing table, driven
with plain httpx (asyncio and trio)."""

from __future__ import annotations

import json

import httpx
import pytest

from subagents.remote import RemoteServer, ServerLimits
from tests.remote._server_helpers import (
    TOKEN,
    Message,
    RawClient,
    connected,
    http_client,
    initialize_request,
    new_session_request,
    prompt_request,
    running_server,
)

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}
SSE = {"Accept": "text/event-stream"}


async def test_initialize_is_answered_200_with_the_json_rpc_answer_and_the_connection_id(
    reference_server: RemoteServer,
) -> None:
    """RFD: "The initialize request is special: it returns 200 OK with a JSON response body
    containing capabilities and the Acp-Connection-Id. The Acp-Connection-Id is also included
    in the response header." Over HTTP/2 (h2c, prior knowledge): "HTTP/2 is REQUIRED"."""
    async with http_client() as http:
        response = await http.post(reference_server.url, json=initialize_request(7))
    assert response.status_code == 200
    assert response.http_version == "HTTP/2"
    assert response.headers["content-type"] == "application/json"
    assert response.headers["acp-connection-id"]
    body = response.json()
    assert body["id"] == 7
    assert body["result"]["protocolVersion"] == 1
    assert "agentCapabilities" in body["result"]


async def test_http_1_1_is_served_too(reference_server: RemoteServer) -> None:
    """Issue 20: "Serve HTTP/1.1 and HTTP/2" (a client without HTTP/2 still connects)."""
    async with http_client(http2=False) as http:
        response = await http.post(reference_server.url, json=initialize_request())
    assert response.status_code == 200
    assert response.http_version == "HTTP/1.1"


async def test_post_without_json_content_type_is_415(reference_server: RemoteServer) -> None:
    """RFD: "POST Content-Type MUST be application/json (415 otherwise)"."""
    body = json.dumps(initialize_request())
    async with http_client() as http:
        plain = await http.post(
            reference_server.url, content=body, headers={"Content-Type": "text/plain"}
        )
        missing = await http.post(reference_server.url, content=body)
        with_charset = await http.post(
            reference_server.url,
            content=body,
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
    assert plain.status_code == 415
    assert missing.status_code == 415
    assert with_charset.status_code == 200


async def test_get_without_accepting_event_streams_is_406(reference_server: RemoteServer) -> None:
    """RFD: "GET Accept MUST include text/event-stream (406 otherwise)"."""
    async with connected(reference_server) as (client, _):
        response = await client.http.get(
            client.url, headers={**client.headers(), "Accept": "application/json"}
        )
    assert response.status_code == 406


async def test_requests_without_a_connection_id_are_400(reference_server: RemoteServer) -> None:
    """RFD routing: POST (other than initialize), GET and DELETE without Acp-Connection-Id are
    400 Bad Request."""
    url = reference_server.url
    async with http_client() as http:
        post = await http.post(url, json=new_session_request(2))
        get = await http.get(url, headers=SSE)
        delete = await http.delete(url)
    assert (post.status_code, get.status_code, delete.status_code) == (400, 400, 400)


async def test_an_unknown_connection_is_404(reference_server: RemoteServer) -> None:
    """RFD routing: "Unknown Acp-Connection-Id? → 404 Not Found" (POST, GET, DELETE)."""
    url = reference_server.url
    unknown = {"Acp-Connection-Id": "no-such-connection"}
    async with http_client() as http:
        post = await http.post(url, json=new_session_request(2), headers=unknown)
        get = await http.get(url, headers={**unknown, **SSE})
        delete = await http.delete(url, headers=unknown)
    assert (post.status_code, get.status_code, delete.status_code) == (404, 404, 404)


async def test_an_unknown_session_is_404(reference_server: RemoteServer) -> None:
    """RFD: "An unknown Acp-Session-Id for the given connection returns 404" (a GET stream,
    and a session-scoped POST)."""
    async with connected(reference_server) as (client, _):
        get = await client.http.get(client.url, headers={**client.headers("nope"), **SSE})
        post = await client.post(prompt_request(3, "nope", "hi"), session_id="nope")
    assert get.status_code == 404
    assert post.status_code == 404


async def test_a_session_scoped_post_without_the_session_header_is_400(
    reference_server: RemoteServer,
) -> None:
    """RFD: "POST requests for session-scoped operations MUST include both Acp-Connection-Id
    and Acp-Session-Id headers" ("Session-scoped request missing Acp-Session-Id? → 400")."""
    async with connected(reference_server) as (client, events):
        session_id = await client.new_session(events)
        missing = await client.post(prompt_request(3, session_id, "hi"))
        other = await client.post(prompt_request(4, session_id, "hi"), session_id="other")
    assert missing.status_code == 400
    assert other.status_code == 400  # the header names another session than the message


async def test_a_batch_is_501(reference_server: RemoteServer) -> None:
    """RFD: "Batch JSON-RPC requests return 501"."""
    async with http_client() as http:
        response = await http.post(
            reference_server.url, json=[initialize_request(1), initialize_request(2)]
        )
    assert response.status_code == 501


async def test_malformed_json_is_400_with_a_json_rpc_parse_error(
    reference_server: RemoteServer,
) -> None:
    """Issue 20: "400 malformed JSON with a JSON-RPC parse error body"."""
    async with http_client() as http:
        response = await http.post(reference_server.url, content=b"{not json", headers=JSON)
        not_rpc = await http.post(reference_server.url, json={"hello": 1})
    assert response.status_code == 400
    body = response.json()
    assert body["id"] is None
    assert body["error"]["code"] == -32700
    assert not_rpc.status_code == 400
    assert not_rpc.json()["error"]["code"] == -32600


async def test_an_oversize_body_is_413() -> None:
    """Issue 20: "413 oversize body (bounded, configurable)": declared or streamed."""
    limits = ServerLimits(max_message_bytes=1024)
    big = initialize_request()
    big["params"]["clientInfo"] = {"name": "x" * 2000, "version": "1"}
    async with running_server(limits=limits) as server, http_client() as http:
        declared = await http.post(server.url, json=big)

        async def chunks():  # no Content-Length: the server counts as it reads
            yield b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"'
            for _ in range(4):
                yield b"y" * 500
            yield b'"}}'

        streamed = await http.post(server.url, content=chunks(), headers=JSON)
        small = await http.post(server.url, json=initialize_request())
    assert declared.status_code == 413
    assert streamed.status_code == 413
    assert small.status_code == 200


async def test_without_the_token_a_request_is_401_but_health_answers() -> None:
    """Issue 20: a bearer token ("Authorization: Bearer …"; 401 with WWW-Authenticate: Bearer
    otherwise); "A GET /health ... without auth"."""
    async with running_server(token=TOKEN) as server, http_client() as http:
        missing = await http.post(server.url, json=initialize_request())
        wrong = await http.post(
            server.url, json=initialize_request(), headers={"Authorization": "Bearer nope"}
        )
        basic = await http.post(
            server.url, json=initialize_request(), headers={"Authorization": "Basic s3cret"}
        )
        get = await http.get(server.url, headers=SSE)
        health = await http.get(server.health_url)
        client = RawClient(http, server.url, token=TOKEN)
        answer = await client.initialize()
        await client.delete()
    for response in (missing, wrong, basic, get):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
    assert health.status_code == 200
    assert answer["result"]["protocolVersion"] == 1


async def test_health_counts_connections_and_sessions(reference_server: RemoteServer) -> None:
    """Issue 20: "GET /health (or /healthz) ... answering 200 with a small JSON body
    (connections, sessions)"."""
    async with connected(reference_server) as (client, events):
        await client.new_session(events)
        health = await client.http.get(reference_server.health_url)
        healthz = await client.http.get(reference_server.health_url + "z")
        head = await client.http.head(reference_server.health_url)
        await reference_server.drain()
        draining = await client.http.get(reference_server.health_url)
        refused = await client.http.post(reference_server.url, json=initialize_request())
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "connections": 1, "sessions": 1}
    assert healthz.json() == health.json()
    assert (head.status_code, head.content) == (200, b"")
    # Issue 34: draining is 503 on /health (a balancer's check expecting 200 sees it), and a
    # new connection is refused with a JSON-RPC error naming the drain, Retry-After: 1.
    assert draining.status_code == 503
    assert draining.json() == {"status": "draining", "connections": 0, "sessions": 0}
    assert refused.status_code == 503  # no new connection once draining
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["data"] == {"draining": True}
    assert "draining" in refused.json()["error"]["message"]


async def test_other_methods_and_paths_are_refused(reference_server: RemoteServer) -> None:
    """Only /acp (POST, GET, DELETE) and /health are served: 405 with Allow, 404 elsewhere."""
    async with http_client() as http:
        put = await http.put(reference_server.url, json={})
        elsewhere = await http.post(reference_server.url + "/x", json=initialize_request())
    assert put.status_code == 405
    assert put.headers["allow"] == "GET, POST, DELETE"
    assert elsewhere.status_code == 404


async def test_an_answer_to_no_request_of_the_agent_is_400(
    reference_server: RemoteServer,
) -> None:
    """A client response must answer a request the agent sent (else 400, nothing forwarded)."""
    async with connected(reference_server) as (client, _):
        response = await client.post({"jsonrpc": "2.0", "id": 99, "result": {}})
    assert response.status_code == 400


async def test_posts_and_a_stream_share_one_http2_connection(
    reference_server: RemoteServer,
) -> None:
    """RFD: HTTP/2 "provides multiplexing for concurrent POST requests while maintaining
    long-lived GET streams": a POST is answered while a GET stream is open on the same h2c
    connection, and its answer arrives on that stream."""
    async with http_client() as http:
        client = RawClient(http, reference_server.url)
        await client.initialize()
        async with client.stream(shared=True) as events:
            response = await client.post(new_session_request(2))
            assert response.http_version == "HTTP/2"
            assert response.status_code == 202
            _, answer = await events.until_answer(2)
        await client.delete()
    assert answer["result"]["sessionId"]


async def test_one_http2_connection_carries_more_than_a_thousand_posts(
    reference_server: RemoteServer,
) -> None:
    """Every client message is a POST, so a long session's one HTTP/2 connection carries
    thousands: past hypercorn's default of 1000 requests the connection stays open (it used
    to end with GOAWAY, failing the POST in flight), and the agent still answers on it."""
    async with connected(reference_server) as (client, events):
        notice: Message = {"jsonrpc": "2.0", "method": "_conformance/notice", "params": {}}
        statuses = {(await client.post(notice)).status_code for _ in range(1010)}
        response = await client.post(new_session_request(2))
        _, answer = await events.until_answer(2)
    assert statuses == {202}
    assert response.http_version == "HTTP/2"
    assert answer["result"]["sessionId"]


async def test_a_second_get_for_a_stream_takes_it_over(reference_server: RemoteServer) -> None:
    """A client that reconnects its stream (the old one half-open) gets the messages from
    then on: the new GET takes the stream over and the old response ends."""
    async with connected(reference_server) as (client, old), client.stream() as new:
        assert await old.rest() == []  # the old response ended
        session_id = await client.new_session(new)
    assert session_id


# httpx abandons its upload when the 413 comes first; trio reports the generator it leaves.
@pytest.mark.filterwarnings("ignore:Exception ignored in. <async_generator object ByteStream")
async def test_a_client_that_keeps_sending_after_its_answer_harms_no_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A body far beyond the limit is answered 413 before it ends (past the bytes the
    server reads and drops); the DATA still coming for that finished HTTP/2 stream is dropped
    (hypercorn 0.18 failed the connection on it, and on trio the whole server): the server
    goes on serving."""
    monkeypatch.setattr("subagents.remote._app.DISCARD_BYTES", 1024)
    limits = ServerLimits(max_message_bytes=100)
    async with running_server(limits=limits) as server:
        async with http_client() as http:
            try:
                response = await http.post(server.url, content=b"x" * 2_000_000, headers=JSON)
                status = response.status_code
            except httpx.HTTPError:
                status = None  # the client may see its upload cut short instead
        async with http_client() as http:
            health = await http.get(server.health_url)
    assert status in (413, None)
    assert health.status_code == 200
