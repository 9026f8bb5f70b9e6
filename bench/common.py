"""What every benchmark shares: the run context (one embedded PostgreSQL for the whole run),
the result record, repetition statistics, profiles, and the two tables.

A benchmark is a function ``run(ctx) -> list[Record]``. Each figure it reports is one
:class:`Record`: this project's value, the baseline's value measured in the same run on the
same PostgreSQL, their ratio, and the target the ratio is held to (``None``: report only).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import psycopg
from rich.console import Console
from rich.table import Table

from shortlist.config import Settings
from shortlist.db.embedded import EmbeddedServer
from shortlist.db.migrate import migrate
from shortlist.listings import rates

T = TypeVar("T")
Better = Literal["higher", "lower"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"

# No network but loopback, and never a model download.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# --- statistics ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """Median of repeated measurements, with their min and max."""

    median: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stat:
        if not samples:
            raise ValueError("no samples")
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))

    @classmethod
    def one(cls, value: float) -> Stat:
        return cls(value, value, value, 1)


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear interpolation between closest ranks."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# --- records -------------------------------------------------------------------------------------


@dataclass
class Record:
    """One figure. ``ratio = value / baseline``; ``target`` bounds the ratio from below when
    ``better == "higher"`` and from above when ``better == "lower"``."""

    benchmark: str
    metric: str
    value: Stat
    baseline: Stat | None
    target: float | None = None
    better: Better = "higher"
    unit: str = ""
    baseline_name: str = ""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline.median == 0:
            return None
        return self.value.median / self.baseline.median

    @property
    def met(self) -> bool | None:
        ratio = self.ratio
        if self.target is None or ratio is None:
            return None
        return ratio >= self.target if self.better == "higher" else ratio <= self.target

    def to_json(self) -> dict[str, Any]:
        ratio = self.ratio
        return {
            "benchmark": self.benchmark,
            "metric": self.metric,
            "value": _finite(self.value.median),
            "baseline": None if self.baseline is None else _finite(self.baseline.median),
            "ratio": None if ratio is None else _finite(ratio),
            "target": self.target,
            "met": self.met,
        }


def _finite(x: float) -> float | None:
    return round(x, 6) if math.isfinite(x) else None


def report(
    benchmark: str, metric: str, value: Stat | float, *, unit: str = "", note: str = ""
) -> Record:
    """A figure without a baseline or target (the table says "report")."""
    v = value if isinstance(value, Stat) else Stat.one(value)
    return Record(benchmark, metric, v, None, unit=unit, note=note)


# --- the run context -----------------------------------------------------------------------------


@dataclass
class Postgres:
    """One embedded PostgreSQL for the whole run; each benchmark gets its own database."""

    server: Any
    root: Path

    def admin_url(self) -> str:
        return self.server.url()

    def create_database(self, name: str, *, migrated: bool = True) -> str:
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        url = self.server.url(name)
        if migrated:
            migrate(url)
            rates.seed_bundled(url)
        return url

    def socket_dir(self) -> str:
        return str(self.root / "pgdata")


@contextlib.contextmanager
def embedded_postgres(keep: Path | None = None) -> Iterator[Postgres]:
    """A scratch server, deleted afterwards; or, with ``keep``, one whose data stays in that
    directory (stopped) after the run, so that its databases can be measured again
    (``python -m bench.search_settings`` on a kept million-listing corpus)."""
    root = keep or Path(tempfile.mkdtemp(prefix="shortlist-bench-pg-"))
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    # As the product's embedded server is: SHORTLIST_EMBEDDED_SHARED_BUFFERS, if set.
    server = EmbeddedServer(
        root,
        delete_on_close=keep is None,
        shared_buffers=Settings().embedded_shared_buffers,
    )
    try:
        yield Postgres(server, root)
    finally:
        server.close()
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


@dataclass
class Context:
    pg: Postgres
    smoke: bool = False
    reps: int = 3
    rows: int | None = None
    """``--rows``: corpus size of the search benchmarks (default 100k, smoke 2k)."""
    results_dir: Path = RESULTS_DIR
    console: Console = field(default_factory=Console)
    cache: dict[str, Any] = field(default_factory=dict)
    """Fixtures shared between benchmarks of one run (e.g. the 100k-listing corpus)."""
    options: dict[str, str] = field(default_factory=dict)

    def log(self, message: str) -> None:
        self.console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {message}")

    @property
    def profiles_enabled(self) -> bool:
        """Profiles of missed targets are taken on full runs only (smoke sizes say nothing)."""
        return not self.smoke

    def repetitions(self) -> int:
        return 1 if self.smoke else self.reps

    def size(self, full: int, smoke: int) -> int:
        return smoke if self.smoke else full


PROFILE_INTERVAL = 0.002
MAX_PROFILE_HTML = 8_000_000


# --- profiles ------------------------------------------------------------------------------------


def profile_sync(ctx: Context, name: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` under pyinstrument; save ``profile-NAME.html`` and ``.txt`` in results."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=PROFILE_INTERVAL)
    profiler.start()
    try:
        return fn()
    finally:
        profiler.stop()
        _save_profile(ctx, name, profiler)


async def profile_async(ctx: Context, name: str, fn: Callable[[], Awaitable[T]]) -> T:
    """As :func:`profile_sync`, for a coroutine (wall time across awaits is attributed)."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=PROFILE_INTERVAL, async_mode="enabled")
    profiler.start()
    try:
        return await fn()
    finally:
        profiler.stop()
        _save_profile(ctx, name, profiler)


