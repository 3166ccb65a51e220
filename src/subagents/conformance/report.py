"""Reports of a suite run: for people (terminal), for machines (JSON, JUnit XML), baselines.

The JSON report (``format: "subagents-acp-conformance/2"``, described by ``report.schema.json``
beside this module) has the run (suite version, spec version and commit, start time, command,
the agent as an object: command, cwd, and name/version/title from ``initialize``, verdict, exit
code, duration, counts per tier and status, the unjudged mandatory requirements, why the agent
could not start) and one entry per requirement: id, area, tier, gate, text, citation, status,
duration, message, notes, what blocked it, whether the baseline expected it to fail, what the
suite does to judge it and how to fix a failure (``checks``, ``fix``), and for
every check that did not pass (or every check, with ``--transcripts all``) the transcript (each
line with process number, time, direction and text, or base64 when it is not UTF-8) and the
stderr tail.

A baseline file lists requirements expected to fail, with the reason:
``{"expected_failures": {"ACP-INIT-003": "echoes the requested version"}}``, and optionally
those that fail only in some runs (a race in the agent):
``{"intermittent_failures": {"ACP-CANCEL-002": "late chunks after a cancel, some runs"}}``.
Writing a baseline keeps the intermittent entries of the one the run was given.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO, cast

from .. import __version__
from .remote import BRIDGE_NOTE
from .requirements import BASIC_EXCHANGE, REQUIREMENTS, SPEC_COMMIT, Requirement, Tier
from .runner import UNJUDGED, Baseline, RequirementResult, Status, SuiteReport

PROTOCOL_VERSION = 1
"""The ACP protocol version the suite judges."""

__all__ = (
    "REPORT_WIDTH",
    "exchange_line",
    "explain_requirement",
    "load_baseline",
    "render_requirements",
    "render_terminal",
    "report_width",
    "to_json",
    "to_junit",
    "verdict_line",
    "wrap",
    "write_baseline",
)

FORMAT = "subagents-acp-conformance/2"
_TIERS = (Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY, Tier.INFORMATIONAL)
_STATUSES = (
    Status.PASS,
    Status.FAIL,
    Status.SKIP,
    Status.NOT_APPLICABLE,
    Status.BLOCKED,
    Status.NOT_EXERCISED,
    Status.INCONCLUSIVE,
    Status.INFO,
)


def load_baseline(path: str | Path) -> Baseline:
    """The known failures in a baseline file; a ``ValueError`` if malformed."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the baseline {path}: {exc}") from exc
    shape = f'baseline {path}: expected {{"expected_failures": {{id: reason}}}}'
    if not isinstance(data, dict):
        raise ValueError(shape)
    data = cast(dict[str, Any], data)
    expected = data.get("expected_failures")
    intermittent = data.get("intermittent_failures", {})
    if not isinstance(expected, dict) or not isinstance(intermittent, dict):
        raise ValueError(shape)
    try:
        return Baseline(
            {str(k): str(v) for k, v in cast(dict[str, Any], expected).items()},
            {str(k): str(v) for k, v in cast(dict[str, Any], intermittent).items()},
        )
    except ValueError as exc:
        raise ValueError(f"baseline {path}: {exc}") from exc


def write_baseline(report: SuiteReport, path: str | Path) -> None:
    """Write the requirements that failed in ``report`` as a baseline (the intermittent entries
    of the baseline it ran with are kept, failing or not)."""
    failures = {
        r.requirement.id: r.expected_failure or r.message
        for r in report.results
        if r.status is Status.FAIL and not r.intermittent
    }
    intermittent = {
        r.requirement.id: r.expected_failure or r.message for r in report.results if r.intermittent
    }
    payload: dict[str, Any] = {
        "format": FORMAT,
        "agent": report.agent.describe() if report.agent and report.agent.name else None,
        "expected_failures": dict(sorted(failures.items())),
    }
    if intermittent:
        payload["intermittent_failures"] = dict(sorted(intermittent.items()))
    Path(path).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def _result_json(result: RequirementResult) -> dict[str, Any]:
    requirement = result.requirement
    entry: dict[str, Any] = {
        "id": requirement.id,
        "area": requirement.area,
        "tier": requirement.tier.value,
        "gate": requirement.gate,
        "text": requirement.text,
        "citation": requirement.citation,
        "checks": requirement.checks,
        "fix": requirement.fix,
        "status": result.status.value,
        "duration": round(result.duration, 4),
        "message": result.message,
        "notes": result.notes,
        "blocked_by": result.blocked_by,
        "attempts": result.attempts,
        "unjudged": result.unjudged,
        "expected_failure": result.expected_failure,
        "intermittent": result.intermittent,
        "stale_baseline": result.stale_baseline,
    }
    if result.unstable_fields:
        entry["unstable_fields"] = result.unstable_fields
    if result.transcript or result.stderr_tail:
        entry["transcript"] = result.transcript
        entry["stderr_tail"] = result.stderr_tail
    return entry


