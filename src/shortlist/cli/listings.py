"""Job-listing commands: ``ingest jobs``, ``ingest email``, ``search jobs``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import psycopg
import typer
from psycopg.rows import dict_row
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from shortlist.cli.ingest import run_file_import
from shortlist.config import Settings, get_settings
from shortlist.db.pool import open_async_pool
from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput
from shortlist.listings.ingest import ListingFileReader, ingest_listings
from shortlist.listings.models import MAX_SALARY_KS
from shortlist.listings.search import MAX_SIZE, SearchResult
from shortlist.runtime import prepared_database


def register(app: typer.Typer, ingest_app: typer.Typer, search_app: typer.Typer) -> None:
    ingest_app.command("jobs")(ingest_jobs)
    ingest_app.command("email")(ingest_email)
    search_app.command("jobs")(search_jobs_command)


def _settings() -> Settings:
    settings = get_settings()
    from shortlist.cli import setup_logging

    setup_logging(settings.log_level)
    return settings


async def _connect(url: str) -> AsyncConn:
    conn: AsyncConn = await psycopg.AsyncConnection.connect(url, row_factory=dict_row)
    return conn


# --- ingest jobs ----------------------------------------------------------------------------


def ingest_jobs(
    file: Annotated[Path, typer.Argument(help="JSON Lines or CSV file of job listings")],
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per transaction")] = 500,
) -> None:
    """Bulk import job listings; bad rows are reported with line numbers, good rows kept.

    Exit status: 0 if any listing was imported, 1 if the file could not be read or held no
    valid row.
    """
    run_file_import(
        ListingFileReader(file),
        ingest_listings,
        noun="listings",
        batch_size=batch_size,
        settings=_settings(),
        after="the listings are searchable by full text now, and by meaning once embedded",
    )


# --- ingest email ---------------------------------------------------------------------------


def ingest_email(
    file: Annotated[Path, typer.Argument(help="One job post as an e-mail message (.eml)")],
) -> None:
    """Submit one job post written as an e-mail message."""
    from shortlist.listings.email_post import parse_job_email
    from shortlist.listings.repository import create_listing

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
    settings = _settings()

    async def insert(url: str) -> None:
        conn = await _connect(url)
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


# --- search jobs ----------------------------------------------------------------------------


def search_jobs_command(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words")],
    size: Annotated[int, typer.Option(min=1, max=MAX_SIZE, help="Number of hits")] = 10,
    location: Annotated[str | None, typer.Option(help="Substring of the city, any case")] = None,
    salary_min: Annotated[
        int | None,
        typer.Option(min=0, max=MAX_SALARY_KS, help="Thousands; compared with the top figure"),
    ] = None,
) -> None:
    """Search job listings from the terminal (same ranking as the API)."""
    settings = _settings()
    with prepared_database(settings) as db:
        try:
            result = asyncio.run(_search(settings, db.url, query, size, location, salary_min))
        except BadInput as exc:
            Console(stderr=True).print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(2) from None
    _print_hits(result)


async def _search(
    settings: Settings,
    url: str,
    query: str,
    size: int,
    location: str | None,
    salary_min: int | None,
) -> SearchResult:
    from shortlist.embedding.factory import make_embedder
    from shortlist.listings.search import search_jobs

    embedder = make_embedder(settings)
    pool = await open_async_pool(url, min_size=1, max_size=2, name="shortlist-cli")
    try:
        return await search_jobs(
            pool, embedder, query, size=size, location=location, salary_min=salary_min
        )
    finally:
        await pool.close()


def _print_hits(result: SearchResult) -> None:
    out = Console()
    n = len(result.hits)
    table = Table(
        title=escape(f"{n} job{'' if n == 1 else 's'} for {result.query!r}")
        + f" ({result.took_ms:.0f} ms)"
    )
    table.add_column("score", justify="right")
    table.add_column("title")
    table.add_column("company")
    table.add_column("city")
    table.add_column("salary")
    table.add_column("slug", overflow="fold")
    for hit in result.hits:
        listing = hit.listing
        table.add_row(
            f"{hit.score:.3f}",
            escape(listing.job_title),
            escape(listing.company_name),
            escape(listing.city_location),
            escape(listing.salary_range or "—"),
            listing.detail_page_slug,
        )
    out.print(table)
