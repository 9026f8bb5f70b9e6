"""Operating shortlist: ``status``, ``reindex``, ``token create``."""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from shortlist.auth import Role, create_token, list_tokens, revoke_tokens, set_expiry
from shortlist.cli.common import connect, load_settings
from shortlist.config import index_build_overrides
from shortlist.db.pool import connect as connect_sync
from shortlist.reindex import reindex, resume_paused
from shortlist.runtime import prepared_database
from shortlist.status import collect_status, iso


class CorpusChoice(StrEnum):
    """The values of ``shortlist reindex --corpus`` (the corpora themselves: indexer.Corpus)."""

    jobs = "jobs"
    candidates = "candidates"
    all = "all"


_CORPUS_TABLE: dict[CorpusChoice, str | None] = {
    CorpusChoice.jobs: "job_listings",
    CorpusChoice.candidates: "candidates",
    CorpusChoice.all: None,
}


def register(app: typer.Typer, token_app: typer.Typer) -> None:
    app.command("status")(status_command)
    app.command("reindex")(reindex_command)
    token_app.command("create")(token_create)
    token_app.command("list")(token_list)
    token_app.command("revoke")(token_revoke)


def status_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
) -> None:
    """Queue depths by status, the latest failures with their errors, running searches."""

    settings = load_settings()

    async def run(url: str) -> dict[str, Any]:
        async with await connect(url) as conn:
            return await collect_status(conn, index_build_overrides(settings))

    with prepared_database(settings) as db:
        report = asyncio.run(run(db.url))
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        print_status(report, Console())


def reindex_command(
    failed: Annotated[
        bool, typer.Option("--failed", help="Retry rows whose embedding failed permanently")
    ] = False,
    all_rows: Annotated[
        bool, typer.Option("--all", help="Re-embed every row with the active model")
    ] = False,
    corpus: Annotated[CorpusChoice, typer.Option(help="Which corpus")] = CorpusChoice.all,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Resume embedding queues paused for a misconfigured embedder"
        ),
    ] = False,
) -> None:
    """Mark rows for re-embedding. Without flags: embedded rows whose vector is out of date.
    With only --resume: resume the paused queues, mark nothing."""
    table = _CORPUS_TABLE[corpus]

    async def run(url: str) -> tuple[int, list[str]]:
        async with await connect(url) as conn:
            resumed = await resume_paused(conn, table=table) if resume else []
            if resume and not (failed or all_rows):
                return 0, resumed
            return await reindex(conn, failed=failed, all_rows=all_rows, table=table), resumed

    with prepared_database(load_settings()) as db:
        marked, resumed = asyncio.run(run(db.url))
    if resume:
        typer.echo(f"resumed {', '.join(resumed)}" if resumed else "no embedding queue was paused")
        if not (failed or all_rows):
            return
    what = "all" if all_rows else "failed" if failed else "stale"
    typer.echo(f"marked {marked} {what} rows ({corpus.value}) for re-embedding")


def print_status(report: dict[str, Any], console: Console) -> None:
    models = report["embedding_models"]
    active, building = models["active"], models["building"]
    console.print(f"Embedding model: {active['kind']}:{active['model']} ({active['dim']}-d)")
    if building is not None:
        shares = ", ".join(f"{t} {share:.1%}" for t, share in building["coverage"].items())
        console.print(
            f"Building: {building['kind']}:{building['model']} ({building['dim']}-d), {shares}"
        )
    queues = Table(title="Embedding queues")
    for column in ("corpus", "pending", "embedded", "failed", "claimed now", "re-embed due"):
        queues.add_column(column, justify="left" if column == "corpus" else "right")
    queues.add_column("paused", overflow="fold")
    for table, c in report["corpora"].items():
        by = c["by_status"]
        queues.add_row(
            table,
            str(by.get("pending", 0)),
            str(by.get("embedded", 0)),
            str(by.get("failed", 0)),
            str(c["claimed"]),
            str(c["reembed_due"]),
            c["paused_reason"] or "",
        )
    console.print(queues)

    indexes = Table(title="Vector indexes")
    for column in ("corpus", "index", "method", "rows", "size", "fits"):
        indexes.add_column(column, justify="right" if column in ("rows", "size") else "left")
    for i in report["vector_indexes"]:
        method = i["method"] + (f" ({i['lists']} lists)" if i["lists"] else "")
        fits = (
            "yes"
            if i["fits"]
            else "building"
            if not i["valid"]
            else f"no: `shortlist migrate --retune`, {i['planned']}"
        )
        indexes.add_row(
            i["table"], i["name"], method, f"{i['rows']:,}", f"{i['bytes'] / 2**20:.0f} MB", fits
        )
    console.print(indexes)

    failures = Table(title="Latest embedding failures")
    for column in ("corpus", "id", "row", "attempts", "failed at", "error"):
        failures.add_column(column, overflow="fold")
    for table, c in report["corpora"].items():
        for f in c["failures"]:
            failures.add_row(
                table, f["id"], f["label"], str(f["attempts"]), f["failed_at"] or "", f["error"]
            )
    if failures.row_count:
        console.print(failures)
    else:
        console.print("No embedding failures.")

    backfill = Table(title="Backfill")
    backfill.add_column("queue")
    backfill.add_column("status")
    backfill.add_column("count", justify="right")
    for name in ("search_candidates", "searches"):
        for state, n in report[name].items():
            backfill.add_row(name, state, str(n))
    console.print(backfill)

    mail = report.get("inbound_mail")
    if mail is not None:
        counts = ", ".join(f"{state} {n}" for state, n in mail["by_status"].items())
        console.print(f"E-mail intake: {counts}")
        unposted = Table(title="Latest e-mails not posted")
        for column in ("id", "company", "status", "as", "attempts", "at", "reason"):
            unposted.add_column(column, overflow="fold")
        for f in mail["failures"]:
            unposted.add_row(
                str(f["id"]),
                f["company"],
                f["status"],
                f.get("rejected_as") or "",
                str(f["attempts"]),
                f["at"],
                f["reason"],
            )
        if unposted.row_count:
            console.print(unposted)
    hooks = report.get("webhooks")
    if hooks is not None:
        counts = ", ".join(f"{state} {n}" for state, n in hooks["deliveries"].items())
        ends = hooks["endpoints"]
        console.print(
            f"Webhook deliveries: {counts}; endpoints: {ends['enabled']} enabled"
            f" ({ends['failing']} failing), {ends['disabled']} disabled"
        )
    if report.get("job_sources"):
        sources = Table(title="Job sources")
        for column in ("id", "source", "status", "open", "last crawl", "error"):
            sources.add_column(column, overflow="fold")
        for src in report["job_sources"]:
            sources.add_row(
                str(src["id"]),
                src["spec"],
                src["status"],
                str(src["listings_open"]),
                src["last_crawl_at"] or "never",
                src["last_error"] or "",
            )
        console.print(sources)

    running = Table(title="Running searches")
    for column in ("id", "query", "results", "last progress"):
        running.add_column(column, overflow="fold")
    for s in report["running_searches"]:
        running.add_row(
            s["id"], s["query"], f"{s['result_count']}/{s['target_count']}", s["last_progress_at"]
        )
    if running.row_count:
        console.print(running)
    else:
        console.print("No running searches.")


