"""A brief's tier queries (strict, broad, SERP) and role families, without a database."""

from __future__ import annotations

import uuid

from shortlist.talent.models import SearchBrief
from shortlist.talent.roles import role_family
from shortlist.talent.tiers import broad_query, serp_text, strict_query
from tests.backfill_support import simulator as simulator  # the fixture


def test_role_families_widen_a_role_to_its_family() -> None:
    family = role_family("Rust Embedded Firmware Engineer")
    assert family is not None and family.name == "embedded"
    assert "Firmware Engineer" in family.titles
    assert role_family("senior machine learning engineer").name == "ml"  # type: ignore[union-attr]
    assert role_family("FPGA verification").name == "hardware"  # type: ignore[union-attr]
    assert role_family("Engineer") is None  # generic words point nowhere


def test_tier_queries_map_strict_broad_and_serp() -> None:
    brief = SearchBrief(
        search_id=uuid.uuid4(),
        query="firmware for sensors",
        role="Rust Embedded Firmware Engineer",
        location="Berlin",
        min_years_experience=5,
        skills=("Rust",),
    )
    strict = strict_query(brief)
    assert (strict.role, strict.location, strict.min_years, strict.skills) == (
        "Rust Embedded Firmware Engineer",
        "Berlin",
        5,
        ("Rust",),
    )
    broad = broad_query(brief)
    # The role kept (PDL's own fields widen it), the years no longer required (``widen``), the
    # city widened to its country, and nobody the strict tier already bought.
    assert (broad.role, broad.min_years, broad.widen) == (
        "Rust Embedded Firmware Engineer",
        5,
        True,
    )
    assert broad.exclude == strict
    assert broad.place is not None and broad.place.kind == "country"
    assert broad.place.country == "germany" and broad.place.locality is None
    assert serp_text(brief) == '"Rust Embedded Firmware Engineer"'
