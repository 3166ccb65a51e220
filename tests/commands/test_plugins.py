"""Third-party providers register through the entry-point group ``subagents.providers`` and
are usable by name from the registry (issue 9).

The test builds a small plugin wheel by hand, installs it with pip into a directory of its
own, and runs it through the real command line with that directory on ``PYTHONPATH``. The
plugin exports an *instance* carrying an injected dependency (its greeting): the loader must
call the exported object itself (a harness once lost such a dependency by re-instantiating
a default export), so the greeting must reach the output.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from subagents.providers.factory import ENTRY_POINT_GROUP, build_provider, plugin_factories

PLUGIN_MODULE = '''\
"""A demo subagents provider plugin: echoes the prompt after an injected greeting."""

from subagents.providers.scripted import Script, ScriptedProvider


class PluginFactory:
    def __init__(self, greeting):
        self.greeting = greeting

    def __call__(self, spec, context):
        greeting = self.greeting
        return ScriptedProvider(
            lambda request: Script(output=f"{greeting} says: {request.prompt}"),
            name=spec.name,
        )


factory = PluginFactory(greeting="injected-dependency")
'''
DIST = "subagents_demo_plugin-0.1.0"
GROUP_NAME = "echo-plugin"

# The first test also pays for the module fixture (a pip install, slow on a loaded machine).
pytestmark = pytest.mark.timeout(180)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(directory: Path) -> Path:
    files = {
        "subagents_demo_plugin.py": PLUGIN_MODULE.encode(),
        f"{DIST}.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: subagents-demo-plugin\nVersion: 0.1.0\n"
            b"Summary: a demo provider plugin for subagents\n"
        ),
        f"{DIST}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: hand (tests)\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
        f"{DIST}.dist-info/entry_points.txt": (
            f"[{ENTRY_POINT_GROUP}]\n{GROUP_NAME} = subagents_demo_plugin:factory\n".encode()
        ),
    }
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(f"{DIST}.dist-info/RECORD,,")
    files[f"{DIST}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = directory / f"{DIST}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin, installed by pip into a directory of its own."""
    root = tmp_path_factory.mktemp("plugin")
    wheel = build_wheel(root)
    target = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=120,
        capture_output=True,
    )
    assert (target / "subagents_demo_plugin.py").is_file()
    return target


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "cfg.toml").write_text(
        f'[agents.plugin-agent]\nprovider = "{GROUP_NAME}"\ndescription = "a plugin"\n'
    )
    return tmp_path


def subagents(site: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["XDG_CONFIG_HOME"] = str(cwd / "xdg")
    return subprocess.run(
        [sys.executable, "-m", "subagents", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_plugin_entry_is_listed(site: Path, workdir: Path) -> None:
    done = subagents(site, workdir, "agents", "--config", "cfg.toml")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("plugin-agent "))
    assert line.split()[1] == GROUP_NAME


def test_the_plugin_runs_by_name_with_its_injected_dependency(site: Path, workdir: Path) -> None:
    done = subagents(site, workdir, "run", "--config", "cfg.toml", "plugin-agent", "hi")
    assert done.returncode == 0, done.stderr
    assert "injected-dependency says: hi" in done.stdout


def test_the_plugin_probes_ok_with_its_distribution_version(site: Path, workdir: Path) -> None:
    done = subagents(
        site, workdir, "agents", "--config", "cfg.toml", "--json", "--probe", "plugin-agent"
    )
    assert done.returncode == 0, done.stderr
    assert '"status": "ok"' in done.stdout
    assert '"version": "0.1.0"' in done.stdout


@pytest.fixture
def plugin_on_path(site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("subagents_demo_plugin", None)


@pytest.mark.usefixtures("plugin_on_path")
def test_the_loader_returns_the_exported_object_itself() -> None:
    import importlib

    from subagents.config import AgentSpec

    entry_point = plugin_factories()[GROUP_NAME]
    module = importlib.import_module("subagents_demo_plugin")
    exported: object = module.factory
    assert entry_point.load() is exported
    assert getattr(exported, "greeting") == "injected-dependency"  # noqa: B009
    provider = build_provider(AgentSpec("plugin-agent", GROUP_NAME))
    assert provider.name == "plugin-agent"
