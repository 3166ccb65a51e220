"""The strict validator judges agent messages against the vendored schema, and reports fields
outside the schema separately (leniency-only defects)."""

from __future__ import annotations

from subagents.conformance.schema import AgentMessageValidator, shared_validator


def validator() -> AgentMessageValidator:
    return shared_validator()


def test_a_valid_initialize_result_has_no_findings() -> None:
    findings = validator().response(
        "initialize",
        {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1, "agentCapabilities": {}}},
    )
    assert findings.errors == []
    assert findings.unknown_fields == []


def test_a_bad_stop_reason_is_a_schema_error_naming_the_field() -> None:
    findings = validator().response(
        "session/prompt", {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "done"}}
    )
    assert findings.errors
    assert "stopReason" in findings.errors[0]
    assert "PromptResponse" in findings.errors[0]


def test_unknown_fields_are_reported_apart_from_errors() -> None:
    findings = validator().response(
        "session/new", {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s", "usage": 5}}
    )
    assert findings.errors == []
    assert findings.unknown_fields == [
        "session/new result: fields not in NewSessionResponse: usage"
    ]


def test_unknown_fields_of_an_update_are_found_by_its_kind() -> None:
    findings = validator().incoming(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "hi"},
                    "extra": 1,
                },
            },
        }
    )
    assert findings.errors == []
    assert findings.unknown_fields
    assert "extra" in findings.unknown_fields[0]


def test_a_method_the_client_does_not_have_is_an_error_but_extensions_are_not() -> None:
    assert (
        validator()
        .incoming({"jsonrpc": "2.0", "id": 1, "method": "fs/delete", "params": {}})
        .errors
    )
    assert (
        not validator().incoming({"jsonrpc": "2.0", "id": 1, "method": "_x/y", "params": {}}).errors
    )


def test_error_objects_are_validated() -> None:
    findings = validator().response(
        "initialize", {"jsonrpc": "2.0", "id": 1, "error": {"code": "bad", "message": "m"}}
    )
    assert findings.errors


def test_a_null_session_load_result_is_accepted() -> None:
    """The docs show session/load answering null; the schema says object: both pass."""
    assert (
        validator().response("session/load", {"jsonrpc": "2.0", "id": 1, "result": None}).errors
        == []
    )
