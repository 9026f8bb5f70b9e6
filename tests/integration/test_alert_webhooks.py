"""A saved job search sent to an organisation's webhooks (issue 42): saved over HTTP with
``"webhook": true`` by a member who manages webhooks, matched by the product's indexer and match
queue, its ``alert.matched`` delivered by the sender to a loopback receiver that verifies the
signature with the ``standardwebhooks`` package."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shortlist.alerts.matcher import MatchQueue
from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.db.types import AsyncPool
from shortlist.queue import QueueWorker, WorkerConfig, run_batch
from shortlist.webhooks.schedule import Clock
from shortlist.webhooks.sender import SendPolicy, WebhookQueue
from tests.api_fixtures import EmbedPending, MakeToken
from tests.webhook_receiver import WebhookReceiver

QUERY = "python developer"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def receiver(services: Services) -> Iterator[WebhookReceiver]:
    # On loopback, which SHORTLIST_WEBHOOK_ALLOW_PRIVATE=true allows.
    services.settings = services.settings.model_copy(update={"webhook_allow_private": True})
    r = WebhookReceiver().start()
    yield r
    r.stop()


async def match_all(services: Services) -> None:
    queue = MatchQueue(services.pool, services.spaces, min_score=0.8)
    config = WorkerConfig(batch_size=32, poll_interval=0.05, backoff_base=0.05, grace=5.0)
    await QueueWorker(queue, config).run(asyncio.Event(), drain=True)


async def send_due(pool: AsyncPool) -> int:
    queue = WebhookQueue(pool, SendPolicy(allow_private=True), clock=Clock(), rng=random.Random(3))
    items = await queue.claim("w", 50, 30.0)
    if items:
        await run_batch(queue, "w", items)
    return len(items)


async def add_listing(pool: AsyncPool, title: str, description: str, **extra: Any) -> uuid.UUID:
    slug = f"{title.lower().replace(' ', '-')}-{uuid.uuid4().hex[:8]}"
    cols = ["job_title", "company_name", "city_location", "description", "detail_page_slug"]
    vals: list[Any] = [title, "Acme", "Berlin", description, slug, *extra.values()]
    cols += list(extra)
    async with pool.connection() as conn:
        cur = await conn.execute(
            f"INSERT INTO job_listings ({', '.join(cols)}) VALUES"
            f" ({', '.join(['%s'] * len(vals))}) RETURNING id",
            vals,
        )
        row = await cur.fetchone()
    assert row is not None
    return uuid.UUID(str(row["id"]))


async def test_a_saved_job_search_sent_to_webhooks_delivers_each_new_match_once_signed(
    client: httpx.AsyncClient,
    services: Services,
    make_token: MakeToken,
    embed_pending: EmbedPending,
    receiver: WebhookReceiver,
) -> None:
    agency = bearer(await make_token("agency", Role.recruiter))
    made = await client.post(
        "/api/webhooks", json={"url": receiver.url, "events": ["alert.matched"]}, headers=agency
    )
    assert made.status_code == 201, made.text
    receiver.secrets = [made.json()["secret"]]
    own_address = "team@agency.example"
    saved = await client.post(
        "/api/alerts",
        json={"query": QUERY, "email": own_address, "frequency": "daily", "webhook": True},
        headers=agency,
    )
    assert saved.status_code == 202, saved.text
    # The organisation's at once (its member saved it); the address's e-mail waits for its own
    # confirmation (a key's service account has no address of its own).
    assert saved.json()["status"] == "active"
    # A job seeker's own search of the same words reaches no organisation's webhooks. Both
    # confirmed (their links followed).
    seeker = await client.post(
        "/api/alerts", json={"query": QUERY, "email": "ada@example.com", "frequency": "instant"}
    )
    assert seeker.status_code == 202
    async with services.pool.connection() as conn:
        await conn.execute(
            "UPDATE saved_searches SET status = 'active', consent_at = now()"
            " WHERE status = 'pending'"
        )

    listing = await add_listing(services.pool, "Python Developer", "python developer, Django")
    await add_listing(services.pool, "Pastry Chef", "croissants and bread")
    await embed_pending()
    await match_all(services)
    assert await send_due(services.pool) == 1
    [got] = receiver.received
    assert got.verified_by == receiver.secrets
    event = got.json()
    assert event["type"] == "alert.matched"
    data = event["data"]
    assert data["alertId"] == saved.json()["id"] and data["kind"] == "job"
    assert data["item"]["id"] == str(listing) and data["item"]["title"] == "Python Developer"
    assert 0.8 <= data["item"]["score"] <= 1.0
    assert own_address not in got.body.decode() and "ada@" not in got.body.decode()

    # A repost of the same job (the original closed) matches nobody again: nothing more sent.
    async with services.pool.connection() as conn:
        await conn.execute("UPDATE job_listings SET status = 'closed', closed_at = now()")
    await add_listing(services.pool, "Python  developer", "python developer (repost)")
    await embed_pending()
    await match_all(services)
    assert await send_due(services.pool) == 0
    assert len(receiver.received) == 1


async def test_only_a_member_who_manages_webhooks_sends_a_search_to_them(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    body = {"query": QUERY, "email": "ada@example.com", "frequency": "daily", "webhook": True}
    anonymous = await client.post("/api/alerts", json=body)
    assert anonymous.status_code == 401, anonymous.text
    assert anonymous.json()["error"]["code"] == "unauthorized"
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM saved_searches")
        row = await cur.fetchone()
    assert row is not None and row["n"] == 0


async def webhook_search(
    client: httpx.AsyncClient, receiver: WebhookReceiver, headers: dict[str, str], email: str
) -> str:
    made = await client.post(
        "/api/webhooks", json={"url": receiver.url, "events": ["alert.matched"]}, headers=headers
    )
    assert made.status_code == 201, made.text
    receiver.secrets = [made.json()["secret"]]
    saved = await client.post(
        "/api/alerts",
        json={"query": QUERY, "email": email, "frequency": "instant", "webhook": True},
        headers=headers,
    )
    assert saved.status_code == 202, saved.text
    return str(saved.json()["id"])


async def status_of(pool: AsyncPool, query: str, *params: Any) -> list[Any]:
    async with pool.connection() as conn:
        cur = await conn.execute(query, params)  # type: ignore[arg-type]
        return [next(iter(r.values())) for r in await cur.fetchall()]


async def test_a_webhook_search_saved_with_a_key_delivers_at_once_and_mails_once_confirmed(
    client: httpx.AsyncClient,
    services: Services,
    make_token: MakeToken,
    embed_pending: EmbedPending,
    receiver: WebhookReceiver,
) -> None:
    from shortlist import privacy
    from shortlist.alerts import store, tokens

    agency = bearer(await make_token("agency", Role.recruiter))
    search = await webhook_search(client, receiver, agency, "team@agency.example")
    listed = await client.get("/api/alerts", headers=agency)
    assert listed.status_code == 200, listed.text
    [alert] = listed.json()["alerts"]
    assert alert["id"] == search and alert["status"] == "active" and alert["webhook"]
    assert alert["emailConfirmed"] is False

    await add_listing(services.pool, "Python Developer", "python developer, Django")
    await embed_pending()
    await match_all(services)
    # Delivered without anyone following a link; no digest before the address confirms.
    assert await send_due(services.pool) == 1
    assert len(receiver.received) == 1
    assert await status_of(services.pool, "SELECT due_at FROM saved_searches") == [None]

    async with services.pool.connection() as conn:
        key = await privacy.privacy_key(conn, services.settings.privacy_key)
    token = tokens.make(key, tokens.CONFIRM, uuid.UUID(search))
    assert await store.confirm(services.pool, token, valid_for=3600.0) == "active"
    rows = await status_of(
        services.pool, "SELECT email_confirmed AND due_at IS NOT NULL FROM saved_searches"
    )
    assert rows == [True]


async def test_an_address_that_never_confirms_gets_no_mail_queued_for_ever(
    client: httpx.AsyncClient,
    services: Services,
    make_token: MakeToken,
    embed_pending: EmbedPending,
    receiver: WebhookReceiver,
) -> None:
    """A search active for webhooks whose address let its link expire: the purge cancels its
    queued e-mail matches (never to be mailed), the webhook deliveries are untouched, and a
    search still within its link's time keeps its matches for the digest it may yet get."""
    from shortlist import privacy
    from shortlist.alerts import store, tokens

    agency = bearer(await make_token("agency", Role.recruiter))
    search = await webhook_search(client, receiver, agency, "team@agency.example")
    await add_listing(services.pool, "Python Developer", "python developer, Django")
    await embed_pending()
    await match_all(services)
    assert await send_due(services.pool) == 1
    queued = "SELECT status FROM alert_matches ORDER BY id"
    assert await status_of(services.pool, queued) == ["queued"]

    await store.purge_unconfirmed(services.pool, valid_for=3600.0)  # the link still valid
    assert await status_of(services.pool, queued) == ["queued"]
    await store.purge_unconfirmed(services.pool, valid_for=0.0)  # the link has expired
    assert await status_of(services.pool, queued) == ["cancelled"]
    assert await status_of(services.pool, "SELECT status FROM saved_searches") == ["active"]
    assert await status_of(services.pool, "SELECT status FROM webhook_deliveries") == ["delivered"]
    # Following the expired link now confirms nothing, so nothing is mailed later either.
    async with services.pool.connection() as conn:
        key = await privacy.privacy_key(conn, services.settings.privacy_key)
    token = tokens.make(key, tokens.CONFIRM, uuid.UUID(search))
    with pytest.raises(store.NotFound):
        await store.confirm(services.pool, token, valid_for=0.0)


