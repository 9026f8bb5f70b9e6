"""Webhooks with real parts: PostgreSQL, the sender's queue as the worker runs it (claim, then
``run_batch``), and a loopback receiver that verifies every request with the
``standardwebhooks`` package. Time is the sender's clock, driven ahead (``Clock.advance``),
never slept through."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from shortlist.db.types import AsyncPool
from shortlist.queue import run_batch
from shortlist.webhooks import store
from shortlist.webhooks.schedule import ATTEMPTS, RETRY_SCHEDULE, Clock
from shortlist.webhooks.sender import SendPolicy, WebhookQueue
from tests.webhook_receiver import WebhookReceiver

WORKER = "webhook-test-worker"
LOOPBACK = SendPolicy(timeout=5.0, allow_private=True)
"""The receiver is on loopback: allowed here, as SHORTLIST_WEBHOOK_ALLOW_PRIVATE=true allows it
(the product's default refuses it; test_a_private_address_is_refused)."""


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    r = WebhookReceiver().start()
    yield r
    r.stop()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def queue(pool: AsyncPool, clock: Clock) -> WebhookQueue:
    return WebhookQueue(pool, LOOPBACK, clock=clock, rng=random.Random(7))


async def new_org(pool: AsyncPool, name: str = "Acme") -> int:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO organisations (name, kind) VALUES (%s, 'both') RETURNING id", (name,)
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row["id"])


async def add_endpoint(
    pool: AsyncPool, org: int, url: str, events: tuple[str, ...] = store.EVENT_TYPES
) -> store.NewEndpoint:
    async with pool.connection() as conn:
        made = await store.create_endpoint(conn, org, None, url, events)
    assert made is not None
    return made


async def enqueue(pool: AsyncPool, org: int, n: int = 1, subject: str | None = None) -> int:
    async with pool.connection() as conn:
        return await store.enqueue(
            conn, org, store.ALERT_MATCHED, {"alertId": 1, "n": n}, subject=subject
        )


async def send_due(queue: WebhookQueue) -> int:
    """One claim of everything due, sent as the worker sends it; returns how many were sent."""
    items = await queue.claim(WORKER, 50, 30.0)
    if items:
        await run_batch(queue, WORKER, items)
    return len(items)


async def delivery(pool: AsyncPool) -> dict[str, Any]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT d.*, d.status::text AS status,"
            " extract(epoch FROM d.next_attempt_at - d.last_attempt_at) AS wait"
            " FROM webhook_deliveries AS d ORDER BY d.id DESC LIMIT 1"
        )
        row = await cur.fetchone()
    assert row is not None
    return dict(row)


async def endpoint(pool: AsyncPool, endpoint_id: int) -> dict[str, Any]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT *, status::text AS status FROM webhook_endpoints WHERE id = %s",
            (endpoint_id,),
        )
        row = await cur.fetchone()
    assert row is not None
    return dict(row)


# --- signatures ---------------------------------------------------------------------------------


async def test_a_delivery_is_signed_as_standard_webhooks_verifies_it(
    pool: AsyncPool, queue: WebhookQueue, receiver: WebhookReceiver
) -> None:
    org = await new_org(pool)
    made = await add_endpoint(pool, org, receiver.url)
    assert made.secret.startswith("whsec_")
    receiver.secrets = [made.secret, "whsec_" + "QUJD" * 8]  # its own, and a stranger's
    assert await enqueue(pool, org) == 1
    assert await send_due(queue) == 1
    [got] = receiver.received
    assert got.verified_by == [made.secret]
    assert got.msg_id.startswith("msg_")
    assert got.headers["content-type"] == "application/json"
    body = got.json()
    assert body["type"] == "alert.matched" and body["data"] == {"alertId": 1, "n": 1}
    assert body["timestamp"].endswith("Z")
    row = await delivery(pool)
    assert row["status"] == "delivered" and row["attempts"] == 1 and row["last_status"] == 200
    assert row["locked_by"] is None


async def test_during_a_rotation_both_secrets_sign(
    pool: AsyncPool, queue: WebhookQueue, receiver: WebhookReceiver, clock: Clock
) -> None:
    org = await new_org(pool)
    made = await add_endpoint(pool, org, receiver.url)
    async with pool.connection() as conn:
        rotated = await store.rotate_secret(conn, made.id)
    assert rotated is not None and rotated.secret != made.secret
    receiver.secrets = [made.secret, rotated.secret]
    await enqueue(pool, org, 1)
    await send_due(queue)
    [during] = receiver.received
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    assert during.verified_by == [made.secret, rotated.secret]  # either secret verifies it
    clock.advance(25 * 3600)  # past the overlap: the old secret no longer signs
    await enqueue(pool, org, 2)
    await send_due(queue)
    after = receiver.received[-1]
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    assert after.verified_by == [rotated.secret]


