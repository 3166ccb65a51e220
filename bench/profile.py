"""Profile one implementation's client and agent on one phase with py-spy, and summarise.

    .venv/bin/python bench/profile.py [--impl subagents] [--phase stream] [--quick]
                                      [--py-spy PATH] [--top 25]

py-spy is not a project dependency: install it anywhere (say ``python3 -m venv /tmp/pyspy &&
/tmp/pyspy/bin/pip install py-spy``) and pass ``--py-spy /tmp/pyspy/bin/py-spy`` if it is not
on PATH. Samples the driver and its agent (``--subprocesses``), then prints the top functions
by self time and the self time per package, for the client and the agent separately. The
samples include start-up (imports) and the phase's warm-up.
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
        side = "agent" if any("_agent.py" in p for p in procs) else "client"
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
    args = ap.parse_args()
    if not args.py_spy:
        raise SystemExit("py-spy not found: install it and pass --py-spy PATH")
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
