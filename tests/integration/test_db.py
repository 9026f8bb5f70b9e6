from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector import Vector

from shortlist.db import vector_search
from shortlist.db.migrate import (
    PLAIN_INDEXES,
    available_migrations,
    ensure_plain_indexes,
    migrate,
    pending_migrations,
)
from shortlist.db.pool import configure_session, connect, open_async_pool, single_statement
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


@pytest.fixture
def empty_db(pg_server: Any) -> Iterator[str]:
    """A database no migration has touched."""
    name = f"m_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield pg_server.url(name)
    finally:
        with psycopg.connect(pg_server.url(), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def migrate_before(url: str, version: int) -> None:
    """Apply the migrations older than ``version`` as ``migrate`` does, and record them."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for mig in available_migrations():
            if mig.version < version:
                with conn.transaction():
                    conn.execute(mig.sql.encode("utf-8"))
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        (mig.version, mig.name),
                    )


def test_migration_0023_makes_imported_listings_file_listings(empty_db: str) -> None:
    """An imported listing written before 0023 says 'file' after it, still in the bulk lane and
    not queued for a re-embed; a candidate's own 'import' source stays."""
    migrate_before(empty_db, 23)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO job_listings (company_name, job_title, city_location, description,"
            " detail_page_slug, source) VALUES ('Acme', 'Welder', 'Leeds', 'Weld.', 'w', 'import')"
        )
        conn.execute("INSERT INTO candidates (full_name) VALUES ('Ada')")
        [(before,)] = conn.execute("SELECT updated_at FROM job_listings").fetchall()
    assert min(m.version for m in migrate(empty_db)) == 23
    with psycopg.connect(empty_db, autocommit=True) as conn:
        row = conn.execute(
            "SELECT source, claim_lane, updated_at, embedding_status::text FROM job_listings"
        ).fetchone()
        assert row == ("file", 1, before, "pending")
        assert conn.execute("SELECT source FROM candidates").fetchone() == ("import",)
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "INSERT INTO job_listings (company_name, job_title, city_location, description,"
                " detail_page_slug, source) VALUES ('A', 'B', 'C', 'D', 'x', 'import')"
            )


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


async def test_a_new_pooled_connection_has_vectors_settings_and_no_transaction(db_url: str) -> None:
    """What ``configure_session`` does in its two statements: pgvector's adapters (text and
    binary), the session's vector settings, and the connection handed over idle and
    transactional."""
    pool = await open_async_pool(db_url, min_size=1, max_size=1)
    try:
        async with pool.connection() as conn:
            assert not conn.autocommit
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            cur = await conn.execute(
                "SELECT %s::vector AS t, current_setting('ivfflat.probes') AS probes,"
                " current_setting('hnsw.iterative_scan') AS scan",
                (np.array([1.0, 2.5]),),
            )
            row = await cur.fetchone()
            assert row is not None
            assert isinstance(row["t"], Vector) and row["t"].to_list() == [1.0, 2.5]
            assert (row["probes"], row["scan"]) == (
                str(vector_search.IVFFLAT_PROBES),
                vector_search.ITERATIVE_SCAN,
            )
            cur = conn.cursor(binary=True)
            await cur.execute("SELECT %b::vector AS b", (Vector([3.0, 4.0]),))
            row = await cur.fetchone()
            assert row is not None and row["b"].to_list() == [3.0, 4.0]
    finally:
        await pool.close()
    # On a connection of another row factory, in autocommit (the benchmarks'): left so.
    bare = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await configure_session(bare)
        assert bare.autocommit
        row = await (await bare.execute("SELECT '[7,8]'::vector")).fetchone()
        assert row is not None and row[0].to_list() == [7.0, 8.0]
    finally:
        await bare.close()
    with connect(db_url) as sync:
        assert not sync.autocommit
        row = sync.execute("SELECT '[5,6]'::vector AS v").fetchone()
        assert row is not None and row["v"].to_list() == [5.0, 6.0]


def test_a_database_without_pgvector_is_refused_by_name(pg_server: Any) -> None:
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        with pytest.raises(psycopg.ProgrammingError, match="vector type not found"):
            connect(pg_server.url(name))
    finally:
        with psycopg.connect(pg_server.url(), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
