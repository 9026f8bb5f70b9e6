"""A recruiter's saved people search (``POST /api/searches/{id}/alert``): people who enter the
organisation's corpus after it was saved (a bulk import, another search's backfill) and fit its
brief are reported once each — by e-mail digest to the recruiter and, where the organisation
has a webhook for it, as ``alert.matched``.

The number of saved people searches is small (a team's briefs, not a million job seekers), so
each is run forward, not in reverse: when people were embedded since an alert last looked
(``checked_at``), the periodic job scores the people added since the alert was saved that the
search had not listed, as the search scored its corpus (``shortlist.talent.repository.
score_corpus_people``: search_corpus's pre-filter and score, for those people wherever they
rank in the whole corpus; then ``judge_hits``: the same judge of place, years and skills, above
the same floor ``SHORTLIST_INTERNAL_MIN_SCORE``). Nothing calls a vendor: no credit is spent by
an alert.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Any

from shortlist.alerts.digests import RETRY_MAX
from shortlist.alerts.mail import Deferred, HardBounce, Refused, deliver
from shortlist.config import Settings
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.embedding.spaces import Spaces
from shortlist.listings.mail.reply import Relay
from shortlist.queue import backoff_delay
from shortlist.talent import repository as repo
from shortlist.talent.brief import Brief, brief_text
from shortlist.talent.service import judge_hits, wanted_of
from shortlist.webhooks import store as webhooks

log = logging.getLogger(__name__)

SQL = load_queries("shortlist.alerts", "people.sql")
ALERTS_PER_PASS = 50
PEOPLE_PER_DIGEST = 50
"""People of an alert one digest names at most (the best; the rest in the next one)."""
LOOK_BACK_SECONDS = 600.0
"""How far before an alert's last look a pass still reads people embedded: an indexer's
transaction stamps ``embedded_at`` when it begins and may commit after the look (a person seen
twice is reported once)."""


async def save(
    conn: AsyncConn, search_id: uuid.UUID, org_id: int | None, user_id: int | None
) -> dict[str, Any]:
    """The alert of a search the caller may see (made once; saved again, it is active)."""
    cur = await conn.execute(
        SQL["save_people_alert"], {"search_id": search_id, "org_id": org_id, "user_id": user_id}
    )
    row = await cur.fetchone()
    assert row is not None
    return {"id": int(row["id"]), "searchId": str(search_id), "status": row["status"],
            "created": bool(row["created"])}  # fmt: skip


MATCHES_SHOWN = 200
"""People of an alert the console lists at most (the newest)."""


async def describe(conn: AsyncConn, search_id: uuid.UUID) -> dict[str, Any]:
    """A search's alert and the people it reported, newest first (the recruiter console's), in
    a transaction acting for the caller's organisation: ``{"alert": null, "matches": []}`` when
    the search has none."""
    cur = await conn.execute(SQL["people_alert_of_search"], {"search_id": search_id})
    alert = await cur.fetchone()
    if alert is None:
        return {"alert": None, "matches": []}
    cur = await conn.execute(
        SQL["people_alert_matches_of"], {"alert_id": alert["id"], "limit": MATCHES_SHOWN}
    )
    return {
        "alert": {
            "id": int(alert["id"]),
            "searchId": str(search_id),
            "status": alert["status"],
            "createdAt": alert["created_at"].isoformat(),
            "checkedAt": alert["checked_at"].isoformat(),
            "matchCount": int(alert["matches"]),
        },
        "matches": [
            {
                "candidate": {
                    "id": str(r["candidate_id"]),
                    "fullName": r["full_name"],
                    "title": r["title"],
                    "location": r["location"],
                },
                "score": round(float(r["score"]), 4),
                "matchedAt": r["matched_at"].isoformat(),
                "notified": r["notified_at"] is not None,
            }
            for r in await cur.fetchall()
        ],
    }


async def check(pool: AsyncPool, spaces: Spaces, settings: Settings, relay: Relay | None) -> int:
    """One pass over the alerts with people embedded since they last looked; returns how many
    new people it reported."""
    async with pool.connection() as conn:
        cur = await conn.execute(SQL["due_people_alerts"], {"limit": ALERTS_PER_PASS})
        alerts = await cur.fetchall()
    reported = 0
    for alert in alerts:
        reported += await _check_one(pool, spaces, settings, relay, alert)
    if relay is not None:
        await _tell_due(pool, settings, relay)
    return reported


async def _check_one(
    pool: AsyncPool, spaces: Spaces, settings: Settings, relay: Relay | None, alert: Any
) -> int:
    active = spaces.active()
    new: list[tuple[uuid.UUID, float]] = []
    async with pool.connection() as conn, conn.transaction():
        cur = await conn.execute(SQL["database_now"])
        now_row = await cur.fetchone()
        assert now_row is not None
        if alert["query_embedding"] is not None and alert["embedding_model_id"] in (
            None,
            active.space.id,
        ):
            brief = Brief.from_json(alert["brief"])
            skills = list(alert["skills"] or ())
            cur = await conn.execute(
                SQL["new_people"],
                {
                    "since": alert["created_at"],
                    "checked_at": alert["checked_at"],
                    "margin": LOOK_BACK_SECONDS,
                    "search_id": alert["search_id"],
                    "alert_id": alert["id"],
                },
            )
            ids = [r["id"] for r in await cur.fetchall()]
            hits = await repo.score_corpus_people(
                conn,
                ids,
                space=active.space,
                embedding=[float(x) for x in alert["query_embedding"].to_list()],
                text=brief_text(alert["query"], alert["role"], skills),
                filters=repo.CorpusFilters(brief.location, brief.min_years_experience, skills),
                min_score=settings.internal_min_score,
            )
            judged = judge_hits(wanted_of(brief), hits, settings.internal_min_score)
            cur = await conn.execute(
                SQL["record_people_matches"],
                {
                    "alert_id": alert["id"],
                    "search_id": alert["search_id"],
                    "since": alert["created_at"],
                    "candidates": [h.candidate_id for h in judged],
                    "scores": [h.score for h in judged],
                },
            )
            new = [(r["candidate_id"], float(r["score"])) for r in await cur.fetchall()]
            if alert["org_id"] is not None:
                for candidate_id, score in new:
                    await webhooks.enqueue(
                        conn,
                        int(alert["org_id"]),
                        webhooks.ALERT_MATCHED,
                        {
                            "alertId": str(alert["search_id"]),
                            "kind": "candidate",
                            "item": {"id": str(candidate_id), "score": round(score, 4)},
                        },
                        subject=f"people:{alert['id']}:{candidate_id}",
                    )
            if new:
                await conn.execute(SQL["tell_again"], {"alert_id": alert["id"]})
        # A model the search was not embedded by cannot judge it: looked at all the same.
        await conn.execute(SQL["checked"], {"id": alert["id"], "checked_at": now_row["now"]})
    return len(new)


async def _tell_due(pool: AsyncPool, settings: Settings, relay: Relay) -> None:
    """E-mail each alert's people not yet told of (just found, or held back by a deferral
    whose back-off has run out)."""
    async with pool.connection() as conn:
        cur = await conn.execute(SQL["people_alerts_to_tell"], {"limit": ALERTS_PER_PASS})
        alerts = await cur.fetchall()
    for alert in alerts:
        async with pool.connection() as conn:
            cur = await conn.execute(
                SQL["unnotified_people"], {"alert_id": alert["id"], "limit": PEOPLE_PER_DIGEST}
            )
            people = [(r["candidate_id"], float(r["score"])) for r in await cur.fetchall()]
        if people:
            await _tell(pool, settings, relay, alert, people)


async def tell_now(pool: AsyncPool, settings: Settings, relay: Relay, search_id: uuid.UUID) -> int:
    """``shortlist alerts test``: the digest of a search's active alert sent now, whatever
    back-off holds it; answers the people it named (0: none waiting, or not sent — the relay's
    answer is logged and the alert's back-off kept as a pass would)."""
    async with pool.connection() as conn:
        cur = await conn.execute(SQL["people_alert_to_tell_now"], {"search_id": search_id})
        alert = await cur.fetchone()
        if alert is None:
            return 0
        cur = await conn.execute(
            SQL["unnotified_people"], {"alert_id": alert["id"], "limit": PEOPLE_PER_DIGEST}
        )
        people = [(r["candidate_id"], float(r["score"])) for r in await cur.fetchall()]
    if not people or not await _tell(pool, settings, relay, alert, people):
        return 0
    return len(people)


async def _tell(
    pool: AsyncPool,
    settings: Settings,
    relay: Relay,
    alert: Any,
    new: list[tuple[uuid.UUID, float]],
) -> bool:
    """One digest of ``new`` to the alert's recruiter; answers whether the relay took it."""
    ids = [c for c, _s in new]
    async with pool.connection() as conn:
        cur = await conn.execute(SQL["people_of"], {"ids": ids})
        people = {r["id"]: r for r in await cur.fetchall()}
    base = (settings.public_url or f"http://{settings.host}:{settings.port}").rstrip("/")
    lines = [f"New people who fit your search “{alert['query']}”:", ""]
    for candidate_id, score in sorted(new, key=lambda p: -p[1]):
        p = people.get(candidate_id)
        if p is not None:
            where = f", {p['location']}" if p["location"] else ""
            lines.append(f"• {p['title']}{where} ({round(score * 100)}% fit)")
    lines += ["", f"See them: {base}/recruit?search={alert['search_id']}", ""]
    msg = EmailMessage()
    msg["From"] = f"shortlist alerts <alerts@{settings.mail_domain}>"
    msg["To"] = alert["email"]
    msg["Subject"] = f"{len(new)} new people for “{alert['query']}”"[:300]
    msg["Message-ID"] = make_msgid(idstring="people", domain=settings.mail_domain)
    msg["Date"] = format_datetime(datetime.now(UTC))
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content("\n".join(lines))
    delay: float | None
    try:
        await deliver(relay, msg, envelope_from=f"alerts@{settings.mail_domain}", to=alert["email"])
    except Deferred as exc:
        delay = backoff_delay(int(alert["notify_attempts"]), settings.alert_retry_base, RETRY_MAX)
        log.warning(
            "alerts: people digest of alert %d deferred, next try in %.0fs (%s)",
            alert["id"],
            delay,
            type(exc).__name__,
        )
    except (HardBounce, Refused) as exc:
        delay = None
        log.warning(
            "alerts: people digest of alert %d refused by the relay (%s); tried again when new "
            "people come",
            alert["id"],
            type(exc).__name__,
        )
    else:
        async with pool.connection() as conn:
            await conn.execute(SQL["mark_notified"], {"alert_id": alert["id"], "ids": ids})
        return True
    async with pool.connection() as conn:
        await conn.execute(SQL["tell_later"], {"alert_id": alert["id"], "delay": delay})
    return False
