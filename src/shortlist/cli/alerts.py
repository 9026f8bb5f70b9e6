"""Saved searches that alert: ``alerts list``, ``alerts test ID``, ``alerts disable ID`` — a job
seeker's saved job search (by its id) and a recruiter's saved people search (by its search's
id, as ``POST /api/searches/{id}/alert`` names it) alike."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from shortlist.alerts import people, store
from shortlist.alerts.digests import DigestQueue
from shortlist.bootstrap import open_command_pool
from shortlist.cli.common import load_settings
from shortlist.db.types import AsyncPool
from shortlist.listings.mail.reply import Relay
from shortlist.queue import QueueWorker, WorkerConfig
from shortlist.runtime import prepared_database


def register(alerts_app: typer.Typer) -> None:
    alerts_app.command("list")(list_command)
    alerts_app.command("test")(test)
    alerts_app.command("disable")(disable)


def _search_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise typer.BadParameter("a saved search's id (a UUID, from `alerts list`)") from None


def _on_pool(work: Any) -> Any:
    settings = load_settings()

    async def run(url: str) -> Any:
        async with open_command_pool(url, max_size=4, name="shortlist") as pool:
            return await work(pool, settings)

    with prepared_database(settings) as db:
        return asyncio.run(run(db.url))


def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="A JSON list")] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many")] = 1000,
) -> None:
    """Every saved search, job seekers' (kind jobs) and recruiters' people searches (kind
    people): its address, query, filters, status and what it queued and sent."""

    async def work(pool: AsyncPool, _settings: Any) -> list[dict[str, Any]]:
        async with pool.connection() as conn:
            cur = await conn.execute(store.SQL["all_searches"], {"limit": limit})
            jobs = [{"kind": "jobs", **r} for r in await cur.fetchall()]
            cur = await conn.execute(people.SQL["all_people_alerts"], {"limit": limit})
            return jobs + [{"kind": "people", **r} for r in await cur.fetchall()]

    rows = _on_pool(work)
    if as_json:
        typer.echo(json.dumps(rows, default=str, indent=2))
        return
    table = Table(
        "kind", "id", "email", "query", "filters", "frequency", "status", "queued", "sent"
    )
    for r in rows:
        if r["kind"] == "people":
            table.add_row(
                "people", str(r["id"]), r["email"] or "", r["query"], "", "as found",
                r["status"], str(r["queued"]), str(r["sent"]),
            )  # fmt: skip
            continue
        filters = ", ".join(
            str(v) for v in (r["location"], r["salary_min"], r["work_mode"]) if v is not None
        )
        status = r["status"] if r["subscriber_status"] == "active" else "suppressed"
        table.add_row(
            "jobs", str(r["id"]), r["email"], r["query"], filters, r["frequency"], status,
            str(r["queued"]), str(r["sent"]),
        )  # fmt: skip
    Console().print(table)


def test(search: Annotated[str, typer.Argument(help="the saved search's id")]) -> None:
    """Send the search's next digest now (its queued matches; a people search's people not yet
    told of), through SHORTLIST_SMTP_RELAY_URL."""
    search_id = _search_id(search)

    async def work(pool: AsyncPool, settings: Any) -> str | None:
        if not settings.smtp_relay_url:
            typer.echo(
                "shortlist: SHORTLIST_SMTP_RELAY_URL is not set: nothing can be sent", err=True
            )
            raise typer.Exit(1)
        relay = Relay.from_url(settings.smtp_relay_url)
        async with pool.connection() as conn:
            cur = await conn.execute(store.SQL["make_due"], {"id": search_id})
            if await cur.fetchone() is None:
                told = await people.tell_now(pool, settings, relay, search_id)
                return f"sent 1 digest naming {told} people" if told else None
        queue = DigestQueue(pool, settings, relay)
        config = WorkerConfig(batch_size=1, poll_interval=0.1, backoff_base=1.0, grace=30.0)
        await QueueWorker(queue, config).run(asyncio.Event(), drain=True)
        return f"sent {queue.sent} digest(s)" if queue.sent else None

    sent = _on_pool(work)
    typer.echo(
        sent
        or "nothing queued for it (or it is not active, or the relay did not take it): nothing sent"
    )


def disable(search: Annotated[str, typer.Argument(help="the saved search's id")]) -> None:
    """Stop a saved search (its queued matches are cancelled; a people search's people not yet
    told of are never told); its subscriber is not told."""
    search_id = _search_id(search)

    async def work(pool: AsyncPool, _settings: Any) -> int:
        async with pool.connection() as conn, conn.transaction():
            cur = await conn.execute(store.SQL["search_of_token"], {"id": search_id})
            if await cur.fetchone() is not None:
                return await store.end(conn, search_id, "disabled")
            cur = await conn.execute(people.SQL["disable_people_alert"], {"search_id": search_id})
            row = await cur.fetchone()
            if row is None:
                typer.echo("shortlist: no such saved search", err=True)
                raise typer.Exit(1)
            return int(row["waiting"])

    cancelled = _on_pool(work)
    typer.echo(f"disabled; {cancelled} queued match(es) cancelled")
