"""A real shortlist server for browser and chaos tests.

:class:`LiveServer` runs, in one background thread with its own event loop, exactly what
``shortlist serve`` runs: ``create_app(services)`` under uvicorn on a free loopback port, plus
the queue workers (indexer, backfill, reaper) on the same loop, against a test database. The
external sources are a :class:`~shortlist.simulator.SimulatorServer` (its own thread) at a small
time scale, so the seed's production behaviour — slow enrichment, hanging discovery, 5xx, 429,
people without e-mail — plays out in seconds. The embedder is ``FakeEmbedder`` unless given.

Use as a context manager anywhere (``with LiveServer(db_url) as server: ...``), or through the
pytest fixtures at the bottom (``pytest_plugins = ["tests.live_server"]``):

* ``live_server`` — a started server with the defaults;
* ``live_server_factory`` — ``start(settings_overrides=..., simulator=SimulatorConfig(...),
  workers={"indexer", "backfill"}, ...)`` for anything else; stopped at teardown.

From the test thread, run coroutines on the server's loop with :meth:`LiveServer.call` (e.g.
to touch ``services``), or use the sync helpers (:meth:`token`, :meth:`sql`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any, TypeVar

import psycopg
import pytest
import uvicorn
from psycopg.rows import dict_row

from shortlist.accounts import store
from shortlist.accounts.passwords import hash_password
from shortlist.api.app import create_app
from shortlist.auth import OrgKind, OrgRole, Role, create_token
from shortlist.bootstrap import WORKER_KINDS, Services, build_workers, open_services
from shortlist.config import Settings
from shortlist.embedding.base import Embedder
from shortlist.errors import NotFound
from shortlist.runtime import QuietServer, run_until_stopped
from shortlist.simulator import SimulatorConfig, SimulatorServer
from tests.fakes import FakeEmbedder

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_TIME_SCALE = 0.02
PASSWORD = "correct horse battery staple"
"""The password of the people :meth:`LiveServer.person` makes."""
"""Enrichment ~0.16 s, discovery ~30 ms, a first-attempt hang 1.8 s (seed: 8 s, 1.5 s, 90 s)."""


def fast_settings(db_url: str, sim_url: str | None, time_scale: float) -> dict[str, Any]:
    """Settings whose timeouts and delays shrink with the simulator's time scale, so the
    worker/provider timing relations stay those of production."""
    scaled = max(time_scale, 0.001)
    values: dict[str, Any] = {
        "database_url": db_url,
        "load_sample_data": False,
        "search_rate_limit": 0,
        "indexer_poll_interval": 0.5,
        "indexer_backoff_base": 0.2,
        "indexer_backoff_max": 1.0,
        "discovery_timeout": max(0.5, 60.0 * scaled),
        "enrichment_timeout": max(0.5, 45.0 * scaled),
        "retry_delay": 5.0 * scaled,
        "reaper_interval": 0.5,
        "lease_seconds": 30.0,
        "shutdown_grace": 2.0,
    }
    if sim_url is not None:
        values["talent_api_url"] = sim_url
        values["serp_api_url"] = sim_url
        # The browser tests script the generic dialect's people (talent:<username>); the
        # vendor dialects have end-to-end tests of their own (tests/test_vendor_backfill.py).
        values["talent_api"] = "generic"
        values["serp_api"] = "generic"
    return values


class _Server(QuietServer):
    """Reports the end of start-up to the thread that started it."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


