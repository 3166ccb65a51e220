"""The agent registry: named agent entries from ``subagents.toml`` files and built-ins.

An entry says how to run one agent as a subagent::

    [agents.my-agent]
    provider = "acp"                  # acp | a2a | codex | claude-code | spawn | fork | a plugin
    command = ["node", "agent.js", "--acp"]  # a list of words ("node agent.js" is refused)
    args = ["--verbose"]                  # appended to the command (also a list)
    url = "https://build-box:8000/acp"    # acp only, instead of a command: an agent served
                                          # over Streamable HTTP or WebSocket (ws://, wss://)
    urls = ["http://a:8000/acp", "ws://b:8000/acp"]  # acp only, instead of url: the same
                                          # agent served by several servers; each run goes
                                          # to the least busy one (a SpreadProvider)
    token_env = "BUILD_BOX_TOKEN"         # with url or urls: the variable holding the bearer
                                          # token (the same for every URL)
    # provider = "a2a" takes url (http(s)://, where its agent card is served, at the
    # well-known path) and token_env; options.card_url names a card elsewhere
    env = { MY_AGENT_HOME = "/srv/agent" }
    cwd = "/work"
    model = "some-model"                  # codex, claude-code, spawn/fork (with an adapter)
    permission = "ask"                    # ask (in a terminal) | allow | deny (the default)
    timeout = 600                         # seconds a run may take (0: no limit)
    startup_timeout = 60
    first_event_timeout = 120             # seconds from the start to its first event (0: none)
    turn_deadline = 900                   # codex only: seconds before a turn whose
                                          # turn/completed never came is checked (thread/read)
    description = "What it is for"
    [agents.my-agent.options]             # provider-specific (see each provider)
    adapter = "anthropic"

A table for a name already defined (a built-in, or an entry of an earlier file) that gives no
``provider``, ``command``, ``args``, ``url`` or ``urls`` updates that entry instead of replacing
it: its fields replace the entry's, and ``env`` and ``options`` are merged key by key. That is how a
built-in gets its key without restating its command::

    [agents.codex]
    env = { OPENAI_API_KEY = "sk-..." }

Files, later ones winning entry by entry: the built-ins, then
``$XDG_CONFIG_HOME/subagents/subagents.toml`` (``~/.config/...``), then ``subagents.toml`` in
the working directory, then files given explicitly. Relative paths in a file are the file's
(see :func:`parse_agents`): a program with a slash, ``cwd``, ``./x`` arguments and ones
naming a file beside it; a bare program name is looked up on ``PATH``.

:func:`from_acp_registry` turns an entry of the official ACP registry (``agent.json``: id,
name, version, distribution via ``npx``, ``uvx`` or ``binary``) into one, dropping
environment variables that could leak credentials or hijack the launch (``PATH``, ``HOME``,
``LD_*``, ``NODE_*``, ...), as the registry's own launcher does.

A bad file or entry is a :class:`ConfigError` naming the file and entry, whose ``hint`` says
what to do (for a string command with spaces: the list to write instead).
"""

from __future__ import annotations

import difflib
import os
import platform
import re
import shlex
import shutil
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, cast, final

__all__ = (
    "BUILTIN_PROVIDERS",
    "AgentSpec",
    "ConfigError",
    "Permission",
    "builtin_agents",
    "config_paths",
    "from_acp_registry",
    "load_agents",
    "parse_agents",
    "to_toml",
)

Permission: TypeAlias = Literal["ask", "allow", "deny"]
BUILTIN_PROVIDERS: Final = ("acp", "a2a", "codex", "claude-code", "spawn", "fork")
DEFAULT_FIRST_EVENT_TIMEOUT: Final = 120.0
"""Seconds a run waits for an agent's first event by default (``first_event_timeout``)."""
_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_UNSAFE_ENV: Final = re.compile(
    r"^(PATH|HOME|USER|SHELL|PWD|TMPDIR|PYTHON\w*|LD_\w+|DYLD_\w+|NODE_\w+|NPM_\w+|"
    r"GITHUB_\w+|AWS_\w+|GOOGLE_\w+|AZURE_\w+|SSH_\w+|GIT_\w+)$"
)


