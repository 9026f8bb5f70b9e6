"""Bounces of alert e-mails, received on the e-mail intake at each digest's VERP address
(``bounce-<digest>-<mac>@SHORTLIST_MAIL_DOMAIN``, :mod:`.tokens`).

A bounce is read as a delivery status notification by flufl.bounce
(https://flufl-bounce.readthedocs.io/: ``all_failures`` returns the addresses that failed
temporarily and permanently, from RFC 3464 DSNs and the many non-standard formats MTAs send). The
VERP address says which digest, and so which subscriber, it is about (a digest has one
recipient): a permanent failure suppresses that address before its next send; a temporary one
(the sender's MTA is still trying) changes nothing. Read off the event loop and bounded, as
anything hostile the intake receives.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import logging

from flufl.bounce import all_failures

from shortlist import privacy
from shortlist.alerts import tokens
from shortlist.alerts.digests import suppress
from shortlist.config import Settings
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool

log = logging.getLogger(__name__)

SQL = load_queries("shortlist.alerts", "bounces.sql")
MAX_BOUNCE_BYTES = 256 * 1024
"""What of a bounce is read: a DSN's report and the returned headers fit in far less."""


def permanent_failures(raw: bytes) -> frozenset[bytes]:
    msg = email.message_from_bytes(raw[:MAX_BOUNCE_BYTES], policy=email.policy.compat32)
    _temporary, permanent = all_failures(msg)
    return permanent


class Bounces:
    """The intake's bounce sink (``shortlist.listings.mail.smtp.BounceSink``)."""

    def __init__(self, pool: AsyncPool, settings: Settings) -> None:
        self.pool = pool
        self.domain = settings.mail_domain
        self.privacy_key = settings.privacy_key
        self.received = 0
        self.suppressed = 0

    def _local_part(self, address: str) -> str | None:
        local, at, host = address.strip().strip("<>").rpartition("@")
        if not at or host.lower().rstrip(".") != self.domain.lower().rstrip("."):
            return None
        return local.lower() if local.lower().startswith("bounce-") else None

    async def digest_of(self, address: str) -> int | None:
        """The digest a genuine VERP address of ours names, else None."""
        local = self._local_part(address)
        if local is None:
            return None
        async with self.pool.connection() as conn:
            key = await privacy.privacy_key(conn, self.privacy_key)
        return tokens.read_verp(key, local)

    async def receive(self, address: str, raw: bytes) -> None:
        """A message to a VERP address: a permanent failure suppresses the digest's address."""
        digest_id = await self.digest_of(address)
        if digest_id is None:
            return
        self.received += 1
        permanent = await asyncio.to_thread(permanent_failures, raw)
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(SQL["bounced_digest"], {"digest_id": digest_id})
            row = await cur.fetchone()
            if row is None or not permanent:
                return
            await suppress(conn, int(row["subscriber_id"]), "a permanent failure came back (DSN)")
        self.suppressed += 1
        log.info("alerts: digest %d bounced for good; its address is suppressed", digest_id)
