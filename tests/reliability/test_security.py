"""The security pass of issue 10, end to end through real child processes.

- the client's fs/terminal sandbox refuses path traversal, symbolic-link escapes and absolute
  paths outside its root, whatever the agent asks (the reference agent, and a probing agent
  that asks for exactly the escapes), and nothing of a file outside the root ever reaches the
  agent;
- a terminal runs a program with arguments, never a shell;
- every default permission policy denies (ACP client and provider, Codex, Claude Code, and a
  registry entry whose permission is unset);
- the environment policy passes a child only the documented base and what the configuration
  allows (a canary secret in the parent's environment never arrives), except with the
  documented ``inherit_env=True`` opt-in;
- no module of the package runs a shell or evaluates text (a static check over the AST).

The handler-level cases of the sandbox (each refusal reason) are in
tests/transports/test_acp_sandbox.py; these tests prove the same through the wire.
"""

from __future__ import annotations

import ast
import json
import secrets
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from subagents.config import AgentSpec, from_acp_registry, parse_agents
from subagents.protocol import acp
from subagents.providers import CancelSignal, SubagentOutcome, SubagentProvider, SubagentRequest
from subagents.providers.acp import AcpProvider
from subagents.providers.claude_code import ClaudeCodeProvider
from subagents.providers.codex import CodexProvider
from subagents.providers.factory import build_provider
from subagents.transports import (
    AgentConnection,
    ClientSandbox,
    ClientSession,
    build_child_env,
    connect_agent,
)
from subagents.transports.claude_code import ClaudeOptions

from ._leaks import assert_no_leak, snapshot

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
TRANSPORTS = HERE.parent / "transports"
PROBE = HERE / "probe_agent.py"
ENV_RECORDER = HERE / "env_recorder.py"
FAKE_CODEX = TRANSPORTS / "fake_codex_app_server.py"
FAKE_CLAUDE = TRANSPORTS / "fake_claude_cli.py"
REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]
SRC = Path(__file__).parents[2] / "src" / "subagents"
BOUND = 30.0
"""Every wait of these tests: generous (2 cores, a CI run alongside), never reached."""

CANARY = "SUBAGENTS_CANARY_SECRET"


# ------------------------------------------------------------------------------ helpers


@pytest.fixture
def canary(monkeypatch: pytest.MonkeyPatch) -> str:
    """A random secret in this process's environment, for the children not to see."""
    value = f"canary-{secrets.token_hex(16)}"
    monkeypatch.setenv(CANARY, value)
    return value


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A sandbox root and, beside it, a directory with a secret; links from inside to it."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(f"TOP-SECRET-{secrets.token_hex(8)}\n", encoding="utf-8")
    (root / "inside.txt").write_text("inside the root\n", encoding="utf-8")
    (root / "dir-link").symlink_to(outside, target_is_directory=True)
    (root / "file-link").symlink_to(secret)
    return {"root": root, "outside": outside, "secret": secret}


def texts(updates: list[acp.SessionUpdate]) -> list[str]:
    return [
        u.content.text
        for u in updates
        if isinstance(u, acp.AgentMessageChunkSessionUpdate)
        and isinstance(u.content, acp.TextContentBlock)
    ]


async def prompt_texts(session: ClientSession, text: str) -> tuple[list[str], str | None]:
    updates: list[acp.SessionUpdate] = []
    with anyio.fail_after(BOUND):
        async with session.prompt(text) as turn:
            async for update in turn:
                updates.append(update)
    return texts(updates), turn.stop_reason


async def probe(agent: AgentConnection, cwd: Path, steps: list[list[Any]]) -> list[dict[str, Any]]:
    """Have the probe agent send ``steps`` (``[method, params]``); its answers, in order."""
    session = await agent.new_session(cwd)
    answers, stop = await prompt_texts(session, json.dumps(steps))
    assert stop == "end_turn"
    decoded = [json.loads(a) for a in answers]
    assert len(decoded) == len(steps)
    return decoded