async def test_ending_a_search_cancels_its_pending_webhook_deliveries(
    client: httpx.AsyncClient,
    services: Services,
    make_token: MakeToken,
    embed_pending: EmbedPending,
    receiver: WebhookReceiver,
) -> None:
    from shortlist import privacy
    from shortlist.alerts import tokens

    agency = bearer(await make_token("agency", Role.recruiter))
    clicked = await webhook_search(client, receiver, agency, "team@agency.example")
    deleted = await client.post(
        "/api/alerts",
        json={
            "query": QUERY,
            "email": "other@agency.example",
            "frequency": "instant",
            "webhook": True,
        },
        headers=agency,
    )
    assert deleted.status_code == 202, deleted.text
    await add_listing(services.pool, "Python Developer", "python developer, Django")
    await embed_pending()
    await match_all(services)
    pending = (
        "SELECT count(*) FROM webhook_deliveries AS d"
        " JOIN webhook_messages AS m ON m.id = d.message_id"
        " WHERE d.status = 'pending' AND m.saved_search_id = %s"
    )
    assert await status_of(services.pool, pending, clicked) == [1]
    assert await status_of(services.pool, pending, deleted.json()["id"]) == [1]

    # One-click unsubscribe (the e-mail's link) and the account's DELETE: nothing goes after.
    async with services.pool.connection() as conn:
        key = await privacy.privacy_key(conn, services.settings.privacy_key)
    token = tokens.make(key, tokens.UNSUBSCRIBE, uuid.UUID(clicked))
    unsubscribed = await client.post(f"/api/alerts/unsubscribe?token={token}")
    assert unsubscribed.status_code == 200, unsubscribed.text
    gone = await client.delete(f"/api/alerts/{deleted.json()['id']}", headers=agency)
    assert gone.status_code == 204, gone.text
    assert await status_of(services.pool, pending, clicked) == [0]
    assert await status_of(services.pool, pending, deleted.json()["id"]) == [0]
    cancelled = await status_of(
        services.pool, "SELECT status::text FROM webhook_deliveries ORDER BY id"
    )
    assert cancelled == ["cancelled", "cancelled"]
    assert await send_due(services.pool) == 0
    assert receiver.received == []


async def test_an_account_lists_and_ends_the_searches_it_saved_for_another_address(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken
) -> None:
    recruiter = bearer(await make_token("rita", Role.recruiter))
    other = bearer(await make_token("bo", Role.recruiter))
    saved = await client.post(
        "/api/alerts",
        json={"query": QUERY, "email": "candidate@example.com", "frequency": "weekly"},
        headers=recruiter,
    )
    assert saved.status_code == 202 and saved.json()["status"] == "pending", saved.text
    listed = await client.get("/api/alerts", headers=recruiter)
    assert [a["id"] for a in listed.json()["alerts"]] == [saved.json()["id"]]
    assert listed.json()["alerts"][0]["email"] == "candidate@example.com"
    # Nobody else's account lists or ends it.
    assert (await client.get("/api/alerts", headers=other)).json()["alerts"] == []
    refused = await client.delete(f"/api/alerts/{saved.json()['id']}", headers=other)
    assert refused.status_code == 404
    ended = await client.delete(f"/api/alerts/{saved.json()['id']}", headers=recruiter)
    assert ended.status_code == 204
    assert (await client.get("/api/alerts", headers=recruiter)).json()["alerts"] == []
