"""Issue 35, part D: the agent author's README sections work from an installed wheel.

The agent they start from is the shipped example, shown whole; the files they are pointed at
are in the package, and a file of the checkout is named as one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from subagents.examples import tiny_agent

README = Path(__file__).resolve().parents[2] / "README.md"


def _agent_author_sections() -> str:
    text = README.read_text()
    return text[text.index("## For agent authors") : text.index("## Setting up a checkout")]


def _subsection(title: str) -> str:
    text = _agent_author_sections()
    start = text.index(f"### {title}\n")
    return text[start : text.index("\n### ", start + 1)]


def test_writing_an_acp_agent_shows_the_shipped_tiny_agent_whole() -> None:
    """Issue 35: "Writing an ACP agent" shows code, and it is the shipped file's text exactly
    (the file `python -m subagents.examples.tiny_agent` runs)."""
    blocks = re.findall(r"```python\n(.*?)```", _subsection("Writing an ACP agent"), re.S)
    assert blocks == [Path(tiny_agent.__file__).read_text()]
    assert "python -m subagents.examples.tiny_agent" in _subsection("Writing an ACP agent")


def test_the_shipped_tiny_agent_answers_initialize_from_another_directory(tmp_path: Path) -> None:
    """Issue 35: `python -m subagents.examples.tiny_agent` runs from any directory (it is in
    the package, not the checkout's tests/): it answers initialize and exits on stdin EOF."""
    request = (
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "subagents.examples.tiny_agent"],
        input=request,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"name":"tiny-echo"' in done.stdout.replace(" ", ""), done.stdout


def test_the_agent_author_sections_point_at_no_checkout_file_as_if_installed() -> None:
    """Issue 35: what the agent author sections point at exists in the wheel: no `src/...`
    path (the installed package has none: a module or a command instead), and a `tests/...`
    file is named as the checkout's (evidence, not something to run from a wheel)."""
    text = " ".join(_agent_author_sections().split())
    assert not re.findall(r"`src/[^`]*`", text)
    for found in re.finditer(r"`tests/[^`]*`", text):
        before = text[max(0, found.start() - 40) : found.start()]
        assert "checkout" in before, f"{before}{found.group()}"


def test_the_conformance_options_table_names_every_option_of_the_command() -> None:
    """Issue 35: the README's options table of `subagents conformance` misses none of the
    options `--help` lists (`-v` was missing)."""
    import argparse

    from subagents.commands import conformance

    parser = argparse.ArgumentParser()
    command = conformance.add_parser(parser.add_subparsers())
    flags = {
        flag
        for action in command._actions  # pyright: ignore[reportPrivateUsage]
        for flag in action.option_strings
        if flag not in ("-h", "--help")
    }
    section = _subsection("The conformance suite: `subagents conformance`")
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    cells = [re.split(r"(?<!\\)\|", row)[1] for row in rows]  # `\|` is a pipe inside a cell
    tabled = {flag for cell in cells for flag in re.findall(r"`(-{1,2}[a-z][a-z-]*)", cell)}
    assert flags - tabled == set()
