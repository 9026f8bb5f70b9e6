"""Runs the benchmarks: one embedded PostgreSQL for the run, each benchmark in turn, then the
ratio table, the absolute table and ``results/latest.json``."""

from __future__ import annotations

import argparse
import importlib
import logging
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console

from bench.common import RESULTS_DIR, Context, Record, embedded_postgres, print_tables
from bench.common import write_results as write_json

BenchFn = Callable[[Context], list[Record]]

# name → module (each has ``run(ctx) -> list[Record]``), in the order ``make bench`` runs them.
BENCHMARKS: dict[str, str] = {
    "queue": "bench.bench_queue",
    "heartbeat": "bench.bench_heartbeat",
    "indexer": "bench.bench_indexer",
    "search": "bench.bench_search",
    "search-http": "bench.bench_search_http",
    "backfill": "bench.bench_backfill",
    "briefs": "bench.bench_briefs",
    "load": "bench.bench_load",
    "relevance": "bench.bench_relevance",
    "models": "bench.bench_models",
    "first-run": "bench.bench_first_run",
    "crawl": "bench.bench_crawl",
    "mail-classifier": "bench.bench_mail_classifier",
    "alerts": "bench.bench_alerts",
}


def benchmark(name: str) -> BenchFn:
    module = importlib.import_module(BENCHMARKS[name])
    fn: BenchFn = module.run
    return fn


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="shortlist benchmarks: this project vs a baseline, same run, same PostgreSQL",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help=f"run only these benchmarks (repeat or comma-separate): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, one repetition: checks that it runs"
    )
    parser.add_argument(
        "--rows", type=int, default=None, help="listings in the search corpus (default 100000)"
    )
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions (default 3)")
    parser.add_argument(
        "--queue-mode",
        choices=("processes", "tasks"),
        default=None,
        help="queue workers as separate processes (default) or asyncio tasks of one process",
    )
    parser.add_argument(
        "--queue-diagnose",
        action="store_true",
        help="queue: also run the primitive on a pool without the idle check (diagnostic)",
    )
    parser.add_argument(
        "--searches",
        type=int,
        default=None,
        help="backfill: searches per pipeline (default 100); load: concurrent searches (50)",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=None,
        help="backfill: isolated deployments running searches side by side (default 4)",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=None,
        help="simulator latency multiplier for backfill and load (default 0.1)",
    )
    parser.add_argument(
        "--relevance-rows",
        type=int,
        default=None,
        help="relevance: job listings taken from the development set (default all ~9.1k)",
    )
    parser.add_argument(
        "--alert-searches",
        type=int,
        default=None,
        help="alerts: saved searches (default 1000000; a tenth as many distinct queries)",
    )
    parser.add_argument(
        "--alert-listings",
        type=int,
        default=None,
        help="alerts: new listings matched (default 10000)",
    )
    parser.add_argument(
        "--alert-keyword-similarity",
        type=float,
        default=None,
        help="alerts: the title similarity splitting the keyword and meaning paths (to explore)",
    )
    parser.add_argument(
        "--keep-db",
        type=Path,
        default=None,
        metavar="DIR",
        help="run PostgreSQL in DIR and keep its data afterwards (default: a deleted scratch dir)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results file (default bench/results/latest.json; smoke.json with --smoke)",
    )
    return parser.parse_args(argv)


def selected(only: Sequence[str]) -> list[str]:
    names = [n.strip() for item in only for n in item.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(unknown)}; known: {list(BENCHMARKS)}")
    return names or list(BENCHMARKS)


def run_benchmarks(
    names: Sequence[str],
    *,
    smoke: bool = False,
    rows: int | None = None,
    reps: int = 3,
    results_dir: Path = RESULTS_DIR,
    options: dict[str, str] | None = None,
    console: Console | None = None,
    keep_db: Path | None = None,
) -> tuple[list[Record], list[str]]:
    """Run ``names`` against one embedded PostgreSQL; returns the records and the names of
    benchmarks that failed (their traceback is printed; the others still run)."""
    console = console or Console()
    records: list[Record] = []
    failed: list[str] = []
    with embedded_postgres(keep_db) as pg:
        ctx = Context(
            pg,
            smoke=smoke,
            reps=reps,
            rows=rows,
            results_dir=results_dir,
            console=console,
            options=options or {},
        )
        for name in names:
            started = time.perf_counter()
            ctx.log(f"[bold]{name}[/bold] …")
            try:
                got = benchmark(name)(ctx)
            except Exception:
                failed.append(name)
                console.print(f"[red]{name} failed[/red]\n{traceback.format_exc()}")
                continue
            records.extend(got)
            ctx.log(f"[bold]{name}[/bold] done in {time.perf_counter() - started:.1f}s")
    return records, failed


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # The product logs every simulated 429/5xx/timeout it absorbs; the tables say what matters.
    logging.getLogger("shortlist").setLevel(logging.ERROR)
    names = selected(args.only)
    console = Console()
    if not console.is_terminal:
        console = Console(width=170)
    options: dict[str, str] = {}
    if args.queue_mode:
        options["queue_mode"] = args.queue_mode
    if args.queue_diagnose:
        options["queue_diagnose"] = "1"
    if args.searches:
        options["searches"] = str(args.searches)
    if args.parallel:
        options["parallel"] = str(args.parallel)
    if args.time_scale:
        options["time_scale"] = str(args.time_scale)
    if args.alert_searches:
        options["alert_searches"] = str(args.alert_searches)
    if args.alert_listings:
        options["alert_listings"] = str(args.alert_listings)
    if args.alert_keyword_similarity:
        options["alert_keyword_similarity"] = str(args.alert_keyword_similarity)
    if args.relevance_rows:
        options["relevance_rows"] = str(args.relevance_rows)
    records, failed = run_benchmarks(
        names,
        smoke=args.smoke,
        rows=args.rows,
        reps=args.reps,
        options=options,
        console=console,
        keep_db=args.keep_db,
    )
    print_tables(console, records)
    out = args.out or RESULTS_DIR / ("smoke.json" if args.smoke else "latest.json")
    write_json(out, records, ran=[n for n in names if n not in failed], order=list(BENCHMARKS))
    console.print(f"results: {out}")
    missed = [r for r in records if r.met is False]
    if failed:
        console.print(f"[red]failed to run: {', '.join(failed)}[/red]")
    if missed:
        console.print(f"[yellow]{len(missed)} target(s) missed[/yellow]")
    return 1 if failed else 0