_FORMAT_HINT: Final = "the fields of an entry: python -m pydoc subagents.config"
_ACP_REGISTRY_HINT: Final = (
    "give an agent.json of the official ACP registry: an id and a distribution (npx, uvx or binary)"
)


class ConfigError(Exception):
    """A registry file or entry that cannot be used; the message names the file and entry,
    ``hint`` says what to do about it."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint: str = hint or _FORMAT_HINT


@final
@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent of the registry (see the module docstring for the fields)."""

    name: str
    provider: str
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    model: str | None = None
    permission: Permission = "deny"
    timeout: float | None = None
    startup_timeout: float = 60.0
    first_event_timeout: float | None = DEFAULT_FIRST_EVENT_TIMEOUT
    """Seconds from the start of a run to the agent's first event, after which ``subagents
    run`` ends it (``None``: no deadline)."""
    turn_deadline: float | None = None
    """Codex entries only: seconds after which a turn whose ``turn/completed`` never came is
    reconciled through ``thread/read`` (``None``: no deadline)."""
    description: str = ""
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])
    source: str = "built-in"
    """Where the entry comes from: the registry file's absolute path (when read by
    :func:`load_agents`), or ``built-in``."""
    url: str | None = None
    """An ``acp`` agent served at this URL (``subagents serve --listen``, or any server of
    the RFD's Streamable HTTP / WebSocket transport) instead of a command."""
    token_env: str | None = None
    """With ``url`` or ``urls``: the environment variable holding the servers' bearer token."""
    urls: tuple[str, ...] = ()
    """An ``acp`` agent served by several equivalent servers (instead of ``url`` or a
    command): :func:`~subagents.providers.factory.build_provider` makes a
    :class:`~subagents.providers.spread.SpreadProvider` over one URL provider per server."""

    @property
    def agent_urls(self) -> tuple[str, ...]:
        """The URLs the agent is served at: ``(url,)``, ``urls``, or ``()`` for a command."""
        return (self.url,) if self.url is not None else self.urls

    def with_overrides(
        self, *, permission: Permission | None = None, model: str | None = None
    ) -> AgentSpec:
        return replace(
            self,
            permission=permission or self.permission,
            model=model if model is not None else self.model,
        )


def _str_list(value: Any, where: str, key: str) -> tuple[str, ...]:
    """``command`` or ``args``: a list of words. A string is one word only when it has no
    space (``"codex-acp"``); one with spaces is refused, the list form in the hint, rather
    than split by guesswork (shell quoting, a path with a space in it)."""
    if isinstance(value, str):
        if not value.strip():
            return ()
        if value.split() == [value]:
            return (value,)
        try:
            words = shlex.split(value)
        except ValueError:
            words = ["program", "argument", "..."]
        if Path(value).exists():
            words = [value]  # a program whose path has a space in it
        raise ConfigError(
            f"{where}: {value!r} is a string with spaces; {key} is a list of words",
            hint=f"write it as a list: {key} = {_toml_value(words)}",
        )
    if not isinstance(value, list) or not all(isinstance(v, str) for v in cast(list[Any], value)):
        raise ConfigError(
            f"{where}: expected a list of strings",
            hint=f'write it as a list: {key} = ["program", "argument", ...]',
        )
    return tuple(cast(list[str], value))


def _from_file(value: str, base: Path) -> str:
    """A path as written in a registry file in the directory ``base``: ``~`` expanded, a
    relative one taken from ``base`` (normalised: ``./agent`` is ``BASE/agent``)."""
    path = Path(value).expanduser()
    return str(path) if path.is_absolute() else os.path.normpath(base / path)


