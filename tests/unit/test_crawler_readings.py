"""The crawler's last misreadings (#39): Greenhouse's workplace fields and the text's remote
statements, Ashby board names with spaces, pay stated only in the description, and postings
in several places. Sources' fields as their documents name them (tests/job_boards.py)."""

from __future__ import annotations

from typing import Any

import pytest

from shortlist import places
from shortlist.errors import BadInput
from shortlist.listings.models import ListingCreate
from shortlist.listings.sources import ashby, greenhouse
from shortlist.listings.sources.models import Board, Posting, SourceSpec
from shortlist.listings.sources.sync import SourceRow, _listing
from tests.job_boards import greenhouse_job

SOURCE = SourceRow(1, "greenhouse:acme", "greenhouse", "Acme")


@pytest.fixture(scope="module", autouse=True)
def gazetteer() -> None:
    places.load()


def listing_of(posting: Posting | None) -> ListingCreate:
    assert posting is not None
    data = _listing(posting, SOURCE, Board())
    assert data is not None
    return data


def workplace(value: Any, name: str = "Workplace Type") -> dict[str, Any]:
    """A board's custom field in the job's ``metadata`` (Job Board API, List jobs)."""
    return {"id": 7, "name": name, "value": value, "value_type": "single_select"}


@pytest.mark.parametrize(
    ("metadata", "mode"),
    [
        ([workplace("Remote")], "remote"),
        ([workplace("Hybrid")], "hybrid"),
        ([workplace("On-site")], "onsite"),
        ([workplace(True, "Remote")], "remote"),
        ([workplace(["Remote"], "Location Type")], "remote"),
        (
            [{"id": 1, "name": "Department", "value": "Remote Ops", "value_type": "short_text"}],
            None,
        ),
    ],
)
def test_greenhouse_workplace_field(metadata: list[dict[str, Any]], mode: str | None) -> None:
    job = greenhouse_job(1, "Engineer", "Boston, MA", "<p>Build things.</p>", metadata=metadata)
    assert listing_of(greenhouse.map_job(job)).work_mode == mode


@pytest.mark.parametrize(
    ("location", "content", "mode"),
    [
        ("United States", "<p>This position is US - Remote Eligible.</p>", "remote"),
        ("Toronto, ON", "<p>This role is remote within Canada.</p>", "remote"),
        ("US - Remote Eligible", "<p>Build things.</p>", "remote"),
        ("Boston, MA", "<p>We build remote monitoring for wind farms.</p>", None),
        ("Boston, MA", "<p>Hybrid: 3 days a week in our Boston office.</p>", "hybrid"),
    ],
)
def test_greenhouse_remote_statements(location: str, content: str, mode: str | None) -> None:
    job = greenhouse_job(1, "Engineer", location, content)
    assert listing_of(greenhouse.map_job(job)).work_mode == mode


@pytest.mark.parametrize(
    ("text", "pay"),
    [
        ("The salary range for this role is $75k - $105k.", (75, 105, "USD")),
        ("Pay: $34.62/hour", (72, 72, "USD")),
        ("Compensation: $60,000 - $97,000/year plus equity.", (60, 97, "USD")),
        ("We offer a 401(k) and 20 days of leave.", (None, None, "USD")),
    ],
)
def test_pay_read_from_the_description(text: str, pay: tuple[Any, ...]) -> None:
    job = greenhouse_job(1, "Engineer", "Boston, MA", f"<p>Build things.</p><p>{text}</p>")
    data = listing_of(greenhouse.map_job(job))
    assert (data.salary_min_ks, data.salary_max_ks, data.currency_code) == pay


def test_a_structured_salary_wins_over_the_text() -> None:
    posting = Posting("1", "Engineer", "Pay: $75k - $105k", salary_min_ks=90, salary_max_ks=90)
    assert (listing_of(posting).salary_min_ks, listing_of(posting).salary_max_ks) == (90, 90)


def test_a_posting_in_several_places_is_listed_in_each() -> None:
    field = "London, UK; Ontario, CAN; Remote-Friendly, United States; San Francisco, CA"
    data = listing_of(greenhouse.map_job(greenhouse_job(1, "Engineer", field, "<p>x</p>")))
    assert data.city_location == "London; Ontario; Remote; San Francisco"
    # The location filter (a case-insensitive substring of city_location) finds each place.
    for place in ("London", "Ontario", "San Francisco"):
        assert place.lower() in data.city_location.lower()
    # One place: the field as the source wrote it.
    one = listing_of(greenhouse.map_job(greenhouse_job(2, "Engineer", "Austin, TX", "<p>x</p>")))
    assert one.city_location == "Austin, TX"


@pytest.mark.parametrize(
    "spec", ["ashby:Foo Bar", "ashby:Foo%20Bar", "https://jobs.ashbyhq.com/Foo%20Bar"]
)
def test_ashby_board_names_with_spaces(spec: str) -> None:
    parsed = SourceSpec.parse(spec)
    assert (parsed.kind, parsed.key) == ("ashby", "Foo Bar")
    assert SourceSpec.parse(parsed.spec) == parsed  # stored and read again: the same board
    # Requested as Ashby's posting API takes the name: encoded once.
    assert ashby.board_url("https://api.ashbyhq.com", parsed.key).startswith(
        "https://api.ashbyhq.com/posting-api/job-board/Foo%20Bar?"
    )


def test_ashby_names_stay_names() -> None:
    assert SourceSpec.parse("ashby:acme").spec == "ashby:acme"
    with pytest.raises(BadInput):
        SourceSpec.parse("ashby:foo/bar")


def test_lever_all_locations_and_ashby_secondary_locations_are_each_a_place() -> None:
    from shortlist.listings.sources import lever
    from tests.job_boards import ashby_job, lever_posting

    posting = lever_posting("p1", "Engineer")
    posting["categories"]["allLocations"] = ["London", "Toronto", "San Francisco"]
    assert listing_of(lever.map_posting(posting)).city_location == "London; Toronto; San Francisco"
    job = ashby_job("a1", "Engineer", secondaryLocations=[{"location": "Munich"}])
    assert listing_of(ashby.map_job(job)).city_location == "Berlin; Munich"
    # One place each: as before.
    assert listing_of(ashby.map_job(ashby_job("a2", "Engineer"))).city_location == "Berlin"
