"""Issue 19 / pip users are first-class: the package declares Apache-2.0 and ships its text."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APACHE_2_0_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
"""Of https://www.apache.org/licenses/LICENSE-2.0.txt, byte for byte."""


def test_the_license_file_is_the_apache_2_0_text_byte_for_byte() -> None:
    """Issue 19 / LICENSE: the checkout has a LICENSE file with the Apache License 2.0 text,
    unchanged (the license pyproject declares)."""
    data = (ROOT / "LICENSE").read_bytes()
    assert b"Apache License\n                           Version 2.0, January 2004" in data
    assert b"END OF TERMS AND CONDITIONS" in data
    assert hashlib.sha256(data).hexdigest() == APACHE_2_0_SHA256


def test_pyproject_declares_apache_2_0_and_the_builds_pick_up_the_license_file() -> None:
    """Issue 19 / LICENSE: `license = "Apache-2.0"` (an SPDX expression), and the LICENSE file
    is one hatchling ships in the wheel (``.dist-info/licenses/``) and the sdist: it matches
    the default `license-files` globs unless pyproject lists them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    patterns: list[str] = project.get("license-files", ["LICEN[CS]E*"])
    assert any(Path("LICENSE").match(pattern) for pattern in patterns)
