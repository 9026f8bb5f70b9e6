"""The job-board stand-ins against their vendors' documents, one test per rule: the loopback
fakes of ``tests/job_boards.py`` and the simulator's demo board answer what Greenhouse ("List
jobs", "Retrieve job board"), Lever (README, "Get a list of job postings") and Ashby (Job
Postings API) document, refuse to model what they do not (501), and know no board they do not
hold (404). The adapters' side — that they send exactly the documented parameters — is held by
``tests/integration/test_job_sources.py``, which reads the fakes' request log."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from shortlist.listings.sources import careers
from shortlist.simulator.job_boards import DEMO_BOARD, create_job_board_app
from tests.job_boards import FakeBoards, ashby_job, greenhouse_job, lever_posting


@pytest.fixture
def boards() -> Iterator[FakeBoards]:
    fake = FakeBoards().start()
    fake.greenhouse["vaulttec"] = {
        "name": "Vault-Tec",
        "jobs": [greenhouse_job(1, "Vault Designer", "NYC", "<p>Design.</p>")],
    }
    fake.lever["leverdemo"] = [lever_posting(f"p-{n}", f"Role {n}") for n in range(3)]
    fake.ashby["ashbydemo"] = [ashby_job("a-1", "Platform Engineer")]
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def http(boards: FakeBoards) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=boards.base_url, timeout=5) as client:
        yield client


def test_lever_answers_json_only_when_asked(http: httpx.Client) -> None:
    # "The API will output HTML or JSON based on the Accept: header and the ?mode= query
    # parameter. If both are provided, the query parameter has a higher precedence."
    plain = http.get("/v0/postings/leverdemo")
    assert plain.status_code == 200 and plain.headers["content-type"].startswith("text/html")
    assert plain.text.startswith("<div class='lever'><ul>") and "Role 0" in plain.text
    by_header = http.get("/v0/postings/leverdemo", headers={"Accept": "application/json"})
    assert [p["id"] for p in by_header.json()] == ["p-0", "p-1", "p-2"]
    by_mode = http.get("/v0/postings/leverdemo?mode=json", headers={"Accept": "text/html"})
    assert [p["text"] for p in by_mode.json()] == ["Role 0", "Role 1", "Role 2"]
    html_wins = http.get("/v0/postings/leverdemo?mode=html", headers={"Accept": "application/json"})
    assert html_wins.headers["content-type"].startswith("text/html")
    # "skip N from the start", "only return at most N results".
    paged = http.get("/v0/postings/leverdemo", params={"mode": "json", "skip": 1, "limit": 1})
    assert [p["id"] for p in paged.json()] == ["p-1"]
    # "Get a specific job posting": JSON only.
    assert http.get("/v0/postings/leverdemo/p-2").json()["text"] == "Role 2"
    assert http.get("/v0/postings/leverdemo/nope").status_code == 404
    assert http.get("/v0/postings/nosuchsite?mode=json").status_code == 404
    # Documented, not modelled here: refused loudly rather than answered wrongly.
    for query in ("mode=iframe", "mode=json&team=Platform", "mode=json&group=team"):
        assert http.get(f"/v0/postings/leverdemo?{query}").status_code == 501, query


def test_greenhouse_paths_and_content_flag(http: httpx.Client) -> None:
    assert http.get("/v1/boards/vaulttec").json() == {"name": "Vault-Tec", "content": ""}
    # "content: If set to true, include the full post description, department, and office".
    bare = http.get("/v1/boards/vaulttec/jobs").json()
    [job] = bare["jobs"]
    assert bare["meta"] == {"total": 1}
    assert not {"content", "departments", "offices"} & set(job)
    for almost in ("1", "True", "yes"):
        [job] = http.get("/v1/boards/vaulttec/jobs", params={"content": almost}).json()["jobs"]
        assert "content" not in job, almost
    [full] = http.get("/v1/boards/vaulttec/jobs?content=true").json()["jobs"]
    assert full["content"] == "&lt;p&gt;Design.&lt;/p&gt;"  # entity-escaped, as documented
    assert full["departments"] and full["offices"]
    assert http.get("/v1/boards/nosuchboard").status_code == 404
    assert http.get("/v1/boards/nosuchboard/jobs?content=true").status_code == 404
    # The board's other documented paths and JSONP are not modelled; nothing answers at random.
    for path in (
        "/v1/boards/vaulttec/jobs/1",
        "/v1/boards/vaulttec/offices",
        "/v1/boards/vaulttec/x",
    ):
        assert http.get(path).status_code == 501, path
    assert http.get("/v1/boards/vaulttec/jobs?callback=cb").status_code == 501
    assert http.get("/v1/boards").status_code == 404


def test_ashby_compensation_only_with_include_compensation(http: httpx.Client) -> None:
    [bare] = http.get("/posting-api/job-board/ashbydemo").json()["jobs"]
    assert "compensation" not in bare
    [almost] = http.get("/posting-api/job-board/ashbydemo?includeCompensation=1").json()["jobs"]
    assert "compensation" not in almost
    body = http.get("/posting-api/job-board/ashbydemo?includeCompensation=true").json()
    assert body["apiVersion"] == "1"
    assert body["jobs"][0]["compensation"]["summaryComponents"][0]["compensationType"] == "Salary"
    assert http.get("/posting-api/job-board/nosuchboard").status_code == 404
    assert http.get("/posting-api/job-board/ashbydemo/a-1").status_code == 404


def test_demo_board_follows_the_greenhouse_document() -> None:
    with TestClient(create_job_board_app()) as demo:
        jobs = f"/v1/boards/{DEMO_BOARD}/jobs"
        for almost in ("1", "True", "yes", "on"):
            answer = demo.get(jobs, params={"content": almost})
            assert answer.status_code == 200, almost  # no framework 422 for a value
            assert all("content" not in j for j in answer.json()["jobs"]), almost
        full = demo.get(jobs, params={"content": "true"}).json()["jobs"]
        assert all(j["content"].startswith("&lt;") and j["offices"] for j in full)
        assert demo.get(f"/v1/boards/{DEMO_BOARD}/jobs/4012001").status_code == 501
        assert demo.get("/v1/boards/someone-else").status_code == 404
        assert demo.get("/v1/boards/someone-else/jobs").status_code == 404


def test_demo_careers_page_nests_its_posting_as_the_page_main_entity() -> None:
    with TestClient(create_job_board_app()) as demo:
        page = demo.get("/demo/careers/jobs/support-engineer")
    assert page.status_code == 200
    script = page.text.split('<script type="application/ld+json">')[1].split("</script>")[0]
    data = json.loads(script)
    [item_page] = [n for n in data["@graph"] if n["@type"] == "ItemPage"]
    assert item_page["mainEntity"]["@type"] == "JobPosting"
    [posting] = careers.postings_of_page(page.text, str(page.url))
    assert (posting.external_id, posting.work_mode) == ("support-engineer", "remote")
    assert (posting.salary_min_ks, posting.salary_max_ks) == (83, 114)  # 40–55 USD an hour
