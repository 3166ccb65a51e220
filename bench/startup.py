"""Whole-process start-up: import time of what a client needs, A/B interleaved.

Used by ``bench/run.py``: every round runs each command once, in a new random order, as a
fresh process, and takes wall time (``perf_counter`` around spawn and ``wait4``) and the OS's
accounting of that process: user+system CPU from ``wait4``, peak RSS from GNU time's ``%M``
(``/usr/bin/time``, when installed). ``wait4``'s own ``ru_maxrss`` cannot be used: Linux carries
the high-water mark of the forking process (the orchestrator, ~27 MiB) across ``exec``, so
every small command would read as that; GNU time forks from a small image. ``importtime``
breaks one command's imports down with ``python -X importtime`` (per module self time, median
of a few runs, grouped by package).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PROBE = BENCH / "drivers" / "client_session_probe.py"
GNU_TIME = Path("/usr/bin/time")


def gnu_time() -> Path | None:
    """``/usr/bin/time`` if it is GNU time (``-f``/``-o``), else None."""
    if not GNU_TIME.exists():
        return None
    with tempfile.NamedTemporaryFile("r") as f:
        r = subprocess.run(
            [str(GNU_TIME), "-f", "%M", "-o", f.name, "true"], capture_output=True, timeout=10
        )
        ok = r.returncode == 0 and f.read().strip().isdigit()
    return GNU_TIME if ok else None


@dataclass(frozen=True)
class ImportCmd:
    key: str
    label: str
    venv: str  # "project" or "acp-py"
    args: tuple[str, ...]  # after the interpreter

    def shown(self) -> str:
        python = ".venv/bin/python" if self.venv == "project" else "bench/.venvs/acp-py/bin/python"
        parts = [python]
        for a in self.args:
            parts.append(f'"{a}"' if " " in a or ";" in a else a)
        return " ".join(parts)


IMPORT_CMDS = (
    ImportCmd("pass", "interpreter alone", "project", ("-c", "pass")),
    ImportCmd("floor", "floor client's imports", "project", ("-c", "import asyncio, json")),
    ImportCmd(
        "peer",
        "raw peer (what the `subagents` bench client imports)",
        "project",
        ("-c", "import anyio, subagents.rpc; from subagents.transports import wrap_pipe_fds"),
    ),
    ImportCmd(
        "acp_client",
        "client endpoint, import only",
        "project",
        ("-c", "import subagents.transports.acp_client"),
    ),
    ImportCmd(
        "session",
        "client endpoint + one whole session (first use of its models)",
        "project",
        (str(PROBE.relative_to(ROOT)),),
    ),
    ImportCmd("acp", "official SDK, import only", "acp-py", ("-c", "import acp")),
)
IMPORT_KEYS = tuple(c.key for c in IMPORT_CMDS)


def time_process(
    argv: list[str], env: dict[str, str], timer_bin: Path | None, timeout: float = 60.0
) -> dict[str, Any]:
    """Run ``argv`` once: wall time, CPU (``wait4``: the process and what it reaped, so GNU
    time's own ~1 ms too), peak RSS (GNU time ``%M``, if ``timer_bin``), and its stdout."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as rss,
    ):
        if timer_bin is not None:
            argv = [str(timer_bin), "-f", "%M", "-o", rss.name, *argv]
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
        maxrss = rss.read().strip().splitlines()[-1:] if timer_bin is not None else []
    res: dict[str, Any] = {
        "wall_ms": wall * 1e3,
        "cpu_ms": (ru.ru_utime + ru.ru_stime) * 1e3,
        "maxrss_kib": int(maxrss[0]) if maxrss and maxrss[0].isdigit() else None,
        "rc": proc.returncode,
    }
    if proc.returncode != 0:
        res["error"] = (stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:300]
    line = stdout.strip().splitlines()[-1:] if stdout.strip() else []
    if line and line[0].startswith("{"):
        with contextlib.suppress(json.JSONDecodeError):
            res["inside"] = json.loads(line[0])
    return res


