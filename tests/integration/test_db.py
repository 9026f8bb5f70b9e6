from __future__ import annotations

import threading

import psycopg
import pytest

from shortlist.db.migrate import (
    PLAIN_INDEXES,
    available_migrations,
    ensure_plain_indexes,
    migrate,
    pending_migrations,
)
from shortlist.db.pool import connect, single_statement
from shortlist.db.types import AsyncPool
from shortlist.db.vector_index import index_is_valid


def test_migrations_are_idempotent_and_recorded(db_url: str) -> None:
    assert migrate(db_url) == []  # the template already applied everything
    with psycopg.connect(db_url) as conn:
        assert pending_migrations(conn) == []
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    assert [r[0] for r in rows] == [m.version for m in available_migrations()]


def test_concurrent_migrators_apply_each_migration_once(pg_server: object) -> None:

    admin = pg_server.url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS concurrent_mig WITH (FORCE)")
        conn.execute("CREATE DATABASE concurrent_mig")
    url = pg_server.url("concurrent_mig")
    results: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(len(migrate(url)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(results) == [0, 0, 0, len(available_migrations())]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE concurrent_mig WITH (FORCE)")


def test_plain_indexes_are_built_concurrently_and_an_interrupted_one_again(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        assert PLAIN_INDEXES  # job_listings_created_at_idx, at least
        for name in PLAIN_INDEXES:
            assert index_is_valid(conn, name) is True
        assert ensure_plain_indexes(conn) == []  # nothing left to do
        # What a killed CREATE INDEX CONCURRENTLY leaves: an index marked invalid.
        conn.execute(
            "UPDATE pg_index SET indisvalid = false"
            " WHERE indexrelid = 'job_listings_created_at_idx'::regclass"
        )
        assert ensure_plain_indexes(conn) == ["job_listings_created_at_idx"]
        assert index_is_valid(conn, "job_listings_created_at_idx") is True


def test_listing_constraints_live_in_the_schema(db_url: str) -> None:
    with connect(db_url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "INSERT INTO job_listings (company_name, job_title, city_location, description,"
            " salary_min_ks, salary_max_ks, detail_page_slug)"
            " VALUES ('A', 'B', 'C', 'D', 200, 100, 'x')"
        )


async def test_single_statement_connections_go_back_transactional(pool: AsyncPool) -> None:
    """A connection lent for one statement (autocommit) must not stay in autocommit: the next
    borrower's multi-statement work would commit statement by statement."""
    async with single_statement(pool) as conn:
        assert conn.autocommit
        await conn.execute("CREATE TABLE t_single (x int PRIMARY KEY)")
    with pytest.raises(psycopg.errors.UniqueViolation):
        async with single_statement(pool) as conn:
            await conn.execute("INSERT INTO t_single VALUES (1), (1)")
    for _ in range(3):  # the pool holds one connection here: each borrow gets the same one
        async with pool.connection() as conn:
            assert not conn.autocommit
    with pytest.raises(RuntimeError):
        async with pool.connection() as conn:
            await conn.execute("INSERT INTO t_single VALUES (2)")
            raise RuntimeError("roll back")
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM t_single")
        row = await cur.fetchone()
    assert row is not None and row["n"] == 0


def test_every_notified_channel_is_named_in_db_channels() -> None:
    import re

    from shortlist.db import channels

    notified = {
        name
        for m in available_migrations()
        for name in re.findall(r"pg_notify\('([a-z_]+)'", m.sql)
    }
    assert notified == set(channels.ALL)
