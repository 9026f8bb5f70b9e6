"""A listing's rules without a database: what creating and changing one accepts, and its slug."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from shortlist.listings.models import ListingCreate, ListingPatch, format_salary_range
from shortlist.listings.slug import listing_id_from_slug, make_detail_page_slug, slugify_part
from tests.integration.test_listings_api import GOOD

SLUG_SHAPE = re.compile(r"^[^\W_]+(?:-[^\W_]+)*$")


@pytest.mark.parametrize(
    ("low", "high", "currency", "expected"),
    [
        (120, 150, "USD", "$120K - $150K USD"),
        (120, None, "USD", "From $120K USD"),
        (None, 150, "USD", "Up to $150K USD"),
        (None, None, "USD", None),
        (0, 0, "EUR", "$0K - $0K EUR"),
        (0, None, "GBP", "From $0K GBP"),
    ],
)
def test_salary_range_formats_as_the_seed(
    low: int | None, high: int | None, currency: str, expected: str | None
) -> None:
    assert format_salary_range(low, high, currency) == expected


def test_slug_joins_parts_and_id() -> None:
    listing_id = uuid.UUID("0b6f3a52-7c1e-4d7a-9f55-2f1f0e0c9a11")
    slug = make_detail_page_slug("Acme, Inc.", "Sr. Engineer -- Python!", "São Paulo", listing_id)
    assert slug == "acme-inc-sr-engineer-python-sao-paulo-0b6f3a52-7c1e-4d7a-9f55-2f1f0e0c9a11"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Zürich", "zurich"),
        ("Montréal", "montreal"),
        ("Kraków", "krakow"),
        ("東京", "東京"),
        ("İstanbul", "istanbul"),
        ("ﬁnance", "finance"),
        ("C++ / C#", "c-c"),
        ("---", ""),
        ("  ", ""),
        ("!!!", ""),
    ],
)
def test_slugify_part_transliterates_latin_keeps_other_scripts(text: str, expected: str) -> None:
    assert slugify_part(text) == expected


def test_punctuation_only_parts_leave_no_double_hyphens() -> None:
    listing_id = uuid.uuid4()
    assert make_detail_page_slug("!!!", "Engineer", "???", listing_id) == f"engineer-{listing_id}"
    assert make_detail_page_slug("—", "…", "", listing_id) == str(listing_id)


def test_long_slug_is_capped_without_trailing_hyphen() -> None:
    listing_id = uuid.uuid4()
    slug = make_detail_page_slug("a" * 100, "b " * 100, "c", listing_id)
    text = slug.removesuffix(f"-{listing_id}")
    assert len(text) <= 120
    assert not text.endswith("-")
    assert listing_id_from_slug(slug) == listing_id


@given(st.text(), st.text(), st.text(), st.uuids())
def test_slug_shape_holds_for_any_input(company: str, title: str, city: str, u: uuid.UUID) -> None:
    slug = make_detail_page_slug(company, title, city, u)
    assert SLUG_SHAPE.match(slug), slug
    assert slug == slug.lower()
    assert slug.endswith(str(u))
    assert listing_id_from_slug(slug) == u


@pytest.mark.parametrize(
    "ref", ["nope", "", "123", "0b6f3a52-7c1e-4d7a-9f55-2f1f0e0c9a1", "x0b6f3a52-7c1e-4d7a-9f55"]
)
def test_listing_id_from_slug_rejects_non_ids(ref: str) -> None:
    assert listing_id_from_slug(ref) is None


def test_listing_create_normalises_and_validates() -> None:
    data = ListingCreate.model_validate(GOOD)
    assert data.company_name == "Acme Robotics"
    assert data.currency_code == "CHF"
    with pytest.raises(ValidationError, match="must not be greater than salary_max_ks"):
        ListingCreate.model_validate({**GOOD, "salary_min_ks": 200})
    for bad in (
        {"currency_code": "US"},
        {"currency_code": "US1"},
        {"salary_min_ks": -1},
        {"salary_max_ks": True},
        {"salary_min_ks": 1.5},
        {"company_name": "   "},
        {"job_title": "x" * 301},
        {"description": "bad \x00 byte"},
        {"description": "lone \ud800 surrogate"},
        {"unexpected": 1},
    ):
        with pytest.raises(ValidationError):
            ListingCreate.model_validate({**GOOD, **bad})


def test_listing_patch_rules() -> None:
    assert ListingPatch.model_validate({"salary_max_ks": None}).changes() == {"salary_max_ks": None}
    for bad in ({}, {"company_name": None}, {"salary_min_ks": 5, "salary_max_ks": 4}):
        with pytest.raises(ValidationError):
            ListingPatch.model_validate(bad)