def to_json(report: SuiteReport) -> dict[str, Any]:
    failure = report.start_failure
    return {
        "format": FORMAT,
        "suite_version": __version__,
        "spec": {"protocol_version": PROTOCOL_VERSION, "commit": SPEC_COMMIT},
        "started_at": report.started_at,
        "command": list(report.command),
        "agent": dataclasses.asdict(report.agent) if report.agent else None,
        "verdict": report.verdict,
        "exit_code": report.exit_code,
        "duration": round(report.duration, 3),
        "strict": report.strict,
        "probe_error": report.probe_error,
        "start_failure": None
        if failure is None
        else {**dataclasses.asdict(failure), "stdout_lines": list(failure.stdout_lines)},
        "auth_required": report.auth_required,
        "bridge": None if report.bridge is None else report.bridge.to_json(),
        "counts": report.counts(),
        "unjudged": [r.requirement.id for r in report.unjudged],
        "stale_baseline": [r.requirement.id for r in report.results if r.stale_baseline],
        "requirements": [_result_json(r) for r in report.results],
    }


def to_junit(report: SuiteReport, *, advisory_failures: bool = False) -> str:
    """JUnit XML: one testsuite per area, one testcase per requirement.

    A failing mandatory or capability requirement is a ``<failure>``; an advisory one is a
    passing testcase carrying the finding (property ``finding`` and ``system-out``) unless
    ``advisory_failures``, so CI agrees with the verdict. Unjudged, not applicable and blocked
    requirements are ``<skipped>`` with the cause; an agent that could not start is one
    ``<error>``.
    """
    root = ET.Element("testsuites", name="ACP conformance", time=f"{report.duration:.3f}")
    if report.start_failure is not None:
        failure = report.start_failure
        suite = ET.SubElement(
            root, "testsuite", name="ACP-START", tests="1", failures="0", errors="1", skipped="0"
        )
        case = ET.SubElement(suite, "testcase", classname="acp.start", name="the agent starts")
        error = ET.SubElement(case, "error", message=_clean(failure.describe()))
        error.text = _clean(_start_failure_text(report))
        return ET.tostring(root, encoding="unicode", xml_declaration=True)
    areas: dict[str, list[RequirementResult]] = {}
    for result in report.results:
        areas.setdefault(result.requirement.area, []).append(result)
    for area, results in areas.items():
        failing = [r for r in results if _junit_failure(r, advisory_failures)]
        skipped = [r for r in results if _junit_skipped(r)]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"ACP-{area}",
            tests=str(len(results)),
            failures=str(len(failing)),
            errors="0",
            skipped=str(len(skipped)),
            time=f"{sum(r.duration for r in results):.3f}",
        )
        for result in results:
            requirement = result.requirement
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"acp.{area.lower()}",
                name=f"{requirement.id} [{requirement.tier.value}]",
                time=f"{result.duration:.3f}",
            )
            properties = ET.SubElement(case, "properties")
            values = [
                ("citation", requirement.citation),
                ("tier", requirement.tier.value),
                ("status", result.status.value),
            ]
            if result.blocked_by:
                values.append(("blocked_by", result.blocked_by))
            out = list(result.notes)
            if result.status is Status.FAIL and not _junit_failure(result, advisory_failures):
                reason = (
                    f"expected by the baseline: {result.expected_failure}"
                    if result.expected_failure is not None
                    else f"advisory ({requirement.tier.value}): not a conformance failure"
                )
                values += [("finding", result.message), ("accepted", reason)]
                out = [f"FINDING ({reason}): {result.message}", *out]
            for name, value in values:
                ET.SubElement(properties, "property", name=name, value=_clean(value))
            if _junit_failure(result, advisory_failures):
                element = ET.SubElement(
                    case,
                    "failure",
                    message=_clean(result.message),
                    type=requirement.tier.value,
                )
                element.text = _clean(_failure_text(result))
            elif _junit_skipped(result):
                ET.SubElement(
                    case, "skipped", message=_clean(f"{result.status.value}: {result.message}")
                )
            if out:
                ET.SubElement(case, "system-out").text = _clean("\n".join(out))
            if result.stderr_tail:
                ET.SubElement(case, "system-err").text = _clean(result.stderr_tail)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _junit_failure(result: RequirementResult, advisory_failures: bool) -> bool:
    if result.status is not Status.FAIL or result.expected_failure is not None:
        return False
    return result.judged or (advisory_failures and result.requirement.tier is Tier.ADVISORY)


