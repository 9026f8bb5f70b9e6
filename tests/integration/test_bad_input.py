"""Bad input, written by hand (the fuzzer's blind spots): oversized bodies and queries, invalid
UTF-8, NUL bytes, wrong content types, huge numbers, malformed e-mails and import rows.

The rule (SPEC §7): a 4xx with a JSON error, nothing written, never a 5xx. The app is driven
over ASGI with ``raise_app_exceptions=False``, so a crash shows up as the 500 a client would
get rather than as a test-side exception.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from shortlist.auth import Role
from shortlist.db.types import AsyncPool
from shortlist.listings.ingest import ListingFileReader, ingest_listings

MAX_BODY = 250_000
GOOD_LISTING = {
    "company_name": "Acme",
    "job_title": "Backend Engineer",
    "city_location": "Porto",
    "description": "Python services on PostgreSQL.",
}
GOOD_EMAIL = (
    b"Subject: Robotics Engineer at Acme Robotics (Berlin)\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n\r\n"
    b"Write ROS 2 software for our warehouse robots.\r\n"
)


pytestmark = pytest.mark.settings(max_body_bytes=MAX_BODY)


@pytest.fixture
async def raw_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


@pytest.fixture
async def auth(make_token: Callable[[str, Role], Awaitable[str]]) -> dict[str, dict[str, str]]:
    company = await make_token("acme", Role.company)
    recruiter = await make_token("rita", Role.recruiter)
    return {
        "company": {"Authorization": f"Bearer {company}"},
        "recruiter": {"Authorization": f"Bearer {recruiter}"},
    }


async def counts(pool: AsyncPool) -> dict[str, int]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT (SELECT count(*) FROM job_listings) AS listings,"
            " (SELECT count(*) FROM searches) AS searches,"
            " (SELECT count(*) FROM search_candidates) AS stubs"
        )
        row = await cur.fetchone()
    assert row is not None
    return {k: int(v) for k, v in row.items()}


def assert_refused(response: httpx.Response, *allowed: int) -> None:
    """A 4xx of ``allowed`` (any 4xx when none given) with the JSON error shape."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    if allowed:
        assert response.status_code in allowed, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert error["code"] and error["message"], response.text


# --- sizes ----------------------------------------------------------------------------------------

BODY_ENDPOINTS = [
    ("POST", "/api/jobs", "company", "application/json"),
    ("POST", "/api/jobs/email", "company", "message/rfc822"),
    ("POST", "/api/searches", "recruiter", "application/json"),
]


@pytest.mark.parametrize(("method", "path", "who", "media_type"), BODY_ENDPOINTS)
async def test_oversized_bodies_get_413_and_write_nothing(
    raw_client: httpx.AsyncClient,
    pool: AsyncPool,
    auth: dict[str, dict[str, str]],
    method: str,
    path: str,
    who: str,
    media_type: str,
) -> None:
    before = await counts(pool)
    big = json.dumps({**GOOD_LISTING, "query": "x", "description": "y" * MAX_BODY}).encode()
    if media_type == "message/rfc822":
        big = GOOD_EMAIL + b"z" * MAX_BODY
    headers = {**auth[who], "Content-Type": media_type}

    # With a Content-Length: refused before the body is read.
    response = await raw_client.request(method, path, content=big, headers=headers)
    assert_refused(response, 413)

    # Chunked, no Content-Length: refused while streaming, once past the limit.
    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(big), 4096):
            yield big[i : i + 4096]

    response = await raw_client.request(method, path, content=chunks(), headers=headers)
    assert_refused(response, 413)

    # A Content-Length that is no number is not believed either.
    for length in (b"-1", b"1e9", b"\xb2", b"12 34"):  # b"\xb2" is "²" in latin-1
        response = await raw_client.request(
            method, path, content=b"{}", headers={**headers, "Content-Length": length}
        )
        assert_refused(response)
    assert await counts(pool) == before


async def test_oversized_queries_are_refused(
    raw_client: httpx.AsyncClient, auth: dict[str, dict[str, str]]
) -> None:
    recruiter = auth["recruiter"]
    cases = [
        ("/api/jobs/search", {"q": "x" * 10_000}, {}),
        ("/api/jobs/search", {"q": "python", "location": "x" * 5_000}, {}),
        ("/api/jobs/search", {"q": "python " * 2_000}, {}),
        ("/api/results", {"searchId": "1" * 5_000}, recruiter),
        ("/api/jobs/" + "a" * 20_000, {}, {}),
        ("/api/searches/" + "0" * 20_000, {}, recruiter),
    ]
    for path, params, headers in cases:
        response = await raw_client.get(path, params=params, headers=headers)
        assert_refused(response)
    # Thousands of parameters, and a header far longer than any token.
    many = "&".join(f"p{i}={i}" for i in range(3_000))
    assert (await raw_client.get(f"/api/jobs/search?q=python&{many}")).status_code == 200
    response = await raw_client.get(
        "/api/searches", headers={"Authorization": "Bearer sl_" + "x" * 100_000}
    )
    assert_refused(response, 401)


