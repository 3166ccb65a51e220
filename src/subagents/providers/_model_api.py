"""Where an agent's model API is, and whether it answers from here: how the probe
(:mod:`subagents.providers.probe`) tells ``no network`` from ``ok`` without spending a token.

The model API is the one the agent itself would use (:class:`ModelApi`):

- Codex through its app-server (:func:`codex_api`): the default provider of its own
  ``modelProvider/list`` answer, so its ``config.toml``, ``-c`` overrides and
  ``openai_base_url`` are applied by Codex itself; the built-in ``openai`` provider without
  a base URL is the OpenAI API, or with a ChatGPT login (``account/read``) the ChatGPT
  backend. codex-acp, and a Codex without that method (:func:`codex_config_api`): the same,
  read from ``$CODEX_HOME/config.toml`` and the command's ``-c`` overrides.
- Claude (claude-code, claude-agent-acp; :func:`claude_api`): ``ANTHROPIC_BASE_URL`` from
  the ``env`` of its settings files (local, project, then user: they win over the process
  environment, as in Claude Code), else from its environment, else the Anthropic API. None
  for Bedrock, Vertex and Foundry (their endpoints are the cloud's).

A Codex provider that reads its key from a variable the agent does not get
(``env_key``) ``needs credentials``. Otherwise :func:`unreachable` sends one ``HEAD`` to the
base URL, with no credentials, through the proxy the agent's environment names
(``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, lower or upper case; ``NO_PROXY``), without
verifying certificates (only reachability is judged and nothing secret is sent), within
:data:`REACH_TIMEOUT` seconds. Any HTTP answer, even an error status, or a TLS handshake that
fails, is a model API that can be reached; a connection refused or timed out, a host name
that does not resolve, an unreachable network, or a proxy that cannot be reached or refuses
the tunnel, is ``no network``. The environment is the one the agent gets (the base variables
plus its entry's ``env``): a proxy set only in the user's shell does not reach the agent, and
the hint says so.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import ssl
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast, final
from urllib.parse import urlsplit, urlunsplit

import anyio

from ._readiness import NotReady, agent_family

if TYPE_CHECKING:
    from ..config import AgentSpec

__all__ = (
    "REACH_TIMEOUT",
    "ModelApi",
    "agent_environment",
    "claude_api",
    "codex_api",
    "codex_config_api",
    "configured_api",
    "model_api_cause",
    "unreachable",
)

REACH_TIMEOUT: Final = 5.0
"""The bound on one reachability check, in seconds (name resolution and connection)."""

OPENAI_API: Final = "https://api.openai.com/v1"
CHATGPT_BACKEND: Final = "https://chatgpt.com/backend-api/codex"
ANTHROPIC_API: Final = "https://api.anthropic.com"

_PROXY_VARIABLES: Final = ("https_proxy", "http_proxy", "all_proxy", "no_proxy")
_CLOUD_CLAUDE: Final = (
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
)


@final
@dataclass(frozen=True, slots=True)
class ModelApi:
    """The model API an agent would call."""

    url: str
    """Its base URL."""
    source: str
    """Where that URL comes from, for people (``"ANTHROPIC_BASE_URL in ..."``)."""
    env: Mapping[str, str]
    """The environment the agent sees: its proxy variables apply."""
    key_variable: str | None = None
    """The variable the agent reads its key from, when one must be set (a Codex provider's
    ``env_key``)."""


def agent_environment(spec: AgentSpec) -> dict[str, str]:
    """The environment the agent's process gets (the base variables plus the entry's)."""
    from ..transports.process import build_child_env

    return build_child_env(spec.env)


# -- Codex ---------------------------------------------------------------------------------


def _dict(value: object) -> dict[str, object]:
    return cast(dict[str, object], value) if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _openai_default(account: object, env: Mapping[str, str]) -> tuple[str, str]:
    """The built-in ``openai`` provider's URL without a configured one: the ChatGPT backend
    for a ChatGPT login, else the API."""
    answer = _dict(account)
    if _dict(answer.get("account")).get("type") == "chatgpt":
        origin = _text(_dict(answer.get("workspaceRouting")).get("backendOrigin"))
        if origin is not None and origin.startswith(("http://", "https://")):
            return origin.rstrip("/") + "/backend-api/codex", "the ChatGPT backend of its login"
        return CHATGPT_BACKEND, "the ChatGPT backend of its login"
    return OPENAI_API, "the OpenAI API (Codex's default)"


def codex_api(spec: AgentSpec, providers: object, account: object) -> ModelApi | None:
    """From Codex's answers to ``modelProvider/list`` and ``account/read``; None when it
    cannot be told (a cloud provider, no base URL)."""
    env = agent_environment(spec)
    answer = _dict(providers)
    chosen = _text(answer.get("defaultProviderId"))
    data = answer.get("data")
    entries = cast(list[object], data) if isinstance(data, list) else []
    entry = next((_dict(e) for e in entries if _dict(e).get("id") == chosen), None)
    if chosen is None or entry is None:
        return None
    settings = _dict(entry.get("settings"))
    kind = settings.get("type")
    url = _text(entry.get("baseUrl"))
    source = f"Codex's model provider {chosen!r}"
    if kind == "openai":
        if url is None:
            url, source = _openai_default(account, env)
        return ModelApi(url, source, env)
    if kind != "customGateway" or url is None:
        return None
    auth = _dict(settings.get("auth"))
    key = _text(auth.get("envKey")) if auth.get("mode") == "environmentVariable" else None
    return ModelApi(url, source, env, key)


def _overrides(command: Sequence[str]) -> list[tuple[list[str], object]]:
    """The ``-c key=value`` (``--config``) overrides of a Codex command line, parsed as Codex
    does: the value as TOML, else as a string."""
    found: list[tuple[list[str], object]] = []
    args = list(command[1:])
    for index, arg in enumerate(args):
        if arg in ("-c", "--config") and index + 1 < len(args):
            item = args[index + 1]
        elif arg.startswith("--config="):
            item = arg.removeprefix("--config=")
        else:
            continue
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            continue
        try:
            value: object = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        found.append(([part.strip() for part in key.split(".")], value))
    return found


def _codex_config(spec: AgentSpec, home: Path) -> dict[str, object] | None:
    path = home / "config.toml"
    try:
        config: dict[str, object] = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        config = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # Codex itself will say what is wrong with it
    for keys, value in _overrides(spec.command):
        table = config
        for key in keys[:-1]:
            inner = table.get(key)
            if not isinstance(inner, dict):
                inner = {}
                table[key] = inner
            table = cast(dict[str, object], inner)
        table[keys[-1]] = value
    return config


def _chatgpt_login(home: Path, env: Mapping[str, str]) -> bool:
    """Whether Codex would use a ChatGPT login (``auth.json`` tokens, and no API key)."""
    import json

    if env.get("OPENAI_API_KEY") or env.get("CODEX_API_KEY"):
        return False
    try:
        auth = _dict(json.loads((home / "auth.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return False
    return not auth.get("OPENAI_API_KEY") and bool(auth.get("tokens"))


def codex_config_api(spec: AgentSpec) -> ModelApi | None:
    """From ``$CODEX_HOME/config.toml`` (``~/.codex``) and the command's ``-c`` overrides:
    ``model_provider`` (``openai`` by default), its ``[model_providers.ID]`` ``base_url`` and
    ``env_key``, ``openai_base_url`` and ``chatgpt_base_url``."""
    env = agent_environment(spec)
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
    config = _codex_config(spec, home)
    if config is None:
        return None
    chosen = _text(config.get("model_provider")) or "openai"
    provider = _dict(_dict(config.get("model_providers")).get(chosen))
    if provider:
        url = _text(provider.get("base_url"))
        if url is None:
            return None
        key = _text(provider.get("env_key"))
        return ModelApi(url, f"Codex's model provider {chosen!r}", env, key)
    if chosen != "openai":
        return None
    url = _text(config.get("openai_base_url"))
    if url is not None:
        return ModelApi(url, "openai_base_url in Codex's config", env)
    if _chatgpt_login(home, env):
        base = _text(config.get("chatgpt_base_url"))
        url = base.rstrip("/") + "/codex" if base is not None else CHATGPT_BACKEND
        return ModelApi(url, "the ChatGPT backend of its login", env)
    return ModelApi(OPENAI_API, "the OpenAI API (Codex's default)", env)


# -- Claude --------------------------------------------------------------------------------


def _settings_env(path: Path) -> dict[str, str]:
    import json

    try:
        settings = _dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in _dict(settings.get("env")).items() if isinstance(v, str)}


def claude_api(spec: AgentSpec) -> ModelApi | None:
    """From the ``env`` of Claude's settings files (``.claude/settings.local.json`` and
    ``.claude/settings.json`` in the entry's working directory, then ``settings.json`` in
    ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``), else the agent's environment; None for a cloud
    provider."""
    env = agent_environment(spec)
    config = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME") or Path.home()) / ".claude")
    project = Path(spec.cwd or os.getcwd()) / ".claude"
    layers = [project / "settings.local.json", project / "settings.json", config / "settings.json"]
    merged = dict(env)
    source = "ANTHROPIC_BASE_URL in its environment"
    for path in reversed(layers):  # the first one wins
        extra = _settings_env(path)
        merged.update(extra)
        if "ANTHROPIC_BASE_URL" in extra:
            source = f"ANTHROPIC_BASE_URL in {path}"
    if any(merged.get(name, "").lower() not in ("", "0", "false") for name in _CLOUD_CLAUDE):
        return None
    url = merged.get("ANTHROPIC_BASE_URL")
    if not url:
        return ModelApi(ANTHROPIC_API, "the Anthropic API (Claude's default)", merged)
    return ModelApi(url, source, merged)


# -- the check -----------------------------------------------------------------------------


def _variable(env: Mapping[str, str], name: str) -> str | None:
    return env.get(name) or env.get(name.upper()) or None


def _bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether ``NO_PROXY`` names ``host``: ``*``, the host, a domain it is in (``example.com``,
    ``.example.com``, ``*.example.com``), an address or a network (``10.0.0.0/8``), each with
    an optional ``:port``."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        if not entry:
            continue
        name, sep, entry_port = entry.rpartition(":") if entry.count(":") == 1 else ("", "", "")
        if sep and entry_port.isdigit():
            if port is not None and int(entry_port) != port:
                continue
            entry = name
        entry = entry.strip("[]")
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        domain = entry.removeprefix("*").removeprefix(".")
        if host == domain or host.endswith("." + domain):
            return True
    return False


def _proxy(url: str, env: Mapping[str, str]) -> str | None:
    """The proxy the agent would use for ``url`` (None: a direct connection)."""
    parts = urlsplit(url)
    no_proxy = _variable(env, "no_proxy")
    try:
        port = parts.port
    except ValueError:
        port = None
    if no_proxy and parts.hostname and _bypassed(parts.hostname, port, no_proxy):
        return None
    return _variable(env, f"{parts.scheme}_proxy") or _variable(env, "all_proxy")


def _shown(url: str) -> str:
    """``url`` without its user and password."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _errors(exc: BaseException) -> list[BaseException]:
    """``exc``, its causes and contexts, and the members of any group among them."""
    found: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            group = cast("BaseExceptionGroup[BaseException]", current)
            todo.extend(group.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return found


_ERRNO_WORDS: Final[Mapping[int, str]] = {
    errno.ECONNREFUSED: "connection refused",
    errno.ENETUNREACH: "network is unreachable",
    errno.EHOSTUNREACH: "no route to host",
    errno.ETIMEDOUT: "connection timed out",
    errno.ECONNRESET: "connection reset",
}


def _why(exc: BaseException) -> str:
    """A short cause for a failed connection."""
    errors = _errors(exc)
    for error in errors:
        if isinstance(error, socket.gaierror):
            return f"the host name does not resolve ({error.strerror or error})"
    for error in errors:
        if isinstance(error, OSError) and error.errno in _ERRNO_WORDS:
            return _ERRNO_WORDS[error.errno]
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


async def unreachable(api: ModelApi, timeout: float = REACH_TIMEOUT) -> str | None:
    """Why ``api`` cannot be reached from here (one line), or None when it answered or this
    cannot be told (see the module docstring)."""
    import httpx  # only a probe needs it

    proxy = _proxy(api.url, api.env)
    if proxy is not None and urlsplit(proxy).scheme not in ("http", "https"):
        return None  # a SOCKS proxy: not judged
    via = f" through the proxy {_shown(proxy)}" if proxy is not None else ""
    try:
        with anyio.fail_after(timeout + 1.0):  # name resolution is bounded too
            async with httpx.AsyncClient(
                proxy=proxy, verify=False, trust_env=False, timeout=timeout
            ) as client:
                await client.head(api.url)
    except httpx.ProxyError as exc:
        return f"{_shown(api.url)}: the proxy {_shown(proxy or '')} refused it ({_why(exc)})"
    except (httpx.ConnectTimeout, httpx.PoolTimeout, TimeoutError):
        return f"{_shown(api.url)}: no connection within {timeout:g} s{via}"
    except httpx.ConnectError as exc:
        if any(isinstance(e, ssl.SSLError) for e in _errors(exc)):
            return None  # something answered
        return f"{_shown(api.url)}: {_why(exc)}{via}"
    except (httpx.HTTPError, httpx.InvalidURL, ValueError):
        return None  # connected, or a URL this check cannot use: not judged
    return None


def _network_hint(spec: AgentSpec, api: ModelApi) -> str:
    hint = (
        f"{spec.name} cannot reach its model API {_shown(api.url)} ({api.source}): check the "
        "network, that this URL is right, and any proxy"
    )
    unset = [
        name.upper()
        for name in _PROXY_VARIABLES[:3]
        if _variable(os.environ, name) and not _variable(api.env, name)
    ]
    if unset:
        return (
            f"{hint}; your {unset[0]} is not passed to agents: "
            f'[agents.{spec.name}] env = {{ {unset[0]} = "..." }}'
        )
    return f"{hint} (HTTPS_PROXY in the entry's env)"


async def model_api_cause(
    spec: AgentSpec, api: ModelApi | None, timeout: float = REACH_TIMEOUT
) -> NotReady | None:
    """Whether the agent can use its model API ``api``: ``needs credentials`` when its key
    variable is not set, ``no network`` when it cannot be reached, else None."""
    if api is None:
        return None
    if api.key_variable is not None and not api.env.get(api.key_variable):
        variable = api.key_variable
        return NotReady(
            "needs credentials",
            f"{api.source} reads its key from {variable}, which {spec.name} does not get",
            f'give the entry its key: [agents.{spec.name}] env = {{ {variable} = "..." }}',
        )
    why = await unreachable(api, timeout)
    if why is None:
        return None
    return NotReady("no network", why, _network_hint(spec, api))


def configured_api(spec: AgentSpec) -> ModelApi | None:
    """The model API of a Codex or Claude agent from its configuration (no query)."""
    family = agent_family(spec)
    if family == "codex":
        return codex_config_api(spec)
    if family == "claude":
        return claude_api(spec)
    return None