def _junit_skipped(result: RequirementResult) -> bool:
    return result.status in UNJUDGED or result.status is Status.NOT_APPLICABLE


def _clean(text: str) -> str:
    """XML 1.0 cannot carry most control characters: replace them."""
    return "".join(
        c
        if c in "\t\n\r" or (" " <= c <= "\ud7ff") or ("\ue000" <= c <= "\ufffd") or c > "\uffff"
        else "?"
        for c in text
    )


def _failure_text(result: RequirementResult) -> str:
    lines = [
        result.requirement.text,
        f"citation: {result.requirement.citation}",
        f"what the suite does: {result.requirement.checks}",
        f"how to fix: {result.requirement.fix}",
        "",
        result.message,
    ]
    if result.transcript:
        lines += ["", "transcript (last lines):"]
        for entry in result.transcript[-40:]:
            body = entry.get("text", f"<{entry.get('base64', '')} base64>")
            arrow = "<-" if entry.get("from") == "agent" else "->"
            lines.append(
                f"  [{entry.get('process')}] {entry.get('t', 0):8.3f} {arrow} {str(body)[:500]}"
            )
    return "\n".join(lines)


def exchange_line(result: RequirementResult, limit: int = 100) -> str | None:
    """One line of the last request the client sent in a check (of the method the verdict is
    about, :attr:`RequirementResult.about`, when it names one) and what came back to it
    (``session/prompt #3 -> {"result": ...}``), from its transcript; ``None`` without one."""
    sent: dict[str, Any] | None = None
    answer = "no answer"
    for entry in result.transcript:
        message = _decoded(entry)
        if message is None:
            continue
        if entry.get("from") == "client" and isinstance(message.get("method"), str):
            if "id" in message and result.about in (None, message["method"]):
                sent, answer = message, "no answer"
        elif sent is not None and "method" not in message and message.get("id") == sent["id"]:
            body = {k: v for k, v in message.items() if k in ("result", "error")}
            answer = json.dumps(body, ensure_ascii=False)
    if sent is None:
        return None
    params = json.dumps(sent.get("params"), ensure_ascii=False)
    return f"sent {sent['method']} {_short(params, limit)} -> got {_short(answer, limit)}"


