"""The vendored ACP v1 schema files and their provenance record (requirement 1)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import subagents.protocol.acp

SCHEMA_DIR = Path(subagents.protocol.acp.__file__).parent / "schema" / "v1"
FILES = ("schema.json", "schema.unstable.json", "meta.json", "meta.unstable.json")


def recorded_sha256() -> dict[str, str]:
    table = re.findall(
        r"^\| (\S+) \| (\S+) \| ([0-9a-f]{64}) \|$",
        (SCHEMA_DIR / "SOURCE.md").read_text(encoding="utf-8"),
        re.MULTILINE,
    )
    return {name: sha for name, _path, sha in table}


def test_every_vendored_file_matches_the_sha256_in_source_md() -> None:
    """Requirement 1: the four v1 files are verbatim copies, as SOURCE.md records them."""
    recorded = recorded_sha256()
    assert sorted(recorded) == sorted(FILES)
    for name in FILES:
        actual = hashlib.sha256((SCHEMA_DIR / name).read_bytes()).hexdigest()
        assert actual == recorded[name], name


def test_source_md_names_the_repository_commit_paths_and_release() -> None:
    """Requirement 1: SOURCE.md gives repository, commit, upstream paths and the release."""
    source = (SCHEMA_DIR / "SOURCE.md").read_text(encoding="utf-8")
    assert "agentclientprotocol/agent-client-protocol" in source
    assert "b7f0005493b98de32fabee3e9540e2b64da68535" in source
    assert re.search(r"^- Schema release: 1\.21\.0\b", source, re.MULTILINE)
    for name in FILES:
        assert f"| schema/v1/{name} |" in source


def test_meta_files_are_for_protocol_version_1() -> None:
    """Requirement 1: the vendored files are the v1 schema (``meta*.json`` say version 1)."""
    for name in ("meta.json", "meta.unstable.json"):
        assert json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))["version"] == 1
