"""A recruiter's saved people search: the organisation's own — row-level security on its tables
(migration 0044), as on the organisation's searches (migration 0029) — and shown in the
recruiter console."""

from __future__ import annotations

import httpx
from psycopg.types.json import Jsonb

from shortlist.accounts.scope import act_for_org
from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.db.types import AsyncPool
from tests.api_fixtures import MakeToken
from tests.fakes import hash_embed
from tests.integration.rows import insert_candidate


async def scalar(conn: object, query: str) -> object:
    cur = await conn.execute(query)  # type: ignore[attr-defined]
    row = await cur.fetchone()
    assert row is not None
    return next(iter(row.values()))


async def test_people_alerts_and_their_matches_are_the_organisations_own(
    pool: AsyncPool, make_token: MakeToken
) -> None:
    """A statement that forgets its organisation filter, acting for one organisation, sees and
    changes that organisation's people alerts and their matches only; the periodic checker,
    acting for none, sees every one."""
    for name in ("ada", "eve"):
        await make_token(name, Role.recruiter)
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT name, id, org_id FROM api_tokens ORDER BY name")
        tokens = {r["name"]: r for r in await cur.fetchall()}
        cur = await conn.execute("INSERT INTO candidates (full_name) VALUES ('P') RETURNING id")
        person = (await cur.fetchone() or {})["id"]
        for name in ("ada", "eve"):
            cur = await conn.execute(
                "INSERT INTO searches (owner_token_id, query, target_count, query_embedding)"
                " VALUES (%s, %s, 5, array_fill(0.1, ARRAY[384])::vector) RETURNING id",
                (tokens[name]["id"], f"{name}'s search"),
            )
            search = (await cur.fetchone() or {})["id"]
            cur = await conn.execute(
                "INSERT INTO people_alerts (search_id, org_id) VALUES (%s, %s) RETURNING id",
                (search, tokens[name]["org_id"]),
            )
            alert = (await cur.fetchone() or {})["id"]
            await conn.execute(
                "INSERT INTO people_alert_matches (alert_id, candidate_id, score)"
                " VALUES (%s, %s, 0.9)",
                (alert, person),
            )
        await conn.commit()
        async with conn.transaction():
            await act_for_org(conn, tokens["ada"]["org_id"])
            assert await scalar(conn, "SELECT count(*) FROM people_alerts") == 1
            assert await scalar(conn, "SELECT count(*) FROM people_alert_matches") == 1
            cur = await conn.execute("UPDATE people_alerts SET status = 'disabled' RETURNING id")
            assert len(await cur.fetchall()) == 1
            cur = await conn.execute("DELETE FROM people_alert_matches RETURNING alert_id")
            assert len(await cur.fetchall()) == 1
        async with conn.transaction():
            await act_for_org(conn, 0)  # someone of no organisation
            assert await scalar(conn, "SELECT count(*) FROM people_alerts") == 0
        async with conn.transaction():
            await act_for_org(conn, None)  # a site admin, a worker: every organisation
            assert await scalar(conn, "SELECT count(*) FROM people_alerts") == 2
            assert (
                await scalar(conn, "SELECT count(*) FROM people_alerts WHERE status = 'active'")
                == 1
            )
            assert await scalar(conn, "SELECT count(*) FROM people_alert_matches") == 1


async def test_the_recruiter_console_shows_the_people_an_alert_reported(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken
) -> None:
    """``GET /api/searches/{id}/alert`` answers the search's alert and the new people it
    reported (no contact details); the console's results panel shows them, with a button to
    save the alert."""
    from shortlist.alerts import people

    token = await make_token("rita", Role.recruiter)
    rita = {"Authorization": f"Bearer {token}"}
    eve = {"Authorization": f"Bearer {await make_token('eve', Role.recruiter)}"}
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO searches (owner_token_id, user_id, query, role, location,"
            " query_embedding, target_count, status, brief)"
            " SELECT t.id, t.user_id, 'rust firmware engineer', 'Firmware Engineer', 'Berlin',"
            " %s, 15, 'stale', %s FROM api_tokens t WHERE t.name = 'rita' RETURNING id",
            (
                str(hash_embed("rust firmware engineer")),
                Jsonb({"role": "Firmware Engineer", "location": "Berlin"}),
            ),
        )
        search = (await cur.fetchone() or {})["id"]
    path = f"/api/searches/{search}/alert"
    none = await client.get(path, headers=rita)
    assert none.status_code == 200, none.text
    assert none.json() == {"alert": None, "matches": []}
    assert (await client.post(path, headers=rita)).status_code == 201
    async with services.pool.connection() as conn:
        await insert_candidate(
            conn,
            "New Hand",
            role_title="Rust Firmware Engineer",
            text="rust firmware engineer",
            email="new.hand@example.com",
        )
        await insert_candidate(conn, "Baker", role_title="Pastry Chef", text="pastry chef")
    assert await people.check(services.pool, services.spaces, services.settings, None) == 1

    shown = await client.get(path, headers=rita)
    assert shown.status_code == 200
    body = shown.json()
    assert body["alert"]["status"] == "active" and body["alert"]["matchCount"] == 1
    [match] = body["matches"]
    assert match["candidate"]["fullName"] == "New Hand"
    assert match["candidate"]["title"] == "Rust Firmware Engineer"
    assert 0 < match["score"] <= 1 and match["notified"] is False
    assert "new.hand@example.com" not in shown.text
    # Another organisation's recruiter: no such search.
    assert (await client.get(path, headers=eve)).status_code == 404

    # The console: the results panel has the alert's box, and its script reads and saves it.
    page = (await client.get(f"/recruit?search={search}")).text
    for element in ('id="alert-box"', 'id="alert-save"', 'id="alert-matches"'):
        assert element in page
    script = (await client.get("/static/recruit.js")).text
    assert "/alert`);" in script and 'api("POST", `/api/searches/${' in script