HUGE = "9" * 40


@pytest.mark.parametrize(
    ("path", "who"),
    [
        (f"/api/jobs/search?q=a&size={HUGE}", None),
        ("/api/jobs/search?q=a&size=-1", None),
        ("/api/jobs/search?q=a&size=0", None),
        ("/api/jobs/search?q=a&size=1.5", None),
        (f"/api/jobs/search?q=a&offset={HUGE}", None),
        (f"/api/jobs/search?q=a&salary_min={HUGE}", None),
        ("/api/jobs/search?q=a&salary_min=-5", None),
        ("/api/jobs/search?q=a&salary_min=NaN", None),
        (f"/api/results?searchId=00000000-0000-4000-8000-000000000000&after={HUGE}", "recruiter"),
        ("/api/results?searchId=00000000-0000-4000-8000-000000000000&after=-1", "recruiter"),
        (f"/api/results?searchId=00000000-0000-4000-8000-000000000000&limit={HUGE}", "recruiter"),
        (f"/api/searches?limit={HUGE}", "recruiter"),
        (f"/api/searches/00000000-0000-4000-8000-000000000000/events?after={HUGE}", "recruiter"),
    ],
)
async def test_huge_and_negative_numbers_are_refused(
    raw_client: httpx.AsyncClient, auth: dict[str, dict[str, str]], path: str, who: str | None
) -> None:
    response = await raw_client.get(path, headers=auth[who] if who else {})
    assert_refused(response, 422)


async def test_huge_numbers_in_bodies_and_ids_write_nothing(
    raw_client: httpx.AsyncClient, pool: AsyncPool, auth: dict[str, dict[str, str]]
) -> None:
    before = await counts(pool)
    bodies: list[tuple[str, dict[str, Any], str]] = [
        ("/api/jobs", {**GOOD_LISTING, "salary_min_ks": 10**30}, "company"),
        ("/api/jobs", {**GOOD_LISTING, "salary_max_ks": -(10**30)}, "company"),
        ("/api/jobs", {**GOOD_LISTING, "salary_min_ks": 1e308}, "company"),
        ("/api/searches", {"query": "rust", "min_years_experience": 10**30}, "recruiter"),
        ("/api/searches", {"query": "rust", "min_years_experience": -1}, "recruiter"),
    ]
    for path, body, who in bodies:
        assert_refused(await raw_client.post(path, json=body, headers=auth[who]), 422)
    sid = "00000000-0000-4000-8000-000000000000"
    for stub in (HUGE, "-1", "²", "٣", "1e3", "0x10"):
        response = await raw_client.post(
            f"/api/searches/{sid}/candidates/{stub}/retry", headers=auth["recruiter"]
        )
        assert_refused(response, 404)
    assert await counts(pool) == before


# --- encodings and characters ---------------------------------------------------------------------