def token_create(
    name: Annotated[str, typer.Argument(help="Who the token is for")],
    role: Annotated[Role, typer.Option(help="company | recruiter | admin")],
    expires_in: Annotated[
        float | None,
        typer.Option("--expires-in", min=0.0001, help="Days until the token stops working"),
    ] = None,
    company: Annotated[
        str | None,
        typer.Option(help="The company a company token posts as (required for --role company)"),
    ] = None,
) -> None:
    """Create an API token; it is printed once, alone on the last line."""
    if role is Role.company and not (company or "").strip():
        typer.echo("error: a company token needs the company it posts as: --company NAME", err=True)
        raise typer.Exit(2)
    if role is not Role.company and company is not None:
        typer.echo("error: --company is only for company tokens (--role company)", err=True)
        raise typer.Exit(2)
    settings = load_settings()
    with prepared_database(settings) as db, connect_sync(db.url) as conn:
        principal, token = create_token(conn, name, role, company)
        if expires_in is not None and principal.token_id is not None:
            set_expiry(conn, principal.token_id, expires_in)
    typer.echo(f"created {principal.role.value} token #{principal.token_id} for {name!r}")
    if expires_in is not None:
        typer.echo(f"expires in {expires_in:g} days")
    typer.echo(token)


def token_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list")] = False,
) -> None:
    """Every token: name, role, company, created, expires, last used, revoked (never a secret)."""
    settings = load_settings()
    with prepared_database(settings) as db, connect_sync(db.url) as conn:
        rows = list_tokens(conn)
    tokens = [
        {
            "id": r["id"],
            "name": r["name"],
            "role": r["role"],
            "company": r["company"],
            "created_at": iso(r["created_at"]),
            "expires_at": iso(r["expires_at"]),
            "last_used_at": iso(r["last_used_at"]),
            "revoked_at": iso(r["revoked_at"]),
            "state": r["state"],
        }
        for r in rows
    ]
    if as_json:
        typer.echo(json.dumps(tokens, indent=2))
        return
    table = Table(title="API tokens")
    for column in ("id", "name", "role", "company", "created", "expires", "last used", "state"):
        table.add_column(column, overflow="fold")
    for t in tokens:
        table.add_row(
            str(t["id"]),
            t["name"],
            t["role"],
            t["company"] or "",
            t["created_at"] or "",
            t["expires_at"] or "never",
            t["last_used_at"] or "never",
            t["state"] if t["state"] != "revoked" else f"revoked {t['revoked_at']}",
        )
    Console().print(table)


def token_revoke(name: Annotated[str, typer.Argument(help="The token's name")]) -> None:
    """Revoke every live token of that name: refused (401) from its next request, its open
    event streams end within seconds; its searches, results and marks are kept."""
    settings = load_settings()
    with prepared_database(settings) as db, connect_sync(db.url) as conn:
        revoked = revoke_tokens(conn, name)
    if not revoked:
        typer.echo(f"no live token named {name!r}", err=True)
        raise typer.Exit(1)
    typer.echo(f"revoked {revoked} token{'s' if revoked != 1 else ''} named {name!r}")
