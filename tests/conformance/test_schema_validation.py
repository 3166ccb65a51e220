"""The strict validator judges agent messages against the vendored schema, and reports fields
outside the schema separately (leniency-only defects)."""

from __future__ import annotations

from typing import Any, cast

from subagents.conformance.schema import (
    AgentMessageValidator,
    _discriminator,  # pyright: ignore[reportPrivateUsage]
    _validator_class,  # pyright: ignore[reportPrivateUsage]
    definition_root,
    load_schema,
    shared_validator,
)


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


def _tagged_unions() -> list[tuple[str, list[Any]]]:
    """Every ``oneOf`` of the stable schema, with the definition it is in."""
    found: list[tuple[str, list[Any]]] = []

    def visit(name: str, node: Any) -> None:
        if isinstance(node, dict):
            node = cast(dict[str, Any], node)
            if isinstance(node.get("oneOf"), list):
                found.append((name, cast(list[Any], node["oneOf"])))
            for child in node.values():
                visit(name, child)
        elif isinstance(node, list):
            for child in cast(list[Any], node):
                visit(name, child)

    for name, definition in load_schema()["$defs"].items():
        visit(name, definition)
    return found


def _errors(validator: Any, value: Any) -> list[tuple[str, str, str]]:
    return sorted(
        ("/".join(map(str, e.absolute_path)), str(e.validator), str(e.message))
        for e in validator.iter_errors(value)
    )


def _root(name: str) -> dict[str, Any]:
    return definition_root(load_schema(), name)


def test_the_tagged_unions_of_the_schema_are_judged_on_the_branch_their_tag_names() -> None:
    """Issue 17 (the conformance run's CPU): ``SessionUpdate`` and ``ContentBlock`` are found
    to be tagged (each branch requires its own ``const``), a union without such a tag is not,
    so only the former take the one-branch shortcut."""
    unions = {name: _discriminator(one_of) for name, one_of in _tagged_unions()}
    session_update = unions["SessionUpdate"]
    assert session_update is not None
    key, branches = session_update
    assert key == "sessionUpdate"
    assert {"agent_message_chunk", "tool_call", "plan"} <= set(branches)
    content_block = unions["ContentBlock"]
    assert content_block is not None
    assert content_block[0] == "type"
    assert None in unions.values(), "some oneOf of the schema has no tag (say a default variant)"


def test_the_shortcut_reports_exactly_what_the_standard_validator_reports() -> None:
    """Issue 17: the faster ``oneOf`` changes no finding. For every branch of every tagged
    union, a value with only the tag, a value with the tag and a wrong-typed field, a value
    whose tag no branch names and a value that is no object get the same errors (path,
    keyword, message) from the suite's validator as from jsonschema's own; so do complete
    valid and invalid session updates."""
    import jsonschema

    fast_class = _validator_class()
    checked = 0
    for name, one_of in _tagged_unions():
        table = _discriminator(one_of)
        if table is None:
            continue
        key, branches = table
        fast, standard = fast_class(_root(name)), jsonschema.Draft202012Validator(_root(name))
        for tag in branches:
            for value in ({key: tag}, {key: tag, "content": 5, "title": [], "text": {}}):
                assert _errors(fast, value) == _errors(standard, value), (name, value)
                checked += 1
        for value in ({key: "no-such-kind"}, {key: 7}, {}, "text", None):
            assert _errors(fast, value) == _errors(standard, value), (name, value)
    assert checked > 20
    fast = fast_class(_root("SessionNotification"))
    standard = jsonschema.Draft202012Validator(_root("SessionNotification"))
    text = {"type": "text", "text": "hi"}
    for update in (
        {"sessionUpdate": "agent_message_chunk", "content": text},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 5}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "image"}},
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read", "kind": "read"},
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read", "kind": "nope"},
        {"sessionUpdate": "plan", "entries": []},
        {"sessionUpdate": "plan", "entries": [{"content": "x"}]},
    ):
        value = {"sessionId": "s1", "update": update}
        assert _errors(fast, value) == _errors(standard, value), update
    assert (
        _errors(fast, {"sessionId": "s1", "update": {"sessionUpdate": "plan", "entries": []}}) == []
    )
