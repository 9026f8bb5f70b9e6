"""Half-configured vendors are refused at start-up with one line (issue 38, point 8): with only
one of SHORTLIST_TALENT_API_URL / SHORTLIST_SERP_API_URL set, the other would point at the
bundled simulator and a real PDL would be asked to enrich the simulator's made-up slugs."""

from __future__ import annotations

import pytest

from shortlist.bootstrap import bundled_simulator, with_simulator
from shortlist.config import Settings
from shortlist.talent.vendors.factory import SourcesNotConfigured

SIM = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"talent_api_url": "https://api.peopledatalabs.com"}, "SHORTLIST_SERP_API_URL is not"),
        ({"serp_api_url": "https://serpapi.com"}, "SHORTLIST_TALENT_API_URL is not"),
    ],
)
async def test_one_vendor_url_alone_is_refused_before_anything_starts(
    given: dict[str, str], named: str
) -> None:
    settings = Settings(**given)
    with pytest.raises(SourcesNotConfigured, match=named) as refused:
        with_simulator(settings, SIM)
    assert "\n" not in str(refused.value)
    with pytest.raises(SourcesNotConfigured, match=named):
        async with bundled_simulator(settings):
            pytest.fail("the simulator must not start")


def test_both_set_or_neither_set_are_fine() -> None:
    both = Settings(talent_api_url="https://pdl.test", serp_api_url="https://serp.test")
    assert with_simulator(both, SIM).talent_api_url == "https://pdl.test"
    neither = with_simulator(Settings(), SIM)
    assert (neither.talent_api_url, neither.serp_api_url) == (SIM, SIM)
