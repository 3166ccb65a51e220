"""Interleaved benchmark: `subagents` vs the official ACP Python SDK vs an asyncio floor.

    .venv/bin/python bench/run.py [--quick] [--reps N] [--out FILE]

Every repetition runs each implementation once, in a new random order, as two driver processes
one after the other: one spawns and initializes 5 fresh agents, one after the other (start-up
and RSS), the other spawns its own agent and runs every message phase against it. The same
shuffled order also holds an "imports" slot: rounds of whole-process start-up commands
(``bench/startup.py``), each round A/B interleaved in its own random order. After the
repetitions, the event-loop stall bench (``bench/stall.py``: a 1 ms heartbeat beside a typed
ACP child's start, a fresh process per repetition, asyncio and trio interleaved) runs its own
repetitions (``--stall-reps``), then the remote bench (``bench/remote.py``: round trip, stream
and connect over loopback HTTP and WebSocket vs stdio, ours vs the official SDK's client and
server, every configuration once per repetition in a new random order; ``--remote-reps``), then
the A2A bench (``bench/a2a.py``: start → first output and a short turn through ``A2AProvider``
vs the ``a2a-sdk``'s own client on the same server, fresh client processes; ``--a2a-reps``).
Raw JSON lines go to ``bench/results/raw-<timestamp>.jsonl``.
The rendered summary is written to ``--out FILE`` only when it is given (``--out BENCHMARKS.md``
updates the tracked summary); without it the summary goes to stdout (progress and the raw
file's path go to stderr) and no file but the raw one is written. ``bench/render.py RAW --out
FILE`` renders a raw file again later.

On first use it creates ``bench/.venvs/acp-py`` (``python3 -m venv`` + pip) holding only
``agent-client-protocol`` and its dependencies.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import hashlib
import json
import os
import platform
import random
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

import a2a_bench
import remote
import render
import stall
import startup

BENCH = Path(__file__).resolve().parent
# The drivers import their helpers as top-level modules (``_wire``): make that work here too.
sys.path.insert(0, str(BENCH / "drivers"))
from drivers._common import FULL, PHASES, QUICK, RAISED_LIMIT, SPAWNS  # noqa: E402

ROOT = BENCH.parent
DRIVERS = BENCH / "drivers"
RESULTS = BENCH / "results"
ACP_VENV = BENCH / ".venvs" / "acp-py"
ACP_PIN = "agent-client-protocol==0.12.1"
DEFAULT_IMPLS = (
    "subagents",
    "subagents+typed",
    "subagents/reference-agent",
    "floor",
    "acp-py",
    "subagents/fd-streams",
)
#: Also runnable with --impls, not run by default.
EXTRA_IMPLS = ("subagents/anyio-pipes",)
ALL_IMPLS = DEFAULT_IMPLS + EXTRA_IMPLS
#: Distributions allowed in the clean acp-py venv: the SDK and its runtime dependencies.
ACP_ALLOWED = {
    "agent-client-protocol",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-inspection",
    "typing-extensions",
}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def acp_python() -> Path:
    return ACP_VENV / "bin" / "python"


def base_python() -> Path:
    """The interpreter this bench runs on, outside its venv (``.venv`` is made from it by
    ``scripts/setup``): the SDKs' venvs are made from it too, so that every implementation
    runs on the same build (a distribution's, with profile-guided optimisation, and a pyenv
    one differ by ~20% of CPU on this machine)."""
    return Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


def venv_freeze(venv: Path) -> list[str]:
    """``pip freeze`` of ``venv``, sorted."""
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return sorted(line.strip() for line in out.stdout.splitlines() if line.strip())


def _on_base_python(venv: Path) -> bool:
    """Whether ``venv`` was made from :func:`base_python` (same prefix, same version)."""
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sys; print(sys.base_prefix, sys.version)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.strip() == f"{sys.base_prefix} {sys.version}"


def _check_clean(venv: Path, freeze: list[str], allowed: set[str]) -> None:
    names = {_norm(line.split("==")[0].split(" @ ")[0]) for line in freeze}
    extra = names - {_norm(n) for n in allowed}
    if extra:
        raise SystemExit(
            f"{venv} holds more than the SDK ({sorted(extra)}); delete it and re-run so that "
            "the SDK is measured without optional packages on its hot path"
        )


def ensure_clean_venv(venv: Path, pin: str, allowed: set[str], tag: str) -> list[str]:
    """Create the clean venv ``venv`` holding ``pin`` (and only the packages named in
    ``allowed``) if needed, or again if it was made from another interpreter than
    :func:`base_python`: ``-m venv``, then pip from the package index. Returns its ``pip
    freeze``."""
    python = venv / "bin" / "python"
    if python.exists():
        try:
            freeze = venv_freeze(venv) if _on_base_python(venv) else []
        except (subprocess.SubprocessError, OSError):
            freeze = []
        if _norm(pin) in {_norm(x) for x in freeze}:
            _check_clean(venv, freeze, allowed)
            return freeze
        print(
            f"[{tag}] {venv.name}: incomplete or another interpreter's, recreating it",
            file=sys.stderr,
            flush=True,
        )
        shutil.rmtree(venv)
    print(
        f"[{tag}] creating {venv.relative_to(ROOT)} ({base_python()} -m venv), "
        f"then pip install {pin}",
        file=sys.stderr,
        flush=True,
    )
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(base_python()), "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", pin],
        check=True,
        timeout=900,
    )
    freeze = venv_freeze(venv)
    _check_clean(venv, freeze, allowed)
    return freeze


@functools.cache
def ensure_acp_venv() -> list[str]:
    """Create the clean acp-py venv if needed; return its ``pip freeze``."""
    return ensure_clean_venv(ACP_VENV, ACP_PIN, ACP_ALLOWED, "bench")


def probe_import(python: Path, code: str) -> str | None:
    """Run ``code`` in ``python``; return None on success, else the last stderr line."""
    r = subprocess.run(
        [str(python), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=driver_env(),
    )
    if r.returncode == 0:
        return None
    lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
    return lines[-1] if lines else f"exit {r.returncode}"


def driver_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("BENCH_SCALE", None)  # profiling knob (bench/profile.py); never in a real run
    # Start-up is measured as a default Python runs: bytecode caches written and used (with
    # this set, a stale or missing .pyc would be recompiled on every start).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def machine_facts() -> dict[str, Any]:
    model = "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
    }


def project_versions() -> dict[str, str]:
    from importlib import metadata

    out: dict[str, str] = {}
    for dist in ("subagents", "anyio", "pydantic", "pydantic-core"):
        try:
            out[f"{dist} (project venv)"] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[f"{dist} (project venv)"] = "not installed"
    return out


def project_revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "src"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    rev = head.stdout.strip() if head.returncode == 0 else "no commit yet"
    if dirty.returncode == 0 and dirty.stdout.strip():
        rev += " + uncommitted changes in src/"
    return rev


def driver_command(impl: str) -> list[str]:
    """The command line of ``impl``'s driver (without ``--out``)."""
    python = str(Path(sys.executable))
    if impl == "floor":
        return [python, str(DRIVERS / "floor_client.py")]
    if impl == "acp-py":
        ensure_acp_venv()
        return [str(acp_python()), str(DRIVERS / "acp_client.py")]
    if impl == "subagents/reference-agent":
        return [python, str(DRIVERS / "reference_client.py")]
    cmd = [python, str(DRIVERS / "subagents_client.py")]
    if impl == "subagents+typed":
        cmd += ["--variant", "typed"]
    elif impl == "subagents/anyio-pipes":
        cmd += ["--transport", "anyio"]
    elif impl == "subagents/fd-streams":
        cmd += ["--transport", "fd"]
    elif impl != "subagents":
        raise ValueError(f"unknown implementation {impl!r}")
    return cmd


