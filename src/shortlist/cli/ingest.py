"""Loading data: ``ingest jobs``, ``ingest candidates`` (bulk files) and ``ingest email``.

Every bulk import opens the file, shows a progress bar and the bad rows as they are found,
prints a summary, and sets the exit status (0 if any row was imported)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

import psycopg
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

from shortlist import places
from shortlist.cli.common import connect, load_settings
from shortlist.config import Settings
from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput
from shortlist.ingest_files import BadRow, IngestReport, RecordFileReader
from shortlist.listings.ingest import ListingFileReader, ingest_listings
from shortlist.listings.mail import store
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.sandbox import ParserPool
from shortlist.listings.mail.smtp import message_id_of
from shortlist.listings.service import create_listing
from shortlist.runtime import prepared_database
from shortlist.talent import ingest as talent_ingest

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
    file: Annotated[
        str, typer.Argument(help="One job post as an e-mail message (.eml), or - for stdin")
    ],
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="The intake address it was sent to: queue it as the SMTP intake does (an MTA's"
            " pipe transport: --to ${recipient}); exit 67 if no company has that address",
        ),
    ] = None,
    sender: Annotated[
        str | None, typer.Option("--sender", help="The envelope sender (with --to)")
    ] = None,
    company: Annotated[
        str | None,
        typer.Option("--company", help="Post as this company, whatever the message says"),
    ] = None,
) -> None:
    """Submit one job post written as an e-mail message (free-form, as employers write)."""
    err = Console(stderr=True)
    try:
        raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        err.print(f"[red]error:[/] cannot read {escape(file)}: {escape(exc.strerror or str(exc))}")
        raise typer.Exit(1) from None
    settings = load_settings()
    if len(raw) > settings.mail_max_bytes:
        err.print(f"[red]error:[/] the message is larger than {settings.mail_max_bytes} bytes")
        raise typer.Exit(1)
    with prepared_database(settings) as db:
        if to is not None:
            code = asyncio.run(_queue_email(db.url, settings, raw, to, sender, err))
        else:
            code = asyncio.run(_post_email(db.url, settings, raw, company, err))
    if code:
        raise typer.Exit(code)


EX_NOUSER = 67
"""sysexits.h: the MTA bounces the message (unknown recipient)."""
EX_TEMPFAIL = 75
"""sysexits.h: the MTA keeps the message and tries again later."""


async def _queue_email(
    url: str, settings: Settings, raw: bytes, to: str, sender: str | None, err: Console
) -> int:
    local = store.local_part_of(to, settings.mail_domain)
    try:
        conn = await connect(url)
        try:
            intake = await store.find_intake(conn, local) if local else None
            if intake is None:
                err.print("[red]error:[/] no such intake address")
                return EX_NOUSER
            row = await store.receive(
                conn,
                intake,
                recipient=to,
                mail_from=sender or None,
                message_id=message_id_of(raw),
                raw=raw,
                privacy_key=settings.privacy_key,
            )
            await conn.commit()  # the lookup opened the transaction the row was written in
        finally:
            await conn.close()
    except (psycopg.Error, OSError) as exc:
        err.print(f"[red]error:[/] the database is unavailable: {escape(str(exc))}")
        return EX_TEMPFAIL
    typer.echo(f"queued message {row}" if row is not None else "already received")
    return 0


async def _post_email(
    url: str, settings: Settings, raw: bytes, company: str | None, err: Console
) -> int:
    parser = ParserPool(
        processes=1,
        timeout=settings.mail_parse_timeout,
        max_bytes=settings.mail_max_bytes,
        memory_mb=settings.mail_parse_memory_mb,
    )
    try:
        reading = await parser.read(raw)
        await asyncio.to_thread(places.load, settings.cache_dir)
        data = to_listing(reading, company)
    except BadInput as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return 1
    finally:
        parser.close()
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
    return 0


# --- ingest candidates -----------------------------------------------------------------------


def ingest_candidates(
    file: Annotated[Path, typer.Argument(help="JSON Lines or CSV file of candidate profiles")],
    batch_size: BatchSize = 500,
) -> None:
    """Bulk import candidate profiles; bad rows are reported with line numbers, good rows kept.

    Exit status: 0 if any profile was imported, 1 if the file could not be read or held no
    valid row.
    """
    reader = talent_ingest.CandidateFileReader(file)
    # A forgotten person is never stored again (the suppression list's key may be configured).
    insert = partial(talent_ingest.ingest_candidates, privacy_key=load_settings().privacy_key)
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
