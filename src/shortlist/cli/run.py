"""Running shortlist: ``serve``, ``worker``, ``migrate``, ``simulator``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from shortlist.accounts.setup import setup_link_if_nobody
from shortlist.bootstrap import (
    WORKER_KINDS,
    Runner,
    Services,
    bounce_sink,
    build_workers,
    bundled_simulator,
    load_samples_if_empty,
    open_services,
    simulator_app,
    with_simulator,
)
from shortlist.cli.common import load_settings
from shortlist.config import Settings
from shortlist.errors import ConfigError, StartupError
from shortlist.listings.mail.smtp import DEFAULT_PORT as DEFAULT_SMTP_PORT
from shortlist.listings.mail.smtp import serve_intake
from shortlist.runtime import (
    Database,
    QuietServer,
    bind_socket,
    exit_on_sigterm,
    install_stop_signals,
    prepared_database,
    run_until_stopped,
    supervise_database,
)

log = logging.getLogger("shortlist")

# Where ``shortlist simulator`` listens when SHORTLIST_SIMULATOR_PORT is unset (in ``serve``,
# the in-process simulator takes a free port instead).
DEFAULT_SIMULATOR_PORT = 8001


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(worker)
    app.command()(migrate)
    app.command()(simulator)
    app.command()(mail)


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address [SHORTLIST_HOST]")] = None,
    port: Annotated[int | None, typer.Option(help="Port [SHORTLIST_PORT]")] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Embedded database dir [SHORTLIST_DATA_DIR]")
    ] = None,
    no_workers: Annotated[
        bool, typer.Option("--no-workers", help="API only; run `shortlist worker` elsewhere")
    ] = False,
) -> None:
    """API + web UI (+ the workers in-process, + the simulator on the embedded default when
    the workers run here)."""
    exit_on_sigterm()
    settings = load_settings(host=host, port=port, data_dir=data_dir)
    with contextlib.ExitStack() as sockets:
        # Ports first: one that is taken ends the command before anything else starts.
        api_sock = sockets.enter_context(
            bind_socket(settings.host, settings.port, "the API (SHORTLIST_PORT)")
        )
        smtp_sock: socket.socket | None = None
        if settings.smtp_port is None:
            with contextlib.suppress(StartupError):
                smtp_sock = sockets.enter_context(_bind_smtp(settings))
            if smtp_sock is None:
                log.warning(
                    "mail intake not started: %s:%d is taken (SHORTLIST_SMTP_PORT chooses a port,"
                    " 0 none)",
                    settings.smtp_host,
                    DEFAULT_SMTP_PORT,
                )
        elif settings.smtp_port:
            smtp_sock = sockets.enter_context(_bind_smtp(settings))
        sim_sock: socket.socket | None = None
        # Only the workers call the vendors: an API-only process starts no simulator (its
        # population alone is ~500 MB); `shortlist worker` starts its own where it runs.
        if not no_workers and (settings.talent_api_url is None or settings.serp_api_url is None):
            sim_sock = sockets.enter_context(
                bind_socket(
                    "127.0.0.1",
                    settings.simulator_port or 0,
                    "the bundled simulator (SHORTLIST_SIMULATOR_PORT)",
                )
            )
        with prepared_database(settings) as db:
            asyncio.run(
                _serve(settings, db, api_sock, sim_sock, workers=not no_workers, smtp=smtp_sock)
            )


def _bind_smtp(settings: Settings) -> socket.socket:
    port = DEFAULT_SMTP_PORT if settings.smtp_port is None else settings.smtp_port
    return bind_socket(settings.smtp_host, port, "the mail intake (SHORTLIST_SMTP_PORT)")


async def _serve(
    settings: Settings,
    db: Database,
    api_sock: socket.socket,
    sim_sock: socket.socket | None,
    *,
    workers: bool,
    smtp: socket.socket | None = None,
) -> None:
    # FastAPI, the routes and the pages load only in a process that serves HTTP (not `worker`).
    from shortlist.api.app import create_app

    stop = asyncio.Event()
    install_stop_signals(stop)
    supervisor = asyncio.create_task(supervise_database(db, stop))
    sim_server: QuietServer | None = None
    sim_task: asyncio.Task[None] | None = None
    if sim_sock is not None:
        sim_url = f"http://127.0.0.1:{sim_sock.getsockname()[1]}"
        settings = with_simulator(settings, sim_url)
        sim_server = _simulator_server(settings)
        log.info(
            "demo job sources on the bundled simulator: `shortlist sources add"
            " greenhouse:shortlist-demo`, or %s/demo/careers",
            sim_url,
        )
        sim_task = asyncio.create_task(sim_server.serve(sockets=[sim_sock]))
    try:
        async with open_services(
            settings,
            db.url,
            with_sources=workers,
            worker_pool_max=settings.db_worker_pool_max if workers else None,
            statement_timeout=settings.statement_timeout,
        ) as services:
            # Load the model before the first request, not during it.
            await asyncio.to_thread(services.embedder.warm_up)
            if settings.load_sample_data and not stop.is_set():
                await load_samples_if_empty(services)
            app = create_app(services)
            config = uvicorn.Config(
                app,
                log_level=settings.log_level.lower(),
                proxy_headers=False,  # client IPs: shortlist.api.clientip, trusted proxies only
                access_log=False,
                # uvicorn's own loggers propagate to the root handler, whose formatter redacts
                # (shortlist.redact): a traceback it logs passes the redactor too.
                log_config=None,
                # Open result streams (SSE) would otherwise hold a shutdown until their search
                # ends.
                timeout_graceful_shutdown=3,
            )
            api = QuietServer(config)
            api_task = asyncio.create_task(api.serve(sockets=[api_sock]))
            runners = build_workers(services, WORKER_KINDS) if workers else []
            if smtp is not None:
                runners.append(_intake_runner(services, smtp))
            log.info("shortlist serving on http://%s:%d", *api_sock.getsockname()[:2])
            served = settings
            if not settings.public_url:
                host, port = api_sock.getsockname()[:2]
                served = settings.model_copy(update={"public_url": f"http://{host}:{port}"})
            link = await setup_link_if_nobody(services.pool, served)
            if link is not None:
                log.warning("nobody has an account yet: create the first owner at %s", link)
            workers_task = asyncio.create_task(
                run_until_stopped(runners, stop, settings.shutdown_grace)
            )
            await asyncio.wait(
                [api_task, workers_task, asyncio.create_task(stop.wait())],
                return_when=asyncio.FIRST_COMPLETED,
            )
            stop.set()
            api.should_exit = True
            await workers_task
            await api_task
    finally:
        stop.set()
        if sim_server is not None and sim_task is not None:
            sim_server.should_exit = True
            await sim_task
        await supervisor


def _simulator_server(settings: Settings) -> QuietServer:
    return QuietServer(
        uvicorn.Config(simulator_app(settings), log_level="warning", access_log=False)
    )


def _intake_runner(services: Services, sock: socket.socket) -> Runner:
    bounces = bounce_sink(services)
    return lambda stop: serve_intake(sock, services.intake, services.settings, stop, bounces)


def mail() -> None:
    """The e-mail intake alone (SMTP on SHORTLIST_SMTP_HOST:PORT and its parse queue), for
    scaling out against one PostgreSQL."""
    exit_on_sigterm()
    settings = load_settings()
    if settings.smtp_port == 0:
        raise ConfigError("SHORTLIST_SMTP_PORT is 0 (no listener): set the port to listen on")
    with _bind_smtp(settings) as sock, prepared_database(settings) as db:
        asyncio.run(_mail(settings, db, sock))


async def _mail(settings: Settings, db: Database, sock: socket.socket) -> None:
    stop = asyncio.Event()
    install_stop_signals(stop)
    supervisor = asyncio.create_task(supervise_database(db, stop))
    try:
        async with open_services(settings, db.url) as services:
            runners = [*build_workers(services, {"mail"}), _intake_runner(services, sock)]
            await run_until_stopped(runners, stop, settings.shutdown_grace)
    finally:
        stop.set()
        await supervisor


def worker(
    only: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated subset of: indexer,backfill,reaper,mail,crawler,webhooks"
            " (default all)"
        ),
    ] = None,
) -> None:
    """Run queue workers only (no HTTP), for scaling out against one PostgreSQL."""
    exit_on_sigterm()
    settings = load_settings()
    kinds = set(WORKER_KINDS)
    if only:
        kinds = {k.strip() for k in only.split(",") if k.strip()}
        unknown = kinds - set(WORKER_KINDS)
        if unknown:
            raise typer.BadParameter(f"unknown worker kinds: {', '.join(sorted(unknown))}")
    with prepared_database(settings) as db:
        asyncio.run(_worker(settings, db, kinds))


async def _worker(settings: Settings, db: Database, kinds: set[str]) -> None:
    stop = asyncio.Event()
    install_stop_signals(stop)
    supervisor = asyncio.create_task(supervise_database(db, stop))
    # Unset provider URLs mean the bundled simulator, here on a free loopback port of this
    # process, as `serve` does.
    needed = bool(kinds & {"backfill", "crawler"})
    try:
        async with (
            bundled_simulator(settings, needed=needed) as settings,
            open_services(settings, db.url, with_sources="backfill" in kinds) as services,
        ):
            await run_until_stopped(build_workers(services, kinds), stop, settings.shutdown_grace)
    finally:
        stop.set()
        await supervisor


def migrate(
    retune: Annotated[
        bool,
        typer.Option(
            help="Also rebuild (CONCURRENTLY) each vector index that no longer fits its table's"
            " size: HNSW past 500k rows becomes IVFFlat, IVFFlat lists follow the row count"
        ),
    ] = False,
) -> None:
    """Apply schema migrations and build missing vector indexes (idempotent; safe when several
    processes start at once)."""
    settings = load_settings()
    with prepared_database(settings, retune=retune):
        pass
    checked = ", vector indexes checked against their tables" if retune else ""
    typer.echo("migrations applied" + checked)


def simulator(
    port: Annotated[int | None, typer.Option(help="Port [SHORTLIST_SIMULATOR_PORT]")] = None,
    time_scale: Annotated[
        float | None, typer.Option(help="Latency multiplier [SHORTLIST_SIMULATOR_TIME_SCALE]")
    ] = None,
) -> None:
    """The external talent-API simulator on its own."""
    settings = load_settings(simulator_port=port, simulator_time_scale=time_scale)
    sock = bind_socket(
        "127.0.0.1", settings.simulator_port or DEFAULT_SIMULATOR_PORT, "the simulator"
    )
    server = _simulator_server(settings)

    async def run() -> None:
        stop = asyncio.Event()
        install_stop_signals(stop)
        log.info("simulator serving on http://127.0.0.1:%d", sock.getsockname()[1])
        task = asyncio.create_task(server.serve(sockets=[sock]))
        await asyncio.wait([task, asyncio.create_task(stop.wait())], return_when="FIRST_COMPLETED")
        server.should_exit = True
        await task

    with sock:
        asyncio.run(run())
