"""The checked-in generated module is what the generator produces (requirement 2)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "scripts" / "generate_acp_models.py"
GENERATED = ROOT / "src" / "subagents" / "protocol" / "acp" / "_v1_generated.py"


def run_generator(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=50,
    )


def test_check_mode_reports_the_checked_in_files_up_to_date() -> None:
    """Requirement 2: ``--check`` exits 0 when module and package exports are current."""
    result = run_generator("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_fresh_generation_equals_the_checked_in_module(tmp_path: Path) -> None:
    """Requirement 2: generating to ``--output PATH`` reproduces the checked-in file exactly."""
    out = tmp_path / "generated.py"
    result = run_generator("--output", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding="utf-8") == GENERATED.read_text(encoding="utf-8")


def test_generation_is_deterministic(tmp_path: Path) -> None:
    """Requirement 2: two runs give byte-identical output."""
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    assert run_generator("--output", str(first)).returncode == 0
    assert run_generator("--output", str(second)).returncode == 0
    assert first.read_bytes() == second.read_bytes()


def test_check_mode_fails_with_a_diff_summary_when_the_module_differs(tmp_path: Path) -> None:
    """Requirement 2: ``--check`` exits 1 and summarises the difference for a stale file."""
    stale = tmp_path / "stale.py"
    text = GENERATED.read_text(encoding="utf-8")
    stale.write_text(text.replace("class SessionNotification(", "class Renamed("), "utf-8")
    result = run_generator("--check", "--output", str(stale))
    assert result.returncode == 1
    assert "out of date" in result.stdout
    assert "+class SessionNotification(" in result.stdout


def test_the_header_records_generator_schema_release_and_sha256() -> None:
    """Requirement 2: the header names the generator, schema file, release and sha256."""
    header = GENERATED.read_text(encoding="utf-8").split('"""', 1)[0]
    assert "scripts/generate_acp_models.py" in header
    assert "schema/v1/schema.unstable.json" in header
    assert "1.21.0" in header
    assert "bf7d01218c4fc330b4f08840bda168dca5525951cdaf2dc32e58b9a5b4a8eb75" in header


def ruff() -> str:
    candidate = Path(sys.executable).with_name("ruff")
    found = str(candidate) if candidate.exists() else shutil.which("ruff")
    assert found is not None, "ruff is a test dependency: run ./scripts/setup"
    return found


def test_the_generated_module_is_ruff_clean_as_generated() -> None:
    """Requirement 2: the output needs no ``ruff format`` and passes ``ruff check``."""
    for command in (["format", "--check", "--no-cache"], ["check", "--no-cache"]):
        result = subprocess.run(
            [ruff(), *command, str(GENERATED)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=50,
        )
        assert result.returncode == 0, result.stdout + result.stderr
