"""Whether an agent can take a prompt, and where it keeps its state: shared by the probe
(:mod:`subagents.providers.probe`) and ``subagents run``.

- :func:`agent_home`: the environment that gives a Codex or Claude agent its state
  directory. The user's own (``$CODEX_HOME`` or ``~/.codex``; ``$CLAUDE_CONFIG_DIR`` or
  ``~/.claude``) when it exists, since that is where their login lives; otherwise a private
  temporary directory, removed afterwards, so that a probe or a run creates nothing in the
  user's home. An entry whose ``env`` sets ``HOME`` or the agent's variable keeps it.
- :class:`NotReady`: a known reason an agent cannot take a prompt (``needs credentials``,
  ``not logged in``, ``no network``), with a one-line hint, found from each protocol's own
  account query (Codex ``account/read``, Claude Code's ``account`` in its initialize
  answer) or from what the agent said when it failed (:func:`classify`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, cast, final

if TYPE_CHECKING:
    from ..config import AgentSpec
    from .contract import ProgressEvent

__all__ = (
    "Cause",
    "NotReady",
    "agent_family",
    "agent_home",
    "classify",
    "claude_account",
    "claude_login_absent",
    "codex_account",
    "login_hint",
    "offline_notice",
)

Cause: TypeAlias = Literal["needs credentials", "not logged in", "no network"]
Family: TypeAlias = Literal["codex", "claude"]

_HOME_VARIABLE: Final[Mapping[Family, tuple[str, str]]] = {
    "codex": ("CODEX_HOME", ".codex"),
    "claude": ("CLAUDE_CONFIG_DIR", ".claude"),
}
_KEY_VARIABLES: Final[Mapping[Family, tuple[str, ...]]] = {
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
}


@final
@dataclass(frozen=True, slots=True)
class NotReady:
    """Why an agent cannot take a prompt: ``cause``, what it said, and what to do."""

    cause: Cause
    detail: str
    hint: str

    def line(self, name: str) -> str:
        said = f" ({self.detail})" if self.detail else ""
        return f"{name}: {self.cause}{said}"


def agent_family(spec: AgentSpec) -> Family | None:
    """``codex`` or ``claude`` for the agents whose state directory is known, else None."""
    if spec.provider == "codex":
        return "codex"
    if spec.provider == "claude-code":
        return "claude"
    if spec.provider == "acp" and spec.command:
        program = Path(spec.command[0]).name
        if program.startswith("codex"):
            return "codex"
        if program.startswith("claude"):
            return "claude"
    return None


@contextmanager
def agent_home(spec: AgentSpec) -> Generator[AgentSpec]:
    """``spec`` with its agent's state directory in ``env`` (see the module docstring)."""
    family = agent_family(spec)
    if family is None:
        yield spec
        return
    variable, default = _HOME_VARIABLE[family]
    if "HOME" in spec.env or variable in spec.env:
        yield spec
        return
    own = os.environ.get(variable) or str(Path.home() / default)
    if Path(own).is_dir():
        yield replace(spec, env={**spec.env, variable: own})
        return
    private = tempfile.mkdtemp(prefix=f"subagents-{family}-home-")
    try:
        yield replace(spec, env={**spec.env, variable: private})
    finally:
        shutil.rmtree(private, ignore_errors=True)


def login_program(spec: AgentSpec, family: Family) -> str | None:
    """The CLI that logs in to ``family`` (``codex``, ``claude``), as a path that exists:
    on ``PATH``, else in the npm prefix (where ``subagents agents install`` puts it, not on
    ``PATH``), else the entry's own program when it is that CLI; None when there is none."""
    from ..npm_agents import npm_file

    found = shutil.which(family) or npm_file(f".bin/{family}")
    if found is not None:
        return str(found)
    own = {"codex": "codex", "claude": "claude-code"}[family]
    if spec.provider == own and spec.command:
        program = shutil.which(spec.command[0])
        if program is not None:
            return program
    return None


def _login_hint(spec: AgentSpec, family: Family) -> str:
    from ..npm_agents import npm_prefix

    keys = " or ".join(_KEY_VARIABLES[family][:1])
    program = login_program(spec, family)
    if program is not None:
        cli = shlex.quote(program)
        how = (
            f"log in with `{cli} login`"
            if family == "codex"
            else f"log in by running `{cli}` and typing /login"
        )
    else:  # the CLI is not installed: the command that installs it, and where it goes
        cli = shlex.quote(str(npm_prefix() / "node_modules" / ".bin" / family))
        name = "codex" if family == "codex" else "claude-code"
        login = f"`{cli} login`" if family == "codex" else f"`{cli}`, then /login"
        how = f"install its CLI with `subagents agents install {name}`, then log in: {login}"
    return (
        f"{how} (your login in ~/.{family} is used), or give the entry its key: "
        f'[agents.{spec.name}] env = {{ {keys} = "..." }}'
    )


