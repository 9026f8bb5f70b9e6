"""The ``shortlist`` command (typer + rich), grouped by what the user does: ``run`` (serve,
worker, migrate, simulator), ``ingest`` (loading data), ``search``, ``admin`` (status, reindex,
tokens). A configuration that cannot work ends every command with one line and exit status 2."""

from __future__ import annotations

import os
import sys

import typer

from shortlist.errors import ConfigError, StartupError
from shortlist.heap import cap_malloc_arenas, fix_mmap_threshold


def build_app() -> typer.Typer:
    """The whole command tree (a new one per call, so tests can drive it)."""
    # Imported here, not at the top: main() caps malloc's arenas before the commands' imports
    # (numpy, the model runtime) start threads.
    from shortlist.cli import (
        accounts,
        admin,
        alerts,
        embeddings,
        ingest,
        privacy,
        rates,
        run,
        search,
        sources,
        webhooks,
    )

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
    embeddings_app = typer.Typer(
        help="Change the embedding model without downtime.", no_args_is_help=True
    )
    app.add_typer(ingest_app, name="ingest")
    app.add_typer(search_app, name="search")
    app.add_typer(token_app, name="token")
    app.add_typer(embeddings_app, name="embeddings")
    privacy_app = typer.Typer(help="A person's data: erasure on request.", no_args_is_help=True)
    app.add_typer(privacy_app, name="privacy")
    sources_app = typer.Typer(
        help="Job sources: ATS boards and careers sites.", no_args_is_help=True
    )
    app.add_typer(sources_app, name="sources")
    sources.register(sources_app)
    run.register(app)
    ingest.register(ingest_app)
    search.register(search_app)
    admin.register(app, token_app)
    embeddings.register(embeddings_app)
    privacy.register(app, privacy_app)
    org_app = typer.Typer(help="Organisations.", no_args_is_help=True)
    user_app = typer.Typer(help="People: invitations, the list, disabling.", no_args_is_help=True)
    intake_app = typer.Typer(help="Companies' e-mail intake addresses.", no_args_is_help=True)
    app.add_typer(org_app, name="org")
    app.add_typer(user_app, name="user")
    app.add_typer(intake_app, name="intake")
    accounts.register(org_app, user_app, intake_app)
    rates_app = typer.Typer(help="Reference exchange rates.", no_args_is_help=True)
    app.add_typer(rates_app, name="rates")
    rates.register(rates_app)
    alerts_app = typer.Typer(help="Saved searches that alert.", no_args_is_help=True)
    app.add_typer(alerts_app, name="alerts")
    alerts.register(alerts_app)
    webhooks_app = typer.Typer(help="Webhook endpoints.", no_args_is_help=True)
    app.add_typer(webhooks_app, name="webhooks")
    webhooks.register(webhooks_app)
    return app


def main() -> None:
    cap_malloc_arenas()  # before any thread allocates
    fix_mmap_threshold()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        build_app()()
    except ConfigError as exc:
        print(f"shortlist: {exc}", file=sys.stderr)
        sys.exit(2)
    except StartupError as exc:
        print(f"shortlist: {exc}", file=sys.stderr)
        sys.exit(1)
