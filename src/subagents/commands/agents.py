"""``subagents agents``: the agent registry (list, probe, import).

* ``subagents agents`` lists the registry (built-ins, the default files, then each
  ``--config FILE``): name, provider, command, source, description; ``--json`` prints a JSON
  array of the entries (environment variable *names* only: values may be secrets).
* ``subagents agents --probe [NAME ...]`` starts each agent (all, or the named ones)
  concurrently, initializes it and shuts it down, each within ``--timeout`` seconds, and
  prints a status table (``--json``: the same as objects). An entry with ``urls`` (several
  servers) has its row, ``ok`` only when every server is (else the first failing server's
  status, its reason saying how many failed), then one ``  - URL`` row per server
  (``members`` in ``--json``). Progress goes to stderr: one
  updated ``probing N/M...`` line on a terminal, else one line per finished probe.
  Exit status: 0 when every probe is fine, 1 otherwise. ``failed`` is never fine;
  ``not installed``, ``needs credentials``, ``not logged in`` and ``no network`` are fine when
  probing the whole registry (the built-ins name agents one may not have, or not be logged in
  to) and not fine for an agent named explicitly. A status other than ``ok`` comes with a
  ``hint`` (a ``  NAME: hint`` line on stderr after the table; ``hint`` in ``--json``).
* ``subagents agents import FILE`` reads an entry of the official ACP registry (``agent.json``;
  ``-`` for stdin) and prints it as a ``[agents.NAME]`` table (notes on stderr), or appends it
  to ``--write PATH`` (refused, exit 2, if that file already has an entry of that name).
* ``subagents agents install [NAME ...]`` installs the built-in npm agents (all, or the
  named ones) at their pinned versions into the per-user npm prefix the built-ins are looked
  up in (``$SUBAGENTS_NPM_PREFIX``, else ``$XDG_DATA_HOME/subagents/npm``); its exit statuses
  are in its ``--help`` (:mod:`._agents_install`).

Errors are one line on stderr, then a ``  hint:`` line saying what to do (a traceback first
with ``--debug``); a mistyped agent name gets the closest known names ("did you mean"): exit
2 for a bad argument, file, entry or name, 1 for anything else.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from ._common import (
    DEBUG_HINT,
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_USAGE,
    error_line,
    unknown_agents,
)

if TYPE_CHECKING:
    from ..config import AgentSpec
    from ..providers.probe import ProbeResult

__all__ = ("add_parser", "run")

_COMMAND_CHARS = 48


class _UsageError(Exception):
    """A bad argument or input file (exit 2), with what to do about it."""

    def __init__(self, message: str, *, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        "agents",
        help="list the configured agents (--probe: start each and report)",
        description=(
            "List the agent registry: the built-ins, $XDG_CONFIG_HOME/subagents/subagents.toml, "
            "./subagents.toml, then each --config file (a later entry replaces an earlier one "
            "of the same name). --probe starts each agent, initializes it and reports."
        ),
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="another registry file, read last (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--probe",
        nargs="*",
        metavar="NAME",
        help=(
            "start each agent (all, or the NAMEs, which come right after --probe), "
            "initialize it, shut it down, and report"
        ),
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="bound on each probe (default: 30)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=4,
        metavar="N",
        help="how many agents to probe at once (default: 4)",
    )
    actions = parser.add_subparsers(dest="agents_action", metavar="ACTION")
    importer = actions.add_parser(
        "import",
        help="convert an official ACP registry entry (agent.json) into a registry entry",
        description=(
            "Read an agent.json of the official ACP registry and print it as a [agents.NAME] "
            "table, or append it to --write PATH. Environment variables that could leak "
            "credentials or hijack the launch are dropped (listed on stderr)."
        ),
    )
    importer.add_argument("file", metavar="FILE", help="the agent.json file (- for stdin)")
    importer.add_argument("--name", help="the entry's name (default: the registry id)")
    importer.add_argument(
        "--binary-dir",
        type=Path,
        metavar="DIR",
        help="where the binary distribution's archive is unpacked",
    )
    importer.add_argument(
        "--write", type=Path, metavar="PATH", help="append the entry to this registry file"
    )
    from . import _agents_install

    _agents_install.add_parser(actions)
    return parser


def run(args: argparse.Namespace) -> int:
    debug = bool(getattr(args, "debug", False))
    from ..config import ConfigError

    command = "agents import" if getattr(args, "agents_action", None) == "import" else "agents"

    try:
        if getattr(args, "agents_action", None) == "import":
            return _import(args)
        if getattr(args, "agents_action", None) == "install":
            from . import _agents_install

            return _agents_install.run(args)
        agents = _load(args.config)
        if args.probe is not None:
            return _probe(args, agents)
        _list(agents, as_json=args.json, out=sys.stdout)
        return 0
    except (ConfigError, _UsageError) as exc:
        error_line(command, str(exc), hint=exc.hint, exc=exc, debug=debug)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except Exception as exc:
        hint = None if debug else DEBUG_HINT
        error_line(command, f"{type(exc).__name__}: {exc}", hint=hint, exc=exc, debug=debug)
        return EXIT_FAILED


# ------------------------------------------------------------------ list


def _load(extra: Sequence[Path]) -> dict[str, AgentSpec]:
    from ..config import load_agents

    return load_agents(list(extra))


def _home(text: str) -> str:
    home = str(Path.home())
    if home != os.sep and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home) :]
    return text


def short_command(command: Sequence[str]) -> str:
    """A command line for a table: the program's base name, then the arguments, shortened."""
    if not command:
        return "(in-process)"
    program = command[0]
    name = "python" if program == sys.executable else os.path.basename(program)
    text = " ".join([name, *(_home(arg) for arg in command[1:])])
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 1] + "…"


