"""Names of the official ACP Python SDK's schema classes, translated to ours.

The official SDK (``agent-client-protocol`` on PyPI, module ``acp.schema``) generates its
models from the same JSON schema as :mod:`subagents.protocol.acp`, but names several classes
differently: mostly the variants of tagged unions, which we name ``<Tag><Union>``
(``AgentMessageChunkSessionUpdate``, ``SelectedRequestPermissionOutcome``) where the SDK has a
hand-picked name (``AgentMessageChunk``, ``AllowedOutcome``). Code ported from the SDK can look
its names up here::

    from subagents.protocol import acp
    from subagents.protocol.acp.sdk_names import SDK_NAMES

    cls = getattr(acp, SDK_NAMES.get("AllowedOutcome", "AllowedOutcome"))

:data:`SDK_NAMES` maps an SDK class name to the name of our export for the same wire shape, for
every public ``acp.schema`` class whose counterpart here has another name. A class that has the
same name in both is not listed. Watch the *false friends*, SDK names that are also ours but
name something else here: in the SDK, ``AvailableCommandsUpdate``, ``ConfigOptionUpdate``,
``CurrentModeUpdate``, ``SessionInfoUpdate`` and ``UsageUpdate`` are the ``SessionUpdate``
variants (with the ``sessionUpdate`` tag; ours are the untagged payloads),
``StringMultiSelectItems`` is the tagged variant, and ``ResourceContentBlock`` is the
``resource_link`` block (ours is the ``resource`` block, the SDK's
``EmbeddedResourceContentBlock``). Where we merge what the SDK splits (the session- and
request-scoped elicitation modes and requests), several SDK names map to one of ours.

:data:`SDK_ONLY` lists the public SDK schema classes with no counterpart here: the JSON-RPC
envelopes (this project has :mod:`subagents.protocol.jsonrpc` instead) and the environment
variable auth method, which is not in the schema release we vendor. SDK names with a leading
underscore (private payload classes) and the SDK's type aliases (not classes) are not covered.

Hand-written for ``agent-client-protocol`` 0.12.1 (its ``acp.schema`` is generated from schema
release 1.19.0; ours from 1.21.0). ``tests/protocol/acp/test_sdk_names.py`` checks it against
the installed SDK: every key is an ``acp.schema`` class, every value one of our exports whose
wire fields include the SDK class's, and every public SDK class is either listed, same-named
and same-shaped here, or in :data:`SDK_ONLY`. Update it when that test fails after an SDK or
schema upgrade. This module imports nothing: not the SDK, not pydantic, not the models.
"""

from __future__ import annotations

from typing import Final

__all__ = ("SDK_NAMES", "SDK_ONLY")

SDK_NAMES: Final[dict[str, str]] = {
    "AcceptElicitationResponse": "AcceptCreateElicitationResponse",
    "AgentMessageChunk": "AgentMessageChunkSessionUpdate",
    "AgentPlanContentUpdate": "PlanUpdateSessionUpdate",
    "AgentPlanRemovedUpdate": "PlanRemovedSessionUpdate",
    "AgentPlanUpdate": "PlanSessionUpdate",
    "AgentThoughtChunk": "AgentThoughtChunkSessionUpdate",
    "AllowedOutcome": "SelectedRequestPermissionOutcome",
    "AvailableCommandsUpdate": "AvailableCommandsUpdateSessionUpdate",
    "BaseModel": "ACPModel",
    "CancelElicitationResponse": "CancelCreateElicitationResponse",
    "ConfigOptionUpdate": "ConfigOptionUpdateSessionUpdate",
    "CreateFormRequestElicitationRequest": "FormCreateElicitationRequest",
    "CreateFormSessionElicitationRequest": "FormCreateElicitationRequest",
    "CreateOtherElicitationRequest": "OtherCreateElicitationRequest",
    "CreateUrlRequestElicitationRequest": "UrlCreateElicitationRequest",
    "CreateUrlSessionElicitationRequest": "UrlCreateElicitationRequest",
    "CurrentModeUpdate": "CurrentModeUpdateSessionUpdate",
    "DeclineElicitationResponse": "DeclineCreateElicitationResponse",
    "DeniedOutcome": "CancelledRequestPermissionOutcome",
    "ElicitationBooleanPropertySchema": "BooleanElicitationPropertySchema",
    "ElicitationFormRequestMode": "ElicitationFormMode",
    "ElicitationFormSessionMode": "ElicitationFormMode",
    "ElicitationIntegerPropertySchema": "IntegerElicitationPropertySchema",
    "ElicitationMultiSelectPropertySchema": "ArrayElicitationPropertySchema",
    "ElicitationNumberPropertySchema": "NumberElicitationPropertySchema",
    "ElicitationOtherPropertySchema": "OtherElicitationPropertySchema",
    "ElicitationStringPropertySchema": "StringElicitationPropertySchema",
    "ElicitationUrlRequestMode": "ElicitationUrlMode",
    "ElicitationUrlSessionMode": "ElicitationUrlMode",
    "EmbeddedResourceContentBlock": "ResourceContentBlock",
    "FileEditToolCallContent": "DiffToolCallContent",
    "NesEditSuggestionVariant": "EditNesSuggestion",
    "NesJumpSuggestionVariant": "JumpNesSuggestion",
    "NesRenameSuggestionVariant": "RenameNesSuggestion",
    "NesSearchAndReplaceSuggestionVariant": "SearchAndReplaceNesSuggestion",
    "OtherElicitationResponse": "OtherCreateElicitationResponse",
    "PlanUpdateFile": "FilePlanUpdateContent",
    "PlanUpdateItems": "ItemsPlanUpdateContent",
    "PlanUpdateMarkdown": "MarkdownPlanUpdateContent",
    "ResourceContentBlock": "ResourceLinkContentBlock",
    "SessionConfigOptionBoolean": "BooleanSessionConfigOption",
    "SessionConfigOptionSelect": "SelectSessionConfigOption",
    "SessionInfoUpdate": "SessionInfoUpdateSessionUpdate",
    "SetSessionConfigOptionBooleanRequest": "BooleanSetSessionConfigOptionRequest",
    "SetSessionConfigOptionSelectRequest": "ValueIdSetSessionConfigOptionRequest",
    "StringMultiSelectItems": "StringMultiSelectItemsVariant",
    "ToolCallProgress": "ToolCallUpdateSessionUpdate",
    "ToolCallStart": "ToolCallSessionUpdate",
    "UsageUpdate": "UsageUpdateSessionUpdate",
    "UserMessageChunk": "UserMessageChunkSessionUpdate",
}
"""Official SDK ``acp.schema`` class name -> the name of our export with the same wire shape."""

SDK_ONLY: Final[frozenset[str]] = frozenset(
    {
        # JSON-RPC envelopes; see subagents.protocol.jsonrpc.
        "AgentErrorMessage",
        "AgentNotification",
        "AgentRequest",
        "AgentResponse",
        "AgentResponseMessage",
        "ClientErrorMessage",
        "ClientNotification",
        "ClientRequest",
        "ClientResponse",
        "ClientResponseMessage",
        "Jsonrpc",
        # The environment-variable auth method: not in the schema release we vendor.
        "AuthEnvVar",
        "AuthMethodEnvVar",
        "EnvVarAuthMethod",
    }
)
"""Public SDK ``acp.schema`` classes with no counterpart among our exports."""
