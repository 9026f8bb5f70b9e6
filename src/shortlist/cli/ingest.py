"""The terminal side of every bulk import: open the file, show a progress bar and the bad rows
as they are found, print a summary, and set the exit status (0 if any row was imported)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import psycopg
import typer
from psycopg.rows import dict_row
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from shortlist.config import Settings
from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput
from shortlist.ingest_files import BadRow, IngestReport, RecordFileReader
from shortlist.runtime import prepared_database

# Bad rows beyond this many are counted, not printed: a file of a million bad rows should
# still end with a readable summary.
MAX_BAD_ROWS_SHOWN = 200

R = TypeVar("R", bound=RecordFileReader[Any])
R_contra = TypeVar("R_contra", bound=RecordFileReader[Any], contravariant=True)


class Ingest(Protocol[R_contra]):
    """An ``ingest_*`` function of a corpus (e.g. ``shortlist.listings.ingest.ingest_listings``)."""

    def __call__(
        self,
        conn: AsyncConn,
        reader: R_contra,
        *,
        batch_size: int = ...,
        on_bad_row: Callable[[BadRow], None] | None = ...,
        on_progress: Callable[[Any, int], None] | None = ...,
    ) -> Awaitable[IngestReport]: ...


def run_file_import(
    reader: R,
    ingest: Ingest[R],
    *,
    noun: str,
    batch_size: int,
    settings: Settings,
    after: str | None = None,
) -> None:
    out = Console()
    err = Console(stderr=True)
    try:
        reader.open()
    except BadInput as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    try:
        with prepared_database(settings) as db:
            report = asyncio.run(_ingest(db.url, reader, ingest, batch_size, err))
    except BadInput as exc:  # e.g. a CSV without a header line
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    finally:
        reader.close()
    _print_summary(out, report, noun, after)
    if report.inserted == 0:
        raise typer.Exit(1)


async def _ingest(
    url: str, reader: R, ingest: Ingest[R], batch_size: int, err: Console
) -> IngestReport:
    shown = 0

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[rows]} rows"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task(f"importing {escape(reader.path.name)}", total=reader.size, rows=0)

        def on_bad_row(bad: BadRow) -> None:
            nonlocal shown
            shown += 1
            if shown <= MAX_BAD_ROWS_SHOWN:
                progress.console.print(f"[yellow]line {bad.line}:[/] {escape(bad.reason)}")

        def on_progress(r: Any, rows: int) -> None:
            progress.update(task, completed=r.bytes_read, rows=rows)

        conn: AsyncConn = await psycopg.AsyncConnection.connect(url, row_factory=dict_row)
        try:
            report = await ingest(
                conn,
                reader,
                batch_size=batch_size,
                on_bad_row=on_bad_row,
                on_progress=on_progress,
            )
        finally:
            await conn.close()
        progress.update(task, completed=reader.size)
    return report


def _print_summary(out: Console, report: IngestReport, noun: str, after: str | None) -> None:
    bad = report.bad_count
    out.print(
        f"{escape(report.path.name)} ({report.format}): {report.rows} rows read, "
        f"[green]{report.inserted} {noun} imported[/], "
        + (f"[yellow]{bad} bad rows[/]" if bad else "no bad rows")
    )
    if bad > MAX_BAD_ROWS_SHOWN:
        out.print(f"(only the first {MAX_BAD_ROWS_SHOWN} bad rows were listed above)")
    if report.ignored_columns:
        out.print("ignored unknown columns: " + escape(", ".join(sorted(report.ignored_columns))))
    if report.inserted and after:
        out.print(after)
