"""Where the pinned real agent binaries from npm live (installed by ``scripts/setup``).

``scripts/setup`` installs ``requirements/npm/package-lock.json`` into ``.cache/npm`` of the
checkout; ``SUBAGENTS_NPM_PREFIX`` points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ("npm_file", "npm_prefix")


def npm_prefix() -> Path:
    """The directory holding ``node_modules`` with the real agents."""
    configured = os.environ.get("SUBAGENTS_NPM_PREFIX")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[3] / ".cache" / "npm"


def npm_file(relative: str) -> Path | None:
    """``node_modules/<relative>`` under :func:`npm_prefix` if it exists, else ``None``."""
    path = npm_prefix() / "node_modules" / relative
    return path if path.exists() else None
