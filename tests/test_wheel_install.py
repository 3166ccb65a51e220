"""Issue 19 / done means: the project's wheel, installed into a fresh virtual environment, runs
``subagents --version``, ``subagents demo`` and one conformance run from a directory outside
the checkout, with a private ``HOME`` and no network access.

The wheel is built offline from the checkout (``pip wheel --no-index --no-build-isolation``:
the build backend is installed by ``scripts/setup``). The fresh environment gets the runtime
dependencies from the project's venv by a ``.pth`` path line, which adds that directory to
``sys.path`` without running the ``.pth`` files inside it, so the checkout's editable-install
hook is not active there and ``subagents`` is only the installed wheel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

from subagents.testing.fake_models.anthropic_messages import claude_cli_path
from subagents.testing.fake_models.openai_responses import require_codex_command
from subagents.testing.npm_agents import missing_npm_agent, npm_prefix

CHECKOUT = Path(__file__).resolve().parent.parent
TINY_AGENT = CHECKOUT / "src" / "subagents" / "examples" / "tiny_agent.py"


@dataclass(frozen=True)
class Installed:
    """The fresh venv with the wheel installed, and a work directory and HOME outside the
    checkout."""

    venv: Path
    site_packages: Path
    work: Path
    home: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args),
            input="",
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.work,
            env=self.env,
            check=False,
        )


def _offline(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Build the wheel, create the fresh venv, install the wheel there (all offline)."""
    require_codex_command()  # the demo's codex and claude-code rows need the npm agents
    if claude_cli_path() is None:
        missing_npm_agent("@anthropic-ai/claude-code")
    if importlib.util.find_spec("hatchling") is None:
        pytest.fail("the build backend hatchling is not installed: run ./scripts/setup")
    root = tmp_path_factory.mktemp("wheel-install")
    dist = root / "dist"
    _offline(
        sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
        "--no-index", "-w", dist, CHECKOUT,
    )  # fmt: skip
    (wheel,) = dist.glob("subagents-*.whl")
    venv = root / "venv"
    _offline(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    purelib = _offline(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
    site_packages = Path(purelib.stdout.strip())
    deps = Path(sysconfig.get_path("purelib"))  # the project venv's: pydantic, anyio, ...
    (site_packages / "_project_deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    _offline(python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel)
    work, home = root / "work", root / "home"
    work.mkdir()
    home.mkdir()
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "SUBAGENTS_NPM_PREFIX": str(npm_prefix()),
        "PYTHONUNBUFFERED": "1",
        "PIP_NO_INDEX": "1",
    }
    return Installed(venv, site_packages, work, home, env)


@pytest.mark.timeout(400)
def test_the_installed_wheel_runs_version_demo_and_a_conformance_run_outside_the_checkout(
    installed: Installed,
) -> None:
    """Issue 19 / done means: the wheel installed into a fresh venv, not the checkout's
    source, runs `subagents --version`, `subagents demo` (every row, on the bundled fake
    model servers) and `subagents conformance -- python my_agent.py` of an agent named by a
    relative path in another directory, with no network, creating nothing in HOME."""
    origin = installed.run("python", "-c", "import subagents; print(subagents.__file__)")
    assert origin.returncode == 0, origin.stderr
    package = Path(origin.stdout.strip()).resolve()
    assert package == (installed.site_packages / "subagents" / "__init__.py").resolve()
    assert not package.is_relative_to(CHECKOUT)
    subagents = str(installed.venv / "bin" / "subagents")
    assert shutil.which("subagents", path=installed.env["PATH"]) == subagents
    python = str(installed.venv / "bin" / "python")
    assert shutil.which("python", path=installed.env["PATH"]) == python  # the agent's python

    version = installed.run(subagents, "--version")
    assert version.returncode == 0, version.stderr
    assert "0.1.0" in version.stdout + version.stderr

    demo = installed.run(subagents, "demo", "--cancel-after", "0.3", timeout=180)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    out = demo.stdout
    table = out[out.index("agent  ") :].splitlines()
    rows = {line.split()[0]: line.split() for line in table[2:7]}
    assert sorted(rows) == ["claude-code", "codex", "fork", "reference", "spawn"]
    assert {row[2] for row in rows.values()} == {"completed"}
    assert "[cancelled: cancelled by the demo]" in out
    assert out.rstrip().endswith("all delegations settled as expected")

    shutil.copy(TINY_AGENT, installed.work / "my_agent.py")
    only = ("--only", "ACP-INIT-001", "--only", "ACP-SESSION-001")
    command = ("--", "python", "my_agent.py")
    run = installed.run(subagents, "conformance", "--json", "report.json", *only, *command)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((installed.work / "report.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "conformant", report
    assert report["command"] == ["python", "my_agent.py"]
    statuses = {r["id"]: r["status"] for r in report["requirements"]}
    assert statuses == {"ACP-INIT-001": "pass", "ACP-SESSION-001": "pass"}

    assert sorted(p.name for p in installed.home.iterdir()) == []
    assert sorted(p.name for p in installed.work.iterdir()) == ["my_agent.py", "report.json"]


HARNESS_BUILDER = """\
import anyio
import subagents


async def main() -> None:
    async for event in subagents.delegate("reference", "stream 50"):
        print(event.kind)
        break  # a plain break, no async with: most users write exactly this
    try:
        subagents.delegate("reference", "hi", permission="maybe")  # type: ignore[arg-type]
    except ValueError as exc:
        print("ValueError:", exc)
    async for event in subagents.delegate("reference", "hello"):
        if event.kind == "outcome":
            print(event.status, event.output)


anyio.run(main)
"""


@pytest.mark.timeout(300)
def test_a_newcomers_three_paths_work_from_the_wheel_without_a_traceback(
    installed: Installed,
) -> None:
    """Issue 35 / done means: from the wheel in a fresh venv, in another directory, the three
    newcomer paths end without a traceback or a warning: the harness builder's delegation left
    with a plain `break` (and a misused argument refused), the integrator's registry file in
    another directory naming its agent by a relative path, the agent author's conformance run
    of the packaged tiny agent with `--list`, `--explain` and a mistyped `--only`."""
    subagents = str(installed.venv / "bin" / "subagents")

    # The harness builder: Python, the front door, a break out of the loop.
    (installed.work / "builder.py").write_text(HARNESS_BUILDER, encoding="utf-8")
    builder = installed.run("python", "-W", "error", "builder.py", timeout=120)
    assert builder.returncode == 0, builder.stderr
    assert builder.stderr == ""
    lines = builder.stdout.splitlines()
    assert lines[0] in {"text", "thought", "tool_call", "plan", "usage", "other"}, lines
    assert lines[1].startswith("ValueError: permission: expected one of"), lines
    assert lines[2] == "completed hello", lines

    # The integrator: a registry file in another directory, its agent named relative to it.
    project = installed.work / "project"
    project.mkdir()
    shutil.copy(TINY_AGENT, project / "echo_agent.py")
    (project / "subagents.toml").write_text(
        '[agents.echo]\nprovider = "acp"\ncommand = ["python", "echo_agent.py"]\n',
        encoding="utf-8",
    )
    listed = installed.run(subagents, "agents", "--config", "project/subagents.toml")
    assert listed.returncode == 0, listed.stderr
    assert str(project / "subagents.toml") in listed.stdout.replace("\n", "")
    ran = installed.run(
        subagents, "run", "--config", "project/subagents.toml", "echo", "hello", timeout=120
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "hello" in ran.stdout
    assert "Traceback" not in ran.stderr

    # The agent author: what the suite checks, one explained, the packaged tiny agent judged.
    listing = installed.run(subagents, "conformance", "--list")
    assert listing.returncode == 0, listing.stderr
    assert "ACP-PROMPT-004" in listing.stdout
    explained = installed.run(subagents, "conformance", "--explain", "ACP-PROMPT-004")
    assert explained.returncode == 0, explained.stderr
    assert "1 MiB" in explained.stdout
    typo = installed.run(subagents, "conformance", "--only", "ACP-INT-001", "--", "python", "x")
    assert typo.returncode == 2
    assert "did you mean ACP-INIT-001?" in typo.stderr
    assert "Traceback" not in typo.stderr
    judged = installed.run(
        subagents,
        "conformance",
        "python -m subagents.examples.tiny_agent",  # quoted, as --acp-agent takes it
        "--only",
        "ACP-INIT-001",
        "--only",
        "ACP-PROMPT-001",
        timeout=180,
    )
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "verdict: CONFORMANT" in judged.stdout
    assert "Traceback" not in judged.stdout + judged.stderr