def run_round(
    pythons: dict[str, Path], env: dict[str, str], rng: random.Random, timer_bin: Path | None
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Each available command once, in a random order."""
    cmds = [c for c in IMPORT_CMDS if c.venv in pythons]
    rng.shuffle(cmds)
    results: dict[str, dict[str, Any]] = {}
    for c in cmds:
        results[c.key] = time_process([str(pythons[c.venv]), *c.args], env, timer_bin)
    return [c.key for c in cmds], results


# --------------------------------------------------------------------------- -X importtime


def _parse_importtime(stderr: str) -> dict[str, int]:
    """Module → self µs from ``-X importtime`` output (first occurrence)."""
    out: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        try:
            self_us, _cum, name = line[len("import time:") :].split("|", 2)
            out.setdefault(name.strip(), int(self_us))
        except ValueError:
            continue
    return out


def group_of(module: str, baseline: set[str]) -> str:
    if module in baseline:
        return "interpreter start-up (site, encodings, ...)"
    top = module.split(".")[0]
    if module.startswith("subagents.protocol.acp._v1_generated"):
        return (
            "generated ACP models: `subagents.protocol.acp._v1_generated` "
            "(class bodies; validators deferred)"
        )
    if module == "acp.schema":
        return "generated ACP models: `acp.schema` (built at import)"
    if top in {"pydantic", "pydantic_core", "annotated_types", "typing_inspection"}:
        return "pydantic (+ pydantic_core, annotated_types, typing_inspection)"
    if top in {"anyio", "sniffio"}:
        return "anyio (+ sniffio)"
    if top == "subagents":
        return "subagents (the rest)"
    if top == "acp":
        return "acp (the rest)"
    if top == "asyncio":
        return "asyncio"
    return "other stdlib (typing, logging, ssl, dataclasses, ...) and typing_extensions"


#: What ``-X importtime`` breaks down. It times only imports made by ``import`` statements:
#: modules loaded through ``importlib.import_module`` (how ``subagents.transports`` and
#: ``subagents.protocol.acp`` load their submodules on first use) are not listed, so the
#: client command imports the generated models module explicitly.
IMPORTTIME_CMDS = (
    ImportCmd("pass", "interpreter alone", "project", ("-c", "pass")),
    ImportCmd(
        "client",
        "client endpoint + the generated models module",
        "project",
        ("-c", "import subagents.transports.acp_client, subagents.protocol.acp._v1_generated"),
    ),
    ImportCmd("acp", "official SDK", "acp-py", ("-c", "import acp")),
)


def importtime(
    pythons: dict[str, Path], env: dict[str, str], runs: int = 3
) -> dict[str, dict[str, Any]]:
    """``-X importtime`` per command: median self time per module over ``runs`` runs."""
    baseline: set[str] = set()
    result: dict[str, dict[str, Any]] = {}
    for cmd in IMPORTTIME_CMDS:
        key = cmd.key
        if cmd.venv not in pythons:
            continue
        samples: list[dict[str, int]] = []
        for _ in range(runs):
            r = subprocess.run(
                [str(pythons[cmd.venv]), "-X", "importtime", *cmd.args],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            samples.append(_parse_importtime(r.stderr))
        modules = {m for s in samples for m in s}
        med = {m: statistics.median(s.get(m, 0) for s in samples) for m in modules}
        if key == "pass":
            baseline = set(modules)
            continue
        groups: dict[str, float] = {}
        for m, us in med.items():
            g = group_of(m, baseline)
            groups[g] = groups.get(g, 0.0) + us
        top = sorted(med.items(), key=lambda kv: -kv[1])[:8]
        result[key] = {
            "label": cmd.label,
            "command": cmd.shown().replace("python ", "python -X importtime ", 1),
            "total_ms": sum(med.values()) / 1e3,
            "groups_ms": {g: us / 1e3 for g, us in sorted(groups.items(), key=lambda kv: -kv[1])},
            "top_ms": [[m, us / 1e3] for m, us in top],
            "runs": runs,
        }
    return result