def probe_command(record: Path) -> list[str]:
    return [sys.executable, str(PROBE), str(record)]


def recorded_env(path: Path) -> dict[str, str]:
    env: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    return env


def everything_received(record: Path) -> str:
    return (record / "received.jsonl").read_text(encoding="utf-8", errors="replace")


async def outcome_of(provider: SubagentProvider, prompt: str) -> SubagentOutcome:
    with anyio.fail_after(BOUND):
        async with await provider.start(SubagentRequest(prompt), cancel=CancelSignal()) as run:
            return await run.result()


def claude_cli(tmp_path: Path) -> Path:
    """A ``claude`` executable that runs the scripted fake CLI."""
    path = tmp_path / "claude"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLAUDE}" "$@"\n', encoding="utf-8")
    path.chmod(0o755)
    return path


def codex_command(env_out: Path | None = None) -> list[str]:
    command = [sys.executable, str(FAKE_CODEX)]
    if env_out is None:
        return command
    return [sys.executable, str(ENV_RECORDER), str(env_out), *command]


# ------------------------------------------------------------------------------ the sandbox


async def test_the_reference_agent_s_file_access_is_confined_to_the_sandbox_root(
    layout: dict[str, Path],
) -> None:
    """Issue 10 / security: the fs sandbox, end to end with the reference agent. Its ``fs``
    prompt writes and reads ``<cwd>/reference-agent.txt`` through the client: with the session
    cwd inside the root both work; with the cwd outside the root, or inside it through a
    symbolic link to the outside, both are refused, the file outside is neither created nor
    changed, and nothing of it reaches the agent."""
    root, outside, secret = layout["root"], layout["outside"], layout["secret"]
    planted = outside / "reference-agent.txt"
    planted.write_text(secret.read_text(encoding="utf-8"), encoding="utf-8")
    before = snapshot()
    async with connect_agent(REFERENCE, extension=ClientSandbox(root)) as agent:
        inside, stop_inside = await prompt_texts(await agent.new_session(root), "fs")
        escapes = {
            cwd: await prompt_texts(await agent.new_session(cwd), "fs")
            for cwd in (outside, root / "dir-link", root / ".." / "outside")
        }
    assert_no_leak(before)
    assert stop_inside == "end_turn"
    assert (root / "reference-agent.txt").read_text(encoding="utf-8").startswith("written by")
    assert any(t.startswith("Read ") and "written by" in t for t in inside)
    token = secret.read_text(encoding="utf-8").strip()
    for cwd, (said, stop) in escapes.items():
        assert stop == "end_turn", cwd
        failures = [t for t in said if " failed: " in t]
        assert len(failures) == 2, (cwd, said)  # the write and the read
        assert all("outside" in t and "(code -32602)" in t for t in failures), said
        assert not any(token in t for t in said)
    assert planted.read_text(encoding="utf-8").strip() == token  # never overwritten
    assert sorted(p.name for p in outside.iterdir()) == ["reference-agent.txt", "secret.txt"]


