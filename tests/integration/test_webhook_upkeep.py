"""Keeping webhook endpoints: a disabled one taken back (API and CLI), settled deliveries
purged past their retention, secrets kept encrypted. Real PostgreSQL, the sender's queue as the
worker runs it, a loopback receiver verifying signatures with ``standardwebhooks``."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.db.types import AsyncPool
from shortlist.queue import run_batch
from shortlist.webhooks import store
from shortlist.webhooks.schedule import Clock
from shortlist.webhooks.sender import SendPolicy, WebhookQueue
from tests.api_fixtures import MakeToken
from tests.webhook_receiver import WebhookReceiver


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def receiver(services: Services) -> Iterator[WebhookReceiver]:
    # On loopback, which SHORTLIST_WEBHOOK_ALLOW_PRIVATE=true allows.
    services.settings = services.settings.model_copy(update={"webhook_allow_private": True})
    r = WebhookReceiver().start()
    yield r
    r.stop()


async def send_due(pool: AsyncPool, clock: Clock | None = None) -> int:
    queue = WebhookQueue(
        pool, SendPolicy(allow_private=True), clock=clock or Clock(), rng=random.Random(5)
    )
    items = await queue.claim("w", 50, 30.0)
    if items:
        await run_batch(queue, "w", items)
    return len(items)


async def row(pool: AsyncPool, query: str, *params: Any) -> dict[str, Any]:
    async with pool.connection() as conn:
        cur = await conn.execute(query, params)  # type: ignore[arg-type]
        found = await cur.fetchone()
    assert found is not None
    return dict(found)


async def enqueue(pool: AsyncPool, n: int) -> int:
    found = await row(pool, "SELECT org_id FROM webhook_endpoints LIMIT 1")
    async with pool.connection() as conn:
        return await store.enqueue(conn, found["org_id"], store.ALERT_MATCHED, {"n": n})


# --- taking a disabled endpoint back -----------------------------------------------------------


async def test_a_disabled_endpoint_is_enabled_again_with_a_fresh_failure_window(
    client: httpx.AsyncClient,
    make_token: MakeToken,
    pool: AsyncPool,
    receiver: WebhookReceiver,
) -> None:
    acme = bearer(await make_token("acme", Role.company))
    globex = bearer(await make_token("globex", Role.company))
    made = (
        await client.post(
            "/api/webhooks", json={"url": receiver.url, "events": ["alert.matched"]}, headers=acme
        )
    ).json()
    receiver.secrets = [made["secret"]]
    path = f"/api/webhooks/{made['id']}/enable"
    # 410 Gone disables it; what was pending is cancelled.
    receiver.answers = [(410, {})]
    assert await enqueue(pool, 1) == 1
    assert await enqueue(pool, 2) == 1
    await send_due(pool)
    [listed] = (await client.get("/api/webhooks", headers=acme)).json()["webhooks"]
    assert listed["status"] == "disabled" and "410" in listed["disabledReason"]
    assert listed["deliveries"]["cancelled"] + listed["deliveries"]["failed"] == 2
    assert await enqueue(pool, 3) == 0  # a disabled endpoint takes no event

    # Another organisation's endpoint is none of theirs.
    assert (await client.post(path, headers=globex)).status_code == 404
    assert (await client.post("/api/webhooks/999999/enable", headers=acme)).status_code == 404
    enabled = await client.post(path, headers=acme)
    assert enabled.status_code == 200, enabled.text
    body = enabled.json()
    assert body["id"] == made["id"] and body["status"] == "enabled"
    assert body["disabledReason"] is None and body["failingSince"] is None
    assert body["deliveries"]["pending"] == 0  # the cancelled stay cancelled
    assert await enqueue(pool, 4) == 1
    assert await send_due(pool) == 1
    assert receiver.received[-1].json()["data"] == {"n": 4}
    assert receiver.received[-1].verified_by == receiver.secrets

    # An endpoint failing for nearly 5 days, enabled again: its failures start afresh, so the
    # next failure does not disable it.
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE webhook_endpoints SET failing_since = now() - interval '4 days 23 hours'"
        )
    assert (await client.post(path, headers=acme)).json()["failingSince"] is None
    receiver.answers = [(500, {})]
    assert await enqueue(pool, 5) == 1
    clock = Clock()
    clock.advance(2 * 3600)  # two hours on: past the old window's 5 days, not the new one's
    assert await send_due(pool, clock) == 1
    state = await row(
        pool,
        "SELECT status::text AS status, failing_since IS NOT NULL AS failing"
        " FROM webhook_endpoints",
    )
    assert state == {"status": "enabled", "failing": True}


async def test_the_webhooks_commands_list_disable_and_enable(
    pool: AsyncPool, cli_env: None
) -> None:
    from typer.testing import CliRunner

    from shortlist.cli import build_app

    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO organisations (name, kind) VALUES ('Acme', 'both') RETURNING id"
        )
        org = (await cur.fetchone() or {})["id"]
        made = await store.create_endpoint(
            conn, org, None, "https://hooks.example/acme", ["alert.matched"]
        )
    assert made is not None
    assert await enqueue(pool, 1) == 1

    def run(*args: str) -> Any:
        return CliRunner().invoke(build_app(), list(args))

    disabled = await asyncio.to_thread(run, "webhooks", "disable", str(made.id))
    assert disabled.exit_code == 0, disabled.output
    assert "1 pending delivery(ies) cancelled" in disabled.output
    listed = await asyncio.to_thread(run, "webhooks", "list", "--json")
    assert listed.exit_code == 0, listed.output
    [endpoint] = json.loads(listed.output)
    assert endpoint["id"] == made.id and endpoint["organisationId"] == org
    assert endpoint["status"] == "disabled" and endpoint["disabledReason"]
    assert made.secret not in listed.output
    enabled = await asyncio.to_thread(run, "webhooks", "enable", str(made.id))
    assert enabled.exit_code == 0, enabled.output
    state = await row(pool, "SELECT status::text AS status FROM webhook_endpoints")
    assert state == {"status": "enabled"}
    missing = await asyncio.to_thread(run, "webhooks", "enable", "424242")
    assert missing.exit_code == 1 and "no such webhook endpoint" in missing.output


# --- retention ---------------------------------------------------------------------------------


async def test_settled_deliveries_past_retention_are_purged_by_the_periodic_job(
    services: Services, pool: AsyncPool
) -> None:
    from shortlist.bootstrap import webhook_upkeep_job

    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO organisations (name, kind) VALUES ('Acme', 'both') RETURNING id"
        )
        org = (await cur.fetchone() or {})["id"]
        for url in ("https://hooks.example/a", "https://hooks.example/b"):
            assert await store.create_endpoint(conn, org, None, url, ["alert.matched"])
        # Old and settled: with a subject (its row stays, emptied), without (it goes), and one
        # of whose two deliveries is still pending (nothing of it goes but the settled one).
        for subject in ("job:1", None, "job:3"):
            assert (
                await store.enqueue(conn, org, store.ALERT_MATCHED, {"s": subject}, subject=subject)
                == 2
            )
        await conn.execute("UPDATE webhook_deliveries SET created_at = now() - interval '31 days'")
        await conn.execute(
            "UPDATE webhook_deliveries SET status = 'delivered'"
            " WHERE id < (SELECT max(id) FROM webhook_deliveries)"
        )
        # Recent and settled: kept.
        assert await store.enqueue(conn, org, store.ALERT_MATCHED, {"s": "new"}) == 2
        await conn.execute(
            "UPDATE webhook_deliveries SET status = 'failed'"
            " WHERE created_at > now() - interval '1 day'"
        )

    async def state() -> tuple[int, list[tuple[str | None, bool]]]:
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT count(*) AS n FROM webhook_deliveries")
            n = (await cur.fetchone() or {})["n"]
            cur = await conn.execute(
                "SELECT subject, body <> '' AS body FROM webhook_messages ORDER BY id"
            )
            return n, [(r["subject"], r["body"]) for r in await cur.fetchall()]

    assert await store.purge_settled_deliveries(pool, 0) == 0  # 0: kept forever
    assert (await state())[0] == 8
    services.settings = services.settings.model_copy(update={"webhook_retention_days": 30.0})
    job = webhook_upkeep_job(services)
    assert job.name == "webhooks-upkeep" and job.every > 0
    await job.run()
    n, messages = await state()
    assert n == 3  # the pending one and the two recent
    assert messages == [("job:1", False), ("job:3", True), (None, True)]
    # A subject's event is still written once ever.
    async with pool.connection() as conn:
        assert await store.enqueue(conn, org, store.ALERT_MATCHED, {}, subject="job:1") == 0
    assert await store.purge_settled_deliveries(pool, 30.0) == 0


# --- secrets at rest -----------------------------------------------------------------------------


async def test_secrets_are_stored_encrypted_and_still_sign(
    client: httpx.AsyncClient,
    make_token: MakeToken,
    pool: AsyncPool,
    receiver: WebhookReceiver,
) -> None:
    acme = bearer(await make_token("acme", Role.company))
    made = (
        await client.post(
            "/api/webhooks", json={"url": receiver.url, "events": ["alert.matched"]}, headers=acme
        )
    ).json()
    stored = await row(pool, "SELECT secret FROM webhook_endpoints")
    assert stored["secret"].startswith("fernet:")
    assert made["secret"] not in stored["secret"]
    assert made["secret"].removeprefix("whsec_") not in stored["secret"]
    rotated = (await client.post(f"/api/webhooks/{made['id']}/rotate", headers=acme)).json()
    stored = await row(pool, "SELECT secret, previous_secret FROM webhook_endpoints")
    assert all(v.startswith("fernet:") for v in stored.values())
    assert rotated["secret"] not in str(stored) and made["secret"] not in str(stored)
    receiver.secrets = [rotated["secret"], made["secret"]]
    assert await enqueue(pool, 1) == 1
    assert await send_due(pool) == 1
    # Both sign during the rotation, each decrypted for the attempt.
    assert receiver.received[0].verified_by == receiver.secrets


async def test_the_upkeep_encrypts_old_secrets_and_a_new_key_takes_over(
    services: Services, pool: AsyncPool, receiver: WebhookReceiver
) -> None:
    from shortlist.bootstrap import webhook_upkeep_job
    from shortlist.webhooks.secrets import seal_secrets

    clear = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3"
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO organisations (name, kind) VALUES ('Acme', 'both') RETURNING id"
        )
        org = (await cur.fetchone() or {})["id"]
        # Stored before migration 0044: in clear.
        await conn.execute(
            "INSERT INTO webhook_endpoints (org_id, url, events, secret)"
            " VALUES (%s, %s, '{alert.matched}', %s)",
            (org, receiver.url, clear),
        )
    receiver.secrets = [clear]
    assert await enqueue(pool, 1) == 1
    assert await send_due(pool) == 1  # read as it is
    await webhook_upkeep_job(services).run()
    sealed = (await row(pool, "SELECT secret FROM webhook_endpoints"))["secret"]
    assert sealed.startswith("fernet:") and clear not in sealed
    assert await enqueue(pool, 2) == 1
    assert await send_due(pool) == 1
    assert [r.verified_by for r in receiver.received] == [[clear], [clear]]

    # A key in the environment: the upkeep encrypts again with it; a sender without it cannot
    # read the secret, and says so on the delivery instead of sending it unsigned.
    key = "k" * 64
    assert await seal_secrets(pool, key) == 1
    assert await seal_secrets(pool, key) == 0
    assert (await row(pool, "SELECT secret FROM webhook_endpoints"))["secret"] != sealed
    assert await enqueue(pool, 3) == 1
    keyed = WebhookQueue(pool, SendPolicy(allow_private=True, secret_keys=key), clock=Clock())
    items = await keyed.claim("w", 50, 30.0)
    await run_batch(keyed, "w", items)
    assert receiver.received[-1].json()["data"] == {"n": 3}
    assert receiver.received[-1].verified_by == [clear]
    async with pool.connection() as conn:
        await conn.execute("DELETE FROM webhook_secret_key")  # what the database alone holds
        await conn.execute("INSERT INTO webhook_secret_key (key) VALUES (%s)", (b"x" * 32,))
    from shortlist.webhooks import secrets

    secrets._stored_keys.clear()
    assert await enqueue(pool, 4) == 1
    assert await send_due(pool) == 1
    assert len(receiver.received) == 3
    failed = await row(pool, "SELECT last_error FROM webhook_deliveries ORDER BY id DESC LIMIT 1")
    assert "cannot be decrypted" in failed["last_error"]
