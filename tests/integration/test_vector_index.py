"""Vector index builds (shortlist.db.vector_index): HNSW or IVFFlat and their settings sized
from the table, CONCURRENTLY, idempotent, an interrupted build's invalid index replaced,
superseded indexes dropped, an index that no longer fits its table retuned while searches go
on, and searches served by IVFFlat that still fill a filtered page."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from shortlist.db import vector_search
from shortlist.db.migrate import _ADVISORY_LOCK_KEY as MIGRATE_LOCK
from shortlist.db.migrate import retune_indexes
from shortlist.db.pool import SESSION_SETTINGS, open_async_pool, session_values
from shortlist.db.vector_index import (
    HNSW,
    IVFFLAT,
    NEXT_SUFFIX,
    SEARCH_INDEXES,
    BuildOverrides,
    PhysicalIndex,
    build_index,
    ensure_vector_indexes,
    index_is_valid,
    index_report,
    physical_indexes,
    vector_rows,
)
from shortlist.indexer.retune import keep_indexes_fitting
from tests.helpers import wait_for


def test_the_migrations_leave_only_the_half_precision_indexes(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        for index in SEARCH_INDEXES:
            assert index_is_valid(conn, index.name) is True
            assert index.replaces is not None
            assert index_is_valid(conn, index.replaces) is None
        assert ensure_vector_indexes(conn) == []  # nothing left to do


def test_an_interrupted_build_is_replaced_and_the_settings_logged(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    index = SEARCH_INDEXES[0]
    with psycopg.connect(db_url, autocommit=True) as conn:
        # What a killed CREATE INDEX CONCURRENTLY leaves: an index marked invalid.
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)",
            (index.name,),
        )
        assert index_is_valid(conn, index.name) is False
        with caplog.at_level(logging.INFO, logger="shortlist.db.vector_index"):
            report = build_index(conn, index)
        assert report is not None
        assert (report.plan.method, report.plan.m) == (HNSW, 16)
        assert index_is_valid(conn, index.name) is True
        assert build_index(conn, index) is None
    logged = [r.getMessage() for r in caplog.records if "building hnsw index" in r.getMessage()]
    assert len(logged) == 1
    assert "ef_construction=128" in logged[0]


def test_a_build_needs_an_autocommit_connection(db_url: str) -> None:
    index = SEARCH_INDEXES[0]
    with psycopg.connect(db_url) as conn, pytest.raises(ValueError, match="autocommit"):
        build_index(conn, index)


# --- retuning, and searches on IVFFlat ---------------------------------------------------------

LISTINGS = SEARCH_INDEXES[0]
BARE = "SELECT id FROM job_listings ORDER BY embedding::halfvec(384) <=> %s::halfvec LIMIT 10"
IVFFLAT_4 = BuildOverrides(method=IVFFLAT, ivfflat_lists=4)


def add_embedded(conn: psycopg.Connection[Any], vectors: np.ndarray[Any, Any]) -> list[Any]:
    """Embedded listings with these vectors (ids in the same order)."""
    ids = [uuid.uuid4() for _ in vectors]
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO job_listings (id, company_name, job_title, city_location, description,"
            " detail_page_slug, embedding_status, embedding, embedded_at)"
            " VALUES (%s, 'Acme', 'Engineer', 'Berlin', 'Builds things.', %s, 'embedded', %s,"
            " now())",
            [(i, f"slug-{i}", v) for i, v in zip(ids, vectors, strict=True)],
        )
    return ids


def unit_vectors(n: int, seed: int) -> np.ndarray[Any, Any]:
    x = np.random.default_rng(seed).standard_normal((n, 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def exact_top10(vectors: np.ndarray[Any, Any], q: np.ndarray[Any, Any]) -> list[int]:
    return [int(i) for i in np.argsort(-(vectors @ q))[:10]]


def test_an_index_that_no_longer_fits_is_rebuilt_while_searches_and_writes_go_on(
    db_url: str,
) -> None:
    vectors = unit_vectors(600, seed=1)
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        ids = add_embedded(conn, vectors)
        conn.execute("ANALYZE job_listings")
    stop = threading.Event()
    errors: list[BaseException] = []
    done = {"searches": 0, "writes": 0}
    written: list[Any] = []

    def searches() -> None:
        with psycopg.connect(db_url, autocommit=True) as conn:
            register_vector(conn)
            while not stop.is_set() or done["searches"] == 0:
                try:
                    assert len(conn.execute(BARE, (vectors[0],)).fetchall()) == 10
                    done["searches"] += 1
                except BaseException as exc:
                    errors.append(exc)
                    return

    def writes() -> None:
        with psycopg.connect(db_url, autocommit=True) as conn:
            register_vector(conn)
            seed = 100
            while not stop.is_set() or done["writes"] == 0:
                try:
                    written.extend(add_embedded(conn, unit_vectors(1, seed)))
                    seed += 1
                    done["writes"] += 1
                except BaseException as exc:
                    errors.append(exc)
                    return

    threads = [threading.Thread(target=searches), threading.Thread(target=writes)]
    for t in threads:
        t.start()
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            built = ensure_vector_indexes(conn, [LISTINGS], IVFFLAT_4, retune=True)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert errors == []
    assert done["searches"] > 0 and done["writes"] > 0
    assert [(b.name, b.plan.method, b.plan.lists) for b in built] == [
        (LISTINGS.name_for(IVFFLAT), IVFFLAT, 4)
    ]
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        assert physical_indexes(conn, LISTINGS) == {
            LISTINGS.name_for(IVFFLAT): PhysicalIndex(LISTINGS.name_for(IVFFLAT), IVFFLAT, True, 4)
        }
        # The search statement now reads the IVFFlat lists, with the product's probes (all 4
        # lists here, so the answer is exact).
        conn.execute(SESSION_SETTINGS, session_values())
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + BARE, (vectors[7],)))
        assert LISTINGS.name_for(IVFFLAT) in plan, plan
        got = [r[0] for r in conn.execute(BARE, (vectors[7],))]
        assert got[:1] == [ids[7]]
        # A row written while the index was built is in it too.
        first_written = [r[0] for r in conn.execute(BARE, (unit_vectors(1, 100)[0],))]
        assert first_written[:1] == written[:1]
        assert ensure_vector_indexes(conn, [LISTINGS], IVFFLAT_4, retune=True) == []


def test_without_retune_a_misfit_is_only_logged(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        with caplog.at_level(logging.WARNING, logger="shortlist.db.vector_index"):
            assert ensure_vector_indexes(conn, [LISTINGS], IVFFLAT_4) == []
        assert [p.method for p in physical_indexes(conn, LISTINGS).values()] == [HNSW]
    assert any("shortlist migrate --retune" in r.getMessage() for r in caplog.records)


def test_ivfflat_lists_are_rebuilt_when_the_table_outgrows_them(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        add_embedded(conn, unit_vectors(400, seed=2))
        conn.execute("ANALYZE job_listings")
        ensure_vector_indexes(conn, [LISTINGS], IVFFLAT_4, retune=True)
        more = BuildOverrides(method=IVFFLAT, ivfflat_lists=16)
        [report] = ensure_vector_indexes(conn, [LISTINGS], more, retune=True)
        name = LISTINGS.name_for(IVFFLAT)
        # Built as name_next beside the old one, which was dropped; then renamed.
        assert report.name == name
        assert physical_indexes(conn, LISTINGS) == {name: PhysicalIndex(name, IVFFLAT, True, 16)}
        # 10 lists: within a factor of 2 of 16, nothing to do.
        near = BuildOverrides(method=IVFFLAT, ivfflat_lists=10)
        assert ensure_vector_indexes(conn, [LISTINGS], near, retune=True) == []


def test_an_interrupted_rebuild_is_finished_by_the_next_migrate(db_url: str) -> None:
    name = LISTINGS.name_for(IVFFLAT)
    with psycopg.connect(db_url, autocommit=True) as conn:
        # What a process killed between the new index's build and the old one's drop leaves.
        conn.execute(
            f"CREATE INDEX {name}{NEXT_SUFFIX} ON job_listings"
            " USING ivfflat ((embedding::halfvec(384)) halfvec_cosine_ops) WITH (lists = 2)"
        )
        ensure_vector_indexes(conn, [LISTINGS], IVFFLAT_4)
        assert list(physical_indexes(conn, LISTINGS)) == [name]


async def test_status_reports_each_index_and_whether_it_fits(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        add_embedded(conn, unit_vectors(7, seed=5))
        ensure_vector_indexes(conn, [LISTINGS], IVFFLAT_4, retune=True)
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        report = {r["table"]: r for r in await index_report(conn)}
        pinned = {r["table"]: r for r in await index_report(conn, IVFFLAT_4)}
    # Before the table's first ANALYZE there is no estimate: the rows with a vector are counted.
    assert report["job_listings"]["rows"] == 7
    # Under the operator's overrides (SHORTLIST_VECTOR_INDEX=ivfflat) it fits.
    assert pinned["job_listings"]["fits"] is True
    assert report["candidates"]["method"] == HNSW
    assert report["candidates"]["fits"] is True
    listings = report["job_listings"]
    assert (listings["method"], listings["lists"], listings["valid"]) == (IVFFLAT, 4, True)
    # A near-empty table is planned as HNSW: this IVFFlat index does not fit it.
    assert listings["fits"] is False
    assert "hnsw" in listings["planned"]


def test_a_build_is_sized_from_the_rows_that_have_a_vector(db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        add_embedded(conn, unit_vectors(300, seed=3))
        conn.execute(
            "INSERT INTO job_listings (company_name, job_title, city_location, description,"
            " detail_page_slug) SELECT 'Acme', 'Pending', 'Berlin', 'Not embedded yet.',"
            " 'pending-' || i FROM generate_series(1, 200) AS i"
        )
        assert vector_rows(conn, LISTINGS) == 300  # no statistics yet: counted
        conn.execute("ANALYZE job_listings")
        assert vector_rows(conn, LISTINGS) == 300  # the planner's estimate: 500 × (1 − 0.4)
        [report] = ensure_vector_indexes(
            conn, [LISTINGS], BuildOverrides(method=IVFFLAT), retune=True
        )
        assert report.plan.rows == 300


async def test_an_indexer_rebuilds_a_misfit_in_the_background_one_process_at_a_time(
    db_url: str,
) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        add_embedded(conn, unit_vectors(300, seed=4))
        conn.execute("ANALYZE job_listings")
    # While a migrator holds the lock, a retune round is skipped, never waits.
    with psycopg.connect(db_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
        assert retune_indexes(db_url, IVFFLAT_4) is None
    stop = asyncio.Event()
    keeper = asyncio.create_task(keep_indexes_fitting(db_url, IVFFLAT_4, 0.05, stop))

    async def retuned() -> bool:
        with psycopg.connect(db_url, autocommit=True) as conn:
            methods = [p.method for p in physical_indexes(conn, LISTINGS).values()]
        return methods == [IVFFLAT]

    try:
        await wait_for(retuned, timeout=30, message="the index retuned to IVFFlat")
    finally:
        stop.set()
        await keeper
    # Once they fit, a round has nothing to do.
    assert retune_indexes(db_url, IVFFLAT_4) == []


async def test_the_hnsw_candidate_list_follows_the_largest_hnsw_table(db_url: str) -> None:
    assert vector_search.ef_search_for(0) == vector_search.SMALL_GRAPH_EF_SEARCH
    assert vector_search.ef_search_for(100_000) == vector_search.SMALL_GRAPH_EF_SEARCH
    assert vector_search.ef_search_for(100_001) == vector_search.EF_SEARCH
    assert vector_search.ef_search_for(10, large=100) == 100  # never longer than asked for

    async def session_ef() -> str:
        pool = await open_async_pool(db_url, min_size=1, max_size=1)
        try:
            async with pool.connection() as conn:
                cur = await conn.execute("SELECT current_setting('hnsw.ef_search') AS ef")
                row = await cur.fetchone()
        finally:
            await pool.close()
        assert row is not None
        return str(row["ef"])

    # A fresh database: every HNSW-indexed table is empty.
    assert await session_ef() == str(vector_search.SMALL_GRAPH_EF_SEARCH)
    # The planner's statistics say the listings grew past the small graphs (as ANALYZE would
    # write them): new connections scan with the longest list.
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("UPDATE pg_class SET reltuples = 250000 WHERE oid = 'job_listings'::regclass")
    assert await session_ef() == str(vector_search.EF_SEARCH)
