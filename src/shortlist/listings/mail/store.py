"""The intake's rows: each company's secret address, and every inbound message as received.

A message is a row before anything else happens to it: the SMTP server answers ``250`` only
after :func:`receive` committed it, and the parse queue (:mod:`.queue`) takes it from there.
Its personal data (the raw message, the envelope sender, the Message-ID) is erased by
:mod:`shortlist.privacy` after ``SHORTLIST_MAIL_RETENTION_DAYS``, or when its sender is
forgotten; a forgotten sender's envelope address is never stored at all.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from shortlist import privacy
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, Row
from shortlist.listings.repository import NO_OWNER, Owner
from shortlist.redact import redact_emails

SQL = load_queries("shortlist.listings.mail")

LOCAL_PREFIX = "post-"
FAILURES_SHOWN = 10


@dataclass(frozen=True)
class Intake:
    company_name: str
    local_part: str
    owner_token_id: int | None
    owner: Owner = NO_OWNER
    """The user and organisation it belongs to (its mail's listings are theirs)."""

    def address(self, domain: str) -> str:
        return f"{self.local_part}@{domain}"


def _intake(row: Row) -> Intake:
    return Intake(
        row["company_name"],
        row["local_part"],
        row["owner_token_id"],
        Owner(row["user_id"], row["org_id"]),
    )


def new_local_part() -> str:
    """``post-`` and 128 random bits in hex (lowercase: mail systems may fold case)."""
    return LOCAL_PREFIX + secrets.token_bytes(16).hex()


async def intake_for(
    conn: AsyncConn, company: str, token_id: int | None, owner: Owner = NO_OWNER
) -> Intake:
    """The company's intake address, created on first use (owned by ``owner``)."""
    async with conn.transaction():
        cur = await conn.execute(SQL["intake_of_company"], {"company": company})
        row = await cur.fetchone()
        if row is None:
            cur = await conn.execute(
                SQL["create_intake"],
                {
                    "company": company,
                    "local_part": new_local_part(),
                    "token_id": token_id,
                    "user_id": owner.user_id,
                    "org_id": owner.org_id,
                },
            )
            row = await cur.fetchone()
    assert row is not None
    return _intake(row)


async def rotate_intake(
    conn: AsyncConn, company: str, token_id: int | None, owner: Owner = NO_OWNER
) -> Intake:
    """A new secret address for the company; mail to the old one is refused from now on."""
    async with conn.transaction():
        cur = await conn.execute(
            SQL["rotate_intake"],
            {
                "company": company,
                "local_part": new_local_part(),
                "token_id": token_id,
                "user_id": owner.user_id,
                "org_id": owner.org_id,
            },
        )
        row = await cur.fetchone()
    assert row is not None
    return _intake(row)


def local_part_of(address: str, domain: str) -> str | None:
    """The intake local part an address names on our domain (any case), else None."""
    local, at, host = address.strip().strip("<>").rpartition("@")
    if not at or host.lower().rstrip(".") != domain.lower().rstrip("."):
        return None
    local = local.lower()
    return local if local.startswith(LOCAL_PREFIX) and len(local) <= 80 else None


async def find_intake(conn: AsyncConn, local_part: str) -> Intake | None:
    cur = await conn.execute(SQL["intake_of_address"], {"local_part": local_part})
    row = await cur.fetchone()
    return _intake(row) if row is not None else None


def dedup_key(message_id: str | None, raw: bytes) -> str:
    """The Message-ID (mail servers keep it across retries), else a hash of the raw bytes."""
    if message_id and message_id.strip():
        return "id:" + " ".join(message_id.split())[:990]
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def posted_message_key(company: str, message_id: str | None, raw: bytes) -> str:
    """The ``external_id`` of a listing posted as a message over HTTP: the company's own
    :func:`dedup_key` of it, hashed (a Message-ID is no business of the listings table, and
    another company posting the same message gets a listing of its own)."""
    scoped = f"{company}\n{dedup_key(message_id, raw)}".encode()
    return "message:" + hashlib.sha256(scoped).hexdigest()


async def receive(
    conn: AsyncConn,
    intake: Intake,
    *,
    recipient: str,
    mail_from: str | None,
    message_id: str | None,
    raw: bytes,
    privacy_key: str = "",
) -> int | None:
    """Commit a message for ``intake``'s company; returns its row id, or None when the company
    already has this message (a redelivery: answered as accepted, nothing changes).

    A sender on the suppression list (``privacy_key``: ``SHORTLIST_PRIVACY_KEY``) still gets
    the job post accepted — it is the employer's, not the person's — but the envelope address
    is not stored, the message is never answered, and it is erased once parsed."""
    mail_from = (mail_from or "").strip() or None
    async with conn.transaction():
        forgotten = mail_from is not None and bool(
            await privacy.suppressed_among(
                conn, privacy.person_keys(email=mail_from.strip("<>")), privacy_key
            )
        )
        cur = await conn.execute(
            SQL["insert_inbound"],
            {
                "company": intake.company_name,
                "recipient": recipient[:320],
                "mail_from": None if forgotten or mail_from is None else mail_from[:320],
                "sender_forgotten": forgotten,
                "message_id": message_id[:1000] if message_id else None,
                "dedup_key": dedup_key(message_id, raw),
                "raw": raw,
                "owner_token_id": intake.owner_token_id,
                "user_id": intake.owner.user_id,
                "org_id": intake.owner.org_id,
            },
        )
        row = await cur.fetchone()
    return int(row["id"]) if row is not None else None


async def inbound_status(conn: AsyncConn) -> dict[str, object]:
    """``{"by_status": {status: n}, "failures": [...]}`` for /status (reasons name no one)."""
    cur = await conn.execute(SQL["inbound_by_status"])
    by_status = {str(r["status"]): int(r["n"]) for r in await cur.fetchall()}
    cur = await conn.execute(SQL["inbound_failures"], {"limit": FAILURES_SHOWN})
    failures = [
        {
            "id": r["id"],
            "company": r["company_name"],
            "status": r["status"],
            "rejected_as": r["rejected_as"],
            "reason": redact_emails(r["reason"] or ""),
            "attempts": r["attempts"],
            "at": r["updated_at"].isoformat(),
        }
        for r in await cur.fetchall()
    ]
    return {"by_status": by_status, "failures": failures}
