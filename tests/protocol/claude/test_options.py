"""The Claude Code CLI's argv from its options, without a process (issue 7 / argv; issue 18:
the options and the argv are sans-IO, in ``subagents.protocol.claude``)."""

from __future__ import annotations

import pytest

from subagents.protocol.claude import ClaudeConfigError, ClaudeOptions, build_claude_argv

OPTIONS = ClaudeOptions(model="claude-fake-model")


def test_argv_always_has_stream_json_both_ways_verbose_and_the_model() -> None:
    """Issue 7 / argv: --output-format stream-json --verbose --input-format stream-json,
    always --model; no permission prompt tool without a policy."""
    argv = build_claude_argv("claude", OPTIONS)
    assert argv[:6] == [
        "claude",
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
    ]
    assert "--model=claude-fake-model" in argv
    assert "--permission-prompt-tool" not in argv
    assert "--include-partial-messages" in argv
    assert "--system-prompt=" in argv
    assert "--setting-sources=" in argv
    assert "--strict-mcp-config" in argv


def test_argv_maps_every_option_to_its_flag() -> None:
    """Issue 7 / argv: permission prompt tool stdio with a policy, system prompt / append,
    allowed / disallowed tools, max turns, resume and fork; dash-leading values stay values."""
    options = ClaudeOptions(
        model="m",
        system_prompt="-be brief",
        append_system_prompt="and kind",
        allowed_tools=("Read", "Bash(touch *)"),
        disallowed_tools=("Write",),
        max_turns=3,
        permission_mode="acceptEdits",
        include_partial_messages=False,
        resume="-abc",
        fork_session=True,
        setting_sources=("user", "project"),
        strict_mcp_config=False,
    )
    argv = build_claude_argv("claude", options, permission_prompt=True)
    assert argv[6:] == [
        "--model=m",
        "--system-prompt=-be brief",
        "--append-system-prompt=and kind",
        "--allowedTools=Read,Bash(touch *)",
        "--disallowedTools=Write",
        "--max-turns=3",
        "--permission-mode=acceptEdits",
        "--permission-prompt-tool",
        "stdio",
        "--resume=-abc",
        "--fork-session",
        "--setting-sources=user,project",
    ]


def test_fork_session_without_resume_is_refused() -> None:
    """Issue 7 / argv: --fork-session forks the session named by --resume."""
    with pytest.raises(ClaudeConfigError, match="resume"):
        build_claude_argv("claude", ClaudeOptions(model="m", fork_session=True))


def test_max_turns_below_one_is_refused() -> None:
    """Issue 7 / argv: --max-turns counts at least one turn."""
    with pytest.raises(ClaudeConfigError, match="max_turns"):
        build_claude_argv("claude", ClaudeOptions(model="m", max_turns=0))
