"""Recorded ACP traffic and constructed messages against the models and the schema (req. 3, 6).

The exchanges are the raw NDJSON of acp.md §10.1 (the Python SDK's ``echo_agent.py``) and §10.2
(a cancelled turn), copied verbatim. ``->`` is client to agent, ``<-`` agent to client.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from subagents.protocol import acp
from subagents.protocol.acp import _v1_generated as generated

SCHEMA_DIR = Path(acp.__file__).parent / "schema" / "v1"

ECHO_AGENT = r"""
-> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"clientInfo":{"name":"drive.py","title":"raw driver","version":"0.0.1"}}}
<- {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}
-> {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}
<- {"jsonrpc":"2.0","id":1,"result":{"sessionId":"eaaf18e4f1804bc4ae07ca3cde588a47"}}
-> {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"eaaf18e4f1804bc4ae07ca3cde588a47","prompt":[{"type":"text","text":"Hello, agent!"}]}}
<- {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"eaaf18e4f1804bc4ae07ca3cde588a47","update":{"content":{"text":"Hello, agent!","_meta":{"echo":true},"type":"text"},"_meta":{"echo":true},"sessionUpdate":"agent_message_chunk"},"_meta":{"source":"echo_agent"}}}
<- {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}
-> {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"eaaf18e4f1804bc4ae07ca3cde588a47"}}
"""  # noqa: E501

CANCELLED_TURN = r"""
-> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"drive.py","version":"0.0.1"}}}
<- {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"py-slow-agent","version":"0.0.1"}}}
-> {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}
<- {"jsonrpc":"2.0","id":1,"result":{"sessionId":"182743a64e8e4411adb4addf58f3325f"}}
-> {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"182743a64e8e4411adb4addf58f3325f","prompt":[{"type":"text","text":"slow please"}]}}
<- {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"182743a64e8e4411adb4addf58f3325f","update":{"content":{"text":"echo: slow please","type":"text"},"sessionUpdate":"agent_message_chunk"}}}
<- {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"182743a64e8e4411adb4addf58f3325f","update":{"content":{"text":"tick 0","type":"text"},"sessionUpdate":"agent_message_chunk"}}}
<- {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"182743a64e8e4411adb4addf58f3325f","update":{"content":{"text":"tick 1","type":"text"},"sessionUpdate":"agent_message_chunk"}}}
-> {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"182743a64e8e4411adb4addf58f3325f"}}
<- {"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}
"""  # noqa: E501


def payloads(transcript: str) -> list[tuple[str, object, dict[str, Any]]]:
    """(method, expected type, params or result) for every message, pairing responses by id."""
    table = acp.method_table()
    pending: dict[tuple[str, object], str] = {}
    out: list[tuple[str, object, dict[str, Any]]] = []
    for line in transcript.strip().splitlines():
        direction, raw = line.split(" ", 1)
        message: dict[str, Any] = json.loads(raw)
        if "method" in message:
            spec = table[message["method"]]
            assert (spec.kind == "request") == ("id" in message)
            if "id" in message:
                pending[(direction, message["id"])] = spec.name
            out.append((spec.name, spec.params_type, message["params"]))
        else:
            request_direction = "->" if direction == "<-" else "<-"
            method = pending.pop((request_direction, message["id"]))
            out.append((method, table[method].result_type, message["result"]))
    assert not pending
    return out


@cache
def schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    return data


def schema_validator(definition: str) -> Draft202012Validator:
    """A validator for one ``$defs`` entry, from schema.json if it is stable there."""
    stable = schema("schema.json")
    root = stable if definition in stable["$defs"] else schema("schema.unstable.json")
    return Draft202012Validator({"$defs": root["$defs"], "$ref": f"#/$defs/{definition}"})


def definition_of(tp: object) -> str:
    for name, schema_def in schema("schema.unstable.json")["$defs"].items():
        if getattr(generated, name, None) is tp and "x-docs-ignore" not in schema_def:
            return name
    raise LookupError(tp)


@pytest.mark.parametrize("transcript", [ECHO_AGENT, CANCELLED_TURN], ids=["10.1", "10.2"])
def test_recorded_messages_validate_and_dump_back_unchanged(transcript: str) -> None:
    """Requirement 6: each recorded params/result validates as its method's type and
    ``to_wire`` reproduces the JSON that was on the wire."""
    messages = payloads(transcript)
    assert [m for m, _, _ in messages][:3] == ["initialize", "initialize", "session/new"]
    for method, tp, data in messages:
        model = acp.from_wire(tp, data)
        assert isinstance(model, acp.ACPModel), method
        assert acp.to_wire(model) == data, method
        schema_validator(definition_of(tp)).validate(data)


def test_recorded_messages_select_the_right_variants() -> None:
    """Requirement 6: the session/update in §10.1 is an agent message chunk of text."""
    note = acp.from_wire(acp.SessionNotification, payloads(ECHO_AGENT)[5][2])
    assert isinstance(note.update, acp.AgentMessageChunkSessionUpdate)
    assert isinstance(note.update.content, acp.TextContentBlock)
    assert note.update.content.text == "Hello, agent!"
    assert note.update.content.meta == {"echo": True}
    assert note.meta == {"source": "echo_agent"}
    result = acp.from_wire(acp.PromptResponse, payloads(CANCELLED_TURN)[-1][2])
    assert result.stop_reason == "cancelled"


def constructed_messages() -> list[tuple[str, acp.ACPModel]]:
    session = "sess-1"
    text = acp.TextContentBlock(text="Refactor this", meta={"traceparent": "00-1-2-01"})
    link = acp.ResourceLinkContentBlock(
        uri="file:///repo/a.py", name="a.py", mime_type="text/x-python"
    )
    return [
        (
            "InitializeRequest",
            acp.InitializeRequest(
                protocol_version=1,
                client_capabilities=acp.ClientCapabilities(
                    fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=True),
                    terminal=True,
                ),
                client_info=acp.Implementation(name="subagents", version="0.1.0"),
            ),
        ),
        (
            "InitializeResponse",
            acp.InitializeResponse(
                protocol_version=1,
                agent_capabilities=acp.AgentCapabilities(
                    load_session=True,
                    prompt_capabilities=acp.PromptCapabilities(image=True),
                    session_capabilities=acp.SessionCapabilities(
                        list=acp.SessionListCapabilities()
                    ),
                ),
                auth_methods=[acp.AuthMethodAgent(id="login", name="Log in")],
            ),
        ),
        (
            "NewSessionRequest",
            acp.NewSessionRequest(
                cwd="/repo",
                mcp_servers=[
                    acp.McpServerStdio(
                        name="fs",
                        command="/bin/fs",
                        args=["-v"],
                        env=[acp.EnvVariable(name="A", value="1")],
                    ),
                    acp.HttpMcpServer(name="web", url="https://example.com/mcp", headers=[]),
                ],
            ),
        ),
        ("PromptRequest", acp.PromptRequest(session_id=session, prompt=[text, link])),
        (
            "SessionNotification",
            acp.SessionNotification(
                session_id=session,
                update=acp.ToolCallSessionUpdate(
                    tool_call_id="call-1",
                    title="Edit a.py",
                    kind="edit",
                    status="in_progress",
                    content=[
                        acp.DiffToolCallContent(path="/repo/a.py", old_text="x", new_text="y")
                    ],
                    locations=[acp.ToolCallLocation(path="/repo/a.py", line=3)],
                    raw_input={"path": "/repo/a.py"},
                ),
            ),
        ),
        (
            "SessionNotification",
            acp.SessionNotification(
                session_id=session,
                update=acp.PlanSessionUpdate(
                    entries=[
                        acp.PlanEntry(content="Write tests", priority="high", status="pending")
                    ]
                ),
            ),
        ),
        (
            "RequestPermissionRequest",
            acp.RequestPermissionRequest(
                session_id=session,
                tool_call=acp.ToolCallUpdate(tool_call_id="call-1", status="pending"),
                options=[acp.PermissionOption(option_id="ok", name="Allow", kind="allow_once")],
            ),
        ),
        (
            "RequestPermissionResponse",
            acp.RequestPermissionResponse(
                outcome=acp.SelectedRequestPermissionOutcome(option_id="ok")
            ),
        ),
        (
            "SetSessionConfigOptionRequest",
            acp.BooleanSetSessionConfigOptionRequest(
                session_id=session, config_id="fast", value=True
            ),
        ),
        (
            "CreateElicitationRequest",
            acp.FormCreateElicitationRequest(
                message="Which branch?",
                session_id=session,
                requested_schema=acp.ElicitationSchema(
                    properties={"branch": acp.StringElicitationPropertySchema(title="Branch")},
                    required=["branch"],
                ),
            ),
        ),
        ("PromptResponse", acp.PromptResponse(stop_reason="end_turn")),
        ("CancelRequestNotification", acp.CancelRequestNotification(request_id=7)),
    ]


@pytest.mark.parametrize(("definition", "model"), constructed_messages())
def test_dumps_of_constructed_models_validate_against_the_vendored_schema(
    definition: str, model: acp.ACPModel
) -> None:
    """Requirement 6: ``to_wire`` of models built in Python is valid per the JSON schema."""
    wire = acp.to_wire(model)
    schema_validator(definition).validate(wire)
    assert acp.to_wire(acp.from_wire(getattr(generated, definition), wire)) == wire