CLK_TCK = os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds the whole machine spent busy (user+nice+system+irq+softirq), /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / CLK_TCK


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wait_quiet(max_wait: float, threshold: float = 0.2, window: float = 0.5) -> tuple[float, float]:
    """Wait (at most ``max_wait`` s) until other processes use < ``threshold`` cores.

    Returns (seconds waited, last measured load in cores). The bench shares the machine with
    whatever else runs (a test suite, say); this keeps drivers from starting in a burst.
    """
    t0 = time.perf_counter()
    load = 0.0
    while True:
        b0, c0 = machine_busy_s(), time.process_time()
        time.sleep(window)
        load = (machine_busy_s() - b0 - (time.process_time() - c0)) / window
        waited = time.perf_counter() - t0
        if load < threshold or waited >= max_wait:
            return waited, load


def src_fingerprint() -> str:
    """A hash of the library's source, to notice edits made while the bench runs."""
    h = hashlib.sha256()
    for path in sorted((ROOT / "src").rglob("*.py")):
        h.update(str(path.relative_to(ROOT)).encode())
        with contextlib.suppress(OSError):
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def run_driver(
    cmd: list[str], out: Path, timeout: float, logfile: Path
) -> tuple[str, int | None, float, float, dict[str, Any] | None, str]:
    """Run one driver in its own session; kill its whole process group if it overruns.

    Also measures the machine's background load while it ran: busy CPU time of the whole
    machine minus that of the driver and its agent (both reaped, so in RUSAGE_CHILDREN).
    """
    t0 = time.perf_counter()
    busy0, kids0, own0 = machine_busy_s(), children_cpu_s(), time.process_time()
    with open(logfile, "wb") as logf:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=driver_env(),
        )
        status = "ok"
        try:
            rc: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            status = "killed (run-level timeout)"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
        # whatever the driver left behind (an agent it failed to reap) goes too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    wall = time.perf_counter() - t0
    background = (
        machine_busy_s() - busy0 - (children_cpu_s() - kids0) - (time.process_time() - own0)
    )
    result: dict[str, Any] | None = None
    if out.exists():
        try:
            result = json.loads(out.read_text())
        except json.JSONDecodeError:
            result = None
    if status == "ok" and (rc != 0 or result is None):
        status = f"failed (exit {rc})"
    tail = ""
    if status != "ok" or _has_errors(result):
        tail = logfile.read_bytes()[-3000:].decode("utf-8", "replace")
    return status, rc, wall, max(0.0, background) / wall * 100, result, tail


