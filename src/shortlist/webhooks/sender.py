"""The webhook sender: deliveries, claimed when due, POSTed to their endpoint, the outcome
recorded — a queue on the one primitive (``shortlist.queue``).

    claim   pending deliveries due (``next_attempt_at``) to enabled endpoints that no
            Retry-After holds back, FOR UPDATE SKIP LOCKED, leased to this worker, committed
    handle  check the endpoint's address (public only, ``shortlist.public_address``), POST the
            message signed now (``signing``) to the address checked, within
            ``SHORTLIST_WEBHOOK_TIMEOUT``; then ONE transaction ends the lease and records the
            attempt on the delivery and its endpoint

What an answer means (Standard Webhooks, "Delivery success and failure"): a 2xx is delivered;
410 Gone disables the endpoint (its pending deliveries are cancelled); anything else — a 3xx
(redirects are not followed), a 4xx or 5xx, a timeout, a refused connection, an address that
is not public — is a failed attempt, tried again on the schedule (``schedule``), after at least
the Retry-After the answer carries; a 429, 502 or 504 with one holds back every delivery to the
endpoint until then. After the schedule's last attempt the delivery has failed; an endpoint
failing for 5 days is disabled.

A delivery is sent at least once, never lost: a sender killed after the POST and before its
commit leaves the delivery pending under a lease that runs out, and the next claim sends it
again, with the same ``webhook-id`` and body (the receiver's idempotency key) and a new
``webhook-timestamp`` and signature. Only a database failure is the worker's
``TransientError``; an endpoint's trouble is that delivery's own.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import psycopg

from shortlist import __version__, metrics
from shortlist.config import Settings
from shortlist.db import channels
from shortlist.db.pool import single_statement
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.errors import TransientError
from shortlist.public_address import AddressRefused, PinnedBackend, check_public, pinned_client
from shortlist.queue import DONE, Batch, LeaseTable, Outcome, each
from shortlist.redact import redact_emails
from shortlist.webhooks import signing
from shortlist.webhooks.schedule import (
    ATTEMPTS,
    DISABLE_AFTER,
    MAX_RETRY_AFTER,
    THROTTLING,
    Clock,
    parse_retry_after,
    retry_delay,
)
from shortlist.webhooks.secrets import SecretBox, UnreadableSecret, secret_box

log = logging.getLogger(__name__)

_SQL = load_queries("shortlist.webhooks")
MAX_ERROR_CHARS = 1000
ALLOW_PRIVATE_SETTING = "SHORTLIST_WEBHOOK_ALLOW_PRIVATE"


@dataclass(frozen=True)
class Claimed:
    """A claimed delivery with what sending it takes."""

    id: int
    attempts: int
    endpoint_id: int
    msg_id: str
    body: str
    url: str
    secret: str
    """As stored: encrypted (shortlist.webhooks.secrets)."""
    previous_secret: str | None

    def secrets(self, box: SecretBox) -> list[str]:
        """The secrets that sign it: the endpoint's, and during a rotation the one before."""
        stored = [self.secret] + ([self.previous_secret] if self.previous_secret else [])
        return [box.open(s) for s in stored]


@dataclass(frozen=True)
class Attempt:
    """What one POST came to."""

    status: int | None
    """The endpoint's answer (None: none: a timeout, no connection, a refused address)."""
    error: str | None = None
    retry_after: float | None = None
    refused: bool = False

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class SendPolicy:
    timeout: float = 15.0
    """Seconds one attempt may take in all (the spec recommends 15 to 30)."""
    allow_private: bool = False
    user_agent: str = f"shortlist/{__version__} (webhooks)"
    secret_keys: str = ""
    """``SHORTLIST_WEBHOOK_SECRET_KEYS``: what decrypts the endpoints' secrets."""

    @classmethod
    def from_settings(cls, settings: Settings) -> SendPolicy:
        return cls(
            timeout=settings.webhook_timeout,
            allow_private=settings.webhook_allow_private,
            secret_keys=settings.webhook_secret_keys,
        )


