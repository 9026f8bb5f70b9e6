"""The benchmarks (``make bench``) in smoke mode: every one starts, runs in-process at tiny
sizes against this session's PostgreSQL, and produces well-formed result records. The figures
themselves mean nothing here. One test per benchmark, so they spread over the test workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.common import RECORD_KEYS, Context, Postgres, Record, check_record, write_results
from bench.runner import BENCHMARKS, benchmark, selected
from rich.console import Console

pytestmark = pytest.mark.timeout(240)


def smoke_run(pg_server: Any, name: str, results: Path) -> list[Record]:
    """Run one benchmark in smoke mode; its console output goes to ``results/console.txt``."""
    with (results / "console.txt").open("w") as out:
        ctx = Context(
            Postgres(pg_server, pg_server.pgdata.parent),
            smoke=True,
            results_dir=results,
            console=Console(file=out, width=160),
        )
        return benchmark(name)(ctx)


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_benchmark_runs_in_smoke_mode(pg_server: Any, tmp_path: Path, name: str) -> None:
    records = smoke_run(pg_server, name, tmp_path)
    assert records, f"{name} produced no records"
    for record in records:
        row = record.to_json()
        check_record(row)
        assert row["benchmark"] == name
        assert row["value"] is not None or record.value.median != record.value.median  # NaN
    # The results file the run writes: a list of records, each with the keys of the table.
    path = tmp_path / "latest.json"
    write_results(path, records, ran=[name])
    rows = json.loads(path.read_text())
    assert isinstance(rows, list) and len(rows) == len(records)
    for row in rows:
        assert tuple(row) == RECORD_KEYS
        check_record(row)
    if name == "backfill":
        picture = tmp_path / "backfill.png"
        assert picture.exists() and picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if name == "queue":
        # Targets the table sets are kept, "report" figures have none.
        assert any(row["target"] is not None for row in rows)
        assert any(row["target"] is None and row["met"] is None for row in rows)


def test_only_selects_benchmarks() -> None:
    assert selected([]) == list(BENCHMARKS)
    assert selected(["queue,search", "load"]) == ["queue", "search", "load"]
    with pytest.raises(SystemExit):
        selected(["nope"])
