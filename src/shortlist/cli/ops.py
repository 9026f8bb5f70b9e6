"""Process commands: serve, worker, migrate, simulator, token create."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from shortlist.auth import Role, create_token
from shortlist.config import Settings, get_settings
from shortlist.db.pool import connect
from shortlist.runtime import (
    WORKER_KINDS,
    QuietServer,
    install_stop_signals,
    prepared_database,
    run_until_stopped,
    worker_runners,
)
from shortlist.sources.factory import with_simulator

log = logging.getLogger("shortlist")


def register(app: typer.Typer, token_app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(worker)
    app.command()(migrate)
    app.command()(simulator)
    token_app.command("create")(token_create)


def _settings(data_dir: Path | None = None) -> Settings:
    settings = get_settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    from shortlist.cli import setup_logging

    setup_logging(settings.log_level)
    return settings


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
    """API + web UI (+ the workers in-process, + the simulator on the embedded default)."""
    settings = _settings(data_dir)
    updates: dict[str, object] = {}
    if host:
        updates["host"] = host
    if port:
        updates["port"] = port
    settings = settings.model_copy(update=updates)
    with prepared_database(settings) as db:
        asyncio.run(_serve(settings, db.url, workers=not no_workers))


async def _serve(settings: Settings, url: str, *, workers: bool) -> None:
    import uvicorn

    from shortlist.api.app import create_app
    from shortlist.services import open_services

    stop = asyncio.Event()
    install_stop_signals(stop)
    sim_server: QuietServer | None = None
    if settings.talent_api_url is None or settings.serp_api_url is None:
        sim_server = _simulator_server(settings)
        settings = with_simulator(settings, f"http://127.0.0.1:{settings.simulator_port}")
    sim_task = asyncio.create_task(sim_server.serve()) if sim_server else None
    async with open_services(settings, url) as services:
        warm_up = getattr(services.embedder, "warm_up", None)
        if warm_up is not None:
            # Load the model before the first request, not during it.
            await asyncio.to_thread(warm_up)
        if settings.load_sample_data:
            from shortlist.samples import load_samples_if_empty

            await load_samples_if_empty(services)
        app = create_app(services)
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            log_level=settings.log_level.lower(),
            proxy_headers=False,  # client IPs: shortlist.api.clientip, trusted proxies only
            access_log=False,
            # Open result streams (SSE) would otherwise hold a shutdown until their search ends.
            timeout_graceful_shutdown=3,
        )
        api = QuietServer(config)
        api_task = asyncio.create_task(api.serve())
        runners = worker_runners(services, set(WORKER_KINDS)) if workers else []
        log.info("shortlist serving on http://%s:%d", settings.host, settings.port)
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
    if sim_server is not None and sim_task is not None:
        sim_server.should_exit = True
        await sim_task


def _simulator_server(settings: Settings) -> QuietServer:
    import uvicorn

    from shortlist.simulator import SimulatorConfig, create_simulator_app

    sim_app = create_simulator_app(SimulatorConfig(time_scale=settings.simulator_time_scale))
    config = uvicorn.Config(
        sim_app,
        host="127.0.0.1",
        port=settings.simulator_port,
        log_level="warning",
        access_log=False,
    )
    return QuietServer(config)


def worker(
    only: Annotated[
        str | None,
        typer.Option(help="Comma-separated subset of: indexer,backfill,reaper (default all)"),
    ] = None,
) -> None:
    """Run queue workers only (no HTTP), for scaling out against one PostgreSQL."""
    from pydantic import ValidationError

    from shortlist.sources.factory import SourcesNotConfigured

    try:
        settings = _settings()
    except ValidationError as exc:
        _fail_start(f"invalid configuration: {_first_error(exc)}")
    kinds = set(WORKER_KINDS)
    if only:
        kinds = {k.strip() for k in only.split(",") if k.strip()}
        unknown = kinds - set(WORKER_KINDS)
        if unknown:
            raise typer.BadParameter(f"unknown worker kinds: {', '.join(sorted(unknown))}")
    try:
        with prepared_database(settings) as db:
            asyncio.run(_worker(settings, db.url, kinds))
    except SourcesNotConfigured as exc:
        _fail_start(str(exc))


def _first_error(exc: Exception) -> str:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError) and exc.errors():
        err = exc.errors()[0]
        name = "SHORTLIST_" + "_".join(str(p) for p in err["loc"]).upper()
        return f"{name}: {err['msg']}"
    return str(exc)


def _fail_start(message: str) -> NoReturn:
    """Misconfiguration: one clear line on stderr and a non-zero exit, never a traceback."""
    typer.echo(f"shortlist: {message}", err=True)
    raise typer.Exit(2)


async def _worker(settings: Settings, url: str, kinds: set[str]) -> None:
    from shortlist.services import open_services

    stop = asyncio.Event()
    install_stop_signals(stop)
    simulator = None
    if "backfill" in kinds and (settings.talent_api_url is None or settings.serp_api_url is None):
        # As the README says: unset = the bundled simulator, here on a free loopback port of
        # this process (a `serve` on the same machine already holds the configured one).
        from shortlist.simulator import SimulatorConfig, SimulatorServer

        simulator = SimulatorServer(SimulatorConfig(time_scale=settings.simulator_time_scale))
        settings = with_simulator(settings, simulator.start())
        log.info(
            "no provider URL set: backfill uses the bundled simulator at %s", simulator.base_url
        )
    try:
        async with open_services(settings, url) as services:
            await run_until_stopped(worker_runners(services, kinds), stop, settings.shutdown_grace)
    finally:
        if simulator is not None:
            simulator.stop()


def migrate() -> None:
    """Apply schema migrations (idempotent; safe when several processes start at once)."""
    settings = _settings()
    with prepared_database(settings):
        pass
    typer.echo("migrations applied")


def simulator(
    port: Annotated[int | None, typer.Option(help="Port [SHORTLIST_SIMULATOR_PORT]")] = None,
    time_scale: Annotated[
        float | None, typer.Option(help="Latency multiplier [SHORTLIST_SIMULATOR_TIME_SCALE]")
    ] = None,
) -> None:
    """The external talent-API simulator on its own."""
    settings = _settings()
    updates: dict[str, object] = {}
    if port is not None:
        updates["simulator_port"] = port
    if time_scale is not None:
        updates["simulator_time_scale"] = time_scale
    settings = settings.model_copy(update=updates)
    server = _simulator_server(settings)

    async def run() -> None:
        stop = asyncio.Event()
        install_stop_signals(stop)
        task = asyncio.create_task(server.serve())
        await asyncio.wait([task, asyncio.create_task(stop.wait())], return_when="FIRST_COMPLETED")
        server.should_exit = True
        await task

    asyncio.run(run())


def token_create(
    name: Annotated[str, typer.Argument(help="Who the token is for")],
    role: Annotated[Role, typer.Option(help="company | recruiter | admin")],
) -> None:
    """Create an API token; it is printed once, alone on the last line."""
    settings = _settings()
    with prepared_database(settings) as db, connect(db.url) as conn:
        principal, token = create_token(conn, name, role)
    typer.echo(f"created {principal.role.value} token #{principal.token_id} for {name!r}")
    typer.echo(token)
