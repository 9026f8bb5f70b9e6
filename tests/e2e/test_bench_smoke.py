"""The benchmarks (``make bench``) in smoke mode: every one starts, runs in-process at tiny
sizes, and produces well-formed result records. The figures themselves mean nothing here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.common import RECORD_KEYS, Record, check_record, write_results
from bench.runner import BENCHMARKS, run_benchmarks, selected
from rich.console import Console

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Record], list[str], Path]:
    results = tmp_path_factory.mktemp("bench-results")
    console = Console(file=open(results / "console.txt", "w"), width=160)  # noqa: SIM115
    try:
        records, failed = run_benchmarks(
            list(BENCHMARKS), smoke=True, results_dir=results, console=console
        )
    finally:
        console.file.close()
    return records, failed, results


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_benchmark_runs_in_smoke_mode(
    smoke_run: tuple[list[Record], list[str], Path], name: str
) -> None:
    records, failed, results = smoke_run
    if name in failed:
        console = (results / "console.txt").read_text()
        pytest.fail(f"{name} failed in smoke mode:\n{console[-4000:]}")
    mine = [r for r in records if r.benchmark == name]
    assert mine, f"{name} produced no records"
    for record in mine:
        row = record.to_json()
        check_record(row)
        assert row["benchmark"] == name
        assert row["value"] is not None or record.value.median != record.value.median  # NaN


def test_results_file_is_a_list_of_records(
    smoke_run: tuple[list[Record], list[str], Path],
) -> None:
    records, _failed, results = smoke_run
    path = results / "latest.json"
    write_results(path, records, ran=list(BENCHMARKS))
    rows = json.loads(path.read_text())
    assert isinstance(rows, list) and rows
    for row in rows:
        assert tuple(row) == RECORD_KEYS
        check_record(row)
    # Targets the table sets are kept, "report" figures have none.
    assert any(row["target"] is not None for row in rows)
    assert any(row["target"] is None and row["met"] is None for row in rows)


def test_backfill_draws_its_picture(smoke_run: tuple[list[Record], list[str], Path]) -> None:
    _records, failed, results = smoke_run
    if "backfill" in failed:
        pytest.skip("backfill failed (reported by its own test)")
    picture = results / "backfill.png"
    assert picture.exists() and picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_only_selects_benchmarks() -> None:
    assert selected([]) == list(BENCHMARKS)
    assert selected(["queue,search", "load"]) == ["queue", "search", "load"]
    with pytest.raises(SystemExit):
        selected(["nope"])
