"""Saved searches and their subscribers.

A job seeker saves a job search (its query and filters) with an e-mail address and a frequency;
no account is needed. Double opt-in: the search stays ``pending`` until the link e-mailed to
the address is followed (``confirm``), which records the consent time; a signed-in user saving
to their own verified address consents by saving. Every e-mail carries a one-click unsubscribe
(RFC 8058); an operator may ``disable`` a search. Ending a search cancels what it had queued, in
the same statement. An address on the suppression list (a forgotten person) is never stored
nor written to; a hard-bounced one (``alert_subscribers.status = suppressed``) gets nothing more.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from psycopg import sql
from psycopg.rows import DictRow

from shortlist import privacy
from shortlist.alerts import tokens
from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.db.vector_index import vector_text
from shortlist.errors import BadInput, NotFound
from shortlist.listings.models import MAX_CITY, MAX_SALARY_KS, WORK_MODES
from shortlist.listings.search import check_seeker_filters
from shortlist.relevance import normalise_query, text_terms

log = logging.getLogger(__name__)

SQL = load_queries("shortlist.alerts", "queries.sql")

Frequency = Literal["instant", "daily", "weekly"]
FREQUENCIES: tuple[Frequency, ...] = ("instant", "daily", "weekly")
MAX_QUERY = 500
CONFIRMATIONS_PER_DAY = 5
"""Confirmation e-mails one address gets per day at most; further saves are kept pending
without one (the form must not be a way to mail a stranger over and over)."""

Embed = Callable[[str], Awaitable[Mapping[str, Sequence[float]]]]
"""A query's vector in each model space in use, by the space's vector column (``embedding`` for
the first; during a model migration the one being built too: a query saved then has both)."""
DEFAULT_HOUR = 8
"""The subscriber's local hour a daily or weekly digest goes at, unless they chose another."""


@dataclass(frozen=True)
class NewSearch:
    query: str
    email: str
    frequency: Frequency
    location: str | None = None
    salary_min: int | None = None
    work_mode: str | None = None
    timezone: str = "UTC"
    """Where the subscriber is (IANA name): a daily or weekly digest goes at ``hour`` there."""
    hour: int = DEFAULT_HOUR
    salary_currency: str | None = None
    """The currency ``salary_min`` is in (ISO 4217; job search's ``currency``); None: the
    listing's own, whatever it is."""
    remote_country: str | None = None
    """ISO 3166 alpha-2: remote jobs open to a person there (job search's ``remote_country``)."""
    visa: str | None = None
    """``offered``: jobs that sponsor a visa (job search's ``visa``)."""

    def checked(self) -> NewSearch:
        """The search with its fields trimmed, or ``BadInput`` naming the field."""
        query = " ".join(self.query.split())
        if not query or len(query) > MAX_QUERY:
            raise BadInput(f"query must be 1 to {MAX_QUERY} characters", field="query")
        email = self.email.strip()
        if not (3 <= len(email) <= 320) or email.count("@") != 1 or any(c.isspace() for c in email):
            raise BadInput("email must be an e-mail address", field="email")
        local, _, domain = email.partition("@")
        if not local or "." not in domain.strip("."):
            raise BadInput("email must be an e-mail address", field="email")
        if self.frequency not in FREQUENCIES:
            raise BadInput("frequency must be instant, daily or weekly", field="frequency")
        location = " ".join((self.location or "").split()).lower() or None
        if location is not None and len(location) > MAX_CITY:
            raise BadInput(f"location must be at most {MAX_CITY} characters", field="location")
        if self.salary_min is not None and not 0 <= self.salary_min <= MAX_SALARY_KS:
            raise BadInput(f"salary_min must be 0 to {MAX_SALARY_KS}", field="salary_min")
        if self.work_mode is not None and self.work_mode not in WORK_MODES:
            raise BadInput("work_mode must be remote, hybrid or onsite", field="work_mode")
        try:
            ZoneInfo(self.timezone)
        except (ValueError, ZoneInfoNotFoundError):
            raise BadInput(
                "timezone must be an IANA time zone (Europe/Berlin)", field="timezone"
            ) from None
        if not 0 <= self.hour <= 23:
            raise BadInput("hour must be 0 to 23", field="hour")
        currency, country, visa = check_seeker_filters(
            self.salary_currency, self.remote_country, self.visa
        )
        return NewSearch(
            query,
            email,
            self.frequency,
            location,
            self.salary_min,
            self.work_mode,
            self.timezone,
            self.hour,
            # A currency says what a floor is in: without a floor it holds nothing.
            currency if self.salary_min is not None else None,
            country,
            visa,
        )


@dataclass(frozen=True)
class Saved:
    id: uuid.UUID
    status: str
    confirm_token: str | None
    """The token to e-mail for the double opt-in; None when none is to be sent."""
    stored: bool = True
    """False for a forgotten person's address: the answer looks the same (an id nobody has),
    and nothing was kept."""


