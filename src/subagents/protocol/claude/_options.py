"""What the ``claude`` CLI is started with: :class:`ClaudeOptions` and its argv.

Pure: the argv is a function of the options (the environment, which reads the parent's, is
built by the transport).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, final

__all__ = (
    "ClaudeConfigError",
    "ClaudeOptions",
    "PermissionMode",
    "build_claude_argv",
)

PermissionMode: TypeAlias = Literal[
    "default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"
]


class ClaudeConfigError(ValueError):
    """The options cannot work (for instance a bypass mode as root outside a sandbox)."""


@final
@dataclass(frozen=True, slots=True)
class ClaudeOptions:
    """What the CLI is started with. ``model`` is always passed: the default differs per
    CLI version."""

    model: str
    system_prompt: str | None = None
    """``None`` passes ``--system-prompt ""`` (the CLI's one-line minimal prompt)."""
    append_system_prompt: str | None = None
    tools: Sequence[str] | None = None
    """``--tools``: the built-in tools that exist for the session at all (``()``: none;
    ``None`` omits the flag: the CLI's default set). Unknown names are ignored by the CLI."""
    allowed_tools: Sequence[str] = ()
    """``--allowedTools``: pre-approved tools (they run without asking); not a filter."""
    disallowed_tools: Sequence[str] = ()
    max_turns: int | None = None
    permission_mode: PermissionMode | None = None
    include_partial_messages: bool = True
    """``--include-partial-messages``: token streaming as stream events."""
    resume: str | None = None
    """A session id to continue (``--resume=ID``; the same config dir and cwd are needed)."""
    fork_session: bool = False
    """With ``resume``: continue into a new session id (``--fork-session``)."""
    config_dir: str | os.PathLike[str] | None = None
    """A private ``CLAUDE_CONFIG_DIR`` (sessions, settings): reproducible runs."""
    setting_sources: Sequence[str] | None = ()
    """``--setting-sources=...``; the default ``()`` loads no user/project/local settings
    (reproducible); ``None`` omits the flag (the CLI's own default)."""
    strict_mcp_config: bool = True
    """``--strict-mcp-config``: ignore MCP servers configured outside these options."""
    extra_args: Sequence[str] = ()
    """Appended to the argv as given."""


def build_claude_argv(
    cli: str | os.PathLike[str], options: ClaudeOptions, *, permission_prompt: bool = False
) -> list[str]:
    """The CLI's argv. ``permission_prompt`` adds ``--permission-prompt-tool stdio`` (tool
    permissions asked over the control protocol, answered by the permission policy). Values
    that may start with a dash use the ``--flag=value`` form, so they cannot become flags."""
    argv = [
        os.fspath(cli),
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
        f"--model={options.model}",
        f"--system-prompt={options.system_prompt or ''}",
    ]
    if options.append_system_prompt:
        argv.append(f"--append-system-prompt={options.append_system_prompt}")
    if options.tools is not None:
        argv.append(f"--tools={','.join(options.tools)}")
    if options.allowed_tools:
        argv.append(f"--allowedTools={','.join(options.allowed_tools)}")
    if options.disallowed_tools:
        argv.append(f"--disallowedTools={','.join(options.disallowed_tools)}")
    if options.max_turns is not None:
        if options.max_turns < 1:
            raise ClaudeConfigError("max_turns must be at least 1")
        argv.append(f"--max-turns={options.max_turns}")
    if options.permission_mode is not None:
        argv.append(f"--permission-mode={options.permission_mode}")
    if permission_prompt:
        argv += ["--permission-prompt-tool", "stdio"]
    if options.include_partial_messages:
        argv.append("--include-partial-messages")
    if options.resume is not None:
        argv.append(f"--resume={options.resume}")
    if options.fork_session:
        if options.resume is None:
            raise ClaudeConfigError("fork_session needs resume (the session to fork)")
        argv.append("--fork-session")
    if options.setting_sources is not None:
        argv.append(f"--setting-sources={','.join(options.setting_sources)}")
    if options.strict_mcp_config:
        argv.append("--strict-mcp-config")
    argv += list(options.extra_args)
    return argv
