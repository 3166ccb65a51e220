"""Shared test configuration: every async test runs on asyncio and on trio; and how the suite
is split between pytest-xdist workers (``./scripts/test`` runs it with ``-n``).

Each xdist worker is its own process with its own fixtures, so tests that must see one
another's work run on one worker, one after the other: :data:`GROUPS` names them by file. They
are the modules whose tests share a module-scoped fixture (one conformance run, one built
wheel: made once, not once per worker), the fault tests with the fault table that checks what
they observed (``tests/reliability/conftest.py``), and tests that share a file outside their
temporary directories. Collection checks that every test needing a group is in one.

The scheduler (:func:`pytest_xdist_make_scheduler`) hands out one group, or one test, at a
time, in collection order; collection puts the tests marked ``long`` (a whole conformance run
against a slow agent) and the groups first, so the workers start them first and the run does
not end on one long test started last. (xdist's own ``--dist loadgroup`` cannot be used: it
renames node ids, which pytest 9 no longer allows, so its groups are silently ignored.)
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from xdist.remote import Producer
    from xdist.scheduler import LoadScopeScheduling

FAULT_TABLE = "fault-table"
GROUPS: dict[str, str] = {
    # The fault tests record rows of tests/reliability/fault-table.md (the `observe` fixture)
    # in their process; test_zz_fault_table.py, collected last, checks the rows.
    "tests/reliability/test_faults_acp_client.py": FAULT_TABLE,
    "tests/reliability/test_faults_acp_provider.py": FAULT_TABLE,
    "tests/reliability/test_faults_peer.py": FAULT_TABLE,
    "tests/reliability/test_faults_run.py": FAULT_TABLE,
    "tests/reliability/test_zz_fault_table.py": FAULT_TABLE,
    # A module-scoped fixture: one conformance run (or the mutants' runs, all started at once
    # in the background), one installed plugin, one built wheel.
    "tests/conformance/test_mutants.py": "mutants",
    "tests/conformance/test_reference_agent.py": "reference-agent-conformance",
    "tests/conformance/test_turn_checks.py": "turn-checks",
    "tests/conformance/test_remote_conformance.py": "remote-conformance",
    "tests/commands/test_plugins.py": "plugin-site",
    "tests/test_wheel_install.py": "wheel",
    # bench/run.py names its raw file by the second it starts (bench/results/raw-<time>.jsonl):
    # two of these tests started in one second would write the same file.
    "tests/test_bench_summary_out.py": "bench-results",
    # One server (the official SDK's, a subprocess) for the module's tests.
    "tests/remote/test_client_sdk_server.py": "sdk-server",
    # One `subagents serve --listen` (a subprocess) for the provider kit's checks.
    "tests/remote/test_client_provider_kit.py": "served-reference",
    # One HAProxy in front of three `subagents serve --listen` (subprocesses) for the tests
    # that leave them running.
    "tests/remote/test_haproxy.py": "haproxy",
    # One A2A server (a subprocess) for the A2A provider kit's checks.
    "tests/a2a/test_a2a_provider_kit.py": "a2a-kit-server",
    "tests/a2a/test_a2a_provider.py": "a2a-provider-server",
    "tests/a2a/test_a2a_structured_output.py": "a2a-structured-server",
}
"""Test file (relative to the repository) -> the group its tests run in, on one worker."""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM), made by the ``openssl``
    command (the TLS tests of ``serve --listen`` and ``serve --a2a``)."""
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is needed for the TLS tests: install openssl")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    command += ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    return cert, key


def group_of(nodeid: str) -> str | None:
    """The group of the test ``nodeid`` (``None``: it can run on any worker, alone)."""
    return GROUPS.get(nodeid.split("::", 1)[0])


def _needs_a_group(item: pytest.Item) -> str | None:
    """Why ``item`` must share a worker with other tests, if it must."""
    if "observe" in getattr(item, "fixturenames", ()):
        return "it records a row of the fault table (the `observe` fixture)"
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        for name, definitions in info.name2fixturedefs.items():
            for definition in definitions:
                # pytest's own session fixtures (tmp_path_factory) are shared safely.
                if definition.scope != "function" and definition.baseid.startswith("tests"):
                    return f"it uses the {definition.scope}-scoped fixture {name!r}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    missing = [
        f"{item.nodeid}: {why}"
        for item in items
        if (why := _needs_a_group(item)) is not None and group_of(item.nodeid) is None
    ]
    if missing:
        raise pytest.UsageError(
            "tests that must share an xdist worker but have no group in tests/conftest.py "
            "GROUPS:\n  " + "\n  ".join(missing)
        )
    first = [item for item in items if item.get_closest_marker("long")]
    first += [item for item in items if group_of(item.nodeid) and item not in first]
    if first:
        chosen = {id(item) for item in first}
        items[:] = first + [item for item in items if id(item) not in chosen]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LoadScopeScheduling | None:
    """``-n N`` (``--dist load``, the default): xdist's scope scheduler with :data:`GROUPS` as
    the scopes (every other test is a scope of its own), in collection order."""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None  # an explicit other --dist: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or nodeid

    config.option.loadscopereorder = False  # collection order: the long tests first
    return GroupScheduling(config, log)
