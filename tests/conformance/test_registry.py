"""Meta-tests of the requirement registry: every requirement has a check, every check a
requirement, ids follow the scheme, citations point into the vendored spec."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from subagents.conformance.framework import CHECKS
from subagents.conformance.requirements import REQUIREMENTS, Requirement, Tier, requirement
from subagents.conformance.runner import run_suite

del run_suite  # importing the runner registers every check

SCHEMA = json.loads(
    resources.files("subagents.protocol.acp").joinpath("schema", "v1", "schema.json").read_text()
)


def test_every_requirement_has_exactly_one_check() -> None:
    """Meta-test (issue 5): every requirement has a check."""
    assert sorted(REQUIREMENTS) == sorted(CHECKS)


def test_every_check_names_a_registered_requirement() -> None:
    """Meta-test (issue 5): every check names a requirement (the decorator refuses others)."""
    from subagents.conformance.framework import check

    for function in CHECKS.values():
        # The @check decorator sets this attribute dynamically; pyright does not know about it.
        assert getattr(function, "requirement_id") in REQUIREMENTS  # noqa: B009
    with pytest.raises(KeyError, match="ACP-NOPE-001"):
        check("ACP-NOPE-001")


def test_a_requirement_cannot_get_two_checks() -> None:
    """A second check for the same requirement is refused, so the mapping stays one to one."""
    from subagents.conformance.framework import check

    async def again(ctx: object) -> None:  # pragma: no cover - never run
        del ctx

    with pytest.raises(ValueError, match="two checks"):
        check("ACP-INIT-001")(again)  # type: ignore[arg-type]


def test_only_a_pooled_check_can_be_disruptive() -> None:
    """A disruptive check runs after the other pooled checks on their shared process: one that
    is not pooled (or judges a shared exchange) is refused at registration."""
    from subagents.conformance.framework import check

    with pytest.raises(ValueError, match="only a pooled check is disruptive"):
        check("ACP-INIT-001", disruptive=True)
    with pytest.raises(ValueError, match="shared exchange or runs pooled"):
        check("ACP-INIT-001", shares="basic", pooled=True, disruptive=True)


@pytest.mark.parametrize("item", list(REQUIREMENTS.values()), ids=list(REQUIREMENTS))
def test_requirement_is_well_formed(item: Requirement) -> None:
    """Ids follow ACP-<AREA>-<NNN>; capability requirements have a gate, mandatory and
    informational ones none; the citation names a v1 docs page and a schema pointer that
    resolves in the vendored schema."""
    assert re.fullmatch(r"ACP-[A-Z]+(-[A-Z]+)?-\d{3}", item.id)
    assert item.text.strip()
    assert item.text.endswith((".", ")"))
    if item.tier is Tier.CAPABILITY:
        assert item.gate
    if item.tier in (Tier.MANDATORY, Tier.INFORMATIONAL):
        assert item.gate is None
    assert re.fullmatch(r"[a-z-]+\.mdx(#[a-z0-9_-]+)?", item.doc)
    assert item.citation.startswith(f"docs/protocol/v1/{item.doc}")
    if item.schema is not None:
        assert item.schema.startswith("#/$defs/")
        assert item.schema.removeprefix("#/$defs/") in SCHEMA["$defs"]


def test_official_tck_ids_are_reused_with_their_meaning() -> None:
    """The ids shared with the official acp-tck keep its semantics (a spot check of the ones
    research/acp.md names)."""
    assert "65535" in requirement("ACP-INIT-003").text
    assert "sessionId" in requirement("ACP-PROMPT-002").text.replace("session's id", "sessionId")
    assert "fs/*" in requirement("ACP-CLIENTCAP-001").text
    assert "terminal/*" in requirement("ACP-CLIENTCAP-002").text
    assert "elicitation" in requirement("ACP-CLIENTCAP-003").text
    assert requirement("ACP-EXT-001").tier is Tier.MANDATORY


def test_unknown_requirement_lookup_names_the_id() -> None:
    with pytest.raises(KeyError, match="ACP-X-999"):
        requirement("ACP-X-999")


def test_registry_covers_every_tier_and_the_spec_gaps() -> None:
    """Coverage (issue 5): the spec gaps are informational requirements."""
    tiers = {r.tier for r in REQUIREMENTS.values()}
    assert tiers == set(Tier)
    informational = {r.id for r in REQUIREMENTS.values() if r.tier is Tier.INFORMATIONAL}
    assert {
        "ACP-INFO-PARSE-001",
        "ACP-INFO-BATCH-001",
        "ACP-INFO-UNKNOWNSESSION-001",
        "ACP-INFO-CONCURRENT-001",
        "ACP-INFO-IDLECANCEL-001",
        "ACP-STDERR-001",
    } <= informational
    # session/new before initialize: judged (advisory, a spec gap), no longer only recorded.
    assert requirement("ACP-INIT-005").tier is Tier.ADVISORY
    assert "spec gap" in requirement("ACP-INIT-005").text
