"""Reports of a suite run: for people (terminal), for machines (JSON, JUnit XML), baselines.

The JSON report (``format: "subagents-acp-conformance/1"``) has the run (command, agent,
verdict, exit code, duration, counts per tier and status) and one entry per requirement: id,
area, tier, gate, text, citation, status, duration, message, notes, whether the baseline
expected it to fail, and on fail / skip / blocked the transcript (each line with process
number, time, direction and text, or base64 when it is not UTF-8) and the stderr tail.

A baseline file lists requirements expected to fail, with the reason:
``{"expected_failures": {"ACP-INIT-003": "echoes the requested version"}}``, and optionally
those that fail only in some runs (a race in the agent):
``{"intermittent_failures": {"ACP-CANCEL-002": "late chunks after a cancel, some runs"}}``.
Writing a baseline keeps the intermittent entries of the one the run was given.
"""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO, cast

from .requirements import SPEC_COMMIT, Tier
from .runner import Baseline, RequirementResult, Status, SuiteReport

__all__ = (
    "load_baseline",
    "render_terminal",
    "to_json",
    "to_junit",
    "write_baseline",
)

FORMAT = "subagents-acp-conformance/1"
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
        "agent": report.agent.describe() if report.agent else None,
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
        "status": result.status.value,
        "duration": round(result.duration, 4),
        "message": result.message,
        "notes": result.notes,
        "expected_failure": result.expected_failure,
        "intermittent": result.intermittent,
        "stale_baseline": result.stale_baseline,
    }
    if result.transcript or result.stderr_tail:
        entry["transcript"] = result.transcript
        entry["stderr_tail"] = result.stderr_tail
    return entry


def to_json(report: SuiteReport) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "spec_commit": SPEC_COMMIT,
        "command": list(report.command),
        "agent": dataclasses.asdict(report.agent) if report.agent else None,
        "verdict": report.verdict,
        "exit_code": report.exit_code,
        "duration": round(report.duration, 3),
        "probe_error": report.probe_error,
        "auth_required": report.auth_required,
        "counts": report.counts(),
        "stale_baseline": [r.requirement.id for r in report.results if r.stale_baseline],
        "requirements": [_result_json(r) for r in report.results],
    }


def to_junit(report: SuiteReport) -> str:
    """JUnit XML: one testsuite per area, one testcase per requirement."""
    root = ET.Element("testsuites", name="ACP conformance", time=f"{report.duration:.3f}")
    areas: dict[str, list[RequirementResult]] = {}
    for result in report.results:
        areas.setdefault(result.requirement.area, []).append(result)
    for area, results in areas.items():
        failures = sum(1 for r in results if r.status is Status.FAIL)
        skipped = sum(
            1 for r in results if r.status in (Status.SKIP, Status.NOT_APPLICABLE, Status.BLOCKED)
        )
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"ACP-{area}",
            tests=str(len(results)),
            failures=str(failures),
            errors="0",
            skipped=str(skipped),
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
            for name, value in (
                ("citation", requirement.citation),
                ("tier", requirement.tier.value),
                ("status", result.status.value),
            ):
                ET.SubElement(properties, "property", name=name, value=value)
            if result.status is Status.FAIL:
                kind = "failure" if result.expected_failure is None else "skipped"
                element = ET.SubElement(case, kind, message=_clean(result.message)[:1000])
                if kind == "failure":
                    element.set("type", requirement.tier.value)
                element.text = _clean(_failure_text(result))
            elif result.status in (Status.SKIP, Status.NOT_APPLICABLE, Status.BLOCKED):
                ET.SubElement(
                    case, "skipped", message=_clean(f"{result.status.value}: {result.message}")
                )
            if result.notes:
                ET.SubElement(case, "system-out").text = _clean("\n".join(result.notes))
            if result.stderr_tail:
                ET.SubElement(case, "system-err").text = _clean(result.stderr_tail)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


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


# -- terminal ---------------------------------------------------------------------------------

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


def render_terminal(report: SuiteReport, out: TextIO, *, verbose: bool = False) -> None:
    """The human report: results grouped by area, counts per tier, the verdict."""
    write = out.write
    write(f"ACP conformance of: {' '.join(report.command)}\n")
    if report.agent and report.agent.name:
        write(f"agent: {report.agent.describe()}\n")
    if report.probe_error:
        write(f"!! the first connection failed: {report.probe_error}\n")
    if report.auth_required:
        write("!! the agent asks for authentication before session/new; pass --auth-method ID\n")
    area = None
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
                line += f"  {detail[:160] if not verbose else detail}"
        write(line.rstrip() + "\n")
    write("\n")
    counts = report.counts()
    header = "tier".ljust(14) + "".join(s.value.rjust(9) for s in _STATUSES)
    write(header + "\n")
    for tier in _TIERS:
        row = counts.get(tier.value, {})
        write(
            tier.value.ljust(14)
            + "".join(str(row.get(s.value, 0)).rjust(9) for s in _STATUSES)
            + "\n"
        )
    stale = [r.requirement.id for r in report.results if r.stale_baseline]
    if stale:
        write(f"\nstale baseline entries (expected to fail, now pass): {', '.join(stale)}\n")
    unexpected = [r.requirement.id for r in report.results if r.unexpected_failure]
    write(f"\nverdict: {report.verdict.upper()} in {report.duration:.1f} s")
    if unexpected:
        write(f" ({len(unexpected)} requirement(s) failed: {', '.join(unexpected)})")
    write("\n")


def baseline_reasons(report: SuiteReport) -> Mapping[str, str]:
    return {r.requirement.id: r.message for r in report.results if r.status is Status.FAIL}
