"""The digest queue: saved searches whose digest is due are claimed (SKIP LOCKED + lease on
``saved_searches``) and their queued matches e-mailed as one message.

A digest holds at most :data:`DIGEST_SIZE` jobs and :data:`PER_COMPANY` of one company, best
score first; matches whose listing closed or was linked as a duplicate since are dropped first;
nothing is sent when nothing is left. Each (subscriber, job) is matched at most once ever (a
unique key of ``alert_matches``), so it is sent at most once.

Crash safety: a digest is made — its items and its Message-ID fixed, committed as a ``pending``
row — before it is handed to the relay, and marked ``sent`` after. A sender killed in between
leaves the row pending and the search's lease runs out; whoever claims it next sends the same
digest again with the same Message-ID (a receiver that saw it drops the copy), never a new one.
An unsubscribe cancels the pending digest and the queued matches in its own statement.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from shortlist import privacy
from shortlist.alerts import mail, tokens
from shortlist.alerts.matcher import SQL
from shortlist.config import Settings
from shortlist.db import channels
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.listings.mail.reply import Relay
from shortlist.listings.money import format_salary
from shortlist.queue import DONE, GIVE_BACK, Batch, LeaseTable, Outcome, Retry, backoff_delay, each

log = logging.getLogger(__name__)

DIGEST_SIZE = 10
PER_COMPANY = 2
RETRY_MAX = 86_400.0
"""The longest a deferred digest waits before it is tried again (a day)."""


@dataclass(frozen=True)
class DueSearch:
    id: uuid.UUID
    attempts: int


@dataclass(frozen=True)
class _Digest:
    id: int
    message_id: str
    search_id: uuid.UUID
    subscriber_id: int
    email: str
    query: str
    location: str | None
    jobs: list[mail.DigestJob]


class _LostLease(Exception):
    pass


def base_url(settings: Settings) -> str:
    return (settings.public_url or f"http://{settings.host}:{settings.port}").rstrip("/")


class DigestQueue:
    """The ``shortlist.queue.worker.Queue`` of due saved searches."""

    name = "alert-digests"
    channel: str | None = channels.DIGESTS
    leases = LeaseTable(
        "saved_searches",
        key="id",
        key_type="uuid",
        outcome=SQL["digest_outcome"],
        records=frozenset({"retry"}),
    )

    def __init__(self, pool: AsyncPool, settings: Settings, relay: Relay) -> None:
        self.pool = pool
        self.settings = settings
        self.relay = relay
        self.sent = 0
        """Digests the relay took from this queue (tests read it)."""

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[DueSearch]:
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                SQL["claim_due"], {"worker_id": worker_id, "limit": limit, "lease": lease}
            )
            rows = await cur.fetchall()
        return [DueSearch(r["id"], int(r["attempts"])) for r in rows]

    async def handle(self, batch: Batch[DueSearch]) -> None:
        await each(batch, self._send_one)

    async def _send_one(self, batch: Batch[DueSearch], item: DueSearch) -> Outcome:
        try:
            digest = await self._make(batch, item)
        except _LostLease:
            return GIVE_BACK
        if digest is None:
            return DONE
        key = await self._key()
        msg = mail.digest_message(
            sender=f"shortlist alerts <alerts@{self.settings.mail_domain}>",
            to=digest.email,
            message_id=digest.message_id,
            query=digest.query,
            location=digest.location,
            jobs=digest.jobs,
            base=base_url(self.settings),
            unsubscribe_token=tokens.make(key, tokens.UNSUBSCRIBE, digest.search_id),
        )
        envelope = f"{tokens.verp_local_part(key, digest.id)}@{self.settings.mail_domain}"
        try:
            await mail.deliver(self.relay, msg, envelope_from=envelope, to=digest.email)
        except mail.Deferred as exc:
            delay = backoff_delay(item.attempts, self.settings.alert_retry_base, RETRY_MAX)
            log.warning("alerts: digest %d deferred, next try in %.0fs (%s)", digest.id, delay, exc)
            return Retry(delay, str(exc))
        except mail.HardBounce as exc:
            log.warning("alerts: digest %d bounced at the relay; address suppressed", digest.id)
            async with self.pool.connection() as conn, conn.transaction():
                await suppress(conn, digest.subscriber_id, str(exc))
            return DONE
        except mail.Refused as exc:
            log.warning("alerts: digest %d refused by the relay (%s)", digest.id, exc)
            async with self.pool.connection() as conn, conn.transaction():
                await conn.execute(SQL["mark_failed"], {"digest_id": digest.id})
            return DONE
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(SQL["search_to_send"], {"id": item.id, "worker_id": batch.worker_id})
            await conn.execute(SQL["mark_sent"], {"digest_id": digest.id})
            await batch.finish(conn, {item.id: DONE})
        self.sent += 1
        return DONE

    async def _key(self) -> bytes:
        async with self.pool.connection() as conn:
            return await privacy.privacy_key(conn, self.settings.privacy_key)

    async def _make(self, batch: Batch[DueSearch], item: DueSearch) -> _Digest | None:
        """The digest to send now: the search's pending one (a resend), else a new one of its
        queued matches; None when there is nothing to send (the search is then not due)."""
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                SQL["search_to_send"], {"id": item.id, "worker_id": batch.worker_id}
            )
            search = await cur.fetchone()
            if search is None:
                raise _LostLease
            if search["status"] != "active" or search["subscriber_status"] != "active":
                await conn.execute(SQL["nothing_due"], {"id": item.id})
                await batch.finish(conn, {item.id: DONE})
                return None
            cur = await conn.execute(SQL["pending_digest"], {"id": item.id})
            pending = await cur.fetchone()
            if pending is not None:
                digest_id, message_id = int(pending["id"]), str(pending["message_id"])
            else:
                await conn.execute(SQL["drop_stale_matches"], {"id": item.id})
                cur = await conn.execute(
                    SQL["pick_matches"],
                    {"id": item.id, "per_company": PER_COMPANY, "size": DIGEST_SIZE},
                )
                ids = [int(r["id"]) for r in await cur.fetchall()]
                if not ids:
                    await conn.execute(SQL["nothing_due"], {"id": item.id})
                    await batch.finish(conn, {item.id: DONE})
                    return None
                message_id = mail.new_message_id(self.settings.mail_domain)
                cur = await conn.execute(
                    SQL["insert_digest"], {"id": item.id, "message_id": message_id}
                )
                row = await cur.fetchone()
                assert row is not None
                digest_id = int(row["id"])
                await conn.execute(SQL["assign_matches"], {"digest_id": digest_id, "ids": ids})
            jobs = await _jobs(conn, digest_id)
            if not jobs:  # its listings were deleted since it was made
                await conn.execute(SQL["mark_failed"], {"digest_id": digest_id})
                await conn.execute(SQL["nothing_due"], {"id": item.id})
                await batch.finish(conn, {item.id: DONE})
                return None
        return _Digest(
            digest_id,
            message_id,
            item.id,
            int(search["subscriber_id"]),
            str(search["email"]),
            str(search["query"]),
            search["location"],
            jobs,
        )


async def _jobs(conn: AsyncConn, digest_id: int) -> list[mail.DigestJob]:
    cur = await conn.execute(SQL["digest_jobs"], {"digest_id": digest_id})
    return [
        mail.DigestJob(
            title=r["job_title"],
            company=r["company_name"],
            city=r["city_location"],
            salary=format_salary(r["salary_min_ks"], r["salary_max_ks"], r["currency_code"]),
            slug=r["detail_page_slug"],
            score=float(r["score"]),
        )
        for r in await cur.fetchall()
    ]


async def suppress(conn: AsyncConn, subscriber_id: int, why: str) -> None:
    """A hard bounce: the address gets nothing more (its queued items cancelled)."""
    await conn.execute(SQL["suppress_subscriber"], {"subscriber_id": subscriber_id, "why": why})
