"""``/api/webhooks`` over HTTP (in-process ASGI, real PostgreSQL), ``job.published`` from the
product's indexer, and the sender's queue in /status and /metrics."""

from __future__ import annotations

import random

import httpx
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.db.types import AsyncPool
from shortlist.queue import run_batch
from shortlist.webhooks.schedule import Clock
from shortlist.webhooks.sender import SendPolicy, WebhookQueue
from tests.api_fixtures import EmbedPending, MakeToken
from tests.webhook_receiver import WebhookReceiver

PUBLIC_URL = "https://93.184.215.14/hooks"  # an address literal: nothing to resolve
LISTING = {
    "company_name": "Acme",
    "job_title": "Backend Engineer",
    "city_location": "Porto",
    "description": "Python services on PostgreSQL.",
}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_an_endpoint_is_added_listed_rotated_and_deleted(
    client: httpx.AsyncClient, make_token: MakeToken
) -> None:
    acme = bearer(await make_token("acme", Role.company))
    globex = bearer(await make_token("globex", Role.company))
    made = await client.post(
        "/api/webhooks", json={"url": PUBLIC_URL, "events": ["job.published"]}, headers=acme
    )
    assert made.status_code == 201, made.text
    body = made.json()
    assert set(body) == {"id", "secret"} and body["secret"].startswith("whsec_")
    assert made.headers["location"] == f"/api/webhooks/{body['id']}"

    listed = (await client.get("/api/webhooks", headers=acme)).json()["webhooks"]
    assert [(w["id"], w["url"], w["events"], w["status"]) for w in listed] == [
        (body["id"], PUBLIC_URL, ["job.published"], "enabled")
    ]
    assert listed[0]["deliveries"] == {"pending": 0, "delivered": 0, "failed": 0, "cancelled": 0}
    assert body["secret"] not in (await client.get("/api/webhooks", headers=acme)).text
    # Another organisation sees none of it, and cannot touch it.
    assert (await client.get("/api/webhooks", headers=globex)).json() == {"webhooks": []}
    theirs = f"/api/webhooks/{body['id']}"
    assert (await client.post(f"{theirs}/rotate", headers=globex)).status_code == 404
    assert (await client.delete(theirs, headers=globex)).status_code == 404

    rotated = await client.post(f"{theirs}/rotate", headers=acme)
    assert rotated.status_code == 200
    assert rotated.json()["id"] == body["id"] and rotated.json()["secret"] != body["secret"]
    listed = (await client.get("/api/webhooks", headers=acme)).json()["webhooks"]
    assert listed[0]["rotationEndsAt"] is not None

    assert (await client.delete(theirs, headers=acme)).status_code == 204
    assert (await client.delete(theirs, headers=acme)).status_code == 404
    assert (await client.get("/api/webhooks", headers=acme)).json() == {"webhooks": []}


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"url": "http://127.0.0.1:9/hooks", "events": ["job.published"]}, 400, "url"),
        ({"url": "http://10.0.0.7/hooks", "events": ["alert.matched"]}, 400, "url"),
        ({"url": "http://[::ffff:169.254.169.254]/", "events": ["job.published"]}, 400, "url"),
        ({"url": "http://[/", "events": ["job.published"]}, 400, "url"),
        ({"url": "ftp://example.com/x", "events": ["job.published"]}, 422, None),
        ({"url": PUBLIC_URL, "events": ["job.deleted"]}, 422, None),
        ({"url": PUBLIC_URL, "events": []}, 422, None),
        ({"url": PUBLIC_URL}, 422, None),
        ({"url": PUBLIC_URL, "events": ["job.published"], "secret": "mine"}, 422, None),
    ],
)
async def test_bad_endpoints_are_refused_and_change_nothing(
    client: httpx.AsyncClient,
    make_token: MakeToken,
    pool: AsyncPool,
    body: dict[str, object],
    status: int,
    field: str | None,
) -> None:
    acme = bearer(await make_token("acme", Role.company))
    answer = await client.post("/api/webhooks", json=body, headers=acme)
    assert answer.status_code == status, answer.text
    if field:
        assert answer.json()["error"]["field"] == field
        assert "SHORTLIST_WEBHOOK_ALLOW_PRIVATE" in answer.text or "valid" in answer.text
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM webhook_endpoints")
        row = await cur.fetchone()
    assert row is not None and row["n"] == 0


