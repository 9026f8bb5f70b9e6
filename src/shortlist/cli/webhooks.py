"""Webhook endpoints, the operator's view of every organisation's: ``webhooks list``,
``webhooks enable ID``, ``webhooks disable ID``."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from shortlist.bootstrap import open_command_pool
from shortlist.cli.common import load_settings
from shortlist.db.types import AsyncPool
from shortlist.runtime import prepared_database
from shortlist.webhooks import store

EndpointArg = Annotated[int, typer.Argument(min=1, help="the endpoint's id (from `webhooks list`)")]


def register(webhooks_app: typer.Typer) -> None:
    webhooks_app.command("list")(list_command)
    webhooks_app.command("enable")(enable)
    webhooks_app.command("disable")(disable)


def _on_pool(work: Any) -> Any:
    settings = load_settings()

    async def run(url: str) -> Any:
        async with open_command_pool(url, max_size=2, name="shortlist") as pool:
            return await work(pool)

    with prepared_database(settings) as db:
        return asyncio.run(run(db.url))


def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="A JSON list")] = False,
) -> None:
    """Every organisation's endpoints: URL, events, state and deliveries (never a secret)."""

    async def work(pool: AsyncPool) -> list[dict[str, Any]]:
        async with pool.connection() as conn:
            return await store.list_endpoints(conn)

    rows = _on_pool(work)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("id", "org", "url", "events", "status", "failing since", "deliveries")
    for r in rows:
        status = r["status"] + (f" ({r['disabledReason']})" if r["disabledReason"] else "")
        deliveries = ", ".join(f"{k} {v}" for k, v in r["deliveries"].items() if v)
        table.add_row(
            str(r["id"]), str(r["organisationId"]), r["url"], ", ".join(r["events"]), status,
            r["failingSince"] or "", deliveries,
        )  # fmt: skip
    Console().print(table)


def enable(endpoint: EndpointArg) -> None:
    """Enable a disabled endpoint (or forgive an enabled one's failures): its failure window
    starts afresh. What the disable cancelled stays cancelled."""

    async def work(pool: AsyncPool) -> dict[str, Any] | None:
        async with pool.connection() as conn, conn.transaction():
            return await store.enable_endpoint(conn, endpoint)

    if _on_pool(work) is None:
        typer.echo("shortlist: no such webhook endpoint", err=True)
        raise typer.Exit(1)
    typer.echo(f"endpoint {endpoint} enabled")


def disable(endpoint: EndpointArg) -> None:
    """Disable an endpoint: nothing more is sent to it; its pending deliveries are cancelled."""

    async def work(pool: AsyncPool) -> int | None:
        async with pool.connection() as conn, conn.transaction():
            return await store.disable_endpoint(conn, endpoint, "disabled by an operator")

    cancelled = _on_pool(work)
    if cancelled is None:
        typer.echo("shortlist: no such webhook endpoint", err=True)
        raise typer.Exit(1)
    typer.echo(f"endpoint {endpoint} disabled; {cancelled} pending delivery(ies) cancelled")