def login_hint(spec: AgentSpec) -> str | None:
    """How to log in the agent of ``spec`` (a Codex or Claude one), naming a CLI that
    exists, or give it its key; None for other agents."""
    family = agent_family(spec)
    return _login_hint(spec, family) if family is not None else None


def _has_key(spec: AgentSpec, family: Family) -> bool:
    return any(spec.env.get(name) for name in _KEY_VARIABLES[family])


def codex_account(spec: AgentSpec, response: object) -> NotReady | None:
    """The answer to Codex's ``account/read``: ``needs credentials`` when it has no account
    but needs OpenAI auth, and the entry gives it no key either."""
    if not isinstance(response, dict):
        return None
    answer = cast(dict[str, object], response)
    if answer.get("account") is None and answer.get("requiresOpenaiAuth") is True:
        if _has_key(spec, "codex"):
            return None
        return NotReady("needs credentials", "account/read: no account", _login_hint(spec, "codex"))
    return None


def claude_account(spec: AgentSpec, init: Mapping[str, object]) -> NotReady | None:
    """Claude Code's initialize answer: ``not logged in`` when its ``account`` has no token
    and no API key for the first-party API (Bedrock and Vertex log in elsewhere)."""
    account = init.get("account")
    if not isinstance(account, dict):
        return None
    fields = cast(dict[str, object], account)
    if fields.get("apiProvider", "firstParty") != "firstParty":
        return None
    if fields.get("tokenSource", "none") != "none" or fields.get("apiKeySource", "none") != "none":
        return None
    if _has_key(spec, "claude"):
        return None
    return NotReady("not logged in", "no token and no API key", _login_hint(spec, "claude"))


def claude_login_absent(spec: AgentSpec) -> NotReady | None:
    """For a Claude agent that has no account query (claude-agent-acp: no ``authMethods``, and
    ``session/new`` succeeds without a login): ``needs credentials`` when no login can exist,
    that is the user has no Claude state directory (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``) and
    no API key is set, neither in the entry nor here. With a state directory nothing is claimed
    (the login may live in a keychain). Call it with the entry as configured, before
    :func:`agent_home` gives it a private directory."""
    if agent_family(spec) != "claude":
        return None
    variable, default = _HOME_VARIABLE["claude"]
    if "HOME" in spec.env or variable in spec.env:
        return None
    keys = _KEY_VARIABLES["claude"]
    if _has_key(spec, "claude") or any(os.environ.get(name) for name in keys):
        return None
    own = os.environ.get(variable) or str(Path.home() / default)
    if Path(own).is_dir():
        return None
    return NotReady(
        "needs credentials",
        f"no Claude login ({own} does not exist) and no {keys[0]}",
        _login_hint(spec, "claude"),
    )


def _network_hint(spec: AgentSpec) -> str:
    return (
        f"{spec.name} cannot reach its model: check the network (and any proxy) and that "
        "its model's API is reachable from here, then retry"
    )


def offline_notice(spec: AgentSpec, event: ProgressEvent) -> NotReady | None:
    """A progress event saying the agent has no network (Codex's retry notice ``Reconnecting...
    waiting for network``, an ``error`` notification with ``willRetry``)."""
    from .contract import OtherProgress

    if not isinstance(event, OtherProgress) or "waiting for network" not in event.text.lower():
        return None
    return NotReady("no network", event.text.strip(), _network_hint(spec))


_NOT_LOGGED_IN: Final = ("not logged in", "please run /login", "invalid api key")
_CREDENTIALS: Final = (
    "authentication required",
    "auth_required",
    "unauthorized",
    "api key",
    "credentials",
)
_NETWORK: Final = (
    "waiting for network",
    "enotfound",
    "eai_again",
    "getaddrinfo",
    "network is unreachable",
    "connection refused",
    "error sending request",
)


def _says(lower: str, markers: tuple[str, ...]) -> bool:
    """Whether ``lower`` has one of ``markers`` as words of its own (``ENOTFOUND`` is no
    network; ``ModuleNotFoundError`` is not)."""
    return any(re.search(rf"(?<![a-z0-9_]){re.escape(m)}(?![a-z0-9_])", lower) for m in markers)


def classify(spec: AgentSpec, message: str) -> NotReady | None:
    """What the agent said when it failed, as a known cause (else None)."""
    text = " ".join(message.split())
    lower = text.lower()
    family = agent_family(spec)
    login = _login_hint(spec, family) if family is not None else None
    if _says(lower, _NOT_LOGGED_IN):
        return NotReady(
            "not logged in", text, login or f"log in with {spec.name}, or give it its API key"
        )
    if _says(lower, _CREDENTIALS):
        return NotReady(
            "needs credentials",
            text,
            login or f"{spec.name} needs credentials: log in with it, or set its API key",
        )
    if _says(lower, _NETWORK):
        return NotReady("no network", text, _network_hint(spec))
    return None
