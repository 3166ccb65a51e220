"""Profile one implementation's client and agent on one phase with py-spy, and summarise.

    .venv/bin/python bench/profile.py [--impl subagents] [--phase stream] [--quick]
                                      [--py-spy PATH] [--top 25]
    .venv/bin/python bench/profile.py --startup session|reference-agent|... [--runs 5]

py-spy is not a project dependency: install it anywhere (say ``python3 -m venv /tmp/pyspy &&
/tmp/pyspy/bin/pip install py-spy``) and pass ``--py-spy /tmp/pyspy/bin/py-spy`` if it is not
on PATH. Samples the driver and its agent (``--subprocesses``), then prints the top functions
by self time and the self time per package, for the client and the agent separately. The
samples include start-up (imports) and the phase's warm-up.

``--startup`` profiles a whole short process instead, ``--runs`` times at 1000 Hz: ``session``
(``bench/drivers/client_session_probe.py``: the client endpoint's imports and one whole
session), an agent answering one ``initialize`` from a pipe until stdin ends
(``reference-agent``: ``python -m subagents.agents.reference``; ``subagents-agent`` and
``floor-agent``: the bench's echo agents) or ``acp`` (``import acp`` in the acp-py venv).
Every sample goes to the first bucket of ``STARTUP_BUCKETS`` one of its frames matches.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import run


def summarise(raw: Path, top: int) -> str:
    self_time: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    totals: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = stack.split(";")
        procs = [f for f in frames if f.startswith("process ")]
        side = (
            "agent" if any("_agent.py" in p or "agents.reference" in p for p in procs) else "client"
        )
        frames = [f for f in frames if not f.startswith("process ")]
        if any("_do_waitpid" in f for f in frames):
            continue  # asyncio's child watcher thread, blocked in waitpid(): not CPU
        n = int(count)
        totals[side] += n
        if frames:
            self_time[side][frames[-1]] += n
    out: list[str] = []
    for side in sorted(totals):
        total = totals[side]
        out.append(f"== {side}: {total} samples; top functions by self time")
        packages: collections.Counter[str] = collections.Counter()
        for frame, n in self_time[side].items():
            where = frame[frame.rfind("(") + 1 :].rstrip(")")
            packages[where.split("/")[0] if "/" in where else where.split(":")[0]] += n
        for frame, n in self_time[side].most_common(top):
            out.append(f"{100 * n / total:5.1f}%  {frame}")
        out.append(
            "-- self time by package: "
            + ", ".join(f"{p} {100 * n / total:.0f}%" for p, n in packages.most_common(10))
        )
    return "\n".join(out)


#: (bucket, substrings of a py-spy frame), in priority order: a sample counts for the first
#: bucket any of its frames matches.
STARTUP_BUCKETS: list[tuple[str, tuple[str, ...]]] = [
    (
        "pydantic plugin loader (its import of importlib.metadata; the scan is <1%)",
        ("pydantic/plugin/_loader.py",),
    ),
    ("building model validators on first use", ("complete_model_class", "model_rebuild")),
    (
        "import pydantic (+ pydantic_core, annotated_types)",
        ("<module> (pydantic", "<module> (annotated_types"),
    ),
    (
        "generated models, class creation (acp.schema / _v1_generated)",
        ("subagents/protocol/acp/_v1_generated.py", "<module> (acp/schema.py"),
    ),
    ("import anyio", ("<module> (anyio",)),
    ("import asyncio (+ ssl, socket, ...)", ("<module> (asyncio",)),
    ("import subagents (the rest)", ("<module> (subagents",)),
    ("import acp (the rest)", ("<module> (acp",)),
    ("other imports", ("_find_and_load",)),
]
INIT_LINE = (
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,'
    '"clientCapabilities":{},"clientInfo":{"name":"bench","version":"0"}}}'
)


def startup_command(which: str) -> tuple[list[str], bytes | None]:
    """The command to profile and what to feed its stdin (a pipe), if anything."""
    python = sys.executable
    if which == "session":
        return [python, str(run.DRIVERS / "client_session_probe.py")], None
    agents = {
        "reference-agent": ["-m", "subagents.agents.reference"],
        "subagents-agent": [str(run.DRIVERS / "subagents_agent.py")],
        "floor-agent": [str(run.DRIVERS / "floor_agent.py")],
    }
    if which in agents:
        return [python, *agents[which]], (INIT_LINE + "\n").encode()
    if which == "acp":
        run.ensure_acp_venv()
        return [str(run.acp_python()), "-c", "import acp"], None
    raise SystemExit(f"unknown --startup {which!r}")


def summarise_startup(raws: list[Path], top: int) -> str:
    buckets: collections.Counter[str] = collections.Counter()
    self_time: collections.Counter[str] = collections.Counter()
    total = 0
    for raw in raws:
        for line in raw.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            frames = [f for f in stack.split(";") if not f.startswith("process ")]
            n = int(count)
            total += n
            if frames:
                self_time[frames[-1]] += n
            for name, keys in STARTUP_BUCKETS:
                if any(k in f for f in frames for k in keys):
                    buckets[name] += n
                    break
            else:
                buckets["the rest (interpreter start and exit, the session, event loop)"] += n
    if not total:
        return "no samples"
    per_run = total / len(raws)
    out = [f"== {total} samples over {len(raws)} runs (≈{per_run:.0f} ms sampled per run, 1000 Hz)"]
    for name, n in buckets.most_common():
        out.append(f"{100 * n / total:5.1f}%  {name}")
    out.append("-- top functions by self time")
    for frame, n in self_time.most_common(top):
        out.append(f"{100 * n / total:5.1f}%  {frame}")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--impl", default="subagents", choices=run.ALL_IMPLS)
    ap.add_argument("--phase", default="stream", help="rtt, conc, stream, big or huge")
    ap.add_argument("--quick", action="store_true", help="the --quick workload")
    ap.add_argument("--py-spy", default=shutil.which("py-spy") or "", help="py-spy binary")
    ap.add_argument("--rate", type=int, default=250)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument(
        "--scale", type=float, default=5.0, help="multiply the phase's message counts (default 5)"
    )
    ap.add_argument(
        "--startup",
        choices=["session", "reference-agent", "subagents-agent", "floor-agent", "acp"],
        help="profile a whole start-up instead of a phase",
    )
    ap.add_argument("--runs", type=int, default=5, help="runs of --startup (default 5)")
    args = ap.parse_args()
    if not args.py_spy:
        raise SystemExit("py-spy not found: install it and pass --py-spy PATH")
    if args.startup:
        cmd, feed = startup_command(args.startup)
        with tempfile.TemporaryDirectory(prefix="bench-prof-") as tmp:
            raws: list[Path] = []
            for i in range(args.runs):
                raw = Path(tmp) / f"stacks-{i}.txt"
                prof = [args.py_spy, "record", "--subprocesses", "--rate", "1000"]
                prof += ["--format", "raw", "-o", str(raw), "--", *cmd]
                subprocess.run(
                    prof,
                    cwd=run.ROOT,
                    check=True,
                    timeout=120,
                    env=run.driver_env(),
                    input=feed or b"",  # a pipe: the agents' stdin
                    stdout=subprocess.DEVNULL,
                )
                raws.append(raw)
            print(summarise_startup(raws, args.top))
        return 0
    cmd = run.driver_command(args.impl)
    with tempfile.TemporaryDirectory(prefix="bench-prof-") as tmp:
        raw = Path(tmp) / "stacks.txt"
        prof = [args.py_spy, "record", "--subprocesses", "--rate", str(args.rate)]
        prof += ["--format", "raw", "-o", str(raw), "--"]
        prof += [*cmd, "--out", str(Path(tmp) / "result.json"), "--only", args.phase]
        if args.quick:
            prof.append("--quick")
        env = {**run.driver_env(), "BENCH_SCALE": str(args.scale)}
        subprocess.run(prof, cwd=run.ROOT, check=True, timeout=600, env=env)
        print(summarise(raw, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
