"""Where the pinned real agent binaries from npm live (installed by ``scripts/setup``).

``scripts/setup`` installs ``requirements/npm/package-lock.json`` into ``.cache/npm`` of the
checkout; ``SUBAGENTS_NPM_PREFIX`` points elsewhere.

:func:`missing_npm_agent` is what a test does when such a binary is absent: it skips (with
the reason) only when ``npm`` itself is not on ``PATH``, so the agent could not have been
installed on this machine; otherwise it fails, naming the set-up step, never silently.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

__all__ = ("missing_npm_agent", "npm_file", "npm_prefix")


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


def missing_npm_agent(package: str) -> NoReturn:
    """Stop the running pytest test because the npm ``package`` is not installed.

    Skips, with a reason saying so, when ``npm`` is not on ``PATH`` (the agent cannot be
    installed here: install node >= 20 and npm, then run ``./scripts/setup``); otherwise
    fails, naming ``./scripts/setup``, since the set-up step was skipped or went wrong.
    """
    import pytest  # only tests call this: pytest is no dependency of the package

    if shutil.which("npm") is None:
        pytest.skip(
            f"npm is not on PATH, so {package} cannot be installed: install node >= 20 and "
            "npm, then run ./scripts/setup (it installs the pinned agents into .cache/npm)"
        )
    pytest.fail(
        f"{package} is not installed (npm is on PATH, looked under {npm_prefix()}): "
        "run ./scripts/setup (it installs the pinned agents into .cache/npm)"
    )
