"""What a SerpApi result page says about a person before anyone pays to enrich them (issue 38,
points 1 and 2: "Pay only for people the brief can accept").

Shapes from SerpApi's Google Organic Results page (serpapi.com/organic-results: ``title``,
``link``, ``snippet``, ``rich_snippet.top.extensions``) and the LinkedIn titles Google shows:
"Name - Title - Company | LinkedIn", "Name - Company | LinkedIn" (the second segment may be
the company), an en dash, no "| LinkedIn". A hit is skipped only when the page says for sure
that the person does other work, or lives where the brief's judge would exclude them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from shortlist.config import Settings
from shortlist.talent.constraints import Wanted
from shortlist.talent.tiers import acceptable_web_hit
from shortlist.talent.vendors.base import ProfileStub
from shortlist.talent.vendors.serpapi import PageTitle, SerpApiSearch, page_title


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        (
            "Jane Doe - FPGA Verification Engineer - Acme | LinkedIn",
            PageTitle("Jane Doe", "FPGA Verification Engineer", ""),
        ),
        ("Jane Doe - Acme GmbH | LinkedIn", PageTitle("Jane Doe", "", "Acme GmbH")),
        (
            "Jane Doe \u2013 Pediatric Nurse \u2013 SickKids | LinkedIn",
            PageTitle("Jane Doe", "Pediatric Nurse", ""),
        ),
        ("Jane Doe \u2013 SickKids", PageTitle("Jane Doe", "", "SickKids")),
        ("Jane Doe - Data Engineer - Acme", PageTitle("Jane Doe", "Data Engineer", "")),
        (
            "Jane Doe - Tax Attorney - Smith & Co - LinkedIn",
            PageTitle("Jane Doe", "Tax Attorney", ""),
        ),
        ("Jane Doe | LinkedIn", PageTitle("Jane Doe", "", "")),
        (
            "Jean-Luc Picard - Captain - Starfleet | LinkedIn",
            PageTitle("Jean-Luc Picard", "Captain", ""),
        ),
    ],
)
def test_linkedin_titles_in_every_shape(title: str, expected: PageTitle) -> None:
    assert page_title(title) == expected


def hit(title: str, **fields: Any) -> dict[str, Any]:
    return {"position": 1, "title": title, "link": "https://de.linkedin.com/in/jane-doe"} | fields


async def stubs_of(*hits: dict[str, Any]) -> list[ProfileStub]:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json={"total_searches_left": 100})
        return httpx.Response(200, json={"organic_results": list(hits)})

    settings = Settings(serp_api_key="k", discovery_timeout=1.0, retry_delay=0.01)
    serp = SerpApiSearch(
        "https://serpapi.test", settings, httpx.AsyncClient(transport=httpx.MockTransport(handler))
    )
    try:
        return (await serp.search('"data engineer"', 1)).stubs
    finally:
        await serp.aclose()


async def test_the_place_shown_is_read_from_the_rich_snippet_or_the_snippet() -> None:
    rich, snippet, none = await stubs_of(
        hit(
            "Jane Doe - Acme | LinkedIn",
            rich_snippet={"top": {"extensions": ["Acme", "Lisbon, Lisbon, Portugal"]}},
        ),
        hit(
            "Jane Doe - Data Engineer - Acme | LinkedIn",
            snippet="Data engineer · Experience: Acme · Location: Porto, Portugal · 500+",
        ),
        hit("Jane Doe - Data Engineer - Acme | LinkedIn", snippet="Spark, Airflow."),
    )
    assert (rich.location, rich.headline) == ("Lisbon, Lisbon, Portugal", "")
    assert "Acme" in rich.page_text
    assert (snippet.location, snippet.headline) == ("Porto, Portugal", "Data Engineer")
    assert none.location == ""


async def test_a_place_the_snippet_names_is_where_the_page_shows_them() -> None:
    # Google draws a snippet from the page's text around the query's words (SerpApi organic
    # results: `snippet`, `snippet_highlighted_words`): a place it names is the page's own word.
    # "Remote" in an "open to remote work" line is no place.
    named, remote = await stubs_of(
        hit(
            "Jane Doe - Data Engineer - Acme | LinkedIn",
            snippet="Jane is a Data Engineer based in Osaka with 6 years of experience.",
        ),
        hit(
            "Jo Roe - Data Engineer - Acme | LinkedIn",
            snippet="Works mostly with Spark. Interested in remote-friendly teams.",
        ),
    )
    assert named.location.startswith("Osaka") and named.location.endswith("Japan")
    assert remote.location == ""
    assert not acceptable_web_hit(named, "data engineer", LISBON)


def web_hit(headline: str = "", page_text: str = "", location: str = "") -> ProfileStub:
    return ProfileStub(
        "linkedin:jane-doe", "jane-doe", "Jane Doe",
        headline=headline, page_text=page_text, location=location,
    )  # fmt: skip


LISBON = Wanted.of("Lisbon", None, ())


def test_a_title_that_may_be_the_company_is_not_read_as_other_work() -> None:
    # "Jane Doe - Acme | LinkedIn": the page does not say what she does; she may be one.
    assert acceptable_web_hit(web_hit(page_text="Acme"), "data engineer", LISBON)


def test_a_title_that_says_other_work_is_skipped_unless_the_page_says_otherwise() -> None:
    assert not acceptable_web_hit(web_hit("Marketing Manager"), "data engineer", LISBON)
    assert acceptable_web_hit(
        web_hit("Head of Data", page_text="Senior Data Engineer · Acme"), "data engineer", LISBON
    )
    assert acceptable_web_hit(web_hit("Senior Data Engineer"), "data engineer", LISBON)


def test_a_place_the_brief_excludes_is_skipped_before_enrichment() -> None:
    assert not acceptable_web_hit(
        web_hit("Data Engineer", location="Berlin, Germany"), "data engineer", LISBON
    )
    # the brief's own city, a place of its country (a maybe for the judge), or no place shown
    for where in ("Lisbon, Lisbon, Portugal", "Porto, Portugal", "", "Planet Zork"):
        assert acceptable_web_hit(web_hit("Data Engineer", location=where), "data engineer", LISBON)
    # a brief without a place excludes nobody by place
    anywhere = Wanted.of(None, None, ())
    assert acceptable_web_hit(
        web_hit("Data Engineer", location="Berlin, Germany"), "data engineer", anywhere
    )