def short_target(spec: AgentSpec) -> str:
    """What the COMMAND column shows: the command, or the URL(s) an agent is served at."""
    urls = spec.agent_urls
    if not urls:
        return short_command(spec.command)
    text = urls[0] if len(urls) == 1 else f"{urls[0]} (+{len(urls) - 1} more)"
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 1] + "…"


def _entry_json(spec: AgentSpec) -> dict[str, object]:
    return {
        "name": spec.name,
        "provider": spec.provider,
        "command": list(spec.command),
        "urls": list(spec.agent_urls),
        "env_vars": sorted(spec.env),
        "cwd": spec.cwd,
        "model": spec.model,
        "permission": spec.permission,
        "timeout": spec.timeout,
        "startup_timeout": spec.startup_timeout,
        "description": spec.description,
        "options": dict(spec.options),
        "source": spec.source,
    }


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        out.write("  ".join(cells).rstrip() + "\n")


def _list(agents: dict[str, AgentSpec], *, as_json: bool, out: TextIO) -> None:
    if as_json:
        json.dump([_entry_json(spec) for spec in agents.values()], out, indent=2, default=str)
        out.write("\n")
        return
    rows = [
        (
            spec.name,
            spec.provider,
            short_target(spec),
            _home(spec.source),
            spec.description,
        )
        for spec in agents.values()
    ]
    _table(("NAME", "PROVIDER", "COMMAND", "SOURCE", "DESCRIPTION"), rows, out)


# ------------------------------------------------------------------ probe