async def test_an_organisation_has_at_most_20_endpoints(
    client: httpx.AsyncClient, make_token: MakeToken
) -> None:
    acme = bearer(await make_token("acme", Role.company))
    body = {"url": PUBLIC_URL, "events": ["job.published"]}
    for _ in range(20):
        assert (await client.post("/api/webhooks", json=body, headers=acme)).status_code == 201
    assert (await client.post("/api/webhooks", json=body, headers=acme)).status_code == 409


async def test_a_listing_that_becomes_searchable_is_published_once(
    client: httpx.AsyncClient,
    make_token: MakeToken,
    embed_pending: EmbedPending,
    pool: AsyncPool,
    services: Services,
) -> None:
    # The receiver is on loopback, which SHORTLIST_WEBHOOK_ALLOW_PRIVATE=true allows (the
    # product's default refuses it: test_bad_endpoints_are_refused_and_change_nothing).
    services.settings = services.settings.model_copy(update={"webhook_allow_private": True})
    receiver = WebhookReceiver().start()
    try:
        acme = bearer(await make_token("acme", Role.company))
        made = (
            await client.post(
                "/api/webhooks",
                json={"url": receiver.url, "events": ["job.published"]},
                headers=acme,
            )
        ).json()
        receiver.secrets = [made["secret"]]
        # Another organisation's listing, and an alert-only endpoint: neither sends job.published.
        globex = bearer(await make_token("globex", Role.company))
        await client.post(
            "/api/webhooks", json={"url": receiver.url, "events": ["alert.matched"]}, headers=globex
        )
        posted = await client.post("/api/jobs", json=LISTING, headers=acme)
        assert posted.status_code == 201, posted.text
        await client.post("/api/jobs", json={**LISTING, "company_name": "Globex"}, headers=globex)
        # Nothing before it is searchable.
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT count(*) AS n FROM webhook_deliveries")
            before = await cur.fetchone()
        assert before is not None and before["n"] == 0
        assert await embed_pending() == 2

        queue = WebhookQueue(
            pool, SendPolicy(allow_private=True), clock=Clock(), rng=random.Random(1)
        )
        items = await queue.claim("w", 10, 30.0)
        assert len(items) == 1
        await run_batch(queue, "w", items)
        [got] = receiver.received
        assert got.verified_by == [made["secret"]]
        event = got.json()
        assert event["type"] == "job.published"
        listing_id = posted.json()["id"]
        assert event["data"]["id"] == listing_id and event["data"]["title"] == "Backend Engineer"
        assert event["data"]["company"] == "Acme" and event["data"]["slug"]

        # An edit re-embeds it: no second job.published.
        edited = await client.patch(
            f"/api/jobs/{listing_id}",
            json={"description": "Python services on PostgreSQL and Kafka."},
            headers=acme,
        )
        assert edited.status_code == 200, edited.text
        assert await embed_pending() >= 0
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS n, bool_and(embedding_status = 'embedded') AS done"
                " FROM job_listings"
            )
            state = await cur.fetchone()
            cur = await conn.execute("SELECT count(*) AS n FROM webhook_deliveries")
            after = await cur.fetchone()
        assert state is not None and state["done"]
        assert after is not None and after["n"] == 1
    finally:
        receiver.stop()


async def test_status_and_metrics_show_the_deliveries(
    client: httpx.AsyncClient, make_token: MakeToken, pool: AsyncPool
) -> None:
    from shortlist.webhooks import store

    acme = bearer(await make_token("acme", Role.company))
    await client.post(
        "/api/webhooks", json={"url": PUBLIC_URL, "events": ["alert.matched"]}, headers=acme
    )
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT org_id FROM webhook_endpoints")
        row = await cur.fetchone()
        assert row is not None
        for n in range(3):
            await store.enqueue(conn, row["org_id"], store.ALERT_MATCHED, {"n": n})
        await conn.execute(
            "UPDATE webhook_deliveries SET status = 'failed', last_error = 'answered 500'"
            " WHERE id = (SELECT min(id) FROM webhook_deliveries)"
        )
        await conn.execute("UPDATE webhook_endpoints SET failing_since = now()")
        await conn.commit()
    metrics = (await client.get("/metrics")).text
    assert 'shortlist_queue_depth{queue="webhook_deliveries",status="pending"} 2.0' in metrics
    assert 'shortlist_queue_depth{queue="webhook_deliveries",status="failed"} 1.0' in metrics
    page = (await client.get("/status")).text
    assert 'data-webhooks="pending">2<' in page and 'data-webhooks="failed">1<' in page
    assert 'data-webhook-endpoints="failing">1<' in page