async def test_a_probing_agent_gets_an_error_for_every_escape_and_never_the_secret(
    layout: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 10 / security: the fs/terminal sandbox refuses path traversal, symbolic-link
    escapes and absolute paths outside its root, asked for over the wire by a real agent
    process: each is answered with an error (naming the reason), a write outside creates
    nothing, and the secret appears nowhere in what the agent received."""
    root, outside, secret = layout["root"], layout["outside"], layout["secret"]
    record = tmp_path / "record"
    read = "fs/read_text_file"
    refused_reads = {
        f"{root}/../outside/secret.txt": "outside_root",  # traversal
        f"{root}/dir-link/../../outside/secret.txt": "outside_root",
        str(secret): "outside_root",  # absolute, outside
        f"{root}/dir-link/secret.txt": "outside_root",  # through a link to a directory
        f"{root}/file-link": "outside_root",  # a link to the file
        "../outside/secret.txt": "not_absolute",
        "outside/secret.txt": "not_absolute",
        "/etc/passwd": "outside_root",
    }
    steps: list[list[Any]] = [[read, {"path": str(root / "inside.txt")}]]  # the control
    steps += [[read, {"path": path}] for path in refused_reads]
    steps += [
        ["fs/write_text_file", {"path": str(outside / "planted.txt"), "content": "x"}],
        ["fs/write_text_file", {"path": f"{root}/dir-link/planted.txt", "content": "x"}],
        ["fs/write_text_file", {"path": f"{root}/../outside/planted.txt", "content": "x"}],
        ["terminal/create", {"command": "cat", "args": ["secret.txt"], "cwd": str(outside)}],
        ["terminal/create", {"command": "cat", "args": ["secret.txt"], "cwd": f"{root}/dir-link"}],
        ["terminal/create", {"command": "cat", "args": ["x"], "cwd": f"{root}/../outside"}],
        ["terminal/create", {"command": "pwd", "cwd": "/"}],
    ]
    before = snapshot()
    async with connect_agent(probe_command(record), extension=ClientSandbox(root)) as agent:
        answers = await probe(agent, root, steps)
    assert_no_leak(before)

    control, *refusals = answers
    assert control["result"] == {"content": "inside the root\n"}
    for (method, params), answer in zip(steps[1:], refusals, strict=True):
        assert "result" not in answer, (method, params, answer)
        error = answer["error"]
        assert error["code"] == -32602, (params, error)
        expected = refused_reads.get(params.get("path", ""), "outside_root")
        assert error["data"]["reason"] == expected, (params, error)
    assert not (outside / "planted.txt").exists()
    token = secret.read_text(encoding="utf-8").strip()
    received = everything_received(record)
    assert "inside the root" in received  # the record does hold what the agent was sent
    assert token not in received


async def test_a_terminal_runs_a_program_never_a_shell(tmp_path: Path) -> None:
    """Issue 10 / security: nothing an agent sends is interpolated into a shell. A
    ``terminal/create`` whose command is a string a shell would run is looked up as a program
    name (not found) and the file it would touch is never created; arguments holding
    ``$(...)``, backticks, ``;``, ``|``, ``$VAR`` and globs reach the program literally."""
    root = tmp_path / "root"
    root.mkdir()
    record = tmp_path / "record"
    pwned = tmp_path / "pwned"
    tricky = [
        f"$(touch {pwned})",
        f"`touch {pwned}`",
        f"a; touch {pwned}",
        f"b && touch {pwned} | cat",
        "$HOME",
        "*",
        "\\n'\"",
    ]
    steps: list[list[Any]] = [
        ["terminal/create", {"command": f"echo pwned; touch {pwned}"}],
        ["terminal/create", {"command": "sh -c", "args": [f"touch {pwned}"]}],
        ["terminal/create", {"command": "printf", "args": ["%s\\n", *tricky]}],
        ["terminal/wait_for_exit", {"terminalId": "$TERMINAL"}],
        ["terminal/output", {"terminalId": "$TERMINAL"}],
        ["terminal/release", {"terminalId": "$TERMINAL"}],
    ]
    before = snapshot()
    async with connect_agent(probe_command(record), extension=ClientSandbox(root)) as agent:
        shell_line, sh_with_space, created, waited, output, released = await probe(
            agent, root, steps
        )
    assert_no_leak(before)
    for answer in (shell_line, sh_with_space):
        assert answer["error"]["code"] == -32002, answer
        assert answer["error"]["data"]["reason"] == "command_not_found"
    assert "terminalId" in created["result"]
    assert waited["result"] == {"exitCode": 0}
    assert output["result"]["output"] == "".join(f"{arg}\n" for arg in tricky)
    assert "result" in released
    assert not pwned.exists()


# ------------------------------------------------------------------------------ permissions


async def test_the_acp_client_and_provider_deny_permission_by_default(tmp_path: Path) -> None:
    """Issue 10 / security: the default permission policy denies. ``connect_agent`` and
    ``AcpProvider`` with no policy answer the reference agent's permission request with a
    reject option: the tool does not run."""
    async with connect_agent(REFERENCE) as agent:
        said, stop = await prompt_texts(await agent.new_session(tmp_path), "tool")
    assert stop == "end_turn"
    assert "Permission denied (option 'reject')." in said
    assert "The tool ran." not in said

    async with AcpProvider(REFERENCE, cwd=tmp_path) as provider:
        outcome = await outcome_of(provider, "tool")
    assert outcome.status == "completed", outcome
    assert "Permission denied" in str(outcome.output)
    assert "The tool ran." not in str(outcome.output)


async def test_the_codex_provider_declines_approvals_by_default(tmp_path: Path) -> None:
    """Issue 10 / security: the default permission policy denies. ``CodexProvider`` with no
    policy declines the scripted app-server's command approval."""
    async with CodexProvider(codex_command(), cwd=tmp_path) as provider:
        outcome = await outcome_of(provider, "approve")
    assert outcome.output == "decision: decline"


async def test_the_claude_code_provider_denies_tools_by_default(tmp_path: Path) -> None:
    """Issue 10 / security: the default permission policy denies. ``ClaudeCodeProvider``
    with no policy denies the scripted CLI's ``can_use_tool`` request."""
    provider = ClaudeCodeProvider(
        claude_cli(tmp_path), ClaudeOptions(model="claude-fake-model"), cwd=tmp_path
    )
    async with provider:
        outcome = await outcome_of(provider, "[[tool]]")
    assert outcome.status == "completed", outcome
    assert str(outcome.output).startswith("TOOL_DENIED:")
    assert not (tmp_path / "fake_marker.txt").exists()


def registry_entry(tmp_path: Path, kind: str, command: list[str], model: str = "") -> AgentSpec:
    """A registry entry as a user writes it, with no ``permission``."""
    lines = ["[agents.probe]", f"provider = {json.dumps(kind)}"]
    lines.append(f"command = {json.dumps(command)}")
    if model:
        lines.append(f"model = {json.dumps(model)}")
    lines.append(f"cwd = {json.dumps(str(tmp_path))}")
    spec = parse_agents("\n".join(lines) + "\n", "test.toml")["probe"]
    assert spec.permission == "deny"
    return spec


@pytest.mark.parametrize("kind", ["acp", "codex", "claude-code"])
async def test_a_registry_entry_without_a_permission_denies(tmp_path: Path, kind: str) -> None:
    """Issue 10 / security: the default permission policy denies. A registry entry whose
    ``permission`` is unset, built by ``build_provider``, denies what its child asks (ACP
    permission request, Codex approval, Claude Code ``can_use_tool``)."""
    if kind == "acp":
        spec, prompt = registry_entry(tmp_path, kind, REFERENCE), "tool"
    elif kind == "codex":
        spec, prompt = registry_entry(tmp_path, kind, codex_command()), "approve"
    else:
        cli = [str(claude_cli(tmp_path))]
        spec, prompt = registry_entry(tmp_path, kind, cli, "claude-fake-model"), "[[tool]]"
    async with build_provider(spec) as provider:  # pyright: ignore[reportGeneralTypeIssues]
        outcome = await outcome_of(provider, prompt)
    output = str(outcome.output)
    expected = {
        "acp": "Permission denied",
        "codex": "decision: decline",
        "claude-code": "TOOL_DENIED: Bash was not allowed",
    }[kind]
    assert expected in output, outcome


# ------------------------------------------------------------------------------ environment


def test_the_child_environment_is_the_documented_base_plus_what_is_configured(
    canary: str,
) -> None:
    """Issue 10 / security: the environment policy. ``build_child_env`` copies only the
    documented base from the parent, adds what the configuration names, and the whole
    parent only with ``inherit_env=True``."""
    env = build_child_env({"ALLOWED_VAR": "yes"})
    assert CANARY not in env
    assert canary not in env.values()
    assert env["ALLOWED_VAR"] == "yes"
    assert build_child_env(inherit_env=True)[CANARY] == canary


@pytest.mark.parametrize("inherit", [False, True])
async def test_an_acp_agent_gets_no_variable_the_configuration_did_not_allow(
    canary: str, tmp_path: Path, inherit: bool
) -> None:
    """Issue 10 / security: the environment policy, with a canary secret in the parent's
    environment. An agent started by ``connect_agent`` does not get it; a variable given in
    ``env`` does arrive; ``inherit_env=True`` (the documented opt-in) passes everything."""
    record = tmp_path / "record"
    async with connect_agent(
        probe_command(record), env={"ALLOWED_VAR": "yes"}, inherit_env=inherit
    ) as agent:
        await probe(agent, tmp_path, [])
    env = recorded_env(record / "env.json")
    assert env["ALLOWED_VAR"] == "yes"
    if inherit:
        assert env[CANARY] == canary
    else:
        assert CANARY not in env
        assert canary not in json.dumps(env)
        assert set(env) <= {*build_child_env(), "ALLOWED_VAR", "PWD", "LC_CTYPE", "SHLVL", "_"}


async def test_a_codex_child_gets_no_variable_the_configuration_did_not_allow(
    canary: str, tmp_path: Path
) -> None:
    """Issue 10 / security: the environment policy. A Codex child (the scripted app-server
    behind a recorder of its environment) does not get the canary; ``env`` arrives."""
    out = tmp_path / "codex-env.json"
    async with CodexProvider(
        codex_command(out), cwd=tmp_path, env={"ALLOWED_VAR": "yes"}
    ) as provider:
        outcome = await outcome_of(provider, "hello")
    assert outcome.status == "completed", outcome
    env = recorded_env(out)
    assert env["ALLOWED_VAR"] == "yes"
    assert CANARY not in env
    assert canary not in json.dumps(env)


async def test_a_claude_code_child_gets_no_variable_the_configuration_did_not_allow(
    canary: str, tmp_path: Path
) -> None:
    """Issue 10 / security: the environment policy. A Claude Code child (the scripted CLI,
    which records its environment) does not get the canary; ``env`` arrives."""
    record = tmp_path / "record.jsonl"
    provider = ClaudeCodeProvider(
        claude_cli(tmp_path),
        ClaudeOptions(model="claude-fake-model"),
        cwd=tmp_path,
        env={"FAKE_CLAUDE_RECORD": str(record), "ALLOWED_VAR": "yes"},
    )
    async with provider:
        outcome = await outcome_of(provider, "hello")
    assert outcome.status == "completed", outcome
    first = json.loads(record.read_text(encoding="utf-8").splitlines()[0])
    env: dict[str, str] = first["env"]
    assert env["ALLOWED_VAR"] == "yes"
    assert CANARY not in env
    assert canary not in json.dumps(env)


async def test_a_sandbox_terminal_gets_no_variable_the_configuration_did_not_allow(
    canary: str, tmp_path: Path
) -> None:
    """Issue 10 / security: the environment policy. A command run in a client terminal gets
    the base, the sandbox's ``terminal_env`` and the variables the agent's request names, not
    the canary."""
    root = tmp_path / "root"
    root.mkdir()
    record = tmp_path / "record"
    steps: list[list[Any]] = [
        ["terminal/create", {"command": "env", "env": [{"name": "FROM_AGENT", "value": "1"}]}],
        ["terminal/wait_for_exit", {"terminalId": "$TERMINAL"}],
        ["terminal/output", {"terminalId": "$TERMINAL"}],
        ["terminal/release", {"terminalId": "$TERMINAL"}],
    ]
    sandbox = ClientSandbox(root, terminal_env={"ALLOWED_VAR": "yes"})
    async with connect_agent(probe_command(record), extension=sandbox) as agent:
        _, waited, output, _ = await probe(agent, root, steps)
    assert waited["result"] == {"exitCode": 0}
    lines = output["result"]["output"].splitlines()
    assert "ALLOWED_VAR=yes" in lines
    assert "FROM_AGENT=1" in lines
    assert not any(line.startswith(f"{CANARY}=") for line in lines)
    assert canary not in everything_received(record)


async def test_a_registry_entry_passes_only_its_env(canary: str, tmp_path: Path) -> None:
    """Issue 10 / security: the environment policy. An entry run through ``build_provider``
    gets its ``env`` and not the canary; an entry imported from the ACP registry has its
    unsafe variables dropped before it ever runs."""
    out = tmp_path / "env.json"
    command = [sys.executable, str(ENV_RECORDER), str(out), *REFERENCE]
    spec = AgentSpec("probe", "acp", tuple(command), {"ALLOWED_VAR": "yes"}, cwd=str(tmp_path))
    async with build_provider(spec) as provider:  # pyright: ignore[reportGeneralTypeIssues]
        outcome = await outcome_of(provider, "echo hi")
    assert outcome.status == "completed", outcome
    env = recorded_env(out)
    assert env["ALLOWED_VAR"] == "yes"
    assert CANARY not in env

    entry = {
        "id": "registry-agent",
        "distribution": {
            "npx": {
                "package": "registry-agent@1.0.0",
                "env": {
                    "REGISTRY_OK": "1",
                    "NODE_OPTIONS": "--require /tmp/evil.js",
                    "PYTHONSTARTUP": "/tmp/evil.py",
                    "LD_PRELOAD": "/tmp/evil.so",
                },
            }
        },
    }
    imported, notes = from_acp_registry(entry)
    assert dict(imported.env) == {"REGISTRY_OK": "1"}
    assert sum("dropped environment variable" in note for note in notes) == 3
    runnable = replace(imported, command=tuple(command), cwd=str(tmp_path))
    async with build_provider(runnable) as provider:  # pyright: ignore[reportGeneralTypeIssues]
        outcome = await outcome_of(provider, "echo hi")
    assert outcome.status == "completed", outcome
    env = recorded_env(out)
    assert env["REGISTRY_OK"] == "1"
    assert not {"NODE_OPTIONS", "PYTHONSTARTUP", "LD_PRELOAD", CANARY} & set(env)


# ------------------------------------------------------------------------------ no shell, no eval

SHELL_FUNCTIONS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("asyncio", "create_subprocess_shell"),
}
"""Calls that run a command line through a shell, whatever their arguments."""
SHELL_METHODS = {"subprocess_shell"}
"""``loop.subprocess_shell``: the same, reached through an event loop."""
PROCESS_STARTERS = {
    ("anyio", "run_process"),
    ("anyio", "open_process"),
    ("subprocess", "run"),
    ("subprocess", "Popen"),
    ("subprocess", "call"),
    ("subprocess", "check_call"),
    ("subprocess", "check_output"),
    ("asyncio", "create_subprocess_exec"),
}
"""Calls that start a process: their command must be an argument list (anyio runs a string
through the shell)."""
EVALUATORS = {"eval", "exec", "compile", "__import__"}