def _save_profile(ctx: Context, name: str, profiler: Any) -> None:
    ctx.results_dir.mkdir(parents=True, exist_ok=True)
    html = ctx.results_dir / f"profile-{name}.html"
    txt = ctx.results_dir / f"profile-{name}.txt"
    txt.write_text(profiler.output_text(unicode=True, color=False, show_all=False), "utf-8")
    page = profiler.output_html()
    if len(page) <= MAX_PROFILE_HTML:
        html.write_text(page, encoding="utf-8")
    else:
        # A long async session makes a page of tens of MB; the text tree says the same.
        html.unlink(missing_ok=True)
    ctx.log(f"profile saved: {txt}")


# --- output --------------------------------------------------------------------------------------


def _fmt(x: float | None, unit: str = "") -> str:
    if x is None or not math.isfinite(x):
        return "-"
    mag = abs(x)
    if unit == "%":
        text = f"{x * 100:.2f}"
    elif mag >= 1000:
        text = f"{x:,.0f}"
    elif mag >= 100:
        text = f"{x:.1f}"
    elif mag >= 1:
        text = f"{x:.2f}"
    else:
        text = f"{x:.4f}"
    return f"{text} {unit}".rstrip() if unit and unit != "%" else (text + ("%" if unit else ""))


def _fmt_stat(s: Stat | None, unit: str) -> str:
    if s is None:
        return "-"
    if s.n <= 1 or s.min == s.max:
        return _fmt(s.median, unit)
    return f"{_fmt(s.median, unit)}  [{_fmt(s.min)} – {_fmt(s.max)}]"


def ratio_table(records: Sequence[Record]) -> Table:
    table = Table(title="Ratios (this project ÷ baseline)", title_justify="left")
    table.add_column("benchmark")
    table.add_column("metric")
    table.add_column("ratio", justify="right")
    table.add_column("target", justify="right")
    table.add_column("met", justify="center")
    for r in records:
        ratio = r.ratio
        if r.target is None:
            target = "report"
        else:
            target = f"{'≥' if r.better == 'higher' else '≤'} {r.target:g}"
        met = {True: "[green]yes[/green]", False: "[red]NO[/red]", None: ""}[r.met]
        table.add_row(r.benchmark, r.metric, "-" if ratio is None else f"{ratio:.3f}", target, met)
    return table


def absolute_table(records: Sequence[Record]) -> Table:
    table = Table(
        title="Absolute numbers (median \\[min – max] of repetitions)", title_justify="left"
    )
    table.add_column("benchmark")
    table.add_column("metric")
    table.add_column("this project", justify="right")
    table.add_column("baseline", justify="right")
    table.add_column("reps", justify="right")
    table.add_column("note")
    for r in records:
        baseline = _fmt_stat(r.baseline, r.unit)
        if r.baseline_name and r.baseline is not None:
            baseline = f"{baseline} ({r.baseline_name})"
        table.add_row(
            r.benchmark, r.metric, _fmt_stat(r.value, r.unit), baseline, str(r.value.n), r.note
        )
    return table


def print_tables(console: Console, records: Sequence[Record]) -> None:
    console.print(ratio_table(records))
    console.print(absolute_table(records))


def write_results(
    path: Path, records: Sequence[Record], *, ran: Sequence[str], order: Sequence[str] = ()
) -> None:
    """Write ``records`` as JSON; records of benchmarks that did not run this time (``--only``)
    are kept from the previous file, so it always holds the latest figure of every benchmark.
    Rows are grouped by benchmark in ``order``."""
    kept: list[dict[str, Any]] = []
    if path.exists():
        with contextlib.suppress(ValueError, OSError):
            previous = json.loads(path.read_text("utf-8"))
            if isinstance(previous, list):
                kept = [
                    r for r in previous if isinstance(r, dict) and r.get("benchmark") not in ran
                ]
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = kept + [r.to_json() for r in records]
    rank = {name: i for i, name in enumerate(order)}
    rows.sort(key=lambda r: rank.get(str(r.get("benchmark")), len(rank)))
    path.write_text(json.dumps(rows, indent=2, allow_nan=False) + "\n", encoding="utf-8")


RECORD_KEYS = ("benchmark", "metric", "value", "baseline", "ratio", "target", "met")


def check_record(row: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless ``row`` is a well-formed result record."""
    if tuple(row) != RECORD_KEYS:
        raise ValueError(f"keys {tuple(row)} != {RECORD_KEYS}")
    if not isinstance(row["benchmark"], str) or not isinstance(row["metric"], str):
        raise ValueError("benchmark and metric must be strings")
    for key in ("value", "baseline", "ratio", "target"):
        if row[key] is not None and not isinstance(row[key], int | float):
            raise ValueError(f"{key} must be a number or null")
    if row["met"] is not None and not isinstance(row["met"], bool):
        raise ValueError("met must be a boolean or null")
    if (row["target"] is None) != (row["met"] is None) and row["ratio"] is not None:
        raise ValueError("met is null exactly when target is null")
