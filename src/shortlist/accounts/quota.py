"""Daily caps per person and, pooled, per organisation (searches, provider credits), reserved
atomically: 8 concurrent searches against a cap of 3 start 3 (``reserve_quota`` locks both
rows of the day before it reads them). A day is a UTC calendar day; a search reserves its
whole credit budget for the day it starts."""

from __future__ import annotations

from shortlist.config import Settings
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn
from shortlist.errors import QuotaExceeded

QUERIES = load_queries("shortlist.accounts")

_WHAT = {
    "SHORTLIST_RECRUITER_DAILY_SEARCHES": "daily search limit reached: {n} of {cap} searches today",
    "SHORTLIST_ORG_DAILY_SEARCHES": "your organisation's daily search limit is reached:"
    " {n} of {cap} searches today",
    "SHORTLIST_RECRUITER_DAILY_CREDITS": "daily credit limit reached: {n} of {cap} provider"
    " credits spent or reserved today",
    "SHORTLIST_ORG_DAILY_CREDITS": "your organisation's daily credit limit is reached: {n} of"
    " {cap} provider credits spent or reserved today",
}


async def reserve_search(
    conn: AsyncConn, settings: Settings, user_id: int, org_id: int
) -> int | None:
    """Reserve one search for ``user_id`` in ``org_id`` (in the caller's transaction, which
    must commit for the reservation to count): the credits it may spend (the per-search budget
    cut to what the caps leave; None: no budget), or :class:`QuotaExceeded` naming the cap."""
    caps = {
        "user_searches": settings.recruiter_daily_searches or None,
        "org_searches": settings.org_daily_searches or None,
        "user_credits": settings.recruiter_daily_credits or None,
        "org_credits": settings.org_daily_credits or None,
    }
    params = {
        "user_id": user_id,
        "org_id": org_id,
        "budget": settings.search_credit_budget or None,
        **caps,
    }
    await conn.execute(QUERIES["quota_rows"], params)
    cur = await conn.execute(QUERIES["reserve_quota"], params)
    row = await cur.fetchone()
    assert row is not None
    refused = row["refused"]
    if refused is not None:
        field = {
            "SHORTLIST_RECRUITER_DAILY_SEARCHES": ("user_searches", "user_searches"),
            "SHORTLIST_ORG_DAILY_SEARCHES": ("org_searches", "org_searches"),
            "SHORTLIST_RECRUITER_DAILY_CREDITS": ("user_credits", "user_credits"),
            "SHORTLIST_ORG_DAILY_CREDITS": ("org_credits", "org_credits"),
        }[refused]
        message = _WHAT[refused].format(n=row[field[0]], cap=caps[field[1]])
        raise QuotaExceeded(
            f"{message} ({refused})", limit=refused, retry_after=float(row["free_in"] or 60.0)
        )
    granted = row["granted"]
    return None if granted is None else max(0, int(granted))
