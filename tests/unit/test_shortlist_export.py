"""The shortlist's CSV cells and a candidate's explanation without a structured brief."""

from __future__ import annotations

from shortlist.talent import marks
from shortlist.talent.why import Brief, Person, explain_candidate


def test_explain_candidate_without_a_structured_brief() -> None:
    why = explain_candidate(
        Brief(None, None, None, ()),
        Person("SRE", "", "Lisbon", None, ("Go",)),
        0.8123,
    )
    assert why.role_match is None and why.location_match is None and why.years_ok is None
    assert why.summary == "fit 81%"


def test_csv_cell_escapes_formula_starts() -> None:
    assert [marks.csv_cell(v) for v in ("=1", "+1", "-1", "@x", "a=b", None, 3)] == [
        "'=1", "'+1", "'-1", "'@x", "a=b", "", "3",
    ]  # fmt: skip
