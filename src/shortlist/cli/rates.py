"""Reference exchange rates: ``rates update [FILE]``, ``rates show``
(shortlist.listings.rates)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from shortlist.bootstrap import open_command_pool
from shortlist.cli.common import load_settings
from shortlist.errors import BadInput
from shortlist.listings import rates
from shortlist.runtime import prepared_database


def register(rates_app: typer.Typer) -> None:
    rates_app.command("update")(update)
    rates_app.command("show")(show)


def update(
    file: Annotated[
        Path | None,
        typer.Argument(
            help="An ECB reference rates file (eurofxref.csv, or eurofxref-hist.csv: its newest"
            " day); without one, the rates bundled with shortlist",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
) -> None:
    """Replace the stored exchange rates (salaries in the searcher's currency) with a file's.
    Nothing is fetched: download the ECB's file yourself
    (https://www.ecb.europa.eu/stats/eurofxref/eurofxref.zip) and pass it here."""
    try:
        table = rates.from_file(file.read_text("utf-8")) if file else rates.bundled()
    except (BadInput, UnicodeDecodeError, ValueError) as exc:
        typer.echo(f"shortlist: {file}: {exc}", err=True)
        raise typer.Exit(1) from None

    async def store(url: str) -> int:
        async with open_command_pool(url, max_size=1, name="shortlist") as pool:
            return await rates.store(pool, table)

    with prepared_database(load_settings()) as db:
        stored = asyncio.run(store(db.url))
    day = max(r.rate_date for r in table)
    typer.echo(f"{stored} exchange rates of {day.isoformat()} stored")


def show() -> None:
    """The stored rates: currency, units per euro, date, source."""

    async def read(url: str) -> dict[str, rates.Rate]:
        async with open_command_pool(url, max_size=1, name="shortlist") as pool:
            return await rates.load(pool)

    with prepared_database(load_settings()) as db:
        table = asyncio.run(read(db.url))
    for rate in table.values():
        typer.echo(f"{rate.currency_code}\t{rate.per_eur}\t{rate.rate_date}\t{rate.source}")
