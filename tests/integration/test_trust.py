"""Trust, against the real database and the HTTP API: tokens that are listed, revoked and
expire; daily caps; event-stream wake-ups (streams that end on revocation, staleness and caps
run on a live server: tests/e2e/test_trust_live.py); /status and /metrics under a flood while
job search stays fast; a 400-word query;
CSV cells; forgetting a person (gone from old results, never bought again, absent from the
logs); the retention purge; the audit log and who may read it; what public probes withhold;
the API connections' statement timeout."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import statistics
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from typer.testing import CliRunner

from shortlist.api.routes.events import Wakeups
from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.cli import build_app
from shortlist.config import Settings
from shortlist.db import channels
from shortlist.db.pool import open_async_pool
from shortlist.db.types import AsyncPool
from shortlist.queue.notify import Notifier
from shortlist.redact import RedactingFormatter
from shortlist.talent.ingest import CandidateCreate, insert_candidates
from shortlist.talent.reaper import reap_once
from tests.api_fixtures import EmbedPending
from tests.backfill_support import (
    BACKFILL,
    MakeToken,
    Person,
    ScriptedSources,
    assert_contiguous,
    auth,
    get_results,
    running_workers,
    seed_corpus,
    wait_complete,
)
from tests.fakes import FakeEmbedder

NICHE = {
    "query": "Rust embedded firmware for battery-powered sensors",
    "role": "Rust Embedded Firmware Engineer",
}
SRE = [
    Person(
        full_name=f"Sre Person{i}",
        role_title="Site Reliability Engineer",
        skills=("Kubernetes", "Prometheus"),
        summary="Site reliability engineer running kubernetes and prometheus.",
    )
    for i in range(4)
]
SRE_QUERY = {"query": "site reliability engineer kubernetes prometheus"}


pytestmark = pytest.mark.settings(BACKFILL)


def cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(build_app(), list(args))
    assert result.exit_code == code, result.output
    return result.output


async def sql(pool: AsyncPool, query: str, *params: Any) -> list[dict[str, Any]]:
    async with pool.connection() as conn:
        cur = await conn.execute(query, params)
        rows = await cur.fetchall() if cur.description else []
        await conn.commit()
        return rows


# --- tokens ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("cli_env")
async def test_tokens_are_listed_revoked_and_expire_and_revoking_keeps_the_work(
    client: httpx.AsyncClient, pool: AsyncPool, make_token: MakeToken
) -> None:
    out = await asyncio.to_thread(
        cli, "token", "create", "rita", "--role", "recruiter", "--expires-in", "30"
    )
    token = out.strip().splitlines()[-1]
    started = await client.post("/api/searches", json=NICHE, headers=auth(token))
    assert started.status_code == 202
    search_id = started.json()["searchId"]

    listed = json.loads(await asyncio.to_thread(cli, "token", "list", "--json"))
    [rita] = [t for t in listed if t["name"] == "rita"]
    assert rita["role"] == "recruiter" and rita["state"] == "active"
    assert rita["expires_at"] and rita["last_used_at"] and rita["revoked_at"] is None
    assert {"id", "name", "role", "company", "created_at"} <= set(rita)
    assert token not in json.dumps(listed)  # never the secret
    assert "rita" in await asyncio.to_thread(cli, "token", "list")

    assert "revoked 1 token" in await asyncio.to_thread(cli, "token", "revoke", "rita")
    refused = await client.get(f"/api/results?searchId={search_id}", headers=auth(token))
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    await asyncio.to_thread(cli, "token", "revoke", "rita", code=1)  # nothing live left
    listed = json.loads(await asyncio.to_thread(cli, "token", "list", "--json"))
    assert [t["state"] for t in listed if t["name"] == "rita"] == ["revoked"]
    # Revoking deleted nothing: the search is still there for an admin.
    admin = await make_token("ops", Role.admin)
    kept = await client.get(f"/api/searches/{search_id}", headers=auth(admin))
    assert kept.status_code == 200 and kept.json()["query"] == NICHE["query"]
    # And a token row cannot be deleted from under its work.
    with pytest.raises(psycopg.errors.IntegrityError):  # ON DELETE RESTRICT
        await sql(pool, "DELETE FROM api_tokens WHERE name = 'rita'")

    # Expiry: refused from the first request after it.
    old = await make_token("old", Role.recruiter)
    assert (await client.get("/api/searches", headers=auth(old))).status_code == 200
    await sql(
        pool, "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'old'"
    )
    assert (await client.get("/api/searches", headers=auth(old))).status_code == 401


# --- event streams: revocation, caps, endings, wake-ups -----------------------------------------


async def test_a_stream_wakes_for_its_own_search_only(
    client: httpx.AsyncClient, db_url: str, pool: AsyncPool, make_token: MakeToken
) -> None:
    mine, other = uuid.uuid4(), uuid.uuid4()
    wakeups = Wakeups(Notifier(db_url), mine)
    try:
        wakeups.search_events.put_nowait(str(other))
        assert await wakeups.wait(0.05) is False
        wakeups.search_events.put_nowait(str(mine))
        assert await wakeups.wait(0.05) is True
    finally:
        wakeups.close()
    # A stub's insert and status change notify its own search's id on the streams' channel.
    rita = await make_token("rita", Role.recruiter)
    search_id = (await client.post("/api/searches", json=NICHE, headers=auth(rita))).json()[
        "searchId"
    ]
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as listener:
        await listener.execute(f"LISTEN {channels.SEARCH_EVENTS}")
        await sql(
            pool,
            "INSERT INTO search_candidates (search_id, external_id, tier)"
            " VALUES (%s, 'talent:x', 'strict')",
            search_id,
        )
        await sql(
            pool,
            "UPDATE search_candidates SET status = 'skipped' WHERE external_id = 'talent:x'",
        )
        got = [n.payload async for n in listener.notifies(timeout=2.0, stop_after=2)]
    assert got == [search_id, search_id]


# --- daily caps ---------------------------------------------------------------------------------


async def test_daily_caps_answer_429_naming_the_limit_and_cut_the_budget(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken
) -> None:
    services.settings = services.settings.model_copy(
        update={
            "recruiter_daily_searches": 2,
            "recruiter_daily_credits": 100,
            "search_credit_budget": 80,
        }
    )
    rita = await make_token("rita", Role.recruiter)
    first = await client.post("/api/searches", json=NICHE, headers=auth(rita))
    assert first.status_code == 202
    first_id = first.json()["searchId"]
    detail = (await client.get(f"/api/searches/{first_id}", headers=auth(rita))).json()
    assert detail["budget"]["credits"] == 80
    # The first search is running with 80 credits reserved: the next gets what is left.
    second = await client.post("/api/searches", json=NICHE, headers=auth(rita))
    assert second.status_code == 202
    detail = (
        await client.get(f"/api/searches/{second.json()['searchId']}", headers=auth(rita))
    ).json()
    assert detail["budget"]["credits"] == 20
    refused = await client.post("/api/searches", json=NICHE, headers=auth(rita))
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "quota_exceeded"
    assert error["limit"] == "SHORTLIST_RECRUITER_DAILY_SEARCHES"
    assert "SHORTLIST_RECRUITER_DAILY_SEARCHES" in error["message"]
    assert int(refused.headers["Retry-After"]) > 0  # until the next UTC day
    # Credits: another recruiter whose searches already spent the day's credits.
    sam = await make_token("sam", Role.recruiter)
    await sql(
        services.pool,
        "INSERT INTO provider_calls (owner_token_id, provider, kind, credits, outcome)"
        " SELECT id, 'pdl', 'search', 100, 'ok' FROM api_tokens WHERE name = 'sam'",
    )
    over = await client.post("/api/searches", json=NICHE, headers=auth(sam))
    assert over.status_code == 429
    assert over.json()["error"]["limit"] == "SHORTLIST_RECRUITER_DAILY_CREDITS"
    # Admins are exempt.
    admin = await make_token("ops", Role.admin)
    for _ in range(3):
        assert (
            await client.post("/api/searches", json=NICHE, headers=auth(admin))
        ).status_code == 202


# --- /status and /metrics under a flood; long queries --------------------------------------------


async def test_status_and_metrics_flood_leaves_job_search_fast_and_long_queries_are_cut(
    client: httpx.AsyncClient,
    app: Any,
    services: Services,
    make_token: MakeToken,
    embed_pending: EmbedPending,
) -> None:
    services.settings = services.settings.model_copy(update={"probe_rate_limit": 40})
    app.state.probe_limiter.__init__(40)
    company = await make_token("acme", Role.company)
    for i in range(6):
        listing = {
            "company_name": "Acme",
            "job_title": f"Backend Engineer {i}",
            "city_location": "Berlin",
            "description": "Python services on PostgreSQL.",
        }
        assert (await client.post("/api/jobs", json=listing, headers=auth(company))).is_success
    await embed_pending()
    cache = app.state.probe_cache
    before = cache.computed

    flood_codes: list[int] = []

    async def flood() -> None:
        for _ in range(15):
            answers = await asyncio.gather(
                *(client.get(p) for p in ("/status", "/metrics", "/status", "/metrics"))
            )
            flood_codes.extend(a.status_code for a in answers)

    async def searches() -> list[float]:
        took = []
        for _ in range(10):
            t0 = time.perf_counter()
            r = await client.get("/api/jobs/search", params={"q": "python backend"})
            took.append(time.perf_counter() - t0)
            assert r.status_code == 200
        return took

    _, took = await asyncio.gather(flood(), searches())
    assert statistics.median(took) < 1.0
    # Computed a few times, not once per request; and the flood was rate limited.
    assert cache.computed - before <= 6
    assert 429 in flood_codes and flood_codes.count(200) >= 40
    assert 500 not in flood_codes

    # A 400-word query: at most 32 words reach the full-text match; answered well under 2 s.
    words = " ".join(chr(97 + i % 26) for i in range(400))  # 799 characters
    recruiter = await make_token("rita", Role.recruiter)
    t0 = time.perf_counter()
    started = await client.post("/api/searches", json={"query": words}, headers=auth(recruiter))
    assert started.status_code == 202 and time.perf_counter() - t0 < 2.0
    t0 = time.perf_counter()
    jobs = await client.get("/api/jobs/search", params={"q": words[:500]})
    assert jobs.status_code == 200 and time.perf_counter() - t0 < 2.0


# --- CSV -----------------------------------------------------------------------------------------


async def test_csv_quotes_every_cell_and_neutralises_formulas_at_every_cell_start(
    client: httpx.AsyncClient, services: Services, embedder: FakeEmbedder, make_token: MakeToken
) -> None:
    services.settings = services.settings.model_copy(update={"backfill_min_results": 4})
    await seed_corpus(services.pool, embedder, SRE)
    rita = await make_token("rita", Role.recruiter)
    started = await client.post("/api/searches", json=SRE_QUERY, headers=auth(rita))
    search_id = started.json()["searchId"]
    await sql(
        services.pool,
        "UPDATE candidates SET full_name = 'x;=HYPERLINK(\"http://evil\")',"
        " skills = ARRAY['ok', '@SUM(1)'], location = 'Berlin|+cmd'"
        " WHERE full_name = 'Sre Person0'",
    )
    response = await client.get(f"/api/searches/{search_id}/results.csv", headers=auth(rita))
    assert response.status_code == 200
    text = response.content.decode("utf-8")
    lines = text.strip().split("\r\n")
    assert len(lines) == 5
    for line in lines:
        cells = next(csv.reader(io.StringIO(line)))
        assert line == ",".join('"' + c.replace('"', '""') + '"' for c in cells)
    assert "x;'=HYPERLINK" in text and "'@SUM(1)" in text and "Berlin|'+cmd" in text
    for separator in (",", ";", "\t", "|"):
        for line in lines:
            for piece in line.split(separator):
                assert not piece.lstrip(' "').startswith(("=", "+", "@")), (separator, piece)


# --- forgetting a person ----------------------------------------------------------------------


@pytest.fixture
def redacted_log() -> Iterator[io.StringIO]:
    """Every log line at INFO and above as the product writes it (through the redactor)."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


