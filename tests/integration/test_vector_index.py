"""HNSW builds (shortlist.db.vector_index): settings sized from the table, CONCURRENTLY,
idempotent, an interrupted build's invalid index replaced, superseded indexes dropped."""

from __future__ import annotations

import logging

import psycopg
import pytest

from shortlist.db.vector_index import (
    EF_CONSTRUCTION_LARGE,
    EF_CONSTRUCTION_SMALL,
    MIN_BUILD_MEMORY_MB,
    SEARCH_INDEXES,
    BuildOverrides,
    build_hnsw,
    ensure_vector_indexes,
    graph_bytes,
    index_is_valid,
    plan_build,
)


def test_small_tables_build_with_the_defaults_and_no_workers() -> None:
    plan = plan_build(2_000, 384, memory_cap_mb=4096, cores=8)
    assert plan.ef_construction == EF_CONSTRUCTION_SMALL
    assert plan.memory_mb == MIN_BUILD_MEMORY_MB
    assert plan.workers == 0


def test_a_million_rows_get_the_whole_graph_in_memory_and_the_cheaper_graph() -> None:
    plan = plan_build(1_000_000, 384, memory_cap_mb=8192, cores=2)
    assert plan.memory_mb * 2**20 >= graph_bytes(1_000_000, 384)
    assert plan.ef_construction == EF_CONSTRUCTION_LARGE
    assert plan.workers == 1


def test_build_memory_is_capped_and_overrides_win() -> None:
    assert plan_build(10_000_000, 384, memory_cap_mb=1024, cores=2).memory_mb == 1024
    plan = plan_build(
        1_000_000,
        384,
        BuildOverrides(memory_mb=300, workers=0, ef_construction=200),
        memory_cap_mb=8192,
        cores=4,
    )
    assert (plan.memory_mb, plan.workers, plan.ef_construction) == (300, 0, 200)


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
            report = build_hnsw(conn, index.table, index.column_expr, index.dim, name=index.name)
        assert report is not None
        assert report.plan.m == 16
        assert index_is_valid(conn, index.name) is True
        assert build_hnsw(conn, index.table, index.column_expr, index.dim, name=index.name) is None
    logged = [r.getMessage() for r in caplog.records if "building HNSW index" in r.getMessage()]
    assert len(logged) == 1
    assert "ef_construction=128" in logged[0]


def test_a_build_needs_an_autocommit_connection(db_url: str) -> None:
    index = SEARCH_INDEXES[0]
    with psycopg.connect(db_url) as conn, pytest.raises(ValueError, match="autocommit"):
        build_hnsw(conn, index.table, index.column_expr, index.dim, name="another_idx")
