"""The pinned npm agents for tests: their locations (:mod:`subagents.npm_agents`, re-exported
here) and what a test does when one is absent (:func:`missing_npm_agent`).

:func:`missing_npm_agent` skips (with the reason) only when ``npm`` itself is not on ``PATH``,
so the agent could not have been installed on this machine; otherwise it fails, naming the
set-up step, never silently.
"""

from __future__ import annotations

import shutil
from typing import NoReturn

from ..npm_agents import BUILTIN_NPM_AGENTS as BUILTIN_NPM_AGENTS
from ..npm_agents import PinListError as PinListError
from ..npm_agents import checkout_root as checkout_root
from ..npm_agents import default_npm_prefix as default_npm_prefix
from ..npm_agents import install_hint as install_hint
from ..npm_agents import npm_file as npm_file
from ..npm_agents import npm_prefix as npm_prefix
from ..npm_agents import pinned_versions as pinned_versions

__all__ = (
    "BUILTIN_NPM_AGENTS",
    "PinListError",
    "checkout_root",
    "default_npm_prefix",
    "install_hint",
    "missing_npm_agent",
    "npm_file",
    "npm_prefix",
    "pinned_versions",
)


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
