"""Job sources: ``sources add``, ``sources list``, ``sources crawl``, ``sources remove``."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from shortlist.bootstrap import bundled_simulator, open_command_pool
from shortlist.cli.common import load_settings
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.errors import BadInput, Conflict, NotFound, TransientError
from shortlist.listings.sources import service
from shortlist.listings.sources.queue import CrawlResult
from shortlist.runtime import prepared_database

log = logging.getLogger("shortlist")
T = TypeVar("T")


def register(sources_app: typer.Typer) -> None:
    sources_app.command("add")(add)
    sources_app.command("list")(list_command)
    sources_app.command("crawl")(crawl)
    sources_app.command("remove")(remove)


def _run(settings: Settings, work: Callable[[AsyncPool], Awaitable[T]]) -> T:
    """``work`` on a small pool of this command's database; a caller's mistake ends the command
    with one line and exit status 1."""

    async def run(url: str) -> T:
        async with open_command_pool(url, max_size=4, name="shortlist") as pool:
            return await work(pool)

    with prepared_database(settings) as db:
        try:
            return asyncio.run(run(db.url))
        except (BadInput, NotFound, Conflict, TransientError) as exc:
            typer.echo(f"shortlist: {exc}", err=True)
            raise typer.Exit(1) from None


def add(
    spec: Annotated[
        str,
        typer.Argument(
            help="greenhouse:TOKEN, lever:SITE (https://jobs.eu.lever.co/SITE for a site on"
            " Lever's EU instance), ashby:ORG, or the http(s) URL of a careers page or sitemap"
        ),
    ],
    company: Annotated[
        str | None, typer.Option(help="Company name for postings that name none")
    ] = None,
) -> None:
    """Add a job source; it is crawled at once by the running workers, then every
    SHORTLIST_CRAWL_INTERVAL. Prints the new source's id on the last line."""
    settings = load_settings()
    source = _run(settings, lambda pool: service.add_source(pool, settings, spec, company))
    typer.echo(f"added source {source.spec} ({source.kind})")
    typer.echo(str(source.id))


def list_command(
    as_json: Annotated[
        bool, typer.Option("--json", help="A JSON list, one object per source")
    ] = False,
) -> None:
    """Every source with its last crawl, open listings and errors."""
    settings = load_settings()
    sources = _run(settings, service.list_sources)
    if as_json:
        typer.echo(json.dumps([s.model_dump(mode="json") for s in sources], indent=2))
        return
    table = Table(title="Job sources")
    for column in ("id", "source", "status", "open", "last crawl", "next crawl", "error"):
        table.add_column(column, overflow="fold", justify="right" if column == "open" else "left")
    for s in sources:
        table.add_row(
            str(s.id),
            s.spec + (f" ({s.company_name})" if s.company_name else ""),
            s.status,
            str(s.listings_open),
            s.last_crawl_at.isoformat(timespec="seconds") if s.last_crawl_at else "never",
            s.next_crawl_at.isoformat(timespec="seconds"),
            s.last_error or "",
        )
    Console().print(table if sources else "No job sources: `shortlist sources add SPEC`.")


def crawl(
    source_id: Annotated[int | None, typer.Argument(help="The source to crawl")] = None,
    all_sources: Annotated[bool, typer.Option("--all", help="Crawl every source")] = False,
) -> None:
    """Crawl now (failed sources too), with a progress bar; exit 0 when done."""
    if (source_id is None) == (not all_sources):
        raise typer.BadParameter("give a source ID or --all (not both)")
    settings = load_settings()
    console = Console(stderr=True)

    async def work(pool: AsyncPool) -> list[CrawlResult]:
        ids = None if all_sources else [source_id or 0]
        known = await service.list_sources(pool)
        chosen = [s for s in known if ids is None or s.id in ids]
        total = len(chosen) if ids is None else 1
        greenhouse = any(s.kind == "greenhouse" for s in chosen)
        # Without provider URLs the bundled simulator's demo board stands in for Greenhouse, as in
        # `serve` and `worker`.
        async with bundled_simulator(
            settings, needed=greenhouse, job_boards_only=True
        ) as crawl_settings:
            with Progress(
                TextColumn("crawling"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            ) as progress:
                task = progress.add_task("sources", total=total)
                return await service.crawl_now(
                    pool,
                    crawl_settings,
                    ids,
                    on_done=lambda _result: progress.advance(task),
                )

    results = _run(settings, work)
    for r in results:
        if r.outcome is not None:
            o = r.outcome
            typer.echo(
                f"{r.source.id} {r.source.spec}: {o.new} new, {o.changed} changed,"
                f" {o.unchanged} unchanged, {o.closed} closed, {o.expired} expired,"
                f" {o.skipped} skipped, {o.duplicates} listed elsewhere ({r.requests} requests)"
            )
        else:
            state = "failed" if r.permanent else "will retry"
            typer.echo(f"{r.source.id} {r.source.spec}: {state}: {r.error}")


def remove(source_id: Annotated[int, typer.Argument(help="The source to remove")]) -> None:
    """Remove a source; its open listings close."""
    settings = load_settings()
    _run(settings, lambda pool: service.remove_source(pool, source_id))
    typer.echo(f"removed source {source_id}")