async def query_id(conn: AsyncConn, text: str, embed: Embed) -> int:
    """The ``alert_queries`` row of a query (normalised as job search reads it, its white space
    collapsed as job search embeds it: ``query_cache.normalised_text``), made once: identical
    queries share their vector and title words. The case is kept: the row holds a vector for
    every model in use, and only the local model's tokenizer folds it."""
    normalised = " ".join(normalise_query(text).split())
    cur = await conn.execute(SQL["find_query"], {"normalised": normalised})
    row = await cur.fetchone()
    if row is not None:
        return int(row["id"])
    vectors = await embed(normalised)
    columns = sorted(vectors)
    cur = await conn.execute(SQL["title_words"], {"terms": text_terms(normalised)})
    words = await cur.fetchone()
    assert words is not None
    insert = compose(
        SQL["insert_query"],
        columns=sql.SQL(", ").join(map(sql.Identifier, columns)),
        vectors=sql.SQL(", ").join(
            sql.SQL("{}::vector").format(sql.Placeholder(f"v{i}")) for i in range(len(columns))
        ),
    )
    cur = await conn.execute(
        insert,
        {
            "normalised": normalised,
            "title_words": words["title_words"],
            **{f"v{i}": vector_text(vectors[c]) for i, c in enumerate(columns)},
        },
    )
    row = await cur.fetchone()
    if row is None:  # saved by someone else meanwhile
        cur = await conn.execute(SQL["find_query"], {"normalised": normalised})
        row = await cur.fetchone()
        assert row is not None
    return int(row["id"])


async def save(
    pool: AsyncPool,
    search: NewSearch,
    embed: Embed,
    *,
    min_score: float,
    privacy_key: str = "",
    user_id: int | None = None,
    user_email: str | None = None,
    webhook_org_id: int | None = None,
) -> Saved:
    """Store a saved search, owned by ``user_id`` (the account that saved it, signed in or with
    an API key: it lists and ends it). ``active`` at once for a user saving to their own
    address; else ``pending`` with a confirmation token to e-mail (none past
    :data:`CONFIRMATIONS_PER_DAY`). ``webhook_org_id``: the organisation whose ``alert.matched``
    webhooks its matches also go to (the caller checked that it acts for it and may manage
    them): such a search is the organisation's and active at once, its member having consented
    for it, while its e-mail waits for the address's own consent (the token then confirms the
    e-mail alone; no digest is made before)."""
    search = search.checked()
    signed_in = user_email is not None and user_email.lower() == search.email.lower()
    for_webhooks = webhook_org_id is not None and user_id is not None
    async with pool.connection() as conn, conn.transaction():
        if await privacy.suppressed_among(
            conn, privacy.person_keys(email=search.email), privacy_key
        ):
            # Answered as any other save (nobody learns who was forgotten); nothing kept.
            return Saved(uuid.uuid4(), "pending", None, stored=False)
        cur = await conn.execute(
            SQL["upsert_subscriber"],
            {"email": search.email, "user_id": user_id if signed_in else None},
        )
        subscriber = await cur.fetchone()
        assert subscriber is not None
        cur = await conn.execute(SQL["confirmations_today"], {"subscriber_id": subscriber["id"]})
        sent_today = await cur.fetchone()
        qid = await query_id(conn, search.query, embed)
        status = "active" if signed_in or for_webhooks else "pending"
        email_confirmed = signed_in or not for_webhooks
        cur = await conn.execute(
            SQL["insert_search"],
            {
                "subscriber_id": subscriber["id"],
                "query_id": qid,
                "query": search.query,
                "location": search.location,
                "salary_min": search.salary_min,
                "salary_currency": search.salary_currency,
                "work_mode": search.work_mode,
                "remote_country": search.remote_country,
                "visa": search.visa,
                "min_score": min_score,
                "frequency": search.frequency,
                "timezone": search.timezone,
                "hour": search.hour,
                "status": status,
                "webhook_org_id": webhook_org_id,
                "user_id": user_id,
                "email_confirmed": email_confirmed,
            },
        )
        row = await cur.fetchone()
        assert row is not None
        search_id: uuid.UUID = row["id"]
        key = await privacy.privacy_key(conn, privacy_key)
    confirm = None
    if (
        not (status == "active" and email_confirmed)
        and subscriber["status"] == "active"
        and sent_today is not None
        and int(sent_today["n"]) < CONFIRMATIONS_PER_DAY
    ):
        confirm = tokens.make(key, tokens.CONFIRM, search_id)
    return Saved(search_id, status, confirm)