def _decoded(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    text = entry.get("text")
    if not isinstance(text, str) or "truncated_from" in entry:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _start_failure_text(report: SuiteReport) -> str:
    failure = report.start_failure
    assert failure is not None
    agent = report.agent
    lines = [f"the agent could not be started: {failure.cause}"]
    lines.append(f"  command: {shlex.join(report.command)}")
    if agent is not None:
        lines.append(f"  in:      {agent.cwd}")
    if failure.exit_status:
        lines.append(f"  process: {failure.exit_status}")
    if failure.stdout_lines:
        lines.append("  stdout (first lines):")
        lines += [f"    {line}" for line in failure.stdout_lines]
    tail = failure.stderr_tail.strip()
    if tail:
        lines.append("  stderr (last lines):")
        lines += [f"    {line}" for line in tail.splitlines()[-15:]]
    else:
        lines.append("  stderr: empty")
    lines.append(f"  hint: {failure.hint}")
    return "\n".join(lines)


# -- terminal ---------------------------------------------------------------------------------

REPORT_WIDTH = 100
"""The columns the terminal report is wrapped to when it is not written to a terminal."""
_DETAIL_INDENT = " " * 8
_MORE_INDENT = " " * 10


def report_width(out: TextIO) -> int:
    """The terminal's width when ``out`` is a terminal (at least 40), else
    :data:`REPORT_WIDTH`."""
    try:
        interactive = out.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        return REPORT_WIDTH
    return max(40, shutil.get_terminal_size((REPORT_WIDTH, 24)).columns)


def wrap(line: str, width: int, *, indent: str) -> str:
    """``line`` wrapped to ``width`` columns, its continuation lines indented by ``indent``:
    nothing is dropped (a word longer than the width stays whole on a line of its own)."""
    if len(line) <= width:
        return line
    return "\n".join(
        textwrap.wrap(
            line,
            width,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


_MARK = {
    Status.PASS: "PASS",
    Status.FAIL: "FAIL",
    Status.SKIP: "SKIP",
    Status.NOT_APPLICABLE: "N/A ",
    Status.BLOCKED: "BLCK",
    Status.NOT_EXERCISED: "NOEX",
    Status.INCONCLUSIVE: "INCO",
    Status.INFO: "INFO",
}


def render_terminal(
    report: SuiteReport,
    out: TextIO,
    *,
    verbose: bool = False,
    transcript_hint: str = "rerun with --json FILE (or --junit FILE) for the transcripts",
    width: int | None = None,
) -> None:
    """The human report: results grouped by area, counts per tier, the verdict (or, when the
    agent could not start, that one answer). A failure line carries the citation and one
    line of the exchange; ``transcript_hint`` says where the transcripts are.

    A finding is never cut: it is wrapped to ``width`` columns (default: the terminal's
    width when ``out`` is a terminal, else :data:`REPORT_WIDTH`)."""
    write = out.write
    width = width or report_width(out)
    if report.bridge is not None:
        write(f"ACP conformance of: {report.bridge.url}\n")
        write(f"  through the bridge: {shlex.join(report.command)}\n")
        write(f"  note: {BRIDGE_NOTE}\n")
    else:
        write(f"ACP conformance of: {shlex.join(report.command)}\n")
    if report.agent is not None:
        write(f"  in: {report.agent.cwd}\n")
        if report.agent.name:
            write(f"  agent: {report.agent.describe()}\n")
    if report.start_failure is not None:
        write("\n" + _start_failure_text(report) + "\n")
        write(f"\nverdict: COULD NOT START in {report.duration:.1f} s (nothing else was run)\n")
        return
    if report.probe_error:
        write(f"!! the first connection failed: {report.probe_error}\n")
    if report.auth_required:
        write("!! the agent asks for authentication before session/new\n")
    area = None
    failed = False
    for result in report.results:
        requirement = result.requirement
        if requirement.area != area:
            area = requirement.area
            write(f"\n{area}\n")
        mark = _MARK[result.status]
        if result.status is Status.FAIL and result.expected_failure is not None:
            mark = "XFAIL"
        elif result.stale_baseline:
            mark = "XPASS"
        tier = requirement.tier.value[:4]
        line = f"  {mark:5} {requirement.id:28} {tier:4}"
        if result.status is not Status.PASS or verbose:
            detail = result.message or "; ".join(result.notes)
            if detail:
                line += f"  {detail}"
        write(wrap(line.rstrip(), width, indent=_DETAIL_INDENT) + "\n")
        if result.status is Status.FAIL and result.expected_failure is None:
            failed = True
            write(wrap(f"        cites {requirement.citation}", width, indent=_MORE_INDENT) + "\n")
            exchange = exchange_line(result)
            if exchange:
                write(wrap(f"        {exchange}", width, indent=_MORE_INDENT) + "\n")
    write("\n")
    counts = report.counts()
    shown = [s for s in _STATUSES if any(s.value in row for row in counts.values())]
    columns = [(s.value, max(6, len(s.value) + 2)) for s in shown]
    write("tier".ljust(14) + "".join(name.rjust(width) for name, width in columns) + "\n")
    for tier in _TIERS:
        row = counts.get(tier.value, {})
        cells = "".join(str(row.get(name, 0)).rjust(width) for name, width in columns)
        write(tier.value.ljust(14) + cells + "\n")
    stale = [r.requirement.id for r in report.results if r.stale_baseline]
    if stale:
        write(f"\nstale baseline entries (expected to fail, now pass): {', '.join(stale)}\n")
    if failed and transcript_hint:
        write(f"\n{transcript_hint}\n")
    if failed:
        write(f"{EXPLAIN_HINT}\n")
    write("\n" + verdict_line(report) + "\n")


EXPLAIN_HINT = "subagents conformance --explain ID: what a requirement checks, and how to fix it"

_TIER_MEANING = {
    Tier.MANDATORY: "every agent must meet it: a failure makes the agent non-conformant",
    Tier.CAPABILITY: "it applies once the agent advertises {gate}; a failure then makes the "
    "agent non-conformant",
    Tier.ADVISORY: "a SHOULD or a spec gap: a failure is a warning, not a verdict",
    Tier.INFORMATIONAL: "recorded, never judged",
}


def render_requirements(out: TextIO, *, width: int | None = None) -> None:
    """Every requirement: its id, tier and what the suite does to judge it
    (``subagents conformance --list``), by area, wrapped to ``width`` columns."""
    width = width or report_width(out)
    write = out.write
    write(
        wrap(
            f"{len(REQUIREMENTS)} requirements of ACP v1 (agent-client-protocol "
            f"{SPEC_COMMIT[:12]}); {BASIC_EXCHANGE}. {EXPLAIN_HINT}.",
            width,
            indent="",
        )
        + "\n"
    )
    area = None
    for requirement in REQUIREMENTS.values():
        if requirement.area != area:
            area = requirement.area
            write(f"\n{area}\n")
        line = f"{requirement.id} {requirement.tier.value}: {requirement.checks}"
        write(wrap(line, width, indent="    ") + "\n")


def explain_requirement(requirement: Requirement, *, width: int = REPORT_WIDTH) -> str:
    """One requirement whole (``subagents conformance --explain ID``): what it requires, when
    it applies, what the suite sends and expects, the spec citation, how to fix a failure."""
    meaning = _TIER_MEANING[requirement.tier].format(gate=requirement.gate)
    if requirement.tier is Tier.ADVISORY and requirement.gate:
        meaning += f"; it applies once the agent advertises {requirement.gate}"
    checks = requirement.checks
    if "the basic exchange" in checks:
        checks += f" ({BASIC_EXCHANGE}.)"
    parts = [
        ("requires", requirement.text),
        ("what the suite does", checks),
        ("spec", requirement.citation),
        ("how to fix", requirement.fix),
    ]
    lines = [wrap(f"{requirement.id} ({requirement.tier.value}): {meaning}", width, indent="  ")]
    for title, body in parts:
        lines += ["", f"{title}:", wrap(f"  {body}", width, indent="  ")]
    return "\n".join(lines) + "\n"


def verdict_line(report: SuiteReport) -> str:
    """``verdict: CONFORMANT in 9.1 s; 2 mandatory requirements not judged: ...``."""
    line = f"verdict: {report.verdict.upper()} in {report.duration:.1f} s"
    if report.start_failure is not None:
        return line + " (nothing else was run)"
    unexpected = [r.requirement.id for r in report.results if r.unexpected_failure]
    if unexpected:
        line += f"; {len(unexpected)} requirement(s) failed: {', '.join(unexpected)}"
    unjudged = report.unjudged
    if unjudged:
        names = ", ".join(f"{r.requirement.id} ({r.status.value})" for r in unjudged)
        plural = "s" if len(unjudged) > 1 else ""
        line += f"; {len(unjudged)} mandatory requirement{plural} not judged: {names}"
        if report.strict:
            line += " (--strict: each counts as a failure)"
    return line


def baseline_reasons(report: SuiteReport) -> Mapping[str, str]:
    return {r.requirement.id: r.message for r in report.results if r.status is Status.FAIL}