# --- retries --------------------------------------------------------------------------------------


async def test_retries_keep_the_webhook_id_and_follow_the_schedule_with_jitter(
    pool: AsyncPool, queue: WebhookQueue, receiver: WebhookReceiver, clock: Clock
) -> None:
    org = await new_org(pool)
    made = await add_endpoint(pool, org, receiver.url)
    receiver.secrets = [made.secret]
    receiver.answers = [(500, {}), (503, {}), (404, {}), (302, {"location": "http://x.test/"})]
    await enqueue(pool, org)
    waits = []
    for failed in range(1, 5):
        assert await send_due(queue) == 1
        row = await delivery(pool)
        assert row["status"] == "pending" and row["attempts"] == failed
        waits.append(float(row["wait"]))
        assert await send_due(queue) == 0  # not due before its wait
        clock.advance(float(row["wait"]) + 1)
    assert await send_due(queue) == 1
    assert (await delivery(pool))["status"] == "delivered"
    ids = {r.msg_id for r in receiver.received}
    assert len(receiver.received) == 5 and len(ids) == 1  # one webhook-id for every attempt
    assert all(r.verified_by == [made.secret] for r in receiver.received)
    # Each attempt is signed with its own timestamp: the id and body stay, the signature moves.
    assert len({r.body for r in receiver.received}) == 1
    for wait, base in zip(waits, RETRY_SCHEDULE, strict=False):
        assert 0.8 * base - 1 <= wait <= 1.2 * base + 1, (wait, base)
    assert len(set(waits)) == len(waits)


async def test_the_schedule_ends_after_its_last_attempt_and_5_days_of_failures_disable(
    pool: AsyncPool, queue: WebhookQueue, receiver: WebhookReceiver, clock: Clock
) -> None:
    org = await new_org(pool)
    made = await add_endpoint(pool, org, receiver.url)
    receiver.answers = [(500, {})] * 100
    await enqueue(pool, org, 1)
    for _ in range(ATTEMPTS):
        assert await send_due(queue) == 1
        clock.advance(float((await delivery(pool))["wait"] or 0) + 1)
    first = await delivery(pool)
    assert first["status"] == "failed" and first["attempts"] == ATTEMPTS
    assert first["last_error"].startswith(f"gave up after {ATTEMPTS} attempts")
    # ~3 days of failures: the endpoint is failing, not yet disabled.
    state = await endpoint(pool, made.id)
    assert state["status"] == "enabled" and state["failing_since"] is not None
    await enqueue(pool, org, 2)
    clock.advance(3 * 24 * 3600)  # now more than 5 days since its first failure
    assert await send_due(queue) == 1
    state = await endpoint(pool, made.id)
    assert state["status"] == "disabled"
    assert state["disabled_reason"] == "every attempt failed for 5 days"
    assert (await delivery(pool))["status"] == "cancelled"
    # Nothing more goes to a disabled endpoint, and nothing new is written for it.
    assert await enqueue(pool, org, 3) == 0
    clock.advance(30 * 3600)
    assert await send_due(queue) == 0


async def test_a_success_ends_the_endpoints_failing_streak(
    pool: AsyncPool, queue: WebhookQueue, receiver: WebhookReceiver, clock: Clock
) -> None:
    org = await new_org(pool)
    made = await add_endpoint(pool, org, receiver.url)
    receiver.answers = [(500, {})]
    await enqueue(pool, org)
    await send_due(queue)
    assert (await endpoint(pool, made.id))["failing_since"] is not None
    clock.advance(60)
    await send_due(queue)
    assert (await endpoint(pool, made.id))["failing_since"] is None


async def test_410_disables_the_endpoint_and_cancels_what_waits_for_it(
    pool: AsyncPool, queue: WebhookQueue, receiver: WebhookReceiver
) -> None:
    org = await new_org(pool)
    made = await add_endpoint(pool, org, receiver.url)
    receiver.answers = [(410, {})]
    await enqueue(pool, org, 1)
    items = await queue.claim(WORKER, 1, 30.0)
    await enqueue(pool, org, 2)  # written while the first is in flight
    await run_batch(queue, WORKER, items)
    state = await endpoint(pool, made.id)
    assert state["status"] == "disabled"
    assert state["disabled_reason"] == "the endpoint answered 410 Gone"
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT status::text AS status, last_status FROM webhook_deliveries ORDER BY id"
        )
        rows = await cur.fetchall()
    assert [r["status"] for r in rows] == ["failed", "cancelled"]
    assert rows[0]["last_status"] == 410
    assert await send_due(queue) == 0
    assert len(receiver.received) == 1


