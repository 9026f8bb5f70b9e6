"""The parse queue: inbound messages become listings (or a stated reason), on the one queue
primitive (:mod:`shortlist.queue`).

``queued -> running`` (claimed, SKIP LOCKED + lease) ``-> posted | rejected | failed``, each
move made in the transaction that ends the worker's lease on the row (``Batch.finish``), and
only while that lease was still the worker's. A crash mid-parse loses nothing: the lease runs out
and the row is claimed again; a message that keeps killing its worker is given up as ``failed``
after :data:`MAX_ATTEMPTS`. A message that holds no job is ``rejected`` with the reason the
sender is told; one the parser could not read in time is ``failed`` — both show in /status.

Only an authenticated sender is answered (:mod:`.authentication`: the From address whose domain
the receiving MTA vouched for); any other message is posted or rejected all the same, silently.

A message of a forgotten person (its envelope sender was suppressed at delivery, or its From or
Reply-To is on the suppression list) is still posted or rejected, but never answered, and its
personal data is erased in the transaction that finishes it (:func:`shortlist.privacy.erase_mail`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Literal

from shortlist import privacy
from shortlist.config import Settings
from shortlist.db import channels
from shortlist.db.tenant import act_for_org
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.errors import BadInput
from shortlist.listings.mail import reply
from shortlist.listings.mail.authentication import authenticated_sender
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.parse import NoJob, Reading
from shortlist.listings.mail.sandbox import ParseCrashed, ParserPool, ParseTimeout, ParseTooLarge
from shortlist.listings.mail.screen import RejectedAs
from shortlist.listings.mail.store import SQL
from shortlist.listings.models import ListingOut
from shortlist.listings.repository import NO_OWNER, Owner, insert_listing
from shortlist.queue import DONE, GIVE_BACK, REQUEUE, Batch, LeaseTable, Outcome, each

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class InboundMessage:
    id: int
    company_name: str
    mail_from: str | None
    raw: bytes
    attempts: int
    owner_token_id: int | None
    sender_forgotten: bool = False
    owner: Owner = NO_OWNER
    """Whose intake it came to: its listing is theirs, and the worker acts for their
    organisation while it writes it."""


class _LostLease(Exception):
    """The row is no longer ours (its lease ran out and another worker took it)."""


def board_url(settings: Settings) -> str:
    return (settings.public_url or f"http://{settings.host}:{settings.port}").rstrip("/")


class MailQueue:
    """The ``shortlist.queue.worker.Queue`` of ``inbound_mail``."""

    name = "mail"
    channel: str | None = channels.MAIL
    leases = LeaseTable("inbound_mail", outcome=REQUEUE)

    def __init__(self, pool: AsyncPool, parser: ParserPool, settings: Settings) -> None:
        self.pool = pool
        self.parser = parser
        self.settings = settings
        self.relay = (
            reply.Relay.from_url(settings.smtp_relay_url) if settings.smtp_relay_url else None
        )
        if self.relay is not None and not settings.mail_authserv_id:
            log.warning(
                "mail: SHORTLIST_SMTP_RELAY_URL is set but SHORTLIST_MAIL_AUTHSERV_ID is not:"
                " no sender can be authenticated, so none is answered"
            )

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[InboundMessage]:
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                SQL["claim_inbound"], {"worker_id": worker_id, "limit": limit, "lease": lease}
            )
            rows = await cur.fetchall()
        return [
            InboundMessage(
                int(r["id"]),
                r["company_name"],
                r["mail_from"],
                bytes(r["raw"]),
                int(r["attempts"]),
                r["owner_token_id"],
                bool(r["sender_forgotten"]),
                Owner(r["user_id"], r["org_id"]),
            )
            for r in rows
        ]

    async def handle(self, batch: Batch[InboundMessage]) -> None:
        await each(batch, self._handle_one)

    async def _handle_one(self, batch: Batch[InboundMessage], item: InboundMessage) -> Outcome:
        reading: Reading | None = None
        try:
            if item.attempts > MAX_ATTEMPTS:
                raise ParseCrashed(
                    f"gave up after {MAX_ATTEMPTS} attempts: reading the message stopped its"
                    " worker each time"
                )
            reading = await self.parser.read(item.raw, item.company_name)
            data = to_listing(reading, item.company_name)
        except BadInput as exc:
            status: Literal["rejected", "failed"] = (
                "failed"
                if isinstance(exc, ParseTimeout | ParseTooLarge | ParseCrashed)
                else "rejected"
            )
            # Automatic mail is never answered (RFC 3834: no mail loops), nor a scam (its
            # From is as likely forged: no backscatter).
            kind = exc.kind if isinstance(exc, NoJob) else None
            finished = await self._finish_unposted(batch, item, status, str(exc), reading, kind)
            if finished == "kept" and kind not in ("automatic", "scam"):
                await self._reply(item, reading, reply.rejected_text(str(exc)))
            return DONE if finished else GIVE_BACK
        try:
            async with self.pool.connection() as conn, conn.transaction():
                # Row-level security for the item's organisation (0029): what the worker
                # writes for a message is that organisation's alone.
                if item.owner.org_id is not None:
                    await act_for_org(conn, item.owner.org_id)
                listing = await insert_listing(
                    conn,
                    data,
                    source="email",
                    owner_token_id=item.owner_token_id,
                    owner=item.owner,
                )
                cur = await conn.execute(
                    SQL["finish_posted"], {"id": item.id, "listing_id": listing.id}
                )
                if await cur.fetchone() is None:
                    raise _LostLease
                forgotten = await self._erase_if_forgotten(conn, item, reading)
                if not await batch.finish(conn, {item.id: DONE}):
                    raise _LostLease
        except _LostLease:
            log.warning(
                "mail: message %d is no longer this worker's (its lease ran out and another"
                " worker took it, or its sender was forgotten)",
                item.id,
            )
            # Rolled back: given back if the lease is still ours (a row no longer running
            # keeps its state).
            return GIVE_BACK
        if not forgotten:
            await self._reply(item, reading, self._posted_text(listing))
        return DONE

    async def _finish_unposted(
        self,
        batch: Batch[InboundMessage],
        item: InboundMessage,
        status: str,
        reason: str,
        reading: Reading | None = None,
        rejected_as: RejectedAs | None = None,
    ) -> Literal["kept", "erased", None]:
        """``running -> rejected | failed``; None when the row is no longer ours (nothing
        written: its lease, if still ours, is for the caller to give back), "erased" when its
        sender is a forgotten person (not to be answered)."""
        try:
            async with self.pool.connection() as conn, conn.transaction():
                cur = await conn.execute(
                    SQL["finish_unposted"],
                    {
                        "id": item.id,
                        "status": status,
                        "reason": reason[:2000],
                        "rejected_as": rejected_as if status == "rejected" else None,
                    },
                )
                if await cur.fetchone() is None:
                    raise _LostLease  # no longer running: the lease ends with a give-back
                erased = await self._erase_if_forgotten(conn, item, reading)
                if not await batch.finish(conn, {item.id: DONE}):
                    raise _LostLease
        except _LostLease:
            return None
        return "erased" if erased else "kept"

    async def _erase_if_forgotten(
        self, conn: AsyncConn, item: InboundMessage, reading: Reading | None
    ) -> bool:
        """In the finishing transaction: a message whose sender was forgotten (at delivery, or
        named by its From or Reply-To) loses its personal data now, and is not answered."""
        forgotten = item.sender_forgotten
        if not forgotten and reading is not None and reading.addresses:
            keys = {k for a in reading.addresses for k in privacy.person_keys(email=a)}
            forgotten = bool(await privacy.suppressed_among(conn, keys, self.settings.privacy_key))
        if forgotten:
            await privacy.erase_mail(conn, [item.id])
        return forgotten

    def _posted_text(self, listing: ListingOut) -> str:
        link = f"{board_url(self.settings)}/jobs/{listing.detail_page_slug}"
        return reply.posted_text(
            listing.job_title, listing.company_name, listing.city_location, link
        )

    async def _reply(self, item: InboundMessage, reading: Reading | None, text: str) -> None:
        """Answer the sender, once, when a relay is configured and the receiving MTA
        authenticated the From address's domain (never a ``Reply-To``: no backscatter to a
        forged sender); a relay failure is logged (the listing, or the reason, stands either
        way). A message with a null envelope sender (a bounce, or a pipe delivery without
        one) or read as automatic mail is never answered (RFC 3834 §2)."""
        if self.relay is None or item.mail_from is None:
            return
        if reading is not None and reading.automatic:
            return
        # Off the loop: the header fields are bounded, but a field's parser is quadratic.
        to = await asyncio.to_thread(authenticated_sender, item.raw, self.settings.mail_authserv_id)
        if to is None:
            log.info("mail: message %d not answered: its sender is not authenticated", item.id)
            return
        try:
            msg = reply.build_reply(
                to=to,
                sender=f"shortlist <noreply@{self.settings.mail_domain}>",
                subject=reading.subject if reading is not None else "",
                in_reply_to=reading.message_id if reading is not None else None,
                text=text,
            )
            await reply.send(self.relay, msg)
        except Exception as exc:
            # The type only: a relay's or a header's text may quote an address.
            log.warning("mail: no reply sent for message %d (%s)", item.id, type(exc).__name__)
            return
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(SQL["mark_replied"], {"id": item.id})
