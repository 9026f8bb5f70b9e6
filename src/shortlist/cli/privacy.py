"""A person's data at the terminal: ``privacy forget`` (erasure on request) and ``audit`` (who
saw contact details). Both are operator commands: whoever runs them holds the database."""

from __future__ import annotations

import asyncio
import getpass
import json
import uuid
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from shortlist import audit, privacy
from shortlist.bootstrap import open_command_pool
from shortlist.cli.common import connect, load_settings
from shortlist.errors import BadInput, NotFound
from shortlist.runtime import prepared_database


def register(app: typer.Typer, privacy_app: typer.Typer) -> None:
    privacy_app.command("forget")(forget_command)
    app.command("audit")(audit_command)


def forget_command(
    target: Annotated[
        str,
        typer.Argument(
            help="The person: an e-mail address, a LinkedIn URL (any host), a provider's id"
            " (pdl:ID) or a candidate id; empty with --name and --company"
        ),
    ] = "",
    name: Annotated[
        str | None, typer.Option("--name", help="The person's full name (with --company)")
    ] = None,
    company: Annotated[
        str | None, typer.Option("--company", help="Where the person named by --name works")
    ] = None,
) -> None:
    """Forget a person: profile, marks and notes deleted, result rows turned into tombstones,
    the e-mail they sent or are named in erased, identifiers kept only as keyed hashes so no
    backfill, ingest or e-mail intake stores them again."""
    settings = load_settings()

    async def run(url: str) -> privacy.Erasure:
        async with open_command_pool(url, max_size=1, name="shortlist") as pool:
            return await privacy.forget(
                pool,
                target,
                name=name,
                company=company,
                configured_key=settings.privacy_key,
                actor=f"cli:{_operator()}",
            )

    with prepared_database(settings) as db:
        try:
            erasure = asyncio.run(run(db.url))
        except (BadInput, NotFound) as exc:
            typer.echo(f"shortlist: {exc}", err=True)
            raise typer.Exit(1) from None
    typer.echo(
        f"forgot {len(erasure.candidate_ids)} profile(s): {erasure.results_tombstoned} result"
        f" row(s) tombstoned, {erasure.attempts_scrubbed} backfill attempt(s) scrubbed,"
        f" {erasure.identifiers_suppressed} identifier(s) on the suppression list,"
        f" {erasure.messages_erased} e-mail message(s) erased, {erasure.held_dropped} held"
        f" list(s) cut, {erasure.listings_redacted} listing(s), {erasure.searches_redacted}"
        f" search(es) and {erasure.notes_redacted} note(s) redacted"
    )


def _operator() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (a container without one)
        return "unknown"


def audit_command(
    candidate: Annotated[
        str | None, typer.Option("--candidate", help="Only entries naming this candidate id")
    ] = None,
    token: Annotated[
        str | None, typer.Option("--token", help="Only entries of the token of this name")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=audit.MAX_ENTRIES)] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list")] = False,
) -> None:
    """Who viewed or exported contact details (and who erased whom), newest first."""
    settings = load_settings()
    try:
        candidate_id = uuid.UUID(candidate) if candidate else None
    except ValueError:
        typer.echo(f"shortlist: not a candidate id: {candidate!r}", err=True)
        raise typer.Exit(2) from None

    async def run(url: str) -> list[dict[str, Any]]:
        async with await connect(url) as conn:
            return await audit.entries(
                conn, candidate_id=candidate_id, token_name=token, limit=limit
            )

    with prepared_database(settings) as db:
        rows = asyncio.run(run(db.url))
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="Audit log")
    for column in ("at", "user", "organisation", "token", "action", "search", "people"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(
            r["at"],
            r["user"] or "",
            r["organisation"] or "",
            r["token"],
            r["action"],
            r["searchId"] or "",
            ", ".join(r["candidateIds"]),
        )
    Console().print(table)