@pytest.mark.parametrize("status", [429, 502, 504])
async def test_retry_after_is_honoured_and_holds_the_endpoint_back(
    pool: AsyncPool, queue: WebhookQueue, receiver: WebhookReceiver, clock: Clock, status: int
) -> None:
    org = await new_org(pool)
    await add_endpoint(pool, org, receiver.url)
    receiver.answers = [(status, {"retry-after": "3600"})]
    await enqueue(pool, org, 1)
    await send_due(queue)
    row = await delivery(pool)
    assert row["status"] == "pending" and 3600 <= float(row["wait"]) <= 3601
    await enqueue(pool, org, 2)  # another delivery to the throttled endpoint waits too
    clock.advance(600)  # far past the schedule's 5 s, short of the Retry-After
    assert await send_due(queue) == 0
    clock.advance(3001)
    assert await send_due(queue) == 2
    assert len({r.msg_id for r in receiver.received}) == 2 and len(receiver.received) == 3


async def test_an_http_date_retry_after_is_honoured(
    pool: AsyncPool, queue: WebhookQueue, receiver: WebhookReceiver
) -> None:
    import time
    from email.utils import formatdate

    org = await new_org(pool)
    await add_endpoint(pool, org, receiver.url)
    receiver.answers = [(503, {"retry-after": formatdate(time.time() + 7200, usegmt=True)})]
    await enqueue(pool, org)
    await send_due(queue)
    assert 7100 <= float((await delivery(pool))["wait"]) <= 7201


async def test_an_endpoint_that_does_not_answer_in_time_is_a_failed_attempt(
    pool: AsyncPool, clock: Clock, receiver: WebhookReceiver
) -> None:
    quick = WebhookQueue(pool, SendPolicy(timeout=0.5, allow_private=True), clock=clock)
    org = await new_org(pool)
    await add_endpoint(pool, org, receiver.url)
    receiver.delay = 3.0
    await enqueue(pool, org)
    await send_due(quick)
    row = await delivery(pool)
    assert row["status"] == "pending" and row["attempts"] == 1
    assert row["last_status"] is None and row["last_error"] == "no answer within 0.5 s"


# --- addresses --------------------------------------------------------------------------------


async def test_a_private_address_is_refused_before_anything_is_sent(
    pool: AsyncPool, clock: Clock, receiver: WebhookReceiver
) -> None:
    strict = WebhookQueue(pool, SendPolicy(), clock=clock)  # the product's default
    assert not SendPolicy().allow_private
    org = await new_org(pool)
    await add_endpoint(pool, org, receiver.url)
    await enqueue(pool, org)
    await send_due(strict)
    row = await delivery(pool)
    assert row["status"] == "pending" and row["attempts"] == 1
    assert "not a public address" in row["last_error"]
    assert "SHORTLIST_WEBHOOK_ALLOW_PRIVATE" in row["last_error"]
    assert receiver.received == []