@pytest.mark.usefixtures("cli_env")
async def test_a_forgotten_person_leaves_old_results_and_is_never_bought_again(
    client: httpx.AsyncClient,
    services: Services,
    make_token: MakeToken,
    redacted_log: io.StringIO,
) -> None:
    people = ["ada.racer", "bob.builder", "cy.coder"]
    scripted = ScriptedSources(people)
    services.sources = scripted.as_sources()
    rita = await make_token("rita", Role.recruiter)
    admin = await make_token("ops", Role.admin)
    search_id = (await client.post("/api/searches", json=NICHE, headers=auth(rita))).json()[
        "searchId"
    ]
    async with running_workers(services):
        body = await wait_complete(client, rita, search_id)
    assert body["resultCount"] == 3
    by_email = {r["candidate"]["email"]: r for r in body["results"]}
    ada = by_email["ada.racer@example.com"]
    ada_id = ada["candidate"]["id"]
    marked = await client.put(
        f"/api/candidates/{ada_id}/mark",
        json={"status": "shortlisted", "note": "call Ada"},
        headers=auth(rita),
    )
    assert marked.status_code == 200

    assert (await client.delete(f"/api/candidates/{ada_id}", headers=auth(rita))).status_code == 403
    erased = await client.delete(f"/api/candidates/{ada_id}", headers=auth(admin))
    assert erased.status_code == 200, erased.text
    assert erased.json()["resultsTombstoned"] == 1
    assert erased.json()["identifiersSuppressed"] >= 2
    assert erased.json()["messagesErased"] == 0  # she sent no job post by e-mail

    # Gone from the old results: the rank stays, as a tombstone; ranks stay contiguous.
    after = await get_results(client, rita, search_id, limit=500)
    assert after["resultCount"] == 3
    assert [r["rank"] for r in after["results"]] == [1, 2, 3]
    [tomb] = [r for r in after["results"] if r["rank"] == ada["rank"]]
    assert tomb["candidate"] is None and tomb["status"] == "forgotten"
    csv_text = (await client.get(f"/api/searches/{search_id}/results.csv", headers=auth(rita))).text
    for text in (json.dumps(after), csv_text):
        assert "ada.racer" not in text and "Ada Racer" not in text and "call Ada" not in text
    assert (await client.get("/api/shortlist", headers=auth(rita))).json()["marks"] == []
    leftovers = await sql(
        services.pool,
        "SELECT (SELECT count(*) FROM candidates WHERE external_id = 'talent:ada.racer') AS c,"
        " (SELECT count(*) FROM search_candidates WHERE external_id = 'talent:ada.racer'"
        "   OR display_name ILIKE '%%ada%%') AS s,"
        " (SELECT count(*) FROM candidate_marks) AS m,"
        " (SELECT count(*) FROM suppressed_people) AS p",
    )
    assert leftovers == [{"c": 0, "s": 0, "m": 0, "p": leftovers[0]["p"]}]
    assert leftovers[0]["p"] >= 2

    # Forgotten by e-mail at the CLI, before anyone ingests that person again.
    out = await asyncio.to_thread(cli, "privacy", "forget", "Bob.Builder@example.com")
    assert "forgot 1 profile(s)" in out
    assert "0 e-mail message(s) erased" in out
    # A new backfill from the same provider finds both again: neither is bought nor stored.
    second = (await client.post("/api/searches", json=NICHE, headers=auth(rita))).json()["searchId"]
    async with running_workers(services):
        again = await wait_complete(client, rita, second)
    emails = [r["candidate"]["email"] for r in again["results"] if r["candidate"]]
    assert emails == ["cy.coder@example.com"]
    assert scripted.enriched["ada.racer"] == 1 and scripted.enriched["bob.builder"] == 1
    assert_contiguous(again["results"], again["resultCount"])
    # An ingest of the same person is refused silently: not stored.
    async with services.pool.connection() as conn:
        stored = await insert_candidates(
            conn,
            [
                CandidateCreate(full_name="Ada Racer", email="ADA.racer@example.com"),
                CandidateCreate(full_name="Dee New", email="dee@example.com"),
            ],
        )
        await conn.commit()
    assert stored == 1
    gone = await sql(
        services.pool, "SELECT count(*) AS n FROM candidates WHERE lower(email) LIKE 'ada%%'"
    )
    assert gone == [{"n": 0}]

    log_text = redacted_log.getvalue()
    assert "privacy: forgot 1 profile" in log_text
    for trace in ("ada.racer", "Ada Racer", "bob.builder", "Bob.Builder"):
        assert trace not in log_text


