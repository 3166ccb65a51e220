"""The README's code examples run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_seam_example_registers_two_providers_and_delegates_through_the_tool() -> None:
    """Issue: the README documents the public API with an example that registers two providers
    and delegates through the tool; it must run and print what its comment says."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    [example] = [b for b in blocks if "ScriptedProvider" in b]
    assert len(example.strip().splitlines()) <= 22
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False summarise the README\n"


def test_the_runtime_example_delegates_two_levels_deep_and_prints_the_answer() -> None:
    """Issue 8: the README's in-process runtime example runs as written, offline."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    [example] = [b for b in blocks if "SpawnProvider" in b]
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "subagent said: subagent said: You said: hello\n"


def test_the_registry_example_is_a_valid_registry_file() -> None:
    """Issue 9: the README's subagents.toml example parses as written (issue 19: on top of
    the built-ins, whose codex entry it updates with a key)."""
    from subagents.config import builtin_agents, parse_agents

    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(), re.S)
    [example] = [b for b in blocks if "[agents.my-agent]" in b]
    builtins = builtin_agents()
    agents = parse_agents(example, "README.md", builtins)
    assert sorted(agents) == ["codex", "local-model", "my-agent"]
    assert agents["my-agent"].permission == "ask"
    assert agents["local-model"].options["adapter"] == "openai"
    assert agents["codex"].command == builtins["codex"].command
    assert agents["codex"].env["OPENAI_API_KEY"] == "sk-..."


def test_the_delegate_example_streams_the_reference_agent_and_its_outcome(tmp_path: Path) -> None:
    """Issue 19: the README's `subagents.delegate` example runs as written, from another
    directory."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    [example] = [b for b in blocks if "subagents.delegate(" in b]
    done = subprocess.run(
        [sys.executable, "-c", example],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n[completed]\n"