def _has_errors(result: dict[str, Any] | None) -> bool:
    phases = (result or {}).get("phases") or {}
    return any(isinstance(v, dict) and "error" in v for v in phases.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 repetition, fewer messages (<~60 s)")
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 5, quick 1)")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the summary to FILE (--out BENCHMARKS.md updates the tracked one); "
        "default: print it on stdout",
    )
    ap.add_argument(
        "--impls",
        default=",".join(DEFAULT_IMPLS),
        help="comma-separated subset of: " + ", ".join(ALL_IMPLS),
    )
    ap.add_argument("--seed", type=int, default=None, help="shuffle seed (default: random)")
    ap.add_argument(
        "--driver-timeout", type=float, default=None, help="run-level bound per driver, s"
    )
    ap.add_argument("--budget", type=float, default=None, help="bound for the whole run, s")
    ap.add_argument(
        "--import-rounds",
        type=int,
        default=None,
        help="counted rounds of the whole-process start-up commands, spread over the "
        "repetitions after one warm-up round (default 10, quick 6; 0: skip)",
    )
    ap.add_argument(
        "--quiet-wait",
        type=float,
        default=None,
        help="before each driver, wait up to this many s for the machine to be idle "
        "(default 10, quick 2)",
    )
    ap.add_argument(
        "--stall-reps",
        type=int,
        default=None,
        help="repetitions per backend (asyncio, trio) of the event-loop stall bench, run after "
        "the interleaved repetitions (default 5, quick 2; 0: skip)",
    )
    ap.add_argument(
        "--remote-reps",
        type=int,
        default=None,
        help="repetitions of the remote bench (bench/remote.py: every configuration once per "
        "repetition, in a new random order), run after the stall bench (default 5, quick 1; "
        "0: skip)",
    )
    ap.add_argument(
        "--a2a-reps",
        type=int,
        default=None,
        help="repetitions of the A2A bench (bench/a2a.py: one server, both clients in a new "
        "random order, fresh client processes), run after the remote bench (default 5, quick 1; "
        "0: skip)",
    )
    args = ap.parse_args()

    quick: bool = args.quick
    reps: int = args.reps if args.reps is not None else (1 if quick else 5)
    driver_timeout: float = args.driver_timeout or (90.0 if quick else 240.0)
    budget: float = args.budget or (150.0 if quick else 900.0)
    quiet_wait: float = args.quiet_wait if args.quiet_wait is not None else (2.0 if quick else 10.0)
    seed: int = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    wanted = [x.strip() for x in args.impls.split(",") if x.strip()]
    import_rounds: int = (
        args.import_rounds if args.import_rounds is not None else (6 if quick else 10)
    )
    rounds_per_rep = -(-import_rounds // reps) if import_rounds > 0 else 0
    stall_reps: int = args.stall_reps if args.stall_reps is not None else (2 if quick else 5)
    remote_reps: int = args.remote_reps if args.remote_reps is not None else (1 if quick else 5)
    a2a_reps: int = args.a2a_reps if args.a2a_reps is not None else (1 if quick else 5)
    t_start = time.perf_counter()

    project_python = Path(sys.executable)
    impls: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    meta_extra: dict[str, Any] = {}

    for impl in wanted:
        if impl not in ALL_IMPLS:
            raise SystemExit(f"unknown implementation {impl!r}")
        if impl == "acp-py":
            try:
                meta_extra["acp_freeze"] = ensure_acp_venv()
            except (subprocess.SubprocessError, OSError) as exc:
                skipped[impl] = f"could not create the acp-py venv: {exc}"
                continue
            meta_extra["acp_version"] = ACP_PIN.split("==")[1]
        elif impl.startswith("subagents"):
            err = probe_import(
                project_python, "import subagents.rpc, subagents.transports; import anyio"
            )
            if err is None and impl == "subagents/reference-agent":
                err = probe_import(project_python, "import subagents.transports.acp_client")
            if err is None and impl == "subagents+typed":
                err = probe_import(
                    project_python,
                    "from subagents.protocol.acp import SessionNotification, "
                    "AgentMessageChunkSessionUpdate, TextContentBlock",
                )
                if err is not None:
                    err = f"generated ACP models not importable ({err})"
            if err is not None:
                skipped[impl] = err
                continue
        impls[impl] = driver_command(impl)
    for name, why in skipped.items():
        log(f"skipping {name}: {why}")
    if not impls:
        raise SystemExit("nothing to run")

    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    raw_path = RESULTS / f"raw-{stamp}.jsonl"
    out_path: Path | None = args.out
    if out_path is not None and not out_path.resolve().parent.is_dir():
        raise SystemExit(f"--out {out_path}: {out_path.resolve().parent} is not a directory")
    command = ".venv/bin/python bench/run.py" + (" --quick" if quick else "")
    if args.reps is not None:
        command += f" --reps {reps}"
    if out_path is not None:
        shown = out_path.resolve()
        shown = shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown
        command += f" --out {shlex.quote(str(shown))}"
    if args.impls != ap.get_default("impls"):
        command += f" --impls {shlex.quote(args.impls)}"
    if args.import_rounds is not None:
        command += f" --import-rounds {import_rounds}"
    if args.stall_reps is not None:
        command += f" --stall-reps {stall_reps}"
    if args.remote_reps is not None:
        command += f" --remote-reps {remote_reps}"
    if args.a2a_reps is not None:
        command += f" --a2a-reps {a2a_reps}"

    pythons: dict[str, Path] = {}
    timer_bin = startup.gnu_time()
    if rounds_per_rep:
        pythons["project"] = project_python
        if acp_python().exists() and "acp-py" not in skipped:
            try:
                ensure_acp_venv()
                pythons["acp-py"] = acp_python()
            except (subprocess.SubprocessError, OSError, SystemExit) as exc:
                log(f"import rounds without acp-py: {exc}")

    meta: dict[str, Any] = {
        "kind": "meta",
        "started_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "command": command,
        "argv": sys.argv,
        "quick": quick,
        "reps": reps,
        "seed": seed,
        "raw_file": str(raw_path.relative_to(ROOT)),
        "impls": list(impls),
        "skipped": skipped,
        "machine": machine_facts(),
        "versions": project_versions(),
        "project": project_revision(),
        "src_fingerprint": src_fingerprint(),
        "quiet_gate": f"wait up to {quiet_wait:.0f} s for background load < 0.2 cores",
        "workload": (QUICK if quick else FULL).__dict__,
        "raised_limit": RAISED_LIMIT,
        "driver_timeout_s": driver_timeout,
        "spawns": SPAWNS,
        "peak_rss_via": str(timer_bin) + " -f %M" if timer_bin else None,
        "import_rounds": rounds_per_rep * reps,
        "stall_reps": stall_reps,
        "remote_reps": remote_reps,
        "a2a_reps": a2a_reps,
        "import_cmds": {
            c.key: {"label": c.label, "command": c.shown()}
            for c in startup.IMPORT_CMDS
            if c.venv in pythons
        },
        **meta_extra,
    }
    if "acp_freeze" in meta_extra:
        meta["versions"]["agent-client-protocol (acp-py venv)"] = meta_extra["acp_version"]
        for line in meta_extra["acp_freeze"]:
            if line.lower().startswith("pydantic=="):
                meta["versions"]["pydantic (acp-py venv)"] = line.split("==")[1]

    rng = random.Random(seed)
    log(f"{reps} repetition(s) of {', '.join(impls)}; seed {seed}; raw data {raw_path}")
    with open(raw_path, "w") as raw, tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        raw.write(json.dumps(meta) + "\n")
        raw.flush()
        env = driver_env()
        if pythons:
            wait_quiet(quiet_wait)
            startup.run_round(pythons, env, rng, timer_bin)  # warm-up, not kept
        for rep in range(reps):
            order = list(impls) + (["imports"] if pythons else [])
            rng.shuffle(order)
            for slot, impl in enumerate(order):
                elapsed = time.perf_counter() - t_start
                if impl == "imports":
                    if elapsed > budget:
                        log(f"rep {rep + 1}/{reps}: import rounds skipped, budget spent")
                        continue
                    for k in range(rounds_per_rep):
                        waited, pre_load = wait_quiet(quiet_wait)
                        round_order, results = startup.run_round(pythons, env, rng, timer_bin)
                        rec_i = {
                            "kind": "imports",
                            "rep": rep,
                            "slot": slot,
                            "round": k,
                            "order": round_order,
                            "pre_load_cores": pre_load,
                            "quiet_wait_s": waited,
                            "results": results,
                        }
                        raw.write(json.dumps(rec_i) + "\n")
                        raw.flush()
                        log(
                            f"rep {rep + 1}/{reps}: import round {k + 1}/{rounds_per_rep} "
                            + _ibrief(results)
                        )
                    continue
                rec: dict[str, Any] = {"kind": "run", "rep": rep, "slot": slot, "impl": impl}
                if elapsed > budget:
                    rec.update(status="skipped (run budget spent)", wall_s=0.0, result=None)
                    raw.write(json.dumps(rec) + "\n")
                    log(f"rep {rep + 1}/{reps}: {impl} skipped, budget {budget:.0f} s spent")
                    continue
                # Two driver processes, one after the other: the spawns alone, then the message
                # phases in a process that spawned nothing before its own agent.
                runs_: list[tuple[str, int | None, float, float, dict[str, Any] | None, str]] = []
                waited = pre_load = 0.0
                for part in ("spawn", "messages"):
                    if part == "messages" and impl in render.STARTUP_ONLY:
                        continue
                    out = Path(tmp) / f"{rep}-{slot}-{part}.json"
                    only = "spawn" if part == "spawn" else MESSAGE_PHASES
                    cmd = [*impls[impl], "--out", str(out), "--only", only]
                    if quick:
                        cmd.append("--quick")
                    w_, l_ = wait_quiet(quiet_wait)
                    waited += w_
                    pre_load = max(pre_load, l_)
                    runs_.append(
                        run_driver(cmd, out, driver_timeout, Path(tmp) / f"{rep}-{slot}-{part}.log")
                    )
                status, rc, wall, bg_pct, result, tail = _combine(runs_)
                rec.update(
                    status=status,
                    rc=rc,
                    wall_s=wall,
                    background_pct=bg_pct,
                    quiet_wait_s=waited,
                    pre_load_cores=pre_load,
                    result=result,
                )
                if tail:
                    rec["log_tail"] = tail
                raw.write(json.dumps(rec) + "\n")
                raw.flush()
                log(
                    f"rep {rep + 1}/{reps}: {impl:<16} {status} in {wall:5.1f} s "
                    f"(background {bg_pct:.0f}% of a core){_brief(result)}"
                )
                if tail:
                    print(tail, file=sys.stderr)
                time.sleep(0.3)
        if stall_reps > 0:
            run_stall(raw, stall_reps, rng, quiet_wait, budget - (time.perf_counter() - t_start))
        if remote_reps > 0:
            run_remote(raw, remote_reps, rng, quiet_wait, quick)
        if a2a_reps > 0:
            run_a2a(raw, a2a_reps, rng, quiet_wait, quick)
        if pythons:
            log("python -X importtime breakdowns")
            wait_quiet(quiet_wait)
            breakdown = startup.importtime(pythons, env)
            raw.write(json.dumps({"kind": "importtime", "results": breakdown}) + "\n")
        total = time.perf_counter() - t_start
        end = {"kind": "end", "total_s": total, "src_fingerprint": src_fingerprint()}
        raw.write(json.dumps(end) + "\n")

    summary = render.render(*render.load(raw_path))
    if out_path is None:
        sys.stdout.write(summary)
        sys.stdout.flush()
        log(
            f"done in {total:.0f} s; raw data in {raw_path}; the summary is on stdout "
            "(--out BENCHMARKS.md writes it there)"
        )
        return 0
    out_path.write_text(summary)
    log(f"done in {total:.0f} s; wrote {out_path} (raw: {raw_path})")
    return 0


MESSAGE_PHASES = ",".join(p for p in PHASES if p != "spawn")


def run_stall(raw: TextIO, reps: int, rng: random.Random, quiet_wait: float, left_s: float) -> None:
    """The event-loop stall bench (``bench/stall.py``'s driver): one warm-up process, then
    ``reps`` repetitions, each running both backends in a new random order as fresh processes;
    a ``stall`` record per process (or one saying why none ran)."""
    if left_s <= 0:
        log("event-loop stall bench skipped, budget spent")
        raw.write(json.dumps({"kind": "stall", "skipped": "run budget spent"}) + "\n")
        return
    env = driver_env()
    stall.measure(stall.BACKENDS[0], env)  # warm-up (bytecode caches), not kept
    deadline = time.perf_counter() + left_s
    for rep in range(reps):
        order = list(stall.BACKENDS)
        rng.shuffle(order)
        for slot, backend in enumerate(order):
            if time.perf_counter() > deadline:
                log(f"stall {rep + 1}/{reps}: {backend} skipped, budget spent")
                continue
            waited, pre_load = wait_quiet(quiet_wait)
            res = stall.measure(backend, env)
            rec = {
                "kind": "stall",
                "rep": rep,
                "slot": slot,
                "backend": backend,
                "pre_load_cores": pre_load,
                "quiet_wait_s": waited,
                "result": res,
            }
            raw.write(json.dumps(rec) + "\n")
            raw.flush()
            brief = res.get("error") or (
                f"longest gap {res['start_max_ms']:.1f} ms (idle {res['idle_max_ms']:.1f} ms)"
            )
            log(f"stall {rep + 1}/{reps}: {backend:<7} {brief}")


def run_remote(raw: TextIO, reps: int, rng: random.Random, quiet_wait: float, quick: bool) -> None:
    """The remote bench (``bench/remote.py``): ``reps`` repetitions of every configuration,
    each in a new random order, the quiet gate before each; a ``remote`` record per run. It has
    a budget of its own (``remote.BUDGET_S``), not what is left of ``--budget``."""
    err = probe_import(
        Path(sys.executable),
        "import subagents.remote.server, subagents.remote.client, acp.http.client, "
        "acp.ws.client, hypercorn",
    )
    if err is not None:
        log(f"remote bench skipped: {err}")
        raw.write(json.dumps({"kind": "remote", "skipped": f"not importable: {err}"}) + "\n")
        return
    remote.run_reps(
        raw,
        reps,
        rng,
        remote.QUICK if quick else remote.FULL,
        gate=lambda: wait_quiet(quiet_wait),
        left_s=remote.QUICK_BUDGET_S if quick else remote.BUDGET_S,
        log=log,
    )


def run_a2a(raw: TextIO, reps: int, rng: random.Random, quiet_wait: float, quick: bool) -> None:
    """The A2A bench (``bench/a2a.py``): ``reps`` repetitions, each one server and both clients
    (ours, the SDK's) in a new random order, the quiet gate before each client; an ``a2a``
    record per client run. It has a budget of its own (``a2a_bench.BUDGET_S``)."""
    err = probe_import(
        Path(sys.executable),
        "import subagents.providers.a2a, a2a.client, a2a.server.routes, hypercorn, starlette",
    )
    if err is not None:
        log(f"A2A bench skipped: {err}")
        raw.write(json.dumps({"kind": "a2a", "skipped": f"not importable: {err}"}) + "\n")
        return
    a2a_bench.run_reps(
        raw,
        reps,
        rng,
        a2a_bench.QUICK if quick else a2a_bench.FULL,
        gate=lambda: wait_quiet(quiet_wait),
        left_s=a2a_bench.QUICK_BUDGET_S if quick else a2a_bench.BUDGET_S,
        log=log,
    )


def _combine(
    parts: list[tuple[str, int | None, float, float, dict[str, Any] | None, str]],
) -> tuple[str, int | None, float, float, dict[str, Any] | None, str]:
    """One record from a slot's driver runs: the last run's result with the spawn phase of the
    first merged in; the first failure's status; summed wall; wall-weighted background."""
    status, rc = "ok", 0
    for st, code, *_ in parts:
        if st != "ok":
            status, rc = st, code
            break
    wall = sum(p[2] for p in parts)
    bg = sum(p[2] * p[3] for p in parts) / wall if wall else 0.0
    result: dict[str, Any] | None = None
    for p in parts:
        res = p[4]
        if res is None:
            continue
        if result is None:
            result = res
        else:
            spawn = (result.get("phases") or {}).get("spawn")
            result = dict(res)
            if spawn is not None:
                result["phases"] = {"spawn": spawn, **(res.get("phases") or {})}
    tail = "\n".join(p[5] for p in parts if p[5])
    return status, rc, wall, bg, result, tail


def _ibrief(results: dict[str, dict[str, Any]]) -> str:
    return ", ".join(f"{k} {v['wall_ms']:.0f} ms" for k, v in results.items())


def _brief(result: dict[str, Any] | None) -> str:
    ph = (result or {}).get("phases") or {}
    parts = []
    with contextlib.suppress(KeyError, TypeError):
        parts.append(f"spawn→init {ph['spawn']['init_ms']:.0f} ms")
    with contextlib.suppress(KeyError, TypeError):
        parts.append(f"rtt p50 {ph['rtt']['p50_us']:.0f} µs")
    with contextlib.suppress(KeyError, TypeError):
        parts.append(f"stream {ph['stream']['cpu_us']:.1f} µs/msg")
    with contextlib.suppress(KeyError, TypeError):
        parts.append(f"16 MiB {ph['big']['down_ms']:.0f}/{ph['big']['up_ms']:.0f} ms")
    errs = [f"{k}: {v['error']}" for k, v in ph.items() if isinstance(v, dict) and "error" in v]
    brief = "; " + ", ".join(parts) if parts else ""
    return brief + ("; ERROR " + "; ".join(errs) if errs else "")


if __name__ == "__main__":
    sys.exit(main())
