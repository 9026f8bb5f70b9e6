"""``shortlist embeddings migrate | status | cancel``: changing the embedding model without
downtime (shortlist.indexer.migration)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from shortlist.bootstrap import open_command_pool
from shortlist.cli.common import connect, load_settings
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.embedding.factory import make_space_embedder
from shortlist.indexer import migration
from shortlist.indexer.migration import ModelMigrationError, ModelRequest
from shortlist.runtime import prepared_database

T = TypeVar("T")


class EmbedderKind(StrEnum):
    local = "local"
    openai = "openai"


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate_command)
    app.command("status")(status_command)
    app.command("cancel")(cancel_command)


def _run(call: Callable[[Settings, str, AsyncPool], Awaitable[T]]) -> T:
    """``call`` against the configured database; a step that cannot be done ends the command
    with one line and exit status 1."""
    settings = load_settings()

    async def run(url: str) -> T:
        async with open_command_pool(url, name="shortlist-embeddings") as pool:
            return await call(settings, url, pool)

    try:
        with prepared_database(settings) as db:
            return asyncio.run(run(db.url))
    except ModelMigrationError as exc:
        typer.echo(f"shortlist: {exc}", err=True)
        raise typer.Exit(1) from exc


def migrate_command(
    embedder: Annotated[EmbedderKind, typer.Option("--embedder", help="local | openai")],
    model: Annotated[str, typer.Option("--model", help="The model's name at the provider")],
    dim: Annotated[int, typer.Option("--dim", help="Dimension of its vectors")],
    url: Annotated[
        str | None,
        typer.Option("--url", help="OpenAI-compatible base URL [SHORTLIST_EMBEDDER_URL]"),
    ] = None,
) -> None:
    """Register a new embedding model and return: the workers embed both corpora into it while
    search goes on with the active one, and switch to it once it covers every row. The key is
    SHORTLIST_EMBEDDER_API_KEY, never stored."""
    request = ModelRequest(kind=embedder.value, model=model, dim=dim, url=url)

    async def call(settings: Settings, db_url: str, pool: AsyncPool) -> str:
        space = await migration.register(
            pool, db_url, request, lambda s: make_space_embedder(s, settings)
        )
        return f"building embedding model {space.label} ({space.dim}-d) as space {space.id}"

    typer.echo(_run(call))
    typer.echo("progress: shortlist embeddings status; stop: shortlist embeddings cancel")


def status_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
) -> None:
    """The active model and, during a build, the new model's coverage of each corpus."""

    async def call(_settings: Settings, db_url: str, _pool: AsyncPool) -> dict[str, Any]:
        async with await connect(db_url) as conn:
            return await migration.status(conn)

    report = _run(call)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    active = report["active"]
    typer.echo(f"active:   {active['kind']}:{active['model']} ({active['dim']}-d)")
    building = report["building"]
    if building is None:
        typer.echo("building: none")
        return
    shares = ", ".join(f"{table} {share:.1%}" for table, share in building["coverage"].items())
    typer.echo(
        f"building: {building['kind']}:{building['model']} ({building['dim']}-d), covers {shares}"
    )


def cancel_command() -> None:
    """Stop the build of a new embedding model; its vectors are dropped."""

    async def call(_settings: Settings, db_url: str, pool: AsyncPool) -> str:
        space = await migration.cancel(pool, db_url)
        if space is None:
            return "no embedding model is being built"
        return f"cancelled the build of {space.label} ({space.dim}-d)"

    typer.echo(_run(call))