async def test_invalid_utf8_nul_and_lone_surrogates_are_refused(
    raw_client: httpx.AsyncClient, pool: AsyncPool, auth: dict[str, dict[str, str]]
) -> None:
    before = await counts(pool)
    json_type = {"Content-Type": "application/json"}
    bodies: list[tuple[str, bytes, str]] = [
        ("/api/jobs", b'{"company_name": "\xff\xfe", "job_title": "x"}', "company"),
        ("/api/jobs", json.dumps({**GOOD_LISTING, "job_title": "a\x00b"}).encode(), "company"),
        ("/api/jobs", json.dumps({**GOOD_LISTING, "city_location": "\ud800"}).encode(), "company"),
        ("/api/searches", b'{"query": "\xc3\x28"}', "recruiter"),
        ("/api/searches", b'{"query": "a\\u0000b"}', "recruiter"),
        ("/api/searches", b'{"query": "ok", "role": "x\\u0000"}', "recruiter"),
        ("/api/searches", b'{"query": "ok", "location": "\\u0000"}', "recruiter"),
        ("/api/searches", b'{"query": "ok", "skills": ["rust", "\\u0000"]}', "recruiter"),
        ("/api/searches", b'{"query": "\\ud800"}', "recruiter"),
        ("/api/searches", b'{"query": "ok", "skills": ["\\udfff"]}', "recruiter"),
        ("/api/searches", b"[" * 20_000 + b"]" * 20_000, "recruiter"),
        ("/api/jobs", b'{"company_name": ' * 2_000, "company"),
    ]
    for path, body, who in bodies:
        response = await raw_client.post(path, content=body, headers={**auth[who], **json_type})
        assert_refused(response, 400, 422)
    # A listing to PATCH with the same garbage.
    created = await raw_client.post("/api/jobs", json=GOOD_LISTING, headers=auth["company"])
    assert created.status_code == 201
    listing = created.json()["id"]
    for patch in (b'{"job_title": "\\u0000"}', b'{"description": "\xff"}', b'{"city_location": 1}'):
        response = await raw_client.patch(
            f"/api/jobs/{listing}", content=patch, headers={**auth["company"], **json_type}
        )
        assert_refused(response, 400, 422)
    after = await counts(pool)
    assert after == {**before, "listings": before["listings"] + 1}
    got = await raw_client.get(f"/api/jobs/{listing}")
    assert got.json()["job_title"] == GOOD_LISTING["job_title"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/jobs/search?q=%00",
        "/api/jobs/search?q=python&location=%00",
        "/api/jobs/%00",
        "/api/jobs/%FF%FE",
        "/api/jobs/..%2F..%2Fetc%2Fpasswd",
        "/api/searches/%00",
        "/api/results?searchId=%00",
        "/api/results?searchId=%FF",
        "/static/..%2Fpages.py",
        "/jobs/%00",
    ],
)
async def test_odd_characters_in_urls_are_4xx(
    raw_client: httpx.AsyncClient, auth: dict[str, dict[str, str]], path: str
) -> None:
    response = await raw_client.get(path, headers=auth["recruiter"])
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:200])


async def test_undecodable_query_text_is_searched_not_crashed(
    raw_client: httpx.AsyncClient,
) -> None:
    for q in ("%FF%FE", "%C3%28", "%ED%A0%80"):  # invalid UTF-8, incl. an encoded surrogate
        response = await raw_client.get(f"/api/jobs/search?q={q}")
        assert response.status_code == 200, response.text
        assert response.json()["hits"] == []


# --- content types --------------------------------------------------------------------------------


async def test_wrong_content_types_are_refused(
    raw_client: httpx.AsyncClient, pool: AsyncPool, auth: dict[str, dict[str, str]]
) -> None:
    before = await counts(pool)
    body = json.dumps(GOOD_LISTING).encode()
    cases = [
        ("/api/jobs", "text/plain", body, "company"),
        ("/api/jobs", "application/x-www-form-urlencoded", b"company_name=Acme", "company"),
        ("/api/jobs", "multipart/form-data; boundary=x", b"--x--", "company"),
        ("/api/jobs", "application/xml", b"<listing/>", "company"),
        ("/api/jobs", "", body[:-1], "company"),
        ("/api/jobs/email", "application/json", body, "company"),
        ("/api/jobs/email", "text/plain", GOOD_EMAIL, "company"),
        ("/api/jobs/email", "", GOOD_EMAIL, "company"),
        ("/api/searches", "text/plain", b'{"query": "rust"}'[:-1], "recruiter"),
        ("/api/searches", "application/x-www-form-urlencoded", b"query=rust", "recruiter"),
    ]
    for path, media_type, content, who in cases:
        headers = {**auth[who]}
        if media_type:
            headers["Content-Type"] = media_type
        response = await raw_client.post(path, content=content, headers=headers)
        assert_refused(response, 400, 415, 422)
    assert await counts(pool) == before


# --- e-mails --------------------------------------------------------------------------------------


def _nested_multipart(depth: int) -> bytes:
    head = (
        b"Subject: Engineer at Acme (Berlin)\r\nContent-Type: multipart/mixed; boundary=b0\r\n\r\n"
    )
    body = b"".join(
        b"--b%d\r\nContent-Type: multipart/mixed; boundary=b%d\r\n\r\n" % (i, i + 1)
        for i in range(depth)
    )
    body += b"--b%d\r\nContent-Type: text/plain\r\n\r\nThe job.\r\n" % depth
    body += b"".join(b"--b%d--\r\n" % i for i in range(depth, -1, -1))
    return head + body