async def _search_of(conn: AsyncConn, purpose: str, token: str, privacy_key: str) -> DictRow | None:
    key = await privacy.privacy_key(conn, privacy_key)
    search_id = tokens.read(key, purpose, token)
    if search_id is None:
        return None
    cur = await conn.execute(SQL["search_of_token"], {"id": search_id})
    return await cur.fetchone()


async def confirm(pool: AsyncPool, token: str, *, valid_for: float, privacy_key: str = "") -> str:
    """Follow a confirmation link: the search's status after it (``active``); ``NotFound`` for
    a token that is not ours, or a search gone (expired unconfirmed, ended). A search active
    for an organisation's webhooks gets its e-mail confirmed."""
    async with pool.connection() as conn, conn.transaction():
        row = await _search_of(conn, tokens.CONFIRM, token, privacy_key)
        if row is None:
            raise NotFound("this confirmation link is not valid (it may have expired)")
        pending = row["status"] == "pending"
        if pending or (row["status"] == "active" and not row["email_confirmed"]):
            cur = await conn.execute(
                SQL["confirm" if pending else "confirm_email"],
                {"id": row["id"], "valid_for": valid_for},
            )
            if await cur.fetchone() is None:
                raise NotFound("this confirmation link has expired: save the search again")
            return "active"
        return str(row["status"])


async def describe(pool: AsyncPool, token: str, *, privacy_key: str = "") -> DictRow:
    """The saved search an unsubscribe token names (the page a GET of the link shows)."""
    async with pool.connection() as conn:
        row = await _search_of(conn, tokens.UNSUBSCRIBE, token, privacy_key)
    if row is None:
        raise NotFound("this unsubscribe link is not valid")
    return row


async def unsubscribe(pool: AsyncPool, token: str, *, privacy_key: str = "") -> int:
    """One-click unsubscribe (RFC 8058): the search ends and its queued items are cancelled;
    returns how many were. Idempotent: a second POST changes nothing and succeeds."""
    async with pool.connection() as conn, conn.transaction():
        row = await _search_of(conn, tokens.UNSUBSCRIBE, token, privacy_key)
        if row is None:
            raise NotFound("this unsubscribe link is not valid")
        return await end(conn, row["id"], "unsubscribed")


async def end(conn: AsyncConn, search_id: uuid.UUID, status: str) -> int:
    """``pending | active -> unsubscribed | disabled`` with its queued items cancelled."""
    cur = await conn.execute(SQL["end_search"], {"id": search_id, "status": status})
    row = await cur.fetchone()
    return int(row["cancelled"]) if row else 0


async def list_for_user(conn: AsyncConn, user_id: int) -> list[dict[str, Any]]:
    """The searches the user saved (to any address) and those of their own address."""
    email = await user_email(conn, user_id)
    cur = await conn.execute(SQL["searches_of_user"], {"user_id": user_id, "email": email})
    return [
        {
            "id": str(r["id"]),
            "query": r["query"],
            "location": r["location"],
            "salary_min": r["salary_min"],
            "currency": r["salary_currency"],
            "work_mode": r["work_mode"],
            "remote_country": r["remote_country"],
            "visa": r["visa"],
            "frequency": r["frequency"],
            "status": r["status"],
            "createdAt": r["created_at"].isoformat(),
            "consentAt": r["consent_at"].isoformat() if r["consent_at"] else None,
            "webhook": r["webhook_org_id"] is not None,
            "email": r["email"],
            "emailConfirmed": bool(r["email_confirmed"]),
        }
        for r in await cur.fetchall()
    ]


async def delete_for_user(conn: AsyncConn, user_id: int, search_id: uuid.UUID) -> None:
    """A signed-in user ends one of their searches; anyone else's is ``NotFound``."""
    email = await user_email(conn, user_id)
    async with conn.transaction():
        cur = await conn.execute(
            SQL["owned_by_user"], {"id": search_id, "user_id": user_id, "email": email}
        )
        if await cur.fetchone() is None:
            raise NotFound("no such alert")
        await end(conn, search_id, "unsubscribed")


async def user_email(conn: AsyncConn, user_id: int) -> str | None:
    cur = await conn.execute(SQL["user_email"], {"user_id": user_id})
    row = await cur.fetchone()
    return str(row["email"]) if row and row["email"] else None


async def purge_unconfirmed(pool: AsyncPool, valid_for: float) -> int:
    """Remove saved searches nobody confirmed within ``valid_for`` seconds, and addresses left
    with none (the reaper's); cancel the queued e-mail matches of searches active for webhooks
    whose address did not confirm in that time (they will never be mailed)."""
    async with pool.connection() as conn, conn.transaction():
        cur = await conn.execute(SQL["purge_unconfirmed"], {"valid_for": valid_for})
        n = cur.rowcount
        await conn.execute(SQL["cancel_unconfirmed_mail"], {"valid_for": valid_for})
        await conn.execute(SQL["purge_lone_subscribers"])
    return n
