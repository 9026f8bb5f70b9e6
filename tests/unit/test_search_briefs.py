"""A search's brief normalised before anything runs; errors stored and logged never carry an
e-mail address."""

from __future__ import annotations

import pytest

from shortlist.errors import BadInput
from shortlist.talent.models import SearchCreate, error_text
from shortlist.talent.service import parse_search_create, search_text


def test_the_brief_is_normalised_before_anything_runs() -> None:
    payload = SearchCreate(
        query="  firmware  ", role=" ", location="", skills=[" Rust ", "rust", "C"]
    )
    assert payload.query == "firmware"
    assert payload.role is None and payload.location is None
    assert payload.skills == ["Rust", "C"]
    assert search_text(payload) == "firmware\nSkills: Rust, C"
    with pytest.raises(BadInput) as excinfo:
        parse_search_create({"query": "ok", "min_years_experience": 99})
    assert excinfo.value.field == "min_years_experience"


def test_errors_stored_and_logged_never_carry_an_email_address() -> None:
    raw = 'talent: invalid JSON: {"email": "ada.lovelace@example.com", "x": 1} <b@c.io>'
    assert error_text(raw) == 'talent: invalid JSON: {"email": "[e-mail]", "x": 1} <[e-mail]>'
    assert len(error_text("x" * 5000)) == 1000