MALFORMED_EMAILS = {
    "empty": b"",
    "whitespace": b" \r\n\r\n ",
    "binary": bytes(range(256)) * 20,
    "headers only": b"Subject: Eng at Acme (Berlin)\r\n",
    "no subject or fields": b"From: x@y.test\r\n\r\nSome text.\r\n",
    "NUL in body": b"Subject: Eng at Acme (Berlin)\r\n\r\nThe \x00 job.\r\n",
    "header line of 40 kB": b"Subject: " + b"A" * 40_000 + b"\r\n\r\nbody\r\n",
    "only an attachment": (
        b"Subject: Eng at Acme (Berlin)\r\nContent-Type: multipart/mixed; boundary=z\r\n\r\n"
        b"--z\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        b"JVBERi0xLjQK\r\n--z--\r\n"
    ),
    "unterminated multipart": (
        b"Subject: Eng at Acme (Berlin)\r\nContent-Type: multipart/mixed; boundary=z\r\n\r\n--z\r\n"
    ),
    "encoded-word garbage": b"Subject: =?utf-8?q?=FF=FE?= at =?x?b?@@?= (=?utf-8?b?=?=)\r\n\r\n",
}


@pytest.mark.parametrize("raw", MALFORMED_EMAILS.values(), ids=MALFORMED_EMAILS.keys())
async def test_malformed_emails_are_refused_and_write_nothing(
    raw_client: httpx.AsyncClient, pool: AsyncPool, auth: dict[str, dict[str, str]], raw: bytes
) -> None:
    before = await counts(pool)
    response = await raw_client.post(
        "/api/jobs/email",
        content=raw,
        headers={**auth["company"], "Content-Type": "message/rfc822"},
    )
    assert_refused(response, 400, 422)
    assert await counts(pool) == before


async def test_a_deeply_nested_multipart_email_is_refused_not_a_500(
    raw_client: httpx.AsyncClient, auth: dict[str, dict[str, str]]
) -> None:
    raw = _nested_multipart(3_000)
    assert len(raw) < MAX_BODY  # well within the default 1 MB limit too
    response = await raw_client.post(
        "/api/jobs/email",
        content=raw,
        headers={**auth["company"], "Content-Type": "message/rfc822"},
    )
    assert response.status_code < 500, response.text


# --- import files ---------------------------------------------------------------------------------


async def test_jsonl_import_keeps_good_rows_and_names_each_bad_line(
    pool: AsyncPool, tmp_path: Path
) -> None:
    good = json.dumps(GOOD_LISTING)
    lines = [
        good,  # 1
        "{not json",  # 2
        "[1, 2, 3]",  # 3
        json.dumps({**GOOD_LISTING, "salary_min_ks": 10**30}),  # 4
        json.dumps({**GOOD_LISTING, "job_title": "a\x00b"}),  # 5
        '{"company_name": "\\ud800", "job_title": "t", "city_location": "c", "description": "d"}',
        json.dumps({**GOOD_LISTING, "description": "d" * 60_000}),  # 7
        "",  # 8: blank, skipped
        json.dumps({"company_name": "only a company"}),  # 9
        json.dumps({**GOOD_LISTING, "job_title": "Second good one"}),  # 10
    ]
    data = "\n".join(lines).encode() + b"\n" + b'{"company_name": "\xff"}\n'  # 11: bad UTF-8
    path = tmp_path / "jobs.jsonl"
    path.write_bytes(data)
    async with pool.connection() as conn:
        with ListingFileReader(path) as reader:
            report = await ingest_listings(conn, reader)
    assert report.inserted == 2
    assert [b.line for b in report.bad_rows] == [2, 3, 4, 5, 6, 7, 9, 11]
    assert all(b.reason for b in report.bad_rows)
    assert (await counts(pool))["listings"] == 2


async def test_csv_import_keeps_good_rows_and_names_each_bad_line(
    pool: AsyncPool, tmp_path: Path
) -> None:
    header = b"company_name,job_title,city_location,description,salary_min_ks\n"
    rows = [
        b"Acme,Engineer,Porto,Builds things,100\n",  # 2
        b"Acme,Engineer,Porto,Builds things,100,extra,cells\n",  # 3: too many values
        b"Acme,Engineer,Porto,Builds \xff things,100\n",  # 4: bad UTF-8
        b"Acme,Engineer,Porto,Builds things," + b"9" * 40 + b"\n",  # 5: huge salary
        b'Acme,Engineer,Porto,"' + b"x" * 200_000 + b'",1\n',  # 6: a field over the CSV limit
        b",,,,\n",  # 7: blank row, skipped
        b"Acme,,Porto,No title,1\n",  # 8: missing title
        b'Acme,"Multi\nline title",Porto,Still one row,5\n',  # 9-10: one row
    ]
    path = tmp_path / "jobs.csv"
    path.write_bytes(header + b"".join(rows))
    async with pool.connection() as conn:
        with ListingFileReader(path) as reader:
            report = await ingest_listings(conn, reader)
    assert report.inserted == 2, report.bad_rows
    assert [b.line for b in report.bad_rows] == [3, 4, 5, 6, 8]
    assert (await counts(pool))["listings"] == 2
