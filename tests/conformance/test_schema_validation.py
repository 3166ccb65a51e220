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


def test_fields_of_the_unstable_schema_are_unstable_use_not_unknown_fields() -> None:
    """ACP-SCHEMA-002 (issue 16): ``usage`` in a prompt response is defined by the protocol's
    unstable schema (schema.unstable.json): reported as unstable use, not as a finding."""
    usage = {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}
    findings = validator().response(
        "session/prompt",
        {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn", "usage": usage}},
    )
    assert findings.errors == []
    assert findings.unknown_fields == []
    assert findings.unstable_fields == [
        "session/prompt result: fields of the unstable schema (PromptResponse): usage"
    ]


def test_the_retired_unstable_session_models_are_unstable_use() -> None:
    """ACP-SCHEMA-002 (issue 16): ``models`` in the session/new result (the unstable session
    model API, removed from schema.unstable.json on 2026-06-01, still sent by agents built on
    older SDKs) is unstable use, not a finding."""
    models = {"currentModelId": "m", "availableModels": [{"modelId": "m", "name": "M"}]}
    findings = validator().response(
        "session/new", {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s", "models": models}}
    )
    assert findings.unknown_fields == []
    assert findings.unstable_fields == [
        "session/new result: fields of the unstable schema (NewSessionResponse): models"
    ]


def test_nested_unknown_fields_are_found_with_their_json_path() -> None:
    """ACP-SCHEMA-002 (issue 16): fields outside the schema are found at any depth (an object
    inside the result, an item of an array, a union variant chosen by its discriminator), each
    with its JSON path."""
    findings = validator().response(
        "initialize",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"promptCapabilities": {"image": True, "video": True}},
                "agentInfo": {"name": "a", "version": "1", "buildHash": "x"},
                "authMethods": [{"id": "t", "name": "T", "type": "terminal", "icon": "key"}],
            },
        },
    )
    assert findings.errors == []
    assert findings.unknown_fields == [
        "initialize result/agentCapabilities/promptCapabilities: "
        "fields not in PromptCapabilities: video",
        "initialize result/agentInfo: fields not in Implementation: buildHash",
        "initialize result/authMethods/0: fields not in AuthMethod (terminal): icon",
    ]


def test_nested_unknown_fields_of_an_update_name_the_update_kind() -> None:
    """ACP-SCHEMA-002: a tool call's content item and location are judged by their own
    definitions; ``_meta`` at any depth is never a finding."""
    findings = validator().incoming(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "c",
                    "title": "t",
                    "content": [{"type": "diff", "path": "/a", "newText": "x", "hunks": 1}],
                    "locations": [{"path": "/a", "_meta": {"anything": 1}}],
                },
            },
        }
    )
    assert findings.errors == []
    assert findings.unknown_fields == [
        "session/update params/update/content/0: fields not in ToolCallContent (diff): hunks"
    ]


def test_a_discriminator_of_a_sibling_variant_is_not_an_unknown_field() -> None:
    """An agent auth method may say ``"type": "agent"`` although only the other variants
    declare ``type``: the union's discriminator is known to every variant."""
    findings = validator().response(
        "initialize",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "protocolVersion": 1,
                "authMethods": [{"id": "a", "name": "A", "type": "agent"}],
            },
        },
    )
    assert findings.unknown_fields == []


def test_a_discriminator_value_no_variant_names_is_reported_as_such() -> None:
    """An auth method ``{"type": "env_var", ...}`` (codex-acp) is decoded by a lenient client
    as the default variant (no ``type``: agent); the finding names the value no variant of
    AuthMethod has, not only the fields it brought."""
    findings = validator().response(
        "initialize",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "protocolVersion": 1,
                "authMethods": [
                    {"id": "login", "name": "Log in"},
                    {"type": "env_var", "id": "key", "name": "Key", "vars": [{"name": "K"}]},
                    {"type": "terminal", "id": "tui", "name": "TUI"},
                ],
            },
        },
    )
    assert findings.errors == []
    assert findings.unknown_fields == [
        "initialize result/authMethods/1: type 'env_var' is no variant of AuthMethod "
        "(known: 'terminal', 'agent', or no type)",
        "initialize result/authMethods/1: fields not in AuthMethod: vars",
    ]