async def test_retention_purges_bought_profiles_nobody_marked(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken
) -> None:
    rita = await make_token("rita", Role.recruiter)
    search_id = (await client.post("/api/searches", json=NICHE, headers=auth(rita))).json()[
        "searchId"
    ]
    rows = await sql(
        services.pool,
        "INSERT INTO candidates (external_id, source, full_name, email, updated_at) VALUES"
        " ('talent:old', 'talent_api', 'Old One', 'old@example.com', now() - interval '40 days'),"
        " ('talent:kept', 'talent_api', 'Marked One', 'kept@example.com',"
        "  now() - interval '40 days'),"
        " ('talent:new', 'talent_api', 'New One', 'new@example.com', now()),"
        " (NULL, 'import', 'Internal One', 'in@example.com', now() - interval '400 days')"
        " RETURNING id, full_name",
    )
    ids = {r["full_name"]: r["id"] for r in rows}
    await sql(
        services.pool,
        "INSERT INTO search_results (search_id, rank, candidate_id, tier, score)"
        " VALUES (%s, 1, %s, 'strict', 0.9), (%s, 2, %s, 'strict', 0.8)",
        search_id,
        ids["Old One"],
        search_id,
        ids["Marked One"],
    )
    await sql(services.pool, "UPDATE searches SET result_count = 2 WHERE id = %s", search_id)
    assert (
        await client.put(
            f"/api/candidates/{ids['Marked One']}/mark",
            json={"status": "shortlisted"},
            headers=auth(rita),
        )
    ).status_code == 200
    # marking bumps nothing on the profile; put the old date back to be sure
    await sql(
        services.pool,
        "UPDATE candidates SET updated_at = now() - interval '40 days' WHERE id = %s",
        ids["Marked One"],
    )

    settings = services.settings.model_copy(update={"profile_retention_days": 30})
    report = await reap_once(services.pool, settings)
    assert report.purged_profiles == 1
    left = {r["full_name"] for r in await sql(services.pool, "SELECT full_name FROM candidates")}
    assert left == {"Marked One", "New One", "Internal One"}
    page = await get_results(client, rita, search_id)
    assert [r["rank"] for r in page["results"]] == [1, 2]
    assert page["results"][0]["status"] == "forgotten" and page["results"][0]["candidate"] is None
    # Not suppressed: a later search may buy the person again.
    assert await sql(services.pool, "SELECT count(*) AS n FROM suppressed_people") == [{"n": 0}]
    # 0: kept forever.
    keep = services.settings.model_copy(update={"profile_retention_days": 0})
    assert (await reap_once(services.pool, keep)).purged_profiles == 0