def _is_path(word: str) -> bool:
    return os.sep in word or bool(os.altsep and os.altsep in word) or word.startswith("~")


def _command_from_file(command: tuple[str, ...], base: Path) -> tuple[str, ...]:
    """A command as written in a registry file in ``base``, its relative paths taken from
    ``base``: the program when it has a slash (``./agent``, ``bin/agent``; a bare name stays
    a ``PATH`` lookup), an argument written ``./x`` or ``../x``, and an argument that names a
    file existing in ``base`` (``["python", "agent.py"]``)."""
    if not command:
        return command
    program, *args = command
    words = [_from_file(program, base) if _is_path(program) else program]
    for arg in args:
        explicit = arg.startswith(("./", "../", "~/"))
        beside = not arg.startswith("-") and not Path(arg).is_absolute() and (base / arg).is_file()
        words.append(_from_file(arg, base) if explicit or beside else arg)
    return tuple(words)


def _entry(name: str, data: Mapping[str, Any], source: str, file: Path | None = None) -> AgentSpec:
    """One entry; ``file``: the absolute path of the registry file it is read from."""
    where = f"{source}: agents.{name}"
    if not _ID.match(name):
        raise ConfigError(f"{where}: not a valid agent name")
    known = {
        "provider",
        "command",
        "args",
        "url",
        "urls",
        "token_env",
        "env",
        "cwd",
        "model",
        "permission",
        "timeout",
        "startup_timeout",
        "first_event_timeout",
        "turn_deadline",
        "description",
        "options",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        close = [m for u in unknown for m in difflib.get_close_matches(u, sorted(known), n=1)]
        raise ConfigError(
            f"{where}: unknown field(s) {', '.join(unknown)}",
            hint=f"did you mean {', '.join(close)}? ({_FORMAT_HINT})" if close else None,
        )
    provider = data.get("provider", "acp")
    if not isinstance(provider, str) or not provider:
        raise ConfigError(f"{where}: provider must be a name")
    command = _str_list(data.get("command", []), f"{where}.command", "command")
    command += _str_list(data.get("args", []), f"{where}.args", "args")
    url, urls, token_env = _url_fields(data, where, provider, command)
    if provider == "a2a" and url is None:
        raise ConfigError(
            f"{where}: provider 'a2a' needs the agent's url",
            hint='url = "http://host:9999" (its agent card is at the well-known path under it)',
        )
    if provider in ("acp", "codex", "claude-code") and not command and url is None and not urls:
        raise ConfigError(
            f"{where}: provider {provider!r} needs a command"
            + (" or a url" if provider == "acp" else ""),
            hint='give it the command that starts the agent: command = ["program", "argument"]'
            + (
                '; or the URL it is served at: url = "http://host:8000/acp" (several '
                'servers: urls = ["http://a:8000/acp", "http://b:8000/acp"])'
                if provider == "acp"
                else ""
            ),
        )
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in cast(dict[Any, Any], env).items()
    ):
        raise ConfigError(f"{where}.env: expected a table of strings")
    permission = data.get("permission", "deny")
    if permission not in ("ask", "allow", "deny"):
        raise ConfigError(f"{where}.permission: expected ask, allow or deny")
    timeout = data.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0
    ):
        raise ConfigError(f"{where}.timeout: expected seconds (a number >= 0)")
    startup = data.get("startup_timeout", 60.0)
    if isinstance(startup, bool) or not isinstance(startup, int | float) or startup <= 0:
        raise ConfigError(f"{where}.startup_timeout: expected seconds (a number > 0)")
    first_event = data.get("first_event_timeout", DEFAULT_FIRST_EVENT_TIMEOUT)
    if isinstance(first_event, bool) or not isinstance(first_event, int | float) or first_event < 0:
        raise ConfigError(f"{where}.first_event_timeout: expected seconds (a number >= 0)")
    turn_deadline = data.get("turn_deadline")
    if turn_deadline is not None:
        if provider != "codex":
            raise ConfigError(f"{where}.turn_deadline: only codex entries take a turn deadline")
        if (
            isinstance(turn_deadline, bool)
            or not isinstance(turn_deadline, int | float)
            or not turn_deadline > 0
        ):
            raise ConfigError(f"{where}.turn_deadline: expected seconds (a number > 0)")
    raw_options = data.get("options", {})
    if not isinstance(raw_options, dict):
        raise ConfigError(f"{where}.options: expected a table")
    options = cast(dict[str, Any], raw_options)
    for key in ("cwd", "model", "description"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{where}.{key}: expected a string")
    cwd = cast("str | None", data.get("cwd"))
    if file is not None:  # relative paths are the file's, not the caller's
        base = file.parent
        command = _command_from_file(command, base)
        cwd = _from_file(cwd, base) if cwd else cwd
        sessions = options.get("sessions")
        if provider in ("spawn", "fork") and isinstance(sessions, str) and sessions:
            options = {**options, "sessions": _from_file(sessions, base)}
    return AgentSpec(
        name=name,
        provider=provider,
        command=command,
        url=url,
        urls=urls,
        token_env=token_env,
        env=cast(dict[str, str], env),
        cwd=cwd,
        model=cast("str | None", data.get("model")),
        permission=permission,
        timeout=float(timeout) if timeout else None,
        startup_timeout=float(startup),
        first_event_timeout=float(first_event) if first_event else None,
        turn_deadline=float(turn_deadline) if turn_deadline is not None else None,
        description=cast(str, data.get("description", "")),
        options=options,
        source=str(file) if file is not None else source,
    )


def _url_fields(
    data: Mapping[str, Any], where: str, provider: str, command: tuple[str, ...]
) -> tuple[str | None, tuple[str, ...], str | None]:
    """An entry's ``url``, ``urls`` and ``token_env``, checked."""
    from .protocol.acp_remote import is_agent_url

    url = data.get("url")
    urls = _urls(data["urls"], where) if "urls" in data else ()
    token_env = data.get("token_env")
    if url is not None:
        if not isinstance(url, str) or not is_agent_url(url):
            raise ConfigError(
                f"{where}.url: expected an http://, https://, ws:// or wss:// URL",
                hint='write the agent\'s endpoint: url = "http://host:8000/acp"',
            )
        if "urls" in data:
            raise ConfigError(
                f"{where}: give url (one server) or urls (several), not both",
                hint=f"put every server in urls and drop url: urls = {_toml_value([url, *urls])}",
            )
    if provider == "a2a":
        _a2a_url_fields(url, urls, command, where)
    elif url is not None or urls:
        key = "url" if url is not None else "urls"
        if provider != "acp":
            raise ConfigError(
                f"{where}.{key}: only acp entries take a {key} (this one is {provider!r})",
                hint='an agent served by URL speaks ACP: provider = "acp"',
            )
        if command:
            raise ConfigError(
                f"{where}: give a command or a {key}, not both",
                hint=f"a {key} names an agent already running; a command starts one",
            )
    if token_env is not None:
        if not isinstance(token_env, str) or not _ENV_NAME.match(token_env):
            raise ConfigError(
                f"{where}.token_env: expected the name of an environment variable",
                hint='token_env = "MY_AGENT_TOKEN" (the variable holds the token)',
            )
        if url is None and not urls:
            raise ConfigError(
                f"{where}.token_env: only an entry with a url takes a token",
                hint='add the agent\'s url = "http://host:8000/acp" (or urls = [...]), '
                "or drop token_env",
            )
    return url, urls, token_env


def _a2a_url_fields(
    url: str | None, urls: tuple[str, ...], command: tuple[str, ...], where: str
) -> None:
    """An ``a2a`` entry: one ``http(s)://`` url, no urls, no command."""
    if urls:
        raise ConfigError(
            f"{where}.urls: an a2a entry takes one url (its agent card names the endpoint)",
            hint=f"url = {_toml_value(urls[0])}",
        )
    if command:
        raise ConfigError(
            f"{where}: an a2a entry takes a url, not a command",
            hint="an A2A agent is already running: give the url its card is served under",
        )
    if url is not None and not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"{where}.url: an A2A agent is reached over http:// or https://, not {url!r}",
            hint='url = "http://host:9999"',
        )


