"""A recruiter's saved people search, the organisation's own: row-level security on its tables
(migration 0044), as on the organisation's searches (migration 0029)."""

from __future__ import annotations

from shortlist.accounts.scope import act_for_org
from shortlist.auth import Role
from shortlist.db.types import AsyncPool
from tests.api_fixtures import MakeToken


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