# --- the audit log ------------------------------------------------------------------------------


@pytest.mark.usefixtures("cli_env")
async def test_the_audit_log_records_who_saw_contact_details_for_admins_only(
    client: httpx.AsyncClient, services: Services, embedder: FakeEmbedder, make_token: MakeToken
) -> None:
    services.settings = services.settings.model_copy(update={"backfill_min_results": 4})
    await seed_corpus(services.pool, embedder, SRE)
    rita = await make_token("rita", Role.recruiter)
    sam = await make_token("sam", Role.recruiter)
    admin = await make_token("ops", Role.admin)
    search_id = (await client.post("/api/searches", json=SRE_QUERY, headers=auth(rita))).json()[
        "searchId"
    ]
    page = await get_results(client, rita, search_id)
    people = sorted(r["candidate"]["id"] for r in page["results"])
    assert (
        await client.get(f"/api/searches/{search_id}/results.csv", headers=auth(rita))
    ).status_code == 200
    one = people[0]
    detail = await client.get(f"/api/candidates/{one}", headers=auth(rita))
    assert detail.status_code == 200 and detail.json()["email"]
    # Someone else's candidate is not theirs to read.
    assert (await client.get(f"/api/candidates/{one}", headers=auth(sam))).status_code == 404

    assert (await client.get("/api/audit", headers=auth(rita))).status_code == 403
    assert (await client.get("/api/audit")).status_code == 401
    log = (await client.get("/api/audit", headers=auth(admin))).json()["entries"]
    assert [e["action"] for e in log] == ["candidate", "export", "results"]
    assert all(e["token"] == "rita" and e["searchId"] in (search_id, None) for e in log)
    assert sorted(log[2]["candidateIds"]) == people == sorted(log[1]["candidateIds"])
    assert log[0]["candidateIds"] == [one]

    about_one = (
        await client.get("/api/audit", params={"candidate": people[1]}, headers=auth(admin))
    ).json()["entries"]
    assert [e["action"] for e in about_one] == ["export", "results"]
    by_sam = (await client.get("/api/audit", params={"token": "sam"}, headers=auth(admin))).json()
    assert by_sam["entries"] == []

    rows = json.loads(
        await asyncio.to_thread(cli, "audit", "--json", "--candidate", one, "--token", "rita")
    )
    assert [r["action"] for r in rows] == ["candidate", "export", "results"]
    assert "rita" in await asyncio.to_thread(cli, "audit")


