"""Where the pinned real agent binaries from npm live, and which versions are pinned.

The pin list is ``requirements/npm/package.json`` of the checkout (the wheel carries the same
file as ``subagents/_npm/package.json``): ``scripts/setup`` installs it, with its lock file,
into ``.cache/npm`` of the checkout, and ``subagents agents install`` installs the built-ins'
packages from it at exactly those versions.

:func:`npm_prefix` is where they are looked up and installed: ``$SUBAGENTS_NPM_PREFIX`` if set;
else, in a checkout, its ``.cache/npm`` when that exists; else the per-user data directory
``$XDG_DATA_HOME/subagents/npm`` (``~/.local/share/subagents/npm``). A checkout is recognised
by ``scripts/setup`` next to the package's source tree (:func:`checkout_root`).

What a test does when such a binary is absent is in :mod:`subagents.testing.npm_agents`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal, cast

__all__ = (
    "BUILTIN_NPM_AGENTS",
    "PinListError",
    "checkout_root",
    "default_npm_prefix",
    "install_hint",
    "npm_file",
    "npm_prefix",
    "pinned_versions",
)

_PACKAGE_DIR = Path(__file__).resolve().parent

BUILTIN_NPM_AGENTS: Mapping[str, tuple[str, str]] = {
    "codex": ("@openai/codex", ".bin/codex"),
    "claude-code": ("@anthropic-ai/claude-code", ".bin/claude"),
    "codex-acp": ("@zed-industries/codex-acp", ".bin/codex-acp"),
    "claude-agent-acp": ("@agentclientprotocol/claude-agent-acp", ".bin/claude-agent-acp"),
}
"""Built-in agent name -> (its npm package, the file under ``node_modules`` it installs)."""


class PinListError(Exception):
    """The pinned versions cannot be read (an install without the pin list)."""


def checkout_root(package_dir: Path | None = None) -> Path | None:
    """The checkout holding the ``subagents`` package at ``package_dir`` (default: this one),
    recognised by ``scripts/setup`` next to its ``src`` tree; ``None`` for an installed
    package (a wheel in ``site-packages``)."""
    package = (package_dir or _PACKAGE_DIR).resolve()
    root = package.parent.parent
    if package.parent.name == "src" and (root / "scripts" / "setup").is_file():
        return root
    return None


def default_npm_prefix(environ: Mapping[str, str], checkout: Path | None) -> Path:
    """The npm prefix for the environment ``environ`` and the checkout (``None``: none):
    ``SUBAGENTS_NPM_PREFIX``, else the checkout's ``.cache/npm`` when it exists, else
    ``$XDG_DATA_HOME/subagents/npm`` (default ``~/.local/share/subagents/npm``)."""
    configured = environ.get("SUBAGENTS_NPM_PREFIX")
    if configured:
        return Path(configured).expanduser()
    if checkout is not None and (checkout / ".cache" / "npm").is_dir():
        return checkout / ".cache" / "npm"
    data = environ.get("XDG_DATA_HOME")
    base = Path(data).expanduser() if data else Path.home() / ".local" / "share"
    return base / "subagents" / "npm"


def npm_prefix() -> Path:
    """The directory holding ``node_modules`` with the real agents (see the module)."""
    return default_npm_prefix(os.environ, checkout_root())


def npm_file(relative: str) -> Path | None:
    """``node_modules/<relative>`` under :func:`npm_prefix` if it exists, else ``None``."""
    path = npm_prefix() / "node_modules" / relative
    return path if path.exists() else None


def _pin_text(package_dir: Path | None) -> tuple[str, str]:
    if package_dir is None:
        bundled = resources.files("subagents").joinpath("_npm", "package.json")
        if bundled.is_file():
            return bundled.read_text(encoding="utf-8"), "subagents/_npm/package.json"
    root = checkout_root(package_dir)
    if root is not None:
        path = root / "requirements" / "npm" / "package.json"
        if path.is_file():
            return path.read_text(encoding="utf-8"), str(path)
    raise PinListError("the pinned npm versions (requirements/npm/package.json) are missing")


def pinned_versions(package_dir: Path | None = None) -> dict[str, str]:
    """npm package -> its pinned exact version, from the same ``package.json`` that
    ``scripts/setup`` installs (raises :class:`PinListError` when it is absent)."""
    text, where = _pin_text(package_dir)
    try:
        data = cast(dict[str, Any], json.loads(text))
        return {str(k): str(v) for k, v in cast(dict[str, Any], data["dependencies"]).items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PinListError(f"{where}: not a package.json with dependencies ({exc})") from exc


def install_hint(name: str, *, checkout: Path | Literal["detect"] | None = "detect") -> str:
    """What to do when the agent ``name`` is not installed: for a built-in npm agent,
    ``./scripts/setup`` inside a checkout and ``subagents agents install NAME`` for an
    installed package. ``checkout`` is the checkout's root (``None``: not one; by default
    :func:`checkout_root`)."""
    if name not in BUILTIN_NPM_AGENTS:
        return "install it, or fix the entry's command"
    root = checkout_root() if checkout == "detect" else checkout
    if root is not None:
        return "run ./scripts/setup (it installs the pinned agents into .cache/npm)"
    return (
        f"run `subagents agents install {name}` (it needs node >= 20 and npm; it installs "
        f"into {npm_prefix()})"
    )
