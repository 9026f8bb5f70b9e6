"""The SMTP intake: an aiosmtpd server on the process's own event loop
(https://aiosmtpd.aio-libs.org/en/latest/handlers.html).

* ``RCPT TO`` names a company's secret intake address, else ``550`` (unknown addresses are
  refused before any data is sent).
* ``SIZE`` is announced and enforced (``552``) from ``SHORTLIST_MAIL_MAX_BYTES``.
* ``DATA`` is committed as an ``inbound_mail`` row per recipient, then answered ``250``; a
  redelivery of a message the company already has is answered ``250`` too and changes nothing.
  A database that cannot take it is a ``451`` (the sending server tries again later); a
  message whose every address was replaced between ``RCPT`` and ``DATA`` is a ``550``, never a
  ``250`` for a message nobody stored.

Nothing is parsed here: the bytes go to the parse queue (:mod:`.queue`), whose parsing runs in
a parser process. Addresses are personal data: they never reach a log line, and a forgotten
sender's (on the suppression list) is not even stored — the job post, the employer's, is
accepted all the same, and never answered.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from typing import Any, Protocol

import psycopg
from aiosmtpd.smtp import SMTP, Envelope, Session

from shortlist.config import Settings
from shortlist.db.pool import PoolShare
from shortlist.listings.mail import store

log = logging.getLogger(__name__)

# The Message-ID, read from the header block without a parser (bounded, linear).
_MESSAGE_ID = re.compile(rb"(?im)^message-id:[ \t]*(<[^<>\r\n]{1,900}>)")
_HEADER_SCAN = 64 * 1024
MAX_RECIPIENTS = 20
DEFAULT_PORT = 2525
"""Where the intake listens when SHORTLIST_SMTP_PORT is unset (unprivileged; an MTA or a port
forward brings port 25's mail to it)."""


def message_id_of(raw: bytes) -> str | None:
    head = raw[:_HEADER_SCAN]
    end = min(i for i in (head.find(b"\r\n\r\n"), head.find(b"\n\n"), len(head)) if i >= 0)
    m = _MESSAGE_ID.search(head[:end])
    return m.group(1).decode("ascii", "replace") if m else None


class BounceSink(Protocol):
    """Where mail to a bounce (VERP) address goes instead of the parse queue: the alerts'
    bounces (shortlist.alerts.bounces), handed in by the composition root."""

    async def digest_of(self, address: str) -> int | None: ...

    async def receive(self, address: str, raw: bytes) -> None: ...


class IntakeHandler:
    """aiosmtpd handler hooks: ``handle_RCPT`` and ``handle_DATA``."""

    def __init__(
        self, connections: PoolShare, settings: Settings, bounces: BounceSink | None = None
    ) -> None:
        self.connections = connections
        """The process's share of its pool for the intake (``Services.intake``): a flood of
        sessions waits its own turns, never for every connection of the process, and a
        company's writes leave a turn to another's (an address is looked up under the key
        ``""``, a message written under its company's name)."""
        self.bounces = bounces
        self.domain = settings.mail_domain
        self.privacy_key = settings.privacy_key
        self.max_sessions = settings.mail_smtp_max_sessions
        self.max_stored = settings.mail_max_stored_bytes
        self.sessions = 0
        """SMTP sessions open now (:class:`CappedSMTP` counts them)."""
        self.received = 0
        """Messages committed (tests read it)."""

    async def _intake(self, address: str) -> store.Intake | None:
        local = store.local_part_of(address, self.domain)
        if local is None:
            return None
        async with self.connections.connection() as conn:
            return await store.find_intake(conn, local)

    async def handle_RCPT(  # aiosmtpd hook name
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        if len(envelope.rcpt_tos) >= MAX_RECIPIENTS:
            return "452 4.5.3 too many recipients"
        try:
            intake = await self._intake(address)
            if (
                intake is None
                and self.bounces is not None
                and await self.bounces.digest_of(address) is not None
            ):
                envelope.rcpt_tos.append(address)
                return "250 2.1.5 OK"
        except (psycopg.Error, OSError):
            log.warning("mail intake: database unavailable at RCPT")
            return "451 4.3.0 temporary failure, try again later"
        if intake is None:
            return "550 5.1.1 no such intake address"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(  # aiosmtpd hook name
        self, server: SMTP, session: Session, envelope: Envelope
    ) -> str:
        raw = envelope.original_content or b""
        if isinstance(envelope.content, bytes) and not raw:
            raw = envelope.content
        message_id = message_id_of(raw)
        mail_from = envelope.mail_from or None
        if mail_from in ("", "<>"):
            mail_from = None  # a bounce: never answered
        new = delivered = 0
        try:
            for address in envelope.rcpt_tos:
                intake = await self._intake(address)
                if (
                    intake is None
                    and self.bounces is not None
                    and await self.bounces.digest_of(address) is not None
                ):
                    await self.bounces.receive(address, raw)
                    delivered += 1
                    new += 1
                    continue
                if intake is None:  # rotated between RCPT and DATA
                    continue
                async with self.connections.connection(intake.company_name) as conn:
                    cur = await conn.execute(
                        store.SQL["stored_bytes"], {"company": intake.company_name}
                    )
                    held = await cur.fetchone()
                    if held is not None and int(held["n"]) + len(raw) > self.max_stored:
                        log.warning("mail intake: an intake holds too much mail; deferred")
                        return "452 4.3.1 this intake holds too much mail; try again later"
                    row = await store.receive(
                        conn,
                        intake,
                        recipient=address,
                        mail_from=mail_from,
                        message_id=message_id,
                        raw=raw,
                        privacy_key=self.privacy_key,
                    )
                delivered += 1
                new += row is not None
        except (psycopg.Error, OSError):
            log.warning("mail intake: database unavailable at DATA")
            return "451 4.3.0 temporary failure, try again later"
        self.received += new
        if not delivered:
            # Every address it was sent to was replaced meanwhile: nothing was stored, so the
            # sender must hear it failed (RFC 5321 §4.2.5: a 5xx after DATA is a bounce),
            # never a 250 for a message that is gone.
            return "550 5.1.1 no such intake address (it was replaced)"
        if new:
            return "250 2.0.0 OK: queued"
        return "250 2.0.0 OK: already received"


class CappedSMTP(SMTP):
    """An SMTP session counted against the intake's cap: past it, 421 and the connection
    closes (RFC 5321 §3.8), before the session holds anything."""

    def __init__(self, handler: IntakeHandler, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self.intake = handler
        self.counted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.intake.sessions >= self.intake.max_sessions:
            assert isinstance(transport, asyncio.WriteTransport)
            transport.write(b"421 4.7.0 too many connections, try again later\r\n")
            transport.close()
            return
        self.intake.sessions += 1
        self.counted = True
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        if self.counted:
            self.counted = False
            self.intake.sessions -= 1
            super().connection_lost(error)


def make_server(handler: IntakeHandler, settings: Settings) -> SMTP:
    return CappedSMTP(
        handler,
        data_size_limit=settings.mail_max_bytes,
        enable_SMTPUTF8=True,
        decode_data=False,
        hostname=settings.mail_domain,
        ident="shortlist intake",
        timeout=60,
    )


async def serve_intake(
    sock: socket.socket,
    connections: PoolShare,
    settings: Settings,
    stop: asyncio.Event,
    bounces: BounceSink | None = None,
) -> None:
    """Accept SMTP on ``sock`` (bound beforehand by the command) until ``stop``; the database
    through the intake's share of the pool (``Services.intake``); mail to a bounce address goes
    to ``bounces``."""
    handler = IntakeHandler(connections, settings, bounces)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: make_server(handler, settings), sock=sock)
    host, port = sock.getsockname()[:2]
    log.info("mail intake listening on smtp://%s:%d for @%s", host, port, settings.mail_domain)
    try:
        await stop.wait()
    finally:
        server.close()
        await server.wait_closed()


def address_of(intake: store.Intake, settings: Settings) -> dict[str, Any]:
    return {"address": intake.address(settings.mail_domain)}