# --- what public probes withhold; statement timeout ------------------------------------------


async def test_public_status_and_readyz_withhold_hosts_ids_and_provider_text(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken, monkeypatch: Any
) -> None:
    company = await make_token("acme", Role.company)
    admin = await make_token("ops", Role.admin)
    listing = {
        "company_name": "Acme",
        "job_title": "Backend Engineer",
        "city_location": "Berlin",
        "description": "Python.",
    }
    created = (await client.post("/api/jobs", json=listing, headers=auth(company))).json()
    await sql(
        services.pool,
        "UPDATE job_listings SET embedding_status = 'failed', embedding_failed_at = now(),"
        " embedding_error = 'upstream db-7.internal:5432 refused: tenant 991' WHERE id = %s",
        created["id"],
    )
    # A job source's error and a mail's reason (in words its sender chose) are the operator's.
    await sql(
        services.pool,
        "INSERT INTO job_sources (spec, kind, status, last_error)"
        " VALUES ('greenhouse:acme', 'greenhouse', 'failed', 'HTTP 404 from boards-7.internal')",
    )
    await sql(
        services.pool,
        "INSERT INTO inbound_mail (company_name, recipient, dedup_key, raw, status, reason)"
        " VALUES ('Hushco', 'post-x@jobs.example', 'k', 'raw', 'rejected',"
        " 'header X-Secret-Plan names no job')",
    )
    public = (await client.get("/status")).text
    assert "db-7.internal" not in public and created["id"] not in public
    assert "Backend Engineer at Acme" in public  # what failed, not why
    assert "boards-7.internal" not in public and "X-Secret-Plan" not in public
    assert "Hushco" not in public and "<td>None</td>" not in public
    full = (await client.get("/status", headers=auth(admin))).text
    assert "db-7.internal" in full and created["id"] in full
    assert "boards-7.internal" in full and "X-Secret-Plan" in full and "Hushco" in full

    report = [{"name": "replica-1.internal:5432/shortlist", "state": "ok", "lag_seconds": 0.1,
               "error": "connection to 10.1.2.3 refused"}]  # fmt: skip
    monkeypatch.setattr(services.reads, "replicas", [object()])
    monkeypatch.setattr(services.reads.__class__, "degraded", property(lambda self: False))
    monkeypatch.setattr(services.reads, "report", lambda: report)
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["replicas"] == [{"state": "ok", "lag_seconds": 0.1}]
    assert "internal" not in ready.text and "10.1.2.3" not in ready.text
    as_admin = (await client.get("/readyz", headers=auth(admin))).json()
    assert as_admin["replicas"][0]["name"] == "replica-1.internal:5432/shortlist"


async def test_api_connections_have_a_statement_timeout(db_url: str) -> None:
    pool = await open_async_pool(db_url, min_size=1, max_size=1, statement_timeout=0.2)
    try:
        async with pool.connection() as conn:
            shown = await (await conn.execute("SHOW statement_timeout")).fetchone()
            assert shown == {"statement_timeout": "200ms"}
            with pytest.raises(psycopg.errors.QueryCanceled):
                await conn.execute("SELECT pg_sleep(2)")
    finally:
        await pool.close()
    assert Settings().statement_timeout == 30.0
