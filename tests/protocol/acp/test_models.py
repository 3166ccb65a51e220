"""Model conventions of the generated ACP models (requirement 3)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic_core import ValidationError

from subagents.protocol import acp
from subagents.protocol.acp import _v1_generated as generated


def roundtrip(tp: object, data: dict[str, Any]) -> dict[str, Any]:
    return acp.to_wire(acp.from_wire(tp, copy.deepcopy(data)))


def model_classes() -> list[type[acp.ACPModel]]:
    out: list[type[acp.ACPModel]] = []
    for name in generated.__all__:
        obj = getattr(generated, name)
        if isinstance(obj, type) and issubclass(obj, acp.ACPModel):
            out.append(obj)
    return out


def test_every_generated_model_builds_its_validator_and_serializer() -> None:
    """Requirement 3: every model's schema is complete (each reference resolves) and a model
    with no required field validates ``{}`` and dumps back only its union tags."""
    classes = model_classes()
    assert len(classes) > 200
    for cls in classes:
        required = [name for name, info in cls.model_fields.items() if info.is_required()]
        if required:
            with pytest.raises(ValidationError):
                cls.model_validate({})
        else:
            # Only the union tags of a variant count as set when nothing was given.
            dumped = acp.to_wire(cls.model_validate({}))
            tags = {cls.model_fields[tag].serialization_alias or tag for tag in cls._acp_tags}  # pyright: ignore[reportPrivateUsage]
            assert set(dumped) == tags, cls.__name__


def test_validation_is_strict_and_models_stay_mutable() -> None:
    """Requirement 3: no coercion between JSON types ("1" is not an integer, 1 not a boolean,
    "true" not a boolean); assignment is allowed and counts the field as set."""
    with pytest.raises(ValidationError):
        acp.from_wire(acp.InitializeRequest, {"protocolVersion": "1"})
    with pytest.raises(ValidationError):
        acp.from_wire(acp.FileSystemCapabilities, {"readTextFile": 1})
    with pytest.raises(ValidationError):
        acp.from_wire(acp.FileSystemCapabilities, {"readTextFile": "true"})
    caps = acp.FileSystemCapabilities()
    caps.read_text_file = True
    assert acp.to_wire(caps) == {"readTextFile": True}


def test_models_work_inside_pydantic_models_and_adapters() -> None:
    """Requirement 3: an embedder's own pydantic model may hold ACP models (they bring their
    own core schema), and a TypeAdapter validates the generated union aliases."""
    from pydantic import BaseModel, TypeAdapter

    class Envelope(BaseModel):
        request: acp.InitializeRequest
        blocks: list[acp.ContentBlock] = []

    envelope = Envelope.model_validate(
        {"request": {"protocolVersion": 1}, "blocks": [{"type": "text", "text": "hi"}]}
    )
    assert envelope.request.protocol_version == 1
    assert isinstance(envelope.blocks[0], acp.TextContentBlock)
    assert envelope.model_dump(mode="json", by_alias=True, exclude_unset=True) == {
        "request": {"protocolVersion": 1},
        "blocks": [{"type": "text", "text": "hi"}],
    }
    update = TypeAdapter(acp.SessionUpdate).validate_python(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    )
    assert isinstance(update, acp.AgentMessageChunkSessionUpdate)


def test_attributes_are_snake_case_and_wire_names_are_camel_case() -> None:
    """Requirement 3: ``session_id`` in Python, ``sessionId`` on the wire, either accepted."""
    request = acp.NewSessionRequest(cwd="/work", mcp_servers=[])
    assert acp.to_wire(request) == {"cwd": "/work", "mcpServers": []}
    by_alias = acp.LoadSessionRequest.model_validate(
        {"sessionId": "s1", "cwd": "/w", "mcpServers": []}
    )
    by_name = acp.LoadSessionRequest.model_validate(
        {"session_id": "s1", "cwd": "/w", "mcp_servers": []}
    )
    assert by_alias.session_id == by_name.session_id == "s1"
    assert acp.to_wire(by_name) == {"sessionId": "s1", "cwd": "/w", "mcpServers": []}
    for cls in model_classes():
        for name in cls.model_fields:
            assert name == name.lower(), f"{cls.__name__}.{name}"


def test_meta_round_trips_exactly_at_every_level() -> None:
    """Requirement 3: ``_meta`` is the ``meta`` attribute and comes back unchanged, nested too."""
    meta = {"traceparent": "00-abc-01", "deep": {"list": [1, 2.5, None, True, {"x": "y"}]}}
    data = {
        "sessionId": "s1",
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "Read file",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "x", "_meta": meta}},
                {"type": "diff", "path": "/a", "newText": "b", "_meta": {"k": 1}},
            ],
            "_meta": {"inner": {}},
        },
        "_meta": meta,
    }
    note = acp.from_wire(acp.SessionNotification, data)
    assert note.meta == meta
    assert isinstance(note.update, acp.ToolCallSessionUpdate)
    assert note.update.meta == {"inner": {}}
    assert roundtrip(acp.SessionNotification, data) == data


def test_explicit_null_meta_round_trips_as_null() -> None:
    """Requirement 3: a field sent as null is kept as null (set), unlike an absent one."""
    data = {"sessionId": "s1", "_meta": None}
    assert roundtrip(acp.CancelNotification, data) == data
    assert roundtrip(acp.CancelNotification, {"sessionId": "s1"}) == {"sessionId": "s1"}


def test_unknown_fields_from_a_peer_are_preserved() -> None:
    """Requirement 3: extra fields survive validation and dumping, at any depth."""
    data = {
        "protocolVersion": 1,
        "clientCapabilities": {
            "fs": {"readTextFile": True, "x-future": {"a": [1]}},
            "futureCapability": True,
        },
        "clientInfo": {"name": "c", "version": "1", "vendorBuild": 7},
        "somethingNew": "kept",
    }
    request = acp.from_wire(acp.InitializeRequest, data)
    assert request.model_extra == {"somethingNew": "kept"}
    assert request.client_capabilities.fs.read_text_file is True
    assert roundtrip(acp.InitializeRequest, data) == data


def test_schema_defaults_apply_but_are_not_written_back() -> None:
    """Requirement 3: omitted capabilities read as their schema defaults; dumps stay minimal."""
    request = acp.from_wire(acp.InitializeRequest, {"protocolVersion": 1})
    assert request.client_capabilities.fs.read_text_file is False
    assert request.client_capabilities.terminal is False
    assert acp.to_wire(request) == {"protocolVersion": 1}
    response = acp.InitializeResponse(protocol_version=1)
    assert response.agent_capabilities.prompt_capabilities.image is False
    assert response.auth_methods == []
    assert acp.to_wire(response) == {"protocolVersion": 1}


@pytest.mark.parametrize(
    ("update", "variant"),
    [
        (
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}},
            "UserMessageChunkSessionUpdate",
        ),
        (
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
            "AgentMessageChunkSessionUpdate",
        ),
        (
            {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}},
            "AgentThoughtChunkSessionUpdate",
        ),
        ({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "T"}, "ToolCallSessionUpdate"),
        (
            {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"},
            "ToolCallUpdateSessionUpdate",
        ),
        (
            {
                "sessionUpdate": "plan",
                "entries": [{"content": "c", "priority": "high", "status": "pending"}],
            },
            "PlanSessionUpdate",
        ),
        (
            {"sessionUpdate": "available_commands_update", "availableCommands": []},
            "AvailableCommandsUpdateSessionUpdate",
        ),
        (
            {"sessionUpdate": "current_mode_update", "currentModeId": "ask"},
            "CurrentModeUpdateSessionUpdate",
        ),
        (
            {"sessionUpdate": "config_option_update", "configOptions": []},
            "ConfigOptionUpdateSessionUpdate",
        ),
        ({"sessionUpdate": "session_info_update", "title": None}, "SessionInfoUpdateSessionUpdate"),
        ({"sessionUpdate": "usage_update", "used": 10, "size": 100}, "UsageUpdateSessionUpdate"),
        ({"sessionUpdate": "plan_removed", "planId": "p"}, "PlanRemovedSessionUpdate"),
    ],
)
def test_session_updates_pick_the_variant_named_by_their_tag(
    update: dict[str, Any], variant: str
) -> None:
    """Requirement 3: SessionUpdate is discriminated by ``sessionUpdate``."""
    value = acp.from_wire(acp.SessionUpdate, update)
    assert type(value).__name__ == variant
    assert roundtrip(acp.SessionUpdate, update) == update


@pytest.mark.parametrize(
    ("block", "variant", "payload"),
    [
        ({"type": "text", "text": "t"}, "TextContentBlock", "TextContent"),
        (
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            "ImageContentBlock",
            "ImageContent",
        ),
        (
            {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
            "AudioContentBlock",
            "AudioContent",
        ),
        (
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            "ResourceLinkContentBlock",
            "ResourceLink",
        ),
        (
            {"type": "resource", "resource": {"uri": "file:///a", "text": "x"}},
            "ResourceContentBlock",
            "EmbeddedResource",
        ),
    ],
)
def test_content_blocks_pick_the_variant_named_by_type(
    block: dict[str, Any], variant: str, payload: str
) -> None:
    """Requirement 3: ContentBlock is discriminated by ``type``; variants extend the payload."""
    value = acp.from_wire(acp.ContentBlock, block)
    assert type(value).__name__ == variant
    assert isinstance(value, getattr(acp, payload))
    assert roundtrip(acp.ContentBlock, block) == block


def test_permission_outcomes_pick_the_variant_named_by_outcome() -> None:
    """Requirement 3: RequestPermissionOutcome is discriminated by ``outcome``."""
    cancelled = acp.from_wire(acp.RequestPermissionResponse, {"outcome": {"outcome": "cancelled"}})
    assert isinstance(cancelled.outcome, acp.CancelledRequestPermissionOutcome)
    selected = acp.from_wire(
        acp.RequestPermissionResponse, {"outcome": {"outcome": "selected", "optionId": "allow"}}
    )
    assert isinstance(selected.outcome, acp.SelectedRequestPermissionOutcome)
    assert selected.outcome.option_id == "allow"


def test_union_tags_are_always_written_even_when_defaulted() -> None:
    """Requirement 3: constructing a variant without its tag still puts the tag on the wire."""
    block = acp.TextContentBlock(text="hi")
    assert acp.to_wire(block) == {"type": "text", "text": "hi"}
    outcome = acp.CancelledRequestPermissionOutcome()
    assert acp.to_wire(acp.RequestPermissionResponse(outcome=outcome)) == {
        "outcome": {"outcome": "cancelled"}
    }
    chunk = acp.AgentMessageChunkSessionUpdate(content=block)
    assert acp.to_wire(acp.SessionNotification(session_id="s", update=chunk)) == {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "hi"},
        },
    }


def test_unions_with_a_default_variant_use_it_when_the_tag_is_absent_or_unknown() -> None:
    """Requirement 3: McpServer without ``type`` is stdio; AuthMethod without ``type`` is agent."""
    stdio = {"name": "fs", "command": "/bin/mcp", "args": [], "env": []}
    assert isinstance(acp.from_wire(acp.McpServer, stdio), acp.McpServerStdio)
    http = {"type": "http", "name": "web", "url": "https://x", "headers": []}
    assert isinstance(acp.from_wire(acp.McpServer, http), acp.HttpMcpServer)
    assert roundtrip(acp.McpServer, http) == http
    assert isinstance(acp.from_wire(acp.AuthMethod, {"id": "a", "name": "A"}), acp.AuthMethodAgent)
    terminal = {"type": "terminal", "id": "t", "name": "T", "args": ["login"]}
    assert isinstance(acp.from_wire(acp.AuthMethod, terminal), acp.TerminalAuthMethod)
    boolean = {"sessionId": "s", "configId": "c", "type": "boolean", "value": True}
    value_id = {"sessionId": "s", "configId": "c", "value": "fast"}
    set_option = acp.SetSessionConfigOptionRequest
    assert isinstance(acp.from_wire(set_option, boolean), acp.BooleanSetSessionConfigOptionRequest)
    assert isinstance(acp.from_wire(set_option, value_id), acp.ValueIdSetSessionConfigOptionRequest)
    assert roundtrip(set_option, boolean) == boolean


def test_open_unions_keep_unknown_variants() -> None:
    """Requirement 3: an unknown ``action``/``mode``/``type`` lands in the "other" variant."""
    response = {"action": "_vendor/snooze", "until": "later"}
    value = acp.from_wire(acp.CreateElicitationResponse, response)
    assert isinstance(value, acp.OtherCreateElicitationResponse)
    assert roundtrip(acp.CreateElicitationResponse, response) == response
    accept = {"action": "accept", "content": {"name": "x", "n": 3, "ok": True, "tags": ["a"]}}
    assert isinstance(
        acp.from_wire(acp.CreateElicitationResponse, accept), acp.AcceptCreateElicitationResponse
    )
    assert roundtrip(acp.CreateElicitationResponse, accept) == accept
    prop = {"type": "_vendor/color", "title": "Colour"}
    assert isinstance(
        acp.from_wire(acp.ElicitationPropertySchema, prop), acp.OtherElicitationPropertySchema
    )


def test_open_enums_accept_unknown_strings_and_closed_ones_do_not() -> None:
    """Requirement 3: ``oneOf`` constants are closed Literals; "other" branches stay open."""
    option = {"id": "m", "name": "Model", "type": "select", "currentValue": "a", "options": []}
    assert (
        roundtrip(acp.SessionConfigOption, {**option, "category": "_custom"})["category"]
        == "_custom"
    )
    with pytest.raises(ValidationError):
        acp.from_wire(acp.PromptResponse, {"stopReason": "_custom"})
    assert acp.from_wire(acp.PromptResponse, {"stopReason": "refusal"}).stop_reason == "refusal"
    assert acp.from_wire(acp.Error, {"code": -1, "message": "m"}).code == -1


@pytest.mark.parametrize(
    ("tp", "data"),
    [
        (acp.PromptRequest, {"prompt": []}),  # missing sessionId
        (acp.PromptRequest, {"sessionId": "s", "prompt": [{"type": "video", "url": "x"}]}),
        (acp.PromptRequest, {"sessionId": "s", "prompt": [{"text": "no tag"}]}),
        (acp.SessionNotification, {"sessionId": "s", "update": {"sessionUpdate": "nope"}}),
        (acp.SessionNotification, {"sessionId": "s", "update": {"sessionUpdate": "tool_call"}}),
        (acp.InitializeRequest, {"protocolVersion": 70000}),
        (acp.InitializeRequest, {"protocolVersion": "1"}),
        (acp.RequestPermissionResponse, {"outcome": {"outcome": "selected"}}),
        (acp.UsageUpdate, {"used": -1, "size": 1}),
        (acp.Notice, {"severity": "info", "title": ""}),
        (acp.ToolCall, {"toolCallId": "t", "title": "x", "kind": "dance"}),
        (acp.McpServer, {"type": "http", "name": "n"}),
    ],
)
def test_invalid_payloads_raise_validation_error(tp: object, data: dict[str, Any]) -> None:
    """Requirement 3: required fields, tags, enums, types and bounds are enforced."""
    with pytest.raises(ValidationError):
        acp.from_wire(tp, data)


def test_from_wire_caches_one_validator_per_type() -> None:
    """Requirement 3: union aliases are validated through a validator built once per type."""
    from subagents.protocol.acp import _base

    acp.from_wire(acp.ContentBlock, {"type": "text", "text": "a"})
    first = _base._type_validator(acp.ContentBlock)  # pyright: ignore[reportPrivateUsage]
    acp.from_wire(acp.ContentBlock, {"type": "text", "text": "b"})
    assert _base._type_validator(acp.ContentBlock) is first  # pyright: ignore[reportPrivateUsage]


def test_descriptions_become_docstrings() -> None:
    """Requirement 3: schema descriptions are kept as class docstrings."""
    assert acp.SessionNotification.__doc__ is not None
    assert "Notification containing a session update" in acp.SessionNotification.__doc__
    assert "UNSTABLE" in (acp.ForkSessionRequest.__doc__ or "")


def test_unstable_definitions_and_fields_are_recorded() -> None:
    """Requirement 2: what is not in the stable schema.json is listed as unstable."""
    assert "ForkSessionRequest" in generated.UNSTABLE_NAMES
    assert "PlanUpdateSessionUpdate" in generated.UNSTABLE_NAMES
    assert "SessionNotification" not in generated.UNSTABLE_NAMES
    assert "AgentMessageChunkSessionUpdate" not in generated.UNSTABLE_NAMES
    assert generated.UNSTABLE_FIELDS["PromptResponse"] == frozenset({"usage"})
    assert generated.SCHEMA_RELEASE == "1.21.0"


def test_a_model_with_string_annotations_is_refused_with_the_reason() -> None:
    """Issue 17: the models validate from their evaluated annotations; a model defined under
    ``from __future__ import annotations`` fails at class creation, naming the field and the
    fix, instead of failing later on first use."""
    with pytest.raises(TypeError, match=r"Late\.text: ACP models need evaluated annotations"):
        type("Late", (acp.ACPModel,), {"__annotations__": {"text": "str"}})


def test_unknown_attributes_raise_and_extras_read_as_attributes() -> None:
    """Requirement 3: an unknown attribute is an AttributeError naming it; a field kept from the
    wire reads as an attribute, as in pydantic."""
    block = acp.from_wire(acp.TextContentBlock, {"type": "text", "text": "a", "future": 1})
    assert block.future == 1  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(AttributeError, match="txt"):
        _ = block.txt  # pyright: ignore[reportAttributeAccessIssue]
    assert block == acp.from_wire(acp.TextContentBlock, {"type": "text", "text": "a", "future": 1})
    assert block != acp.TextContentBlock(text="b")
    assert copy.deepcopy(block) == block
    assert copy.copy(block) == block
    changed = block.model_copy(update={"text": "z"})
    assert (changed.text, block.text) == ("z", "a")
    assert acp.to_wire(changed) == {"type": "text", "text": "z", "future": 1}
