"""Searching from the terminal: ``search jobs`` and ``search candidates``.

``search candidates`` starts a search as the built-in CLI principal and prints results as they
arrive, the way the web client sees them: internal hits at once, then backfilled candidates
one by one. Unless ``--no-workers`` is given it runs the backfill workers in this process (and,
with no talent API configured, the bundled simulator), so it works on a fresh data dir with
nothing else running; with ``--no-workers`` it only watches while other workers do the work.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from shortlist.auth import Principal, Role, create_token_async
from shortlist.bootstrap import Services, build_workers, bundled_simulator, open_services
from shortlist.cli.common import load_settings
from shortlist.config import Settings
from shortlist.errors import BadInput
from shortlist.listings.models import MAX_SALARY_KS
from shortlist.listings.search import MAX_SIZE, SearchResult
from shortlist.listings.service import run_job_search
from shortlist.runtime import install_stop_signals, prepared_database, run_until_stopped
from shortlist.talent.service import parse_search_create, results_page, start_search

console = Console()
CLI_PRINCIPAL_NAME = "shortlist-cli"


def register(search_app: typer.Typer) -> None:
    search_app.command("jobs")(search_jobs_command)
    search_app.command("candidates")(search_candidates)


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
    settings = load_settings()
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
    async with open_services(settings, url, pool_max=2) as services:
        return await run_job_search(
            services, query, size=size, location=location, salary_min=salary_min
        )


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


def search_candidates(
    query: Annotated[str, typer.Argument(help="What the recruiter is looking for")],
    role: Annotated[str | None, typer.Option(help="Role title filter")] = None,
    location: Annotated[str | None, typer.Option(help="Location filter")] = None,
    min_years: Annotated[int | None, typer.Option(help="Minimum years of experience")] = None,
    skill: Annotated[
        list[str] | None, typer.Option("--skill", help="Required skill (repeatable)")
    ] = None,
    workers: Annotated[
        bool, typer.Option(help="Run backfill workers in this process while watching")
    ] = True,
    poll: Annotated[float, typer.Option(help="Seconds between result polls")] = 1.0,
) -> None:
    """Search candidates; results stream into the terminal as the backfill finds them."""
    settings = load_settings()
    payload: dict[str, Any] = {"query": query, "skills": skill or []}
    if role:
        payload["role"] = role
    if location:
        payload["location"] = location
    if min_years is not None:
        payload["min_years_experience"] = min_years
    with prepared_database(settings) as db:
        asyncio.run(_search_candidates(settings, db.url, payload, workers=workers, poll=poll))


async def _cli_principal(services: Services) -> Principal:
    """The CLI's own admin principal (a token row whose secret nobody ever sees)."""
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id FROM api_tokens WHERE name = %s AND role = 'admin' AND revoked_at IS NULL"
            " ORDER BY id LIMIT 1",
            (CLI_PRINCIPAL_NAME,),
        )
        row = await cur.fetchone()
        if row is not None:
            return Principal(int(row["id"]), CLI_PRINCIPAL_NAME, Role.admin)
        principal, _secret = await create_token_async(conn, CLI_PRINCIPAL_NAME, Role.admin)
        return principal


async def _search_candidates(
    settings: Settings, url: str, payload: dict[str, Any], *, workers: bool, poll: float
) -> None:
    search = parse_search_create(payload)
    stop = asyncio.Event()
    install_stop_signals(stop)
    async with (
        bundled_simulator(settings, needed=workers) as settings,
        open_services(settings, url, with_sources=workers) as services,
    ):
        principal = await _cli_principal(services)
        worker_task: asyncio.Task[None] | None = None
        if workers:
            runners = build_workers(services, {"backfill", "reaper"})
            worker_task = asyncio.create_task(
                run_until_stopped(runners, stop, settings.shutdown_grace)
            )
        started = await start_search(services, principal, search)
        console.print(
            f"search [bold]{started.search_id}[/] — {started.result_count} internal hits"
            + (", backfilling…" if started.backfill_started else "")
        )
        after = 0
        shown_failures: set[int] = set()
        while True:
            page = await results_page(
                services, principal, str(started.search_id), after=after, limit=500
            )
            for row in page.results:
                _print_result(row)
            for attempt in page.attempts:
                status = str(attempt["status"])
                if status.startswith("failed") and int(attempt["id"]) not in shown_failures:
                    shown_failures.add(int(attempt["id"]))
                    console.print(
                        f"   [red]✗[/] {attempt['display_name'] or attempt['external_id']}"
                        f" [dim]({attempt['tier']})[/] {status}: {attempt['last_error']}"
                    )
            after = page.next_after
            if page.search.status != "running" or stop.is_set():
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=poll)
        counts = ", ".join(f"{k} {v}" for k, v in page.candidate_counts.items() if v)
        console.print(
            f"[bold]{page.search.status}[/]: {page.search.result_count} results"
            + (f" ({counts})" if counts else "")
        )
        stop.set()
        if worker_task is not None:
            await worker_task


def _print_result(row: Any) -> None:
    skills = ", ".join(list(row["skills"] or ())[:5])
    years = row["years_experience"]
    console.print(
        f"{int(row['rank']):>4}. [bold]{row['full_name']}[/] — {row['role_title']}"
        f" · {row['location']}"
        + (f" · {years}y" if years is not None else "")
        + f"  [green]{float(row['score']):.3f}[/] [dim]{row['tier']}[/]"
        + (f"\n      [dim]{skills}[/]" if skills else "")
    )