def _probe(args: argparse.Namespace, agents: dict[str, AgentSpec]) -> int:
    import anyio

    from ..providers.probe import NOT_READY, probe_all

    names: list[str] = list(args.probe)
    unknown = [name for name in names if name not in agents]
    if unknown:
        message, hint = unknown_agents(unknown, agents, [str(p) for p in args.config])
        raise _UsageError(message, hint=hint)
    if not args.timeout > 0:
        raise _UsageError(
            "--timeout must be a positive number of seconds", hint="--timeout 30 (the default)"
        )
    if args.jobs < 1:
        raise _UsageError(
            f"--jobs must be at least 1, not {args.jobs}", hint="--jobs 4 (the default)"
        )
    specs = [agents[name] for name in dict.fromkeys(names)] if names else list(agents.values())
    total = len(specs)
    progress = sys.stderr
    live = progress.isatty()

    def on_done(result: ProbeResult, finished: int) -> None:
        if live:
            progress.write(f"\rprobing {finished}/{total}...")
        else:
            progress.write(f"probed {result.name}: {_status(result)}\n")
        progress.flush()

    if live:
        progress.write(f"probing 0/{total}...")
        progress.flush()
    try:
        results = anyio.run(lambda: probe_all(specs, args.timeout, jobs=args.jobs, on_done=on_done))
    finally:
        if live:
            progress.write("\r\033[K")
            progress.flush()
    out = sys.stdout
    if args.json:
        json.dump([r.to_json() for r in results], out, indent=2)
        out.write("\n")
    else:
        rows = [
            (
                r.name if r.url is None else f"  - {r.url}",
                _status(r),
                r.version or "-",
                ", ".join(r.capabilities) or "-",
                "-" if r.start_ms is None else str(r.start_ms),
            )
            for result in results
            for r in (result, *result.members)
        ]
        _table(("NAME", "STATUS", "VERSION", "CAPABILITIES", "START_MS"), rows, out)
    out.flush()
    for r in results:
        if r.hint and not args.json:
            sys.stderr.write(f"  {r.name}: {r.hint}\n")
    fine = {"ok"} if names else {"ok", "not installed", *NOT_READY}
    return 0 if all(r.status in fine for r in results) else EXIT_FAILED


def _status(result: ProbeResult) -> str:
    if result.status == "failed":
        return f"failed: {result.reason}"
    return result.status


# ------------------------------------------------------------------ import


def _read_entry(file: str) -> dict[str, Any]:
    try:
        if file == "-":
            text = sys.stdin.read()
            where = "stdin"
        else:
            text = Path(file).read_text(encoding="utf-8")
            where = file
    except OSError as exc:
        raise _UsageError(
            f"{file}: cannot read it: {exc.strerror or exc}",
            hint="give the path of an agent.json of the ACP registry, or - to read stdin",
        ) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _UsageError(
            f"{where}: not valid JSON: {exc}",
            hint="give an agent.json of the ACP registry (one JSON object)",
        ) from exc
    if not isinstance(data, dict):
        raise _UsageError(
            f"{where}: expected an agent entry (a JSON object)",
            hint="give an agent.json of the ACP registry (one JSON object)",
        )
    return cast(dict[str, Any], data)


def _import(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..config import ConfigError, from_acp_registry, parse_agents, to_toml

    entry = _read_entry(args.file)
    try:
        # Absolute: the entry's relative paths would be taken from the registry file's
        # directory, not from this one.
        binary_dir = Path(os.path.abspath(args.binary_dir)) if args.binary_dir else None
        spec, notes = from_acp_registry(entry, binary_dir=binary_dir)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"{args.file}: not a valid ACP registry entry ({exc!r})",
            hint="give an agent.json of the ACP registry: an id and a distribution "
            "(npx, uvx or binary)",
        ) from exc
    if args.name:
        spec = replace(spec, name=args.name)
    text = to_toml(spec)
    parse_agents(text, f"the converted entry {spec.name!r}")  # the name and fields are valid
    target: Path | None = args.write
    if target is None:
        _notes(notes)
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    existing = ""
    if target.exists():
        try:
            existing = target.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"{target}: cannot read it: {exc.strerror}", hint="give a readable --write file"
            ) from exc
        if spec.name in parse_agents(existing, str(target)):
            raise _UsageError(
                f"{target} already has an entry agents.{spec.name}",
                hint="pass --name NAME to import it under another name",
            )
    _notes(notes)
    separator = "" if not existing else ("\n" if existing.endswith("\n") else "\n\n")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as handle:
            handle.write(separator + text)
    except OSError as exc:
        raise ConfigError(
            f"{target}: cannot write it: {exc.strerror}",
            hint="give --write a path in a directory you can write to",
        ) from exc
    sys.stderr.write(f"added agents.{spec.name} to {target}\n")
    return 0


def _notes(notes: Sequence[str]) -> None:
    for note in notes:
        sys.stderr.write(f"note: {note}\n")
    sys.stderr.flush()