_URLS_HINT: Final = 'urls = ["http://a:8000/acp", "ws://b:8000/acp"] (one server: url = "...")'


def _urls(value: Any, where: str) -> tuple[str, ...]:
    """``urls``: a non-empty list of distinct agent URLs (``http(s)://``, ``ws(s)://``)."""
    from .protocol.acp_remote import agent_url, is_agent_url

    if isinstance(value, str):
        raise ConfigError(
            f"{where}.urls: expected a list of URLs, not a string",
            hint=f"write it as a list: urls = {_toml_value([value])} "
            f"(one server: url = {_toml_value(value)})",
        )
    if not isinstance(value, list):
        raise ConfigError(f"{where}.urls: expected a list of URLs", hint=_URLS_HINT)
    items = cast(list[Any], value)
    if not items:
        raise ConfigError(
            f"{where}.urls: the list is empty",
            hint=f"name at least one server: {_URLS_HINT}; or give a command instead",
        )
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        endpoint: str | None = None
        if isinstance(item, str) and is_agent_url(item):
            try:
                endpoint = agent_url(item)
            except ValueError:
                endpoint = None
        if endpoint is None:
            raise ConfigError(
                f"{where}.urls[{index}]: {item!r} is not a server's URL (http://, https://, "
                "ws:// or wss://, and a host)",
                hint=f"each item is a server's endpoint: {_URLS_HINT}",
            )
        if endpoint in seen:
            raise ConfigError(
                f"{where}.urls[{index}]: {item!r} is the same server as urls[{seen[endpoint]}]",
                hint="list each server once (each run goes to one of them, the least busy)",
            )
        seen[endpoint] = index
    return tuple(cast(list[str], items))


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_agents(
    text: str,
    source: str,
    existing: Mapping[str, AgentSpec] | None = None,
    *,
    file: Path | None = None,
) -> dict[str, AgentSpec]:
    """The entries of one TOML document (``source`` names it in errors). A table naming an
    entry of ``existing`` without ``provider``, ``command`` or ``args`` updates that entry.

    ``file``: the registry file the text was read from. Relative paths in its entries are
    then taken from the file's directory, not the working directory (a command's program
    with a slash, ``./x`` and ``../x`` arguments and ones naming a file there, ``cwd``, a
    spawn or fork entry's ``options.sessions``); a bare program name (``python``, ``npx``)
    is still looked up on ``PATH``. The entries' ``source`` is the file's absolute path."""
    absolute = Path(os.path.abspath(file)) if file is not None else None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{source}: not valid TOML: {exc}",
            hint="fix the TOML syntax where shown (strings need quotes, lists [...])",
        ) from exc
    agents = data.get("agents", {})
    if not isinstance(agents, dict):
        raise ConfigError(f"{source}: [agents] must be a table of agent entries")
    result: dict[str, AgentSpec] = {}
    for name, entry in cast(dict[str, Any], agents).items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{source}: agents.{name} must be a table")
        fields = cast(dict[str, Any], entry)
        base = (existing or {}).get(name)
        if base is not None and not {"provider", "command", "args", "url", "urls"} & set(fields):
            fields = _updated(base, fields)
        result[name] = _entry(name, fields, source, absolute)
    return result