ALLOWED: dict[str, str] = {}
"""``file:line: call`` -> why it is acceptable. Empty: nothing in the package needs one."""


def _dotted(node: ast.expr) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return ()


def _is_list_typed(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation)
    return text.startswith(("list[", "Sequence[", "tuple["))


def _argv_is_a_list(argument: ast.expr, scope: ast.AST | None) -> bool:
    """Whether a process's command is visibly an argument list: a list or tuple display, a
    comprehension, or a name bound in the enclosing function only to such (or a parameter
    annotated as a list)."""
    if isinstance(argument, ast.List | ast.Tuple | ast.ListComp):
        return True
    if not isinstance(argument, ast.Name) or scope is None:
        return False
    bound: list[bool] = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == argument.id:
                    bound.append(isinstance(node.value, ast.List | ast.Tuple | ast.ListComp))
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name) and node.target.id == argument.id:
                bound.append(_is_list_typed(node.annotation))
        elif isinstance(node, ast.arg) and node.arg == argument.id:
            bound.append(_is_list_typed(node.annotation))
    return bool(bound) and all(bound)


def _imported_names(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Local names bound by imports, as the dotted names they stand for."""
    names: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = tuple(alias.name.split("."))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = (*node.module.split("."), alias.name)
    return names


def _shell_and_eval_hits(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    imported = _imported_names(tree)
    where = path.relative_to(SRC.parent).as_posix() if path.is_relative_to(SRC) else path.name
    functions: list[tuple[int, int, ast.AST]] = [
        (node.lineno, node.end_lineno or node.lineno, node)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]

    def enclosing(line: int) -> ast.AST | None:
        inside = [(end - start, node) for start, end, node in functions if start <= line <= end]
        return min(inside, key=lambda pair: pair[0])[1] if inside else None

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = _dotted(node.func)
        if dotted and dotted[0] in imported:
            dotted = (*imported[dotted[0]], *dotted[1:])
        called = ".".join(dotted) or ast.unparse(node.func)
        hit = ""
        if dotted[-2:] in SHELL_FUNCTIONS or (dotted and dotted[-1] in SHELL_METHODS):
            hit = "runs a shell"
        elif dotted[-1:] and dotted[-1] in EVALUATORS and dotted[:-1] in ((), ("builtins",)):
            hit = "evaluates text"
        elif dotted[-2:] in PROCESS_STARTERS:
            command = node.args[0] if node.args else None
            for keyword in node.keywords:
                if keyword.arg in ("args", "command"):
                    command = keyword.value
            if command is None or not _argv_is_a_list(command, enclosing(node.lineno)):
                hit = "starts a process whose command is not visibly an argument list"
        for keyword in node.keywords:
            if keyword.arg == "shell" and not (
                isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            ):
                hit = "passes shell="
        if hit:
            yield f"{where}:{node.lineno}: {called}(...) {hit}"


def test_the_static_scanner_catches_what_it_looks_for(tmp_path: Path) -> None:
    """The scanner of the next test finds each forbidden construct (so its silence on the
    package means something)."""
    bad = tmp_path / "scan_probe.py"
    source = (
        "import os, subprocess, asyncio, anyio\n"
        "from subprocess import getoutput as go\n"
        "os.system('x')\n"
        "subprocess.run('ls', shell=True)\n"
        "go('ls')\n"
        "eval('1')\n"
        "exec('1')\n"
        "async def f(cmd: str, loop):\n"
        "    await anyio.run_process(cmd)\n"
        "    await anyio.open_process(f'ls {cmd}')\n"
        "    await asyncio.create_subprocess_shell(cmd)\n"
        "    await loop.subprocess_shell(cmd)\n"
        "    argv = [cmd]\n"
        "    await anyio.open_process(argv)\n"  # fine: an argument list
    )
    bad.write_text(source, encoding="utf-8")
    hits = list(_shell_and_eval_hits(bad))
    lines = sorted(int(hit.split(":")[1]) for hit in hits)
    assert lines == [3, 4, 5, 6, 7, 9, 10, 11, 12], hits


def test_nothing_in_the_package_runs_a_shell_or_evaluates_text() -> None:
    """Issue 10 / security: nothing from an agent's output is ever executed or interpolated
    into a shell command. Every module under src/subagents is scanned (AST) for
    ``shell=True``, ``os.system``, ``os.popen``, ``subprocess.getoutput``/``getstatusoutput``,
    ``asyncio.create_subprocess_shell``, ``loop.subprocess_shell``, a process started with a
    command that is not an argument list (``anyio.run_process``/``open_process`` run a string
    through the shell), and ``eval``/``exec``/``compile``/``__import__``."""
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 50
    hits = [hit for module in modules for hit in _shell_and_eval_hits(module)]
    unexplained = [hit for hit in hits if hit not in ALLOWED]
    assert not unexplained, "shell or eval in the package:\n  " + "\n  ".join(unexplained)
