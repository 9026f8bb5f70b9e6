"""The webhook sender killed (SIGKILL) 20 times while it sends (issue 42's proof): no delivery
is lost, every retry after a kill carries the same ``webhook-id`` and body (the receiver's
idempotency key), each request verifies with the ``standardwebhooks`` package, and nothing
stays claimed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from shortlist.db.types import AsyncPool
from shortlist.webhooks import store
from tests.helpers import wait_for, wait_for_sync
from tests.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 60
# `make test` kills 3 times (a smoke run: each kill restarts a process, seconds of a loaded
# machine); `make chaos` (tests/chaos/__main__.py) the 20.
KILLS = int(os.environ.get("SHORTLIST_TEST_KILLS", "3"))


def start_sender(db_url: str, ready: Path) -> subprocess.Popen[bytes]:
    ready.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.webhook_sender_proc", db_url, str(ready)],
        cwd=ROOT,
        env=env,
    )
    wait_for_sync(lambda: ready.exists() or proc.poll() is not None, timeout=60)
    assert proc.poll() is None, "the sender exited at start"
    return proc


async def test_killed_senders_lose_no_delivery_and_retries_keep_the_webhook_id(
    db_url: str, pool: AsyncPool, tmp_path: Path
) -> None:
    receiver = WebhookReceiver().start()
    receiver.delay = 0.3  # an answer takes a while: kills land while requests are in flight
    ready = tmp_path / "sender.ready"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        async with pool.connection() as conn:
            cur = await conn.execute(
                "INSERT INTO organisations (name, kind) VALUES ('Acme', 'both') RETURNING id"
            )
            row = await cur.fetchone()
            assert row is not None
            org = int(row["id"])
            made = await store.create_endpoint(conn, org, None, receiver.url, store.EVENT_TYPES)
            assert made is not None
            for n in range(MESSAGES):
                await store.enqueue(conn, org, store.ALERT_MATCHED, {"n": n}, subject=f"a:{n}")
            await conn.commit()
        receiver.secrets = [made.secret]

        seen = 0
        cut: list[tuple[int, str]] = []
        """(position in ``received``, webhook-id) of each request a kill cut off unanswered."""
        for _ in range(KILLS):
            proc = start_sender(db_url, ready)
            procs.append(proc)
            # Kill it as soon as a request of its own is in flight (received, not answered).
            wait_for_sync(lambda: len(receiver.received) > seen, timeout=60)  # noqa: B023
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            cut += [(i, r.msg_id) for i, r in enumerate(receiver.received) if not r.answered]
            seen = len(receiver.received)

        final = start_sender(db_url, ready)
        procs.append(final)

        async def all_settled() -> bool:
            async with pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT count(*) FILTER (WHERE status = 'delivered') AS delivered,"
                    " count(*) FILTER (WHERE locked_by IS NOT NULL) AS claimed"
                    " FROM webhook_deliveries"
                )
                row = await cur.fetchone()
            return row is not None and row["delivered"] == MESSAGES and row["claimed"] == 0

        await wait_for(all_settled, timeout=120, message="every delivery delivered")
        final.send_signal(signal.SIGTERM)
        assert final.wait(timeout=60) == 0

        async with pool.connection() as conn:
            cur = await conn.execute("SELECT msg_id, body FROM webhook_messages")
            messages = {r["msg_id"]: r["body"] for r in await cur.fetchall()}
        by_id: dict[str, list[bytes]] = defaultdict(list)
        for got in receiver.received:
            assert got.verified_by == [made.secret]
            by_id[got.msg_id].append(got.body)
        # None lost: every message reached the receiver, under its own id, with its own body.
        assert set(by_id) == set(messages)
        for msg_id, bodies in by_id.items():
            assert {b.decode() for b in bodies} == {messages[msg_id]}
        # Each request a kill cut off was sent again later, with the id (and body) it had.
        assert len(cut) >= KILLS
        ids = [r.msg_id for r in receiver.received]
        for position, msg_id in cut:
            assert msg_id in ids[position + 1 :], msg_id
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        receiver.stop()