def _updated(base: AgentSpec, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` as registry fields, with ``fields`` laid over it (``env`` and ``options``
    merged key by key)."""
    data: dict[str, Any] = {
        "provider": base.provider,
        "command": list(base.command),
        "permission": base.permission,
        "startup_timeout": base.startup_timeout,
        "first_event_timeout": base.first_event_timeout or 0,
        "description": base.description,
    }
    for key in ("url", "token_env", "cwd", "model", "timeout", "turn_deadline"):
        value = getattr(base, key)
        if value is not None:
            data[key] = value
    if base.urls:
        data["urls"] = list(base.urls)
    data.update(fields)
    for key, current in (("env", base.env), ("options", base.options)):
        given = fields.get(key)
        if isinstance(given, dict):
            data[key] = {**current, **cast(dict[str, Any], given)}
        elif key not in fields:
            data[key] = dict(current)
    return data


def config_paths(cwd: Path | None = None) -> list[Path]:
    """The registry files read by default, lowest precedence first (missing ones included)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path(base) / "subagents" / "subagents.toml", (cwd or Path.cwd()) / "subagents.toml"]


def _npm_bin(name: str) -> str | None:
    from .npm_agents import npm_file

    found = npm_file(f".bin/{name}")
    return str(found) if found is not None else None


def _which(name: str, fallback: str | None) -> str:
    return shutil.which(name) or fallback or name


def builtin_agents() -> dict[str, AgentSpec]:
    """The built-in entries: the reference agent, Codex (app-server), Claude Code, the two ACP
    adapters from npm, and the in-process spawn and fork runtimes on the offline model.
    Commands are found on ``PATH``, else under the npm prefix
    (:func:`~subagents.npm_agents.npm_prefix`: ``subagents agents install`` or, in a
    checkout, ``scripts/setup`` installs them there)."""
    codex = _which("codex", None)
    if shutil.which("codex") is None:
        from .npm_agents import npm_file

        native = npm_file("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
        codex = str(native) if native is not None else (_npm_bin("codex") or "codex")
    entries = [
        AgentSpec(
            "reference",
            "acp",
            (sys.executable, "-m", "subagents.agents.reference"),
            description="the conforming reference ACP agent (offline, scripted)",
        ),
        AgentSpec(
            "codex",
            "codex",
            (codex, "app-server", "--listen", "stdio://"),
            description="OpenAI Codex through its app-server (needs its key or CODEX_HOME)",
        ),
        AgentSpec(
            "claude-code",
            "claude-code",
            (_which("claude", _npm_bin("claude")),),
            model="claude-sonnet-4-6",
            description="the Claude Code CLI (stream-json; needs ANTHROPIC_API_KEY)",
        ),
        AgentSpec(
            "codex-acp",
            "acp",
            (_which("codex-acp", _npm_bin("codex-acp")),),
            description="Codex through the codex-acp ACP adapter",
        ),
        AgentSpec(
            "claude-agent-acp",
            "acp",
            (_which("claude-agent-acp", _npm_bin("claude-agent-acp")),),
            description="Claude Code through the claude-agent-acp ACP adapter",
        ),
        AgentSpec(
            "spawn",
            "spawn",
            description="a fresh in-process child on the offline model (options.adapter)",
        ),
        AgentSpec(
            "fork",
            "fork",
            description="an in-process child seeded with its parent's history",
        ),
    ]
    return {entry.name: entry for entry in entries}


def load_agents(
    extra: Iterable[Path] = (), *, defaults: bool = True, cwd: Path | None = None
) -> dict[str, AgentSpec]:
    """The agent registry, by name: what ``subagents run`` and ``subagents agents`` use.

    The built-ins, then (when ``defaults``) the default files of :func:`config_paths`
    (``$XDG_CONFIG_HOME/subagents/subagents.toml`` and ``subagents.toml`` in ``cwd``, the
    working directory by default; missing ones are skipped), then the files of ``extra``; a
    later entry replaces an earlier one of the same name. Each value is an :class:`AgentSpec`
    that :func:`subagents.providers.factory.build_provider` turns into a provider.

    Raises :class:`ConfigError` (with a ``hint``) for a file of ``extra`` that does not exist,
    a file that cannot be read, or a file or entry that is not a valid registry.
    """
    agents = builtin_agents()
    explicit = list(extra)
    paths = [*(config_paths(cwd) if defaults else []), *explicit]
    for index, path in enumerate(paths):
        if not path.exists():
            if index >= len(paths) - len(explicit):
                raise ConfigError(f"{path}: no such file", hint=_missing_hint(path, cwd))
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"{path}: cannot read it: {exc.strerror}",
                hint="give a readable registry file (a TOML file with [agents.NAME] tables)",
            ) from exc
        agents.update(parse_agents(text, str(path), agents, file=path))
    return agents


def _missing_hint(path: Path, cwd: Path | None) -> str:
    user, project = config_paths(cwd)
    home = str(Path.home())
    shown = str(user).replace(home, "~", 1) if str(user).startswith(home + os.sep) else str(user)
    where = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
    return (
        f"check the path{where}; the registry is the built-ins plus {shown} and "
        f"./{project.name} where they exist (a file of [agents.NAME] tables: "
        "python -m pydoc subagents.config)"
    )


def _platform_key() -> str:
    system = {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}.get(platform.system())
    machine = {"x86_64": "x86_64", "amd64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
    return f"{system}-{machine.get(platform.machine().lower(), platform.machine().lower())}"


def from_acp_registry(
    entry: Mapping[str, Any], *, binary_dir: Path | None = None
) -> tuple[AgentSpec, list[str]]:
    """An agent entry of the official ACP registry as a registry entry, with notes (dropped
    environment variables, the distribution chosen). Prefers ``npx``, then ``uvx``, then a
    ``binary`` for this platform (its archive must already be unpacked in ``binary_dir``: no
    download happens here)."""
    agent_id = entry.get("id")
    if not isinstance(agent_id, str) or not re.match(r"^[a-z][a-z0-9-]*$", agent_id):
        raise ConfigError("the registry entry has no valid id", hint=_ACP_REGISTRY_HINT)
    distribution = entry.get("distribution")
    if not isinstance(distribution, dict) or not distribution:
        raise ConfigError(
            f"{agent_id}: the registry entry has no distribution", hint=_ACP_REGISTRY_HINT
        )
    distribution = cast(dict[str, Any], distribution)
    notes: list[str] = []
    try:
        command, raw_env, note = _launch(agent_id, distribution, binary_dir)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"{agent_id}: malformed distribution ({exc!r})", hint=_ACP_REGISTRY_HINT
        ) from exc
    notes.append(note)
    if binary_dir is None and "npx" not in distribution and "uvx" not in distribution:
        notes.append("unpack the archive and pass --binary-dir, or fix the command path")
    env: dict[str, str] = {}
    for name, value in raw_env.items():
        if _UNSAFE_ENV.match(name):
            notes.append(f"dropped environment variable {name} (unsafe to take from a registry)")
        else:
            env[name] = str(value)
    description = str(entry.get("description", ""))
    version = entry.get("version")
    if version:
        description = f"{entry.get('name', agent_id)} {version}: {description}".strip()
    spec = AgentSpec(
        agent_id,
        "acp",
        tuple(command),
        env,
        description=description,
        source="acp-registry",
    )
    return spec, notes


def _launch(
    agent_id: str, distribution: Mapping[str, Any], binary_dir: Path | None
) -> tuple[list[str], dict[str, Any], str]:
    """The command, raw environment and a note for the preferred distribution."""
    command: list[str]
    raw_env: dict[str, Any]
    if "npx" in distribution:
        npx = cast(dict[str, Any], distribution["npx"])
        package = str(npx["package"])
        args = [str(a) for a in npx.get("args", [])]
        cmd = npx.get("cmd")
        command = ["npx", "-y", package, *args]
        if cmd:
            command = ["npx", "-y", "--package", package, str(cmd), *args]
        raw_env = dict(npx.get("env", {}))
        note = f"distribution: npx {package}"
    elif "uvx" in distribution:
        uvx = cast(dict[str, Any], distribution["uvx"])
        package = str(uvx["package"])
        cmd = str(uvx.get("cmd") or package)
        command = ["uvx", "--from", package, cmd, *[str(a) for a in uvx.get("args", [])]]
        raw_env = dict(uvx.get("env", {}))
        note = f"distribution: uvx {package}"
    elif "binary" in distribution:
        binaries = cast(dict[str, Any], distribution["binary"])
        key = _platform_key()
        target = binaries.get(key)
        if not isinstance(target, dict):
            raise ConfigError(
                f"{agent_id}: no binary for this platform ({key}); it has "
                f"{', '.join(sorted(binaries)) or 'none'}",
                hint="use another distribution of the agent, or write its entry by hand",
            )
        target = cast(dict[str, Any], target)
        cmd = str(target["cmd"])
        # Without binary_dir the command stays as written: ``str(Path("./agent"))`` would be
        # ``agent``, a PATH lookup instead of the unpacked file.
        where = str(binary_dir / cmd.removeprefix("./")) if binary_dir is not None else cmd
        command = [where, *[str(a) for a in target.get("args", [])]]
        raw_env = dict(target.get("env", {}))
        note = f"distribution: binary for {key} from {target.get('archive')}"
    else:
        raise ConfigError(
            f"{agent_id}: no npx, uvx or binary distribution", hint=_ACP_REGISTRY_HINT
        )
    return command, raw_env, note


def _toml_string(value: str) -> str:
    escaped = "".join(
        {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}.get(char)
        or (f"\\u{ord(char):04x}" if ord(char) < 0x20 or ord(char) == 0x7F else char)
        for char in value
    )
    return f'"{escaped}"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in cast(Sequence[Any], value)) + "]"
    if isinstance(value, Mapping):
        items = cast(Mapping[str, Any], value).items()
        return "{ " + ", ".join(f"{_toml_string(k)} = {_toml_value(v)}" for k, v in items) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def to_toml(spec: AgentSpec) -> str:
    """``spec`` as a ``[agents.NAME]`` table (what ``subagents agents import`` appends)."""
    key = spec.name if re.match(r"^[A-Za-z0-9_-]+$", spec.name) else _toml_string(spec.name)
    lines = [f"[agents.{key}]", f"provider = {_toml_string(spec.provider)}"]
    if spec.command:
        lines.append(f"command = {_toml_value(list(spec.command))}")
    if spec.url:
        lines.append(f"url = {_toml_string(spec.url)}")
    if spec.urls:
        lines.append(f"urls = {_toml_value(list(spec.urls))}")
    if spec.token_env:
        lines.append(f"token_env = {_toml_string(spec.token_env)}")
    if spec.env:
        lines.append(f"env = {_toml_value(dict(spec.env))}")
    for key in ("cwd", "model", "description"):
        value = getattr(spec, key)
        if value:
            lines.append(f"{key} = {_toml_string(value)}")
    if spec.permission != "deny":
        lines.append(f"permission = {_toml_string(spec.permission)}")
    if spec.timeout:
        lines.append(f"timeout = {spec.timeout!r}")
    if spec.startup_timeout != 60.0:
        lines.append(f"startup_timeout = {spec.startup_timeout!r}")
    if spec.first_event_timeout != DEFAULT_FIRST_EVENT_TIMEOUT:
        lines.append(f"first_event_timeout = {spec.first_event_timeout or 0!r}")
    if spec.turn_deadline is not None:
        lines.append(f"turn_deadline = {spec.turn_deadline!r}")
    if spec.options:
        lines.append(f"options = {_toml_value(dict(spec.options))}")
    return "\n".join(lines) + "\n"
