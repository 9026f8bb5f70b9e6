"""Free-text briefs as the vendor dialects read them, and the simulator's key check."""

from __future__ import annotations

import httpx

from shortlist.simulator import SimulatorServer
from shortlist.talent.brief import parse_brief
from tests.backfill_support import simulator as simulator  # the fixture
from tests.integration.test_vendor_backfill import KEY


def test_the_simulator_refuses_requests_without_the_key(simulator: SimulatorServer) -> None:
    url = simulator.base_url
    # A timeout a loaded test machine does not reach (httpx's default is 5 s).
    with httpx.Client(timeout=60) as http:
        _refuses_without_the_key(http, url)


def _refuses_without_the_key(http: httpx.Client, url: str) -> None:
    pdl = http.post(f"{url}/v5/person/search", json={"query": {"bool": {"must": []}}})
    assert pdl.status_code == 401
    assert pdl.json()["status"] == 401 and set(pdl.json()["error"]) == {"type", "message"}
    enrich = http.get(f"{url}/v5/person/enrich", params={"profile": "linkedin.com/in/x"})
    assert enrich.status_code == 401
    serp = http.get(f"{url}/search.json", params={"engine": "google", "q": "nurse"})
    assert serp.status_code == 401 and "Invalid API key" in serp.json()["error"]
    ok = http.get(
        f"{url}/search.json", params={"engine": "google", "q": "python engineer", "api_key": KEY}
    )
    assert ok.status_code == 200 and ok.json()["organic_results"]


def test_ten_free_text_briefs_are_understood() -> None:
    vocab = ["Python", "Rust", "Kubernetes", "SystemVerilog", "React", "PyTorch", "SQL", "AWS"]
    cases = {
        "FPGA verification engineer": ("FPGA Verification Engineer", None, None, ()),
        "Senior Rust backend engineer in Berlin with Kubernetes": (
            "Backend Engineer",
            "Berlin",
            5,
            ("Rust", "Kubernetes"),
        ),
        "React Developer, 3+ years, London": ("React Developer", "London", 3, ()),
        "glass blower artisan": ("Glass Blower", None, None, ()),
    }
    for text, (role, location, years, skills) in cases.items():
        brief = parse_brief(text, skill_vocabulary=vocab)
        assert (brief.role, brief.location, brief.min_years_experience, brief.skills) == (
            role,
            location,
            years,
            skills,
        ), text
    given = parse_brief("anything", role="Nurse", location="Lagos", skills=["triage"])
    assert (given.role, given.location, given.skills) == ("Nurse", "Lagos", ("triage",))
