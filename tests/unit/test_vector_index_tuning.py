"""How a vector index is chosen and tuned for a table's size, without a database."""

from __future__ import annotations

from shortlist.db.vector_index import (
    EF_CONSTRUCTION_LARGE,
    EF_CONSTRUCTION_SMALL,
    HNSW,
    IVFFLAT,
    IVFFLAT_MIN_ROWS,
    MIN_BUILD_MEMORY_MB,
    BuildOverrides,
    PhysicalIndex,
    graph_bytes,
    ivfflat_build_bytes,
    ivfflat_lists,
    needs_retune,
    plan_build,
    planned_method,
)


def test_small_tables_build_with_the_defaults_and_no_workers() -> None:
    plan = plan_build(2_000, 384, memory_cap_mb=4096, cores=8)
    assert plan.ef_construction == EF_CONSTRUCTION_SMALL
    assert plan.memory_mb == MIN_BUILD_MEMORY_MB
    assert plan.workers == 0


def test_a_million_rows_asked_as_hnsw_get_the_whole_graph_in_memory_and_the_cheaper_graph() -> None:
    plan = plan_build(1_000_000, 384, BuildOverrides(method=HNSW), memory_cap_mb=8192, cores=2)
    assert plan.method == HNSW
    assert plan.memory_mb * 2**20 >= graph_bytes(1_000_000, 384)
    assert plan.ef_construction == EF_CONSTRUCTION_LARGE
    assert plan.workers == 1


def test_a_million_rows_get_ivfflat_with_a_thousand_lists_and_its_build_in_memory() -> None:
    plan = plan_build(1_000_000, 384, memory_cap_mb=8192, cores=2)
    assert (plan.method, plan.lists, plan.workers) == (IVFFLAT, 1000, 1)
    assert plan.memory_mb * 2**20 >= ivfflat_build_bytes(1_000_000, 1000, 384)
    assert "ivfflat lists=1000" in plan.describe()


def test_the_method_follows_the_size_with_a_margin_before_going_back() -> None:
    assert planned_method(1_000) == HNSW
    assert planned_method(IVFFLAT_MIN_ROWS) == HNSW
    assert planned_method(IVFFLAT_MIN_ROWS + 1) == IVFFLAT
    # An IVFFlat index stays until the table has shrunk below half the line.
    assert planned_method(IVFFLAT_MIN_ROWS * 3 // 4, current=IVFFLAT) == IVFFLAT
    assert planned_method(IVFFLAT_MIN_ROWS * 3 // 4, current=HNSW) == HNSW
    assert planned_method(IVFFLAT_MIN_ROWS // 2 - 1, current=IVFFLAT) == HNSW


def test_lists_follow_pgvectors_advice() -> None:
    assert ivfflat_lists(10) == 1
    assert ivfflat_lists(600_000) == 600
    assert ivfflat_lists(1_000_000) == 1000
    assert ivfflat_lists(4_000_000) == 2000  # sqrt(rows) above a million
    assert ivfflat_lists(10**10) == 32768  # pgvector's maximum


def test_an_index_needs_retuning_for_another_method_or_lists_twice_off() -> None:
    big = plan_build(1_000_000, 384, memory_cap_mb=8192, cores=2)
    assert needs_retune(big, PhysicalIndex("x", HNSW, True, 0))
    assert not needs_retune(big, PhysicalIndex("x", IVFFLAT, True, 1000))
    assert not needs_retune(big, PhysicalIndex("x", IVFFLAT, True, 600))
    assert needs_retune(big, PhysicalIndex("x", IVFFLAT, True, 500))
    assert needs_retune(big, PhysicalIndex("x", IVFFLAT, True, 2000))
    small = plan_build(2_000, 384, memory_cap_mb=8192, cores=2)
    assert not needs_retune(small, PhysicalIndex("x", HNSW, True, 0))


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