class LiveServer:
    """The API + web UI + workers on a free loopback port (see the module docstring)."""

    def __init__(
        self,
        db_url: str,
        *,
        settings_overrides: Mapping[str, Any] | None = None,
        simulator: SimulatorConfig | None = None,
        use_simulator: bool = True,
        embedder: Embedder | None = None,
        workers: set[str] | None = None,
        pool_max: int = 10,
        worker_pool_max: int | None = None,
    ) -> None:
        """``worker_pool_max``: the workers get their own pool of that size, as in ``serve``
        (``SHORTLIST_DB_WORKER_POOL_MAX``); None: they share the API's."""
        self.db_url = db_url
        self.simulator_config = simulator or SimulatorConfig(time_scale=DEFAULT_TIME_SCALE)
        self.use_simulator = use_simulator
        self.simulator: SimulatorServer | None = None
        self.settings_overrides = dict(settings_overrides or {})
        self.embedder: Embedder = embedder or FakeEmbedder()
        self.workers = set(WORKER_KINDS) if workers is None else set(workers)
        unknown = self.workers - set(WORKER_KINDS)
        if unknown:
            raise ValueError(f"unknown worker kinds: {sorted(unknown)}")
        self.pool_max = pool_max
        self.worker_pool_max = worker_pool_max
        self.settings: Settings | None = None
        self.services: Services | None = None
        self.base_url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._services_ready = threading.Event()
        self._drained = threading.Event()

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> LiveServer:
        if self._thread is not None:
            raise RuntimeError("live server already started")
        sim_url = None
        if self.use_simulator:
            self.simulator = SimulatorServer(self.simulator_config)
            sim_url = self.simulator.start()
        values = fast_settings(self.db_url, sim_url, self.simulator_config.time_scale)
        values.update(self.settings_overrides)
        self.settings = Settings(**values)

        # Bound here, on port 0, so there is no window between choosing a port and using it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        port = sock.getsockname()[1]

        def run() -> None:
            try:
                asyncio.run(self._main(sock))
            except asyncio.CancelledError:
                log.warning("live server cancelled while shutting down")
            except BaseException as exc:  # SystemExit from a failed uvicorn start-up included
                self._error = exc
                log.exception("live server died")
            finally:
                sock.close()
                self._services_ready.set()
                if self._server is not None:
                    self._server.ready.set()

        self._thread = threading.Thread(target=run, name=f"live-server-{port}", daemon=True)
        self._thread.start()
        if not self._services_ready.wait(timeout) or self._server is None:
            self.stop()
            raise RuntimeError(f"live server failed to start: {self._error!r}")
        if not self._server.ready.wait(timeout) or not self._server.started:
            self.stop()
            raise RuntimeError(f"live server failed to start: {self._error!r}")
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def _main(self, sock: socket.socket) -> None:
        assert self.settings is not None
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with open_services(
            self.settings,
            self.db_url,
            embedder=self.embedder,
            pool_max=self.pool_max,
            worker_pool_max=self.worker_pool_max if self.workers else None,
            with_sources="backfill" in self.workers,
        ) as services:
            self.services = services
            config = uvicorn.Config(
                create_app(services),
                log_level="warning",
                log_config=None,
                access_log=False,
                lifespan="off",
                loop="asyncio",
                # Open SSE streams must not hold shutdown up.
                timeout_graceful_shutdown=1,
            )
            self._server = _Server(config)
            self._services_ready.set()
            runners = build_workers(services, self.workers)
            workers = asyncio.create_task(
                run_until_stopped(runners, self._stop, self.settings.shutdown_grace)
            )
            api = asyncio.create_task(self._server.serve(sockets=[sock]))
            stop = asyncio.create_task(self._stop.wait())
            await asyncio.wait([api, workers, stop], return_when=asyncio.FIRST_COMPLETED)
            self._stop.set()
            self._server.should_exit = True
            await asyncio.gather(workers, api, return_exceptions=True)
            stop.cancel()
            self._drained.set()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the server and workers (idempotent), then the simulator.

        The simulator's forced behaviour is reset and hung provider calls are released first,
        so workers finish within their grace period;
        anything still running after that (and ``timeout`` more seconds) is cancelled.
        """
        thread = self._thread
        if thread is not None:
            if self.simulator is not None:
                # Forced hangs would catch the workers' retries again: forget them, release all.
                with contextlib.suppress(Exception):
                    self.simulator.reset()
                self.simulator.state.release_hangs()
            grace = self.settings.shutdown_grace if self.settings is not None else 5.0
            self._on_loop(lambda: self._stop.set() if self._stop is not None else None)
            self._drained.wait(grace + 2.0)
            thread.join(2.0 if timeout is None else timeout)
            if thread.is_alive():
                # Something ignored the orderly stop: cancel every task and let it unwind.
                log.warning("live server did not stop in time; cancelling its tasks")
                if self._server is not None:
                    self._server.force_exit = True
                self._on_loop(self._cancel_all)
                thread.join(10.0)
            self._thread = None
        if self.simulator is not None:
            self.simulator.stop()
            self.simulator = None

    def _on_loop(self, callback: Callable[[], Any]) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(callback)

    @staticmethod
    def _cancel_all() -> None:
        current = asyncio.current_task()
        for task in asyncio.all_tasks():
            if task is not current:
                task.cancel()

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- helpers for the test thread -------------------------------------------------------

    def call(self, factory: Callable[[], Coroutine[Any, Any, T]], timeout: float = 30.0) -> T:
        """Run ``factory()`` on the server's event loop (where ``services`` lives); wait."""
        if self._loop is None or not self.alive:
            raise RuntimeError("live server is not running")
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(
            factory(), self._loop
        )
        return future.result(timeout)

    def url(self, path: str) -> str:
        return self.base_url + path

    def sql(self, query: str, params: Any = None) -> list[dict[str, Any]]:
        """Run one statement on a connection of its own (committed); returns its rows."""
        with psycopg.connect(self.db_url, row_factory=dict_row, autocommit=True) as conn:
            cur = conn.execute(query, params)
            return list(cur.fetchall()) if cur.description else []

    def person(
        self,
        email: str,
        org: str,
        role: str = "recruiter",
        *,
        kind: str = "recruiting",
        totp_secret: str | None = None,
        password: str = PASSWORD,
    ) -> int:
        """A person with ``password`` (and a TOTP second factor when ``totp_secret``), a
        member of ``org`` (made of ``kind`` on first use) with ``role``; their user id."""

        async def make() -> int:
            assert self.services is not None
            async with self.services.pool.connection() as conn:
                try:
                    found = await store.org_by_name(conn, org)
                except NotFound:
                    found = await store.create_org(conn, org, OrgKind(kind))
                user = await store.create_user(
                    conn, email, password_hash=await hash_password(password), verified=True
                )
                await store.add_member(conn, user.id, found.id, OrgRole(role))
                if totp_secret is not None:
                    await conn.execute(
                        "UPDATE users SET totp_secret = %s, totp_enabled_at = now() WHERE id = %s",
                        (totp_secret, user.id),
                    )
                await conn.commit()
                return user.id

        return self.call(make)

    def token(self, name: str, role: Role | str) -> str:
        """A new API token (plain text) of ``role``."""
        with psycopg.connect(self.db_url, row_factory=dict_row) as conn:
            _principal, token = create_token(conn, name, Role(role))
        return token


# --- pytest fixtures ---------------------------------------------------------------------------


@pytest.fixture
def live_server_factory(db_url: str) -> Iterator[Callable[..., LiveServer]]:
    """``start(**kwargs)`` → a started :class:`LiveServer` on this test's database."""
    started: list[LiveServer] = []

    def start(**kwargs: Any) -> LiveServer:
        server = LiveServer(kwargs.pop("db_url", db_url), **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture
def live_server(live_server_factory: Callable[..., LiveServer]) -> LiveServer:
    return live_server_factory()
