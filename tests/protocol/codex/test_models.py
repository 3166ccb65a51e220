"""The Codex app-server models against the vendored 0.171.0 JSON schema.

Sample messages follow the transcripts observed on the real binary (research note codex.md
§2), completed with the fields the schema requires where the note shortened them (``…``).
Each sample is checked three ways: it validates against the schema, it parses into the
model, and the model's dump validates against the schema again (and equals the sample, so
unknown fields round-trip).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from subagents.protocol import codex

SCHEMA_DIR = Path(codex.__file__).parent / "schema"

THREAD = "019a-thr"
TURN = "019a-turn"
WHERE = {"threadId": THREAD, "turnId": TURN}
THREAD_OBJECT: dict[str, Any] = {
    "id": THREAD,
    "cliVersion": "0.171.0",
    "createdAt": 1760000000,
    "updatedAt": 1760000000,
    "cwd": "/work",
    "ephemeral": False,
    "modelProvider": "fake",
    "preview": "Say hello.",
    "projectId": None,
    "sessionId": THREAD,
    "source": "appServer",
    "status": {"type": "idle"},
    "turns": [],
    "path": "/home/codex/sessions/rollout.jsonl",
}
FINAL = {
    "type": "agentMessage",
    "id": "msg_bc09",
    "text": "Hello from the fake model.",
    "phase": None,
}
USAGE = {
    "totalTokens": 15,
    "inputTokens": 10,
    "cachedInputTokens": 0,
    "outputTokens": 5,
    "reasoningOutputTokens": 0,
}
TURN_ERROR = {
    "message": "We’re currently experiencing high demand.",
    "codexErrorInfo": "internalServerError",
    "additionalDetails": None,
}

SAMPLES: list[tuple[str, type[Any], dict[str, Any]]] = [
    (
        "v1/InitializeParams.json",
        codex.InitializeParams,
        {
            "clientInfo": {"name": "py_subagent_probe", "title": "Probe", "version": "0.0.1"},
            "capabilities": {"experimentalApi": False},
        },
    ),
    (
        "v1/InitializeResponse.json",
        codex.InitializeResponse,
        {
            "userAgent": "py_subagent_probe/0.171.0 (Debian 12.0.0; x86_64) xterm",
            "codexHome": "/home/codex",
            "platformFamily": "unix",
            "platformOs": "linux",
        },
    ),
    (
        "v2/ThreadStartParams.json",
        codex.ThreadStartParams,
        {"cwd": "/work", "sandbox": "read-only", "approvalPolicy": "never", "ephemeral": True},
    ),
    (
        "v2/ThreadStartResponse.json",
        codex.ThreadStartResponse,
        {
            "thread": THREAD_OBJECT,
            "model": "gpt-5.5",
            "modelProvider": "fake",
            "cwd": "/work",
            "approvalPolicy": "never",
            "approvalsReviewer": "user",
            "sandbox": {"type": "readOnly", "networkAccess": False},
        },
    ),
    (
        "v2/ThreadResumeResponse.json",
        codex.ThreadResumeResponse,
        {
            "thread": {
                **THREAD_OBJECT,
                "turns": [{"id": TURN, "status": "completed", "items": []}],
            },
            "model": "gpt-5.5",
            "modelProvider": "fake",
            "cwd": "/work",
            "approvalPolicy": "on-request",
            "approvalsReviewer": "user",
            "sandbox": {"type": "dangerFullAccess"},
        },
    ),
    (
        "v2/ThreadForkResponse.json",
        codex.ThreadForkResponse,
        {
            "thread": {**THREAD_OBJECT, "id": "019a-fork", "forkedFromId": THREAD},
            "model": "gpt-5.5",
            "modelProvider": "fake",
            "cwd": "/work",
            "approvalPolicy": "never",
            "approvalsReviewer": "user",
            "sandbox": {"type": "readOnly"},
        },
    ),
    ("v2/ThreadResumeParams.json", codex.ThreadResumeParams, {"threadId": THREAD, "model": "m"}),
    (
        "v2/ThreadForkParams.json",
        codex.ThreadForkParams,
        {"threadId": THREAD, "ephemeral": True, "excludeTurns": True},
    ),
    (
        "v2/ThreadReadParams.json",
        codex.ThreadReadParams,
        {"threadId": THREAD, "includeTurns": True},
    ),
    (
        "v2/ThreadReadResponse.json",
        codex.ThreadReadResponse,
        {
            "thread": {
                **THREAD_OBJECT,
                "turns": [{"id": TURN, "status": "completed", "items": [FINAL], "error": None}],
            }
        },
    ),
    (
        "v2/TurnStartParams.json",
        codex.TurnStartParams,
        {
            "threadId": THREAD,
            "input": [{"type": "text", "text": "Say hello.", "text_elements": []}],
            "outputSchema": {"type": "object"},
        },
    ),
    (
        "v2/TurnStartResponse.json",
        codex.TurnStartResponse,
        {
            "turn": {
                "id": TURN,
                "status": "inProgress",
                "items": [],
                "itemsView": "notLoaded",
                "error": None,
            }
        },
    ),
    ("v2/TurnInterruptParams.json", codex.TurnInterruptParams, WHERE),
    ("v2/TurnInterruptResponse.json", codex.TurnInterruptResponse, {}),
    (
        "v2/ThreadStartedNotification.json",
        codex.ThreadStartedNotification,
        {"thread": THREAD_OBJECT},
    ),
    (
        "v2/ThreadStatusChangedNotification.json",
        codex.ThreadStatusChangedNotification,
        {"threadId": THREAD, "status": {"type": "active", "activeFlags": ["waitingOnApproval"]}},
    ),
    (
        "v2/TurnStartedNotification.json",
        codex.TurnStartedNotification,
        {"threadId": THREAD, "turn": {"id": TURN, "status": "inProgress", "items": []}},
    ),
    (
        "v2/TurnCompletedNotification.json",
        codex.TurnCompletedNotification,
        {
            "threadId": THREAD,
            "turn": {
                "id": TURN,
                "status": "completed",
                "error": None,
                "itemsView": "summary",
                "items": [FINAL],
                "durationMs": 241,
            },
        },
    ),
    (
        "v2/TurnCompletedNotification.json",
        codex.TurnCompletedNotification,
        {
            "threadId": THREAD,
            "turn": {"id": TURN, "status": "failed", "items": [], "error": TURN_ERROR},
        },
    ),
    (
        "v2/ItemStartedNotification.json",
        codex.ItemStartedNotification,
        {
            **WHERE,
            "startedAtMs": 1,
            "item": {
                "type": "userMessage",
                "id": "u1",
                "content": [{"type": "text", "text": "Say hello.", "text_elements": []}],
            },
        },
    ),
    (
        "v2/ItemCompletedNotification.json",
        codex.ItemCompletedNotification,
        {**WHERE, "completedAtMs": 2, "item": FINAL},
    ),
    (
        "v2/ItemCompletedNotification.json",
        codex.ItemCompletedNotification,
        {
            **WHERE,
            "completedAtMs": 2,
            "item": {
                "type": "commandExecution",
                "id": "call_a033",
                "command": "/bin/bash -lc 'echo approved-command-ran'",
                "commandActions": [{"type": "unknown", "command": "echo approved-command-ran"}],
                "cwd": "/work",
                "status": "completed",
                "exitCode": 0,
                "aggregatedOutput": "approved-command-ran\n",
            },
        },
    ),
    (
        "v2/ItemCompletedNotification.json",
        codex.ItemCompletedNotification,
        {
            **WHERE,
            "completedAtMs": 2,
            "item": {"type": "reasoning", "id": "r1", "summary": ["Think."], "content": []},
        },
    ),
    (
        "v2/ItemCompletedNotification.json",
        codex.ItemCompletedNotification,
        {
            **WHERE,
            "completedAtMs": 2,
            "item": {
                "type": "fileChange",
                "id": "p1",
                "status": "declined",
                "changes": [{"path": "/work/a.txt", "kind": {"type": "add"}, "diff": "+a\n"}],
            },
        },
    ),
    (
        "v2/ItemCompletedNotification.json",
        codex.ItemCompletedNotification,
        {**WHERE, "completedAtMs": 2, "item": {"type": "plan", "id": "plan-1", "text": "1. look"}},
    ),
    (
        "v2/AgentMessageDeltaNotification.json",
        codex.AgentMessageDeltaNotification,
        {**WHERE, "itemId": "msg_bc09", "delta": "Hello from the"},
    ),
    (
        "v2/ReasoningSummaryTextDeltaNotification.json",
        codex.ReasoningSummaryTextDeltaNotification,
        {**WHERE, "itemId": "rs_1", "delta": "Weighing the", "summaryIndex": 0},
    ),
    (
        "v2/ReasoningTextDeltaNotification.json",
        codex.ReasoningTextDeltaNotification,
        {**WHERE, "itemId": "rs_1", "delta": "raw", "contentIndex": 1},
    ),
    (
        "v2/TurnPlanUpdatedNotification.json",
        codex.TurnPlanUpdatedNotification,
        {
            **WHERE,
            "explanation": "Two steps.",
            "plan": [
                {"step": "Read the question", "status": "completed"},
                {"step": "Answer it", "status": "inProgress"},
            ],
        },
    ),
    (
        "v2/TurnPlanUpdatedNotification.json",
        codex.TurnPlanUpdatedNotification,
        {**WHERE, "explanation": None, "plan": []},
    ),
    (
        "v2/PlanDeltaNotification.json",
        codex.PlanDeltaNotification,
        {**WHERE, "itemId": "plan-1", "delta": "1. look"},
    ),
    (
        "v2/ThreadTokenUsageUpdatedNotification.json",
        codex.ThreadTokenUsageUpdatedNotification,
        {**WHERE, "tokenUsage": {"total": USAGE, "last": USAGE, "modelContextWindow": 258400}},
    ),
    (
        "v2/ErrorNotification.json",
        codex.ErrorNotification,
        {**WHERE, "error": TURN_ERROR, "willRetry": False},
    ),
    (
        "CommandExecutionRequestApprovalParams.json",
        codex.CommandExecutionRequestApprovalParams,
        {
            **WHERE,
            "kind": "command",
            "itemId": "call_a033",
            "startedAtMs": 1,
            "environmentId": "local",
            "reason": "Fake model wants to run this outside the sandbox",
            "command": "/bin/bash -lc 'echo hi'",
            "cwd": "/work",
            "commandActions": [{"type": "unknown", "command": "echo hi"}],
            "proposedExecpolicyAmendment": ["/bin/bash", "-lc", "echo hi"],
        },
    ),
    (
        "CommandExecutionRequestApprovalResponse.json",
        codex.CommandExecutionRequestApprovalResponse,
        {"decision": "decline"},
    ),
    (
        "CommandExecutionRequestApprovalResponse.json",
        codex.CommandExecutionRequestApprovalResponse,
        {"decision": {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["/bin/ls"]}}},
    ),
    (
        "FileChangeRequestApprovalParams.json",
        codex.FileChangeRequestApprovalParams,
        {**WHERE, "itemId": "p1", "startedAtMs": 1, "reason": "write access", "grantRoot": None},
    ),
    (
        "FileChangeRequestApprovalResponse.json",
        codex.FileChangeRequestApprovalResponse,
        {"decision": "acceptForSession"},
    ),
]


def validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize(
    ("schema", "model", "sample"),
    SAMPLES,
    ids=[f"{s[1].__name__}-{i}" for i, s in enumerate(SAMPLES)],
)
def test_samples_parse_and_their_dumps_validate_against_the_schema(
    schema: str, model: type[Any], sample: dict[str, Any]
) -> None:
    """Schema and models agree: the sample is valid, parses, and dumps back to itself."""
    validator(schema).validate(sample)
    parsed = codex.from_wire(model, sample)
    dumped = codex.to_wire(parsed)
    validator(schema).validate(dumped)
    assert dumped == sample


def test_items_are_typed_by_their_tag_and_unknown_types_are_kept_raw() -> None:
    """ThreadItem: modelled types become their class; others an UnknownItem keeping fields."""
    [sample] = [
        params
        for _, _, params in SAMPLES
        if params.get("item", {}).get("type") == "commandExecution"
    ]
    typed = codex.from_wire(codex.ItemCompletedNotification, sample)
    assert isinstance(typed.item, codex.CommandExecutionItem)
    assert (typed.item.exit_code, typed.item.aggregated_output) == (0, "approved-command-ran\n")
    plan = codex.from_wire(codex.ThreadItem, {"type": "plan", "id": "p", "text": "1. look"})
    assert isinstance(plan, codex.UnknownItem)
    assert plan.model_extra == {"text": "1. look"}


def test_params_built_in_python_validate_against_the_schema() -> None:
    """What the client sends (snake_case in Python) is schema-valid on the wire."""
    params = codex.TurnStartParams(
        thread_id=THREAD,
        input=[codex.TextUserInput(text="hi"), codex.LocalImageUserInput(path="/x.png")],
    )
    validator("v2/TurnStartParams.json").validate(codex.to_wire(params))
    start = codex.ThreadStartParams(sandbox="danger-full-access", config={"a": 1})
    assert codex.to_wire(start) == {"sandbox": "danger-full-access", "config": {"a": 1}}
    validator("v2/ThreadStartParams.json").validate(codex.to_wire(start))
    init = codex.InitializeParams(
        client_info=codex.ClientInfo(name="subagents", version="0.1.0"),
        capabilities=codex.InitializeCapabilities(experimental_api=False),
    )
    validator("v1/InitializeParams.json").validate(codex.to_wire(init))


def test_every_vendored_file_matches_the_sha256_in_source_md() -> None:
    """SOURCE.md records package, version and how the files were made, and each file's hash."""
    source = (SCHEMA_DIR / "SOURCE.md").read_text(encoding="utf-8")
    assert "@openai/codex" in source
    assert "0.171.0" in source
    assert "generate-json-schema" in source
    assert "Apache-2.0" in source
    table = dict(re.findall(r"^\| (\S+\.json) \| ([0-9a-f]{64}) \|$", source, re.MULTILINE))
    files = sorted(str(p.relative_to(SCHEMA_DIR)) for p in SCHEMA_DIR.rglob("*.json"))
    assert sorted(table) == files
    for name in files:
        assert hashlib.sha256((SCHEMA_DIR / name).read_bytes()).hexdigest() == table[name], name
    assert {schema for schema, _, _ in SAMPLES} == set(files)


def test_importing_the_package_loads_neither_anyio_nor_pydantic() -> None:
    """Sans-IO and lazy: ``import subagents.protocol.codex`` (and its method names) stays light."""
    code = (
        "import sys, json\n"
        "import subagents.protocol.codex, subagents.protocol.codex.methods\n"
        "print(json.dumps(sorted(m for m in ('anyio', 'pydantic', "
        "'subagents.protocol.codex._models') if m in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == []
