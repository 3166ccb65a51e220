"""Issue 19, point 3 "pip users are first-class": the npm agents have an install command
(``subagents agents install NAME``, pinned versions, into a per-user data directory), that
location is where they are looked up by default, and the "not installed" hint fits how the
package was installed. The real npm is never called: a fake ``npm`` on ``PATH`` records its
argv and creates the binary a real install would."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from subagents.testing.npm_agents import (
    BUILTIN_NPM_AGENTS,
    checkout_root,
    default_npm_prefix,
    install_hint,
    pinned_versions,
)

ROOT = Path(__file__).resolve().parents[2]
SUBAGENTS = [sys.executable, "-m", "subagents"]

FAKE_NPM = """#!{python}
import json, os, sys
from pathlib import Path

argv = sys.argv[1:]
Path(os.environ["FAKE_NPM_LOG"]).write_text(json.dumps(argv))
prefix = Path(argv[argv.index("--prefix") + 1])
bins = json.loads(os.environ["FAKE_NPM_BINS"])
for spec in argv:
    package = spec.rsplit("@", 1)[0] if "@" in spec[1:] else None
    if package in bins:
        target = prefix / "node_modules" / bins[package]
        target.parent.mkdir(parents=True, exist_ok=True)
        # the installed "agent": the reference ACP agent, so a probe can start it
        target.write_text("#!/bin/sh\\nexec {python} -m subagents.agents.reference\\n")
        target.chmod(0o755)
sys.exit(int(os.environ.get("FAKE_NPM_STATUS", "0")))
"""


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A private HOME, an empty PATH but for tmp_path/bin, and a fresh npm prefix."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "bin").mkdir()
    return {
        "HOME": str(home),
        "PATH": str(tmp_path / "bin"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "SUBAGENTS_NPM_PREFIX": str(tmp_path / "prefix"),
        "FAKE_NPM_LOG": str(tmp_path / "npm-argv.json"),
        "FAKE_NPM_BINS": json.dumps(dict(BUILTIN_NPM_AGENTS.values())),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }


def fake_node_and_npm(tmp_path: Path) -> None:
    executable(tmp_path / "bin" / "npm", FAKE_NPM.replace("{python}", sys.executable))
    executable(tmp_path / "bin" / "node", "#!/bin/sh\nexit 0\n")


def subagents(
    tmp_path: Path, env: dict[str, str], *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SUBAGENTS, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# ------------------------------------------------------------------ where and which versions


def test_the_default_prefix_is_the_per_user_data_directory_following_xdg_data_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a checkout the npm prefix is $XDG_DATA_HOME/subagents/npm, and
    ~/.local/share/subagents/npm without XDG_DATA_HOME: never a path inside the venv."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    data = tmp_path / "data"
    assert default_npm_prefix({"XDG_DATA_HOME": str(data)}, None) == data / "subagents" / "npm"
    assert default_npm_prefix({}, None) == tmp_path / "home/.local/share/subagents/npm"


def test_subagents_npm_prefix_overrides_the_default_and_the_checkouts_cache(
    tmp_path: Path,
) -> None:
    """$SUBAGENTS_NPM_PREFIX wins over XDG_DATA_HOME and over a checkout's .cache/npm; a
    checkout's .cache/npm is used (once it exists) so ./scripts/setup keeps working."""
    checkout = tmp_path / "checkout"
    (checkout / ".cache" / "npm").mkdir(parents=True)
    mine = tmp_path / "mine"
    environ = {"SUBAGENTS_NPM_PREFIX": str(mine), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert default_npm_prefix(environ, checkout) == mine
    assert default_npm_prefix(environ, None) == mine
    assert default_npm_prefix({"XDG_DATA_HOME": "/d"}, checkout) == checkout / ".cache/npm"
    fresh = tmp_path / "fresh-clone"
    fresh.mkdir()
    assert default_npm_prefix({"XDG_DATA_HOME": "/d"}, fresh) == Path("/d/subagents/npm")


def test_a_checkout_is_recognised_by_scripts_setup_next_to_the_source_tree(
    tmp_path: Path,
) -> None:
    """The package in src/subagents of a tree with scripts/setup is a checkout; the same
    package in site-packages is not (and this project's own tree is one)."""
    checkout = tmp_path / "checkout"
    executable(checkout / "scripts" / "setup", "#!/bin/sh\n")
    (checkout / "src" / "subagents").mkdir(parents=True)
    installed = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "subagents"
    installed.mkdir(parents=True)
    assert checkout_root(checkout / "src" / "subagents") == checkout
    assert checkout_root(installed) is None
    assert checkout_root() == ROOT


def test_the_not_installed_hint_names_scripts_setup_only_in_a_checkout(tmp_path: Path) -> None:
    """Inside a checkout the hint is ./scripts/setup; for an installed package it is
    `subagents agents install NAME` (no file the user does not have); for an agent that is
    not a built-in npm one, neither."""
    in_checkout = install_hint("codex-acp", checkout=tmp_path)
    assert "./scripts/setup" in in_checkout
    pip_installed = install_hint("codex-acp", checkout=None)
    assert "subagents agents install codex-acp" in pip_installed
    assert "scripts/setup" not in pip_installed
    other = install_hint("my-agent", checkout=None)
    assert "scripts/setup" not in other
    assert "agents install" not in other


def test_the_pinned_versions_are_those_scripts_setup_installs() -> None:
    """One pin list: the versions come from requirements/npm/package.json (what scripts/setup
    copies into .cache/npm), with an exact version for every built-in npm agent."""
    pins = json.loads((ROOT / "requirements/npm/package.json").read_text())["dependencies"]
    assert "requirements/npm/package.json" in (ROOT / "scripts" / "setup").read_text()
    assert pinned_versions() == pins
    for package, _ in BUILTIN_NPM_AGENTS.values():
        assert pins[package][0].isdigit(), (package, pins[package])


# ------------------------------------------------------------------ the command


def test_agents_install_installs_the_pinned_version_into_the_prefix_and_agents_sees_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """`subagents agents install codex-acp` runs `npm install --prefix PREFIX` with the
    pinned exact version; afterwards `subagents agents` runs codex-acp from the prefix and
    `agents --probe codex-acp` starts it (ok) where it was `not installed` before."""
    fake_node_and_npm(tmp_path)
    prefix = Path(env["SUBAGENTS_NPM_PREFIX"])
    before = subagents(tmp_path, env, "agents", "--probe", "codex-acp")
    assert "not installed" in before.stdout
    assert "./scripts/setup" in before.stderr  # this test runs the checkout's package
    done = subagents(tmp_path, env, "agents", "install", "codex-acp")
    assert done.returncode == 0, done.stderr
    version = pinned_versions()["@zed-industries/codex-acp"]
    argv = json.loads(Path(env["FAKE_NPM_LOG"]).read_text())
    assert argv[:3] == ["install", "--prefix", str(prefix)]
    assert argv[-1] == f"@zed-industries/codex-acp@{version}"
    assert "--save-exact" in argv
    installed = prefix / "node_modules" / ".bin" / "codex-acp"
    assert done.stdout == (
        f"installed codex-acp (@zed-industries/codex-acp@{version}): {installed}\n"
    )
    listed = subagents(tmp_path, env, "agents", "--json")
    [entry] = [e for e in json.loads(listed.stdout) if e["name"] == "codex-acp"]
    assert entry["command"] == [str(installed)]
    # The probe also checks that the agent reaches its model API: give it one, on loopback
    # (this machine has no network; without it the probe says `no network`, as it should).
    with _model_api() as url:
        codex_home = Path(env["HOME"]) / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(f'openai_base_url = "{url}"\n')
        probed = subagents(tmp_path, env, "agents", "--probe", "codex-acp", "--json")
    assert probed.returncode == 0, probed.stdout + probed.stderr
    assert json.loads(probed.stdout)[0]["status"] == "ok"


@contextlib.contextmanager
def _model_api() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 that answers anything (the probe's reachability check)."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(404)
            self.end_headers()

        do_GET = do_POST = do_HEAD

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_agents_install_without_names_installs_every_npm_backed_built_in(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """No NAME: one npm install of the four built-in npm agents, each at its pinned version."""
    fake_node_and_npm(tmp_path)
    done = subagents(tmp_path, env, "agents", "install")
    assert done.returncode == 0, done.stderr
    argv = json.loads(Path(env["FAKE_NPM_LOG"]).read_text())
    pins = pinned_versions()
    expected = [f"{package}@{pins[package]}" for package, _ in BUILTIN_NPM_AGENTS.values()]
    assert argv[-len(expected) :] == expected
    assert [line.split()[1] for line in done.stdout.splitlines()] == list(BUILTIN_NPM_AGENTS)


def test_a_missing_npm_is_a_clear_error_with_a_hint(tmp_path: Path, env: dict[str, str]) -> None:
    """Neither npm nor node on PATH: exit 1, one line naming them, a hint to install node >=
    20 and npm; nothing is created."""
    done = subagents(tmp_path, env, "agents", "install", "codex")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines()[0] == "subagents agents install: npm and node not found on PATH"
    assert "hint: install node >= 20 and npm" in done.stderr
    assert not Path(env["SUBAGENTS_NPM_PREFIX"]).exists()


def test_a_failing_npm_exits_1_and_an_unknown_name_exits_2_with_did_you_mean(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """npm failing is exit 1 naming its status; a mistyped NAME is exit 2 with the closest
    names, before npm runs; the exit statuses are in --help."""
    fake_node_and_npm(tmp_path)
    failed = subagents(tmp_path, {**env, "FAKE_NPM_STATUS": "7"}, "agents", "install", "codex")
    assert failed.returncode == 1
    assert "npm install failed (exit status 7)" in failed.stderr
    assert "hint:" in failed.stderr
    Path(env["FAKE_NPM_LOG"]).unlink()
    typo = subagents(tmp_path, env, "agents", "install", "codx")
    assert typo.returncode == 2
    assert "did you mean 'codex'" in typo.stderr
    assert not Path(env["FAKE_NPM_LOG"]).exists()
    helped = subagents(tmp_path, env, "agents", "install", "--help")
    assert "Exit status: 0" in helped.stdout
    assert "124" in helped.stdout


def test_npm_running_past_the_timeout_is_stopped_with_exit_124(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """npm is bounded: past --timeout it is killed and the command exits 124 with a hint."""
    executable(tmp_path / "bin" / "npm", "#!/bin/sh\nexec sleep 30\n")
    executable(tmp_path / "bin" / "node", "#!/bin/sh\nexit 0\n")
    env = {**env, "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    done = subagents(tmp_path, env, "agents", "install", "codex", "--timeout", "0.5", timeout=20)
    assert done.returncode == 124
    assert "npm did not finish within 0.5 s" in done.stderr


def test_after_an_install_the_next_steps_name_the_installed_cli_by_its_path(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Issue 35 (the last mile, C.4): after `subagents agents install codex claude-code`,
    stderr says how to log each in by the installed CLI's full path (the prefix is not on
    PATH: a bare `codex login` is not found), then the probe that checks them."""
    fake_node_and_npm(tmp_path)
    done = subagents(tmp_path, env, "agents", "install", "codex", "claude-code")
    assert done.returncode == 0, done.stderr
    bin_dir = Path(env["SUBAGENTS_NPM_PREFIX"]) / "node_modules" / ".bin"
    assert f"  codex: log in with `{bin_dir / 'codex'} login`" in done.stderr
    assert f"  claude-code: log in by running `{bin_dir / 'claude'}` and typing /login" in (
        done.stderr
    )
    assert done.stderr.rstrip().endswith(
        "then `subagents agents --probe codex claude-code` says whether they can take a prompt"
    )
