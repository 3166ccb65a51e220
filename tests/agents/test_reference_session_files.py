"""The reference agent's session files, written by several processes at once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from subagents.agents.reference import ReferenceAgent, _Session  # pyright: ignore[reportPrivateUsage]


def test_saving_one_session_id_from_many_writers_at_once_never_fails(tmp_path: Path) -> None:
    """Sessions persist across processes (cold resume): writers that save the same session id
    at the same moment (agents with fixed ids, as a conformance mutant has, each in its own
    process) each replace the file whole, none fails for want of the other's temporary file,
    and no temporary file is left (a CI run failed a prompt with an internal error this way)."""
    agents = [ReferenceAgent(session_dir=str(tmp_path)) for _ in range(6)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(agents))

    def save_many(agent: ReferenceAgent, n: int) -> None:
        session = _Session("fixed", "/tmp")
        start.wait()
        try:
            for i in range(300):
                session.title = f"writer {n} save {i}"
                agent._save(session)  # pyright: ignore[reportPrivateUsage]
        except BaseException as exc:  # collected: the test fails on any
            errors.append(exc)

    threads = [threading.Thread(target=save_many, args=(a, n)) for n, a in enumerate(agents)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fixed.json"]
    saved = json.loads((tmp_path / "fixed.json").read_text())
    assert saved["title"].endswith("save 299")