class WebhookQueue:
    """The ``shortlist.queue.worker.Queue`` of webhook deliveries. ``clock``: how far the
    sender's clock runs ahead of the database's (tests drive it); ``rng``: the jitter's."""

    def __init__(
        self,
        pool: AsyncPool,
        policy: SendPolicy,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.pool = pool
        self.policy = policy
        self.clock = clock or Clock()
        self.rng = rng or random.Random()
        self.wall_clock = wall_clock
        self.name = "webhooks"
        self.channel: str | None = channels.WEBHOOKS
        self.leases = LeaseTable("webhook_deliveries")
        self._box: SecretBox | None = None

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[Claimed]:
        if self._box is None:
            async with self.pool.connection() as conn:
                self._box = await secret_box(conn, self.policy.secret_keys)
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(
                _SQL["claim_due_deliveries"],
                {
                    "worker_id": worker_id,
                    "limit": limit,
                    "lease": lease,
                    "ahead": self.clock.ahead,
                },
            )
            rows = await cur.fetchall()
        return [
            Claimed(
                r["id"],
                r["attempts"],
                r["endpoint_id"],
                r["msg_id"],
                r["body"],
                r["url"],
                r["secret"],
                r["previous_secret"],
            )
            for r in rows
        ]

    async def handle(self, batch: Batch[Claimed]) -> None:
        await each(batch, self.deliver)

    async def deliver(self, batch: Batch[Claimed], delivery: Claimed) -> Outcome:
        attempt = await self.send(delivery)
        try:
            await self._record(batch, delivery, attempt)
        except psycopg.Error as exc:
            raise TransientError(f"database unavailable: {exc}") from exc
        return DONE

    async def send(self, delivery: Claimed) -> Attempt:
        """POST the delivery once to the address its endpoint's host was checked to have."""
        try:
            address = await check_public(
                delivery.url,
                allow_private=self.policy.allow_private,
                setting=ALLOW_PRIVATE_SETTING,
            )
        except AddressRefused as exc:
            return Attempt(None, str(exc), refused=True)
        except TransientError as exc:
            return Attempt(None, str(exc))
        assert self._box is not None, "claimed first"
        try:
            secrets = delivery.secrets(self._box)
        except UnreadableSecret as exc:
            return Attempt(None, str(exc))
        backend = PinnedBackend()
        backend.pin(delivery.url, address)
        timestamp = int(self.wall_clock())
        headers = signing.headers(secrets, delivery.msg_id, timestamp, delivery.body)
        client = pinned_client(
            backend, timeout=self.policy.timeout, user_agent=self.policy.user_agent
        )
        try:
            async with asyncio.timeout(self.policy.timeout):
                # The answer's status and headers are all that is read: its body is nobody's
                # business, and an endpoint cannot hold the sender by sending one slowly.
                async with client.stream(
                    "POST", delivery.url, content=delivery.body.encode(), headers=headers
                ) as response:
                    status = response.status_code
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
        except TimeoutError:
            return Attempt(None, f"no answer within {self.policy.timeout:g} s")
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return Attempt(None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS])
        except Exception as exc:
            # Whatever else one endpoint's answer does to the client, it is that delivery's
            # failed attempt, not a batch given back to be sent again and again.
            log.exception("webhook delivery %d: the attempt failed", delivery.id)
            return Attempt(None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS])
        finally:
            await client.aclose()
        error = None if 200 <= status < 300 else f"answered {status}"
        return Attempt(status, error, retry_after)

    async def _record(self, batch: Batch[Claimed], delivery: Claimed, attempt: Attempt) -> None:
        """The attempt on the delivery and its endpoint, in the transaction that ends the lease:
        nothing is recorded by a sender whose lease ran out (another sends it again)."""
        ahead = self.clock.ahead
        async with self.pool.connection() as conn, conn.transaction():
            if not await batch.finish(conn, {delivery.id: DONE}):
                log.warning("webhook delivery %d: lease lost before the commit", delivery.id)
                return
            if attempt.delivered:
                metrics.WEBHOOK_ATTEMPTS.labels("delivered").inc()
                cur = await conn.execute(
                    _SQL["delivered"], {"id": delivery.id, "status": attempt.status, "ahead": ahead}
                )
                if await cur.fetchone() is not None:
                    await conn.execute(_SQL["endpoint_answered"], {"id": delivery.endpoint_id})
                return
            gone = attempt.status == 410
            failed = delivery.attempts + 1
            give_up = gone or failed >= ATTEMPTS
            delay = 0.0 if give_up else retry_delay(failed, self.rng, attempt.retry_after)
            outcome = "gone" if gone else "refused" if attempt.refused else "failed"
            metrics.WEBHOOK_ATTEMPTS.labels("gave_up" if give_up and not gone else outcome).inc()
            error = redact_emails(attempt.error or "failed", MAX_ERROR_CHARS)
            if give_up and not gone:
                error = f"gave up after {failed} attempts; the last: {error}"[:MAX_ERROR_CHARS]
            cur = await conn.execute(
                _SQL["attempt_failed"],
                {
                    "id": delivery.id,
                    "give_up": give_up,
                    "delay": delay,
                    "status": attempt.status,
                    "error": error,
                    "ahead": ahead,
                },
            )
            if await cur.fetchone() is None:
                return  # cancelled meanwhile (its endpoint disabled or deleted)
            if gone:
                await self._disable(conn, delivery, "the endpoint answered 410 Gone")
                return
            pause = None
            if attempt.status in THROTTLING and attempt.retry_after is not None:
                pause = min(attempt.retry_after, MAX_RETRY_AFTER)
            cur = await conn.execute(
                _SQL["endpoint_failed"],
                {
                    "id": delivery.endpoint_id,
                    "pause": pause,
                    "ahead": ahead,
                    "disable_after": DISABLE_AFTER,
                },
            )
            row = await cur.fetchone()
            if row is not None and row["failing_too_long"]:
                await self._disable(conn, delivery, "every attempt failed for 5 days")
        log.info(
            "webhook delivery %d to endpoint %d: attempt %d failed (%s)",
            delivery.id,
            delivery.endpoint_id,
            delivery.attempts + 1,
            attempt.error,
        )

    async def _disable(self, conn: AsyncConn, delivery: Claimed, reason: str) -> None:
        cur = await conn.execute(
            _SQL["disable_endpoint"],
            {"id": delivery.endpoint_id, "reason": reason, "ahead": self.clock.ahead},
        )
        cancelled = len(await cur.fetchall())
        log.warning(
            "webhook endpoint %d disabled: %s (%d pending deliveries cancelled)",
            delivery.endpoint_id,
            reason,
            cancelled,
        )