async def test_the_sender_connects_to_the_address_it_checked(
    pool: AsyncPool, clock: Clock, receiver: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import socket

    from shortlist import public_address

    port = int(receiver.url.split(":")[2].split("/")[0])
    loop = asyncio.get_running_loop()
    real = loop.getaddrinfo
    answers: list[str] = []

    async def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        # The first answer is checked; a second lookup would point elsewhere (never made).
        if host != "hooks.rebind.test":
            return await real(host, *args, **kwargs)
        answers.append(host)
        address = "127.0.0.1" if len(answers) == 1 else "10.255.255.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(loop, "getaddrinfo", rebinding)
    # 127.0.0.1 stands for a public address here: the check approves only it.
    monkeypatch.setattr(public_address, "is_public", lambda a: a == "127.0.0.1")
    strict = WebhookQueue(pool, SendPolicy(timeout=5.0), clock=clock)
    org = await new_org(pool)
    await add_endpoint(pool, org, f"http://hooks.rebind.test:{port}/hooks")
    await enqueue(pool, org)
    await send_due(strict)
    assert (await delivery(pool))["status"] == "delivered"
    assert answers == ["hooks.rebind.test"]
    assert receiver.received[0].headers["host"] == f"hooks.rebind.test:{port}"


# --- enqueue -------------------------------------------------------------------------------------


async def test_enqueue_writes_in_the_callers_transaction_once_per_subject(pool: AsyncPool) -> None:
    org = await new_org(pool)
    other = await new_org(pool, "Globex")
    await add_endpoint(pool, org, "https://hooks.example/a")
    await add_endpoint(pool, org, "https://hooks.example/b")
    await add_endpoint(pool, org, "https://hooks.example/jobs", events=(store.JOB_PUBLISHED,))
    async with pool.connection() as conn:
        async with conn.transaction():
            assert await store.enqueue(conn, org, store.ALERT_MATCHED, {"x": 1}) == 2
            async with conn.transaction(force_rollback=True):
                assert await store.enqueue(conn, org, store.ALERT_MATCHED, {"x": 2}) == 2
        assert await store.enqueue(conn, org, store.ALERT_MATCHED, {"x": 3}, subject="a:1") == 2
        assert await store.enqueue(conn, org, store.ALERT_MATCHED, {"x": 3}, subject="a:1") == 0
        assert await store.enqueue(conn, other, store.ALERT_MATCHED, {"x": 4}) == 0
        with pytest.raises(ValueError, match="unknown webhook event type"):
            await store.enqueue(conn, org, "job.deleted", {})
        cur = await conn.execute("SELECT count(*) AS n FROM webhook_deliveries")
        row = await cur.fetchone()
        cur = await conn.execute("SELECT count(*) AS n FROM webhook_messages")
        messages = await cur.fetchone()
    assert row is not None and row["n"] == 4
    assert messages is not None and messages["n"] == 2


STATUSES = ("pending", "delivered", "failed", "cancelled")


@pytest.mark.parametrize("origin", STATUSES)
async def test_a_delivery_leaves_pending_once_and_never_comes_back(
    pool: AsyncPool, origin: str
) -> None:
    import psycopg

    org = await new_org(pool)
    await add_endpoint(pool, org, "https://hooks.example/a")
    await enqueue(pool, org)
    async with pool.connection() as conn:
        await conn.execute("UPDATE webhook_deliveries SET status = %s", (origin,))
        await conn.commit()
        for target in STATUSES:
            allowed = origin == "pending" or target == origin
            if allowed:
                await conn.execute("UPDATE webhook_deliveries SET status = %s", (target,))
            else:
                with pytest.raises(psycopg.errors.CheckViolation, match="may not go from"):
                    await conn.execute("UPDATE webhook_deliveries SET status = %s", (target,))
            await conn.rollback()


async def test_the_composition_roots_sender_delivers_what_is_written(
    pool: AsyncPool, receiver: WebhookReceiver, db_url: str
) -> None:
    import asyncio

    from shortlist.bootstrap import Services, webhook_workers
    from shortlist.config import Settings
    from shortlist.embedding.spaces import Spaces
    from shortlist.queue.notify import Notifier
    from tests.fakes import FakeEmbedder
    from tests.helpers import wait_for

    settings = Settings(database_url=db_url, load_sample_data=False, webhook_allow_private=True)
    services = Services(
        settings, db_url, pool, Notifier(db_url), Spaces.of_embedder(pool, FakeEmbedder())
    )
    org = await new_org(pool)
    made = await add_endpoint(pool, org, receiver.url)
    receiver.secrets = [made.secret]
    await enqueue(pool, org)
    [worker] = webhook_workers(services)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        await wait_for(lambda: _delivered(pool), timeout=30, message="delivered")
    finally:
        stop.set()
        await task
        services.mail_parser.close()
    assert [r.verified_by for r in receiver.received] == [[made.secret]]


async def _delivered(pool: AsyncPool) -> bool:
    return (await delivery(pool))["status"] == "delivered"


async def test_an_organisation_sees_only_its_own_endpoints(pool: AsyncPool) -> None:
    from shortlist.accounts.scope import act_for_org

    org = await new_org(pool)
    other = await new_org(pool, "Globex")
    await add_endpoint(pool, org, "https://hooks.example/acme")
    theirs = await add_endpoint(pool, other, "https://hooks.example/globex")
    async with pool.connection() as conn, conn.transaction():
        await act_for_org(conn, org)
        listed = await store.list_endpoints(conn)
        assert [e["url"] for e in listed] == ["https://hooks.example/acme"]
        assert not await store.delete_endpoint(conn, theirs.id)
        assert await store.rotate_secret(conn, theirs.id) is None
        # Nor write events for another organisation: its endpoints are not there to take them.
        assert await store.enqueue(conn, other, store.ALERT_MATCHED, {}) == 0
