"""Loading data: ``ingest jobs``, ``ingest candidates`` (bulk files) and ``ingest email``.

Every bulk import opens the file, shows a progress bar and the bad rows as they are found,
prints a summary, and sets the exit status (0 if any row was imported)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

import typer
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

from shortlist.cli.common import connect, load_settings
from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput
from shortlist.ingest_files import BadRow, IngestReport, RecordFileReader
from shortlist.listings.ingest import ListingFileReader, ingest_listings
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


BatchSize = Annotated[int, typer.Option(min=1, max=10_000, help="Rows per transaction")]
SEARCHABLE = "searchable by full text now, and by meaning once embedded"


def register(ingest_app: typer.Typer) -> None:
    ingest_app.command("jobs")(ingest_jobs)
    ingest_app.command("candidates")(ingest_candidates)
    ingest_app.command("email")(ingest_email)


# --- ingest jobs ----------------------------------------------------------------------------


def ingest_jobs(
    file: Annotated[Path, typer.Argument(help="JSON Lines or CSV file of job listings")],
    batch_size: BatchSize = 500,
) -> None:
    """Bulk import job listings; bad rows are reported with line numbers, good rows kept.

    Exit status: 0 if any listing was imported, 1 if the file could not be read or held no
    valid row.
    """
    reader = ListingFileReader(file)
    run_file_import(reader, ingest_listings, noun="listings", batch_size=batch_size)


# --- ingest email ---------------------------------------------------------------------------


def ingest_email(
    file: Annotated[Path, typer.Argument(help="One job post as an e-mail message (.eml)")],
) -> None:
    """Submit one job post written as an e-mail message."""
    from shortlist.listings.email_post import parse_job_email
    from shortlist.listings.service import create_listing

    err = Console(stderr=True)
    try:
        raw = file.read_bytes()
        data = parse_job_email(raw)
    except OSError as exc:
        err.print(
            f"[red]error:[/] cannot read {escape(str(file))}: {escape(exc.strerror or str(exc))}"
        )
        raise typer.Exit(1) from None
    except BadInput as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    settings = load_settings()

    async def insert(url: str) -> None:
        conn = await connect(url)
        try:
            listing = await create_listing(conn, data, source="email")
        finally:
            await conn.close()
        typer.echo(f"created listing {listing.id}")
        typer.echo(f"  {listing.job_title} at {listing.company_name} ({listing.city_location})")
        typer.echo(f"  slug: {listing.detail_page_slug}")
        if listing.salary_range:
            typer.echo(f"  salary: {listing.salary_range}")

    with prepared_database(settings) as db:
        asyncio.run(insert(db.url))


# --- ingest candidates -----------------------------------------------------------------------


def ingest_candidates(
    file: Annotated[Path, typer.Argument(help="JSON Lines or CSV file of candidate profiles")],
    batch_size: BatchSize = 500,
) -> None:
    """Bulk import candidate profiles; bad rows are reported with line numbers, good rows kept.

    Exit status: 0 if any profile was imported, 1 if the file could not be read or held no
    valid row.
    """
    from functools import partial

    from shortlist.talent.ingest import CandidateFileReader, ingest_candidates

    reader = CandidateFileReader(file)
    # A forgotten person is never stored again (the suppression list's key may be configured).
    insert = partial(ingest_candidates, privacy_key=load_settings().privacy_key)
    run_file_import(reader, insert, noun="candidates", batch_size=batch_size)


# --- the import ----------------------------------------------------------------------------------


def run_file_import(
    reader: R,
    ingest: Ingest[R],
    *,
    noun: str,
    batch_size: int,
) -> None:
    settings = load_settings()
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
    _print_summary(out, report, noun)
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

        conn = await connect(url)
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


def _print_summary(out: Console, report: IngestReport, noun: str) -> None:
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
    if report.inserted:
        out.print(f"the {noun} are {SEARCHABLE}")
