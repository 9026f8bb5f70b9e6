"""The life of a process for ``shortlist serve`` and ``shortlist worker``: its database
(external, or the embedded one started on demand), its stop signals, its HTTP servers and its
worker coroutines. What the process is made of is ``shortlist.bootstrap``'s.

One asyncio loop holds the HTTP server(s), the queue workers and, on the embedded default,
the talent-API simulator. SIGINT/SIGTERM set one stop event; shutdown then runs in order:
stop accepting requests → let workers finish the work they started (each worker enforces
``SHORTLIST_SHUTDOWN_GRACE``) → stop the simulator → close the pool → release the embedded
PostgreSQL. Work that has started is never cut in half (see ``shortlist.queue.worker``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import uvicorn

from shortlist.bootstrap import Runner
from shortlist.config import Settings, index_build_overrides
from shortlist.db.embedded import EmbeddedServer
from shortlist.db.migrate import migrate
from shortlist.errors import StartupError
from shortlist.listings import rates
from shortlist.queue.worker import RELEASE_TIMEOUT

log = logging.getLogger(__name__)

EMBEDDED_DATABASE = "shortlist"


# How often a process using the embedded server checks that it is still running.
SUPERVISE_EVERY = 0.5


@dataclass
class Database:
    url: str
    embedded: EmbeddedServer | None = None

    def close(self) -> None:
        if self.embedded is not None:
            self.embedded.close()
            self.embedded = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def open_database(settings: Settings) -> Database:
    """The configured PostgreSQL, or the embedded one in the data dir (started on demand).
    Raises :class:`StartupError` when it cannot be reached or started."""
    if settings.database_url:
        return Database(settings.database_url)
    try:
        server = EmbeddedServer(settings.data_dir, shared_buffers=settings.embedded_shared_buffers)
    except Exception as exc:
        raise StartupError(
            f"cannot start the embedded PostgreSQL in {settings.data_dir}: {_first_line(exc)}"
        ) from exc
    db = Database(server.url(EMBEDDED_DATABASE), server)
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)
            ).fetchone()
            if not exists:
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(f"CREATE DATABASE {EMBEDDED_DATABASE}")
    except BaseException:
        db.close()
        raise
    return db


@contextlib.contextmanager
def prepared_database(settings: Settings, *, retune: bool = False) -> Iterator[Database]:
    """The process's database, migrated (``retune``: vector indexes that no longer fit their
    table rebuilt, see ``shortlist.db.vector_index``); released on exit (the last process using
    the embedded server stops it). Start-up failures raise :class:`StartupError`."""
    db = open_database(settings)
    try:
        try:
            migrate(db.url, index_build=index_build_overrides(settings), retune=retune)
            rates.seed_bundled(db.url)
        except psycopg.OperationalError as exc:
            raise StartupError(f"database unreachable: {_first_line(exc)}") from exc
        except psycopg.Error as exc:
            raise StartupError(f"migration failed: {_first_line(exc)}") from exc
        yield db
    finally:
        db.close()


async def supervise_database(db: Database, stop: asyncio.Event) -> None:
    """While this process runs, restart the embedded server if it dies (crash recovery from
    the WAL keeps everything committed). External databases are someone else's to run."""
    server = db.embedded
    if server is None:
        return
    down = False
    while not stop.is_set():
        try:
            restarted = await asyncio.to_thread(server.ensure_running)
        except Exception as exc:
            if not down:
                log.error("embedded PostgreSQL is down and did not restart yet: %s", exc)
            down = True
        else:
            if restarted:
                log.warning("embedded PostgreSQL had stopped; restarted it (crash recovery)")
            elif down:
                log.warning("embedded PostgreSQL is running again")
            down = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), SUPERVISE_EVERY)


def bind_socket(host: str, port: int, what: str) -> socket.socket:
    """A listening socket, bound before anything else starts, so a port that is taken ends the
    process at once with one line (:class:`StartupError`), with nothing to clean up."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _name, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise StartupError(f"cannot listen on {host}:{port} for {what}: {exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else str(exc)
        raise StartupError(f"cannot listen on {host}:{port} for {what}: {reason}") from exc
    sock.set_inheritable(True)
    return sock


def exit_on_sigterm() -> None:
    """Until the event loop takes the signals over: SIGTERM unwinds the process like Ctrl-C
    does (so the embedded server it started is released) instead of killing it outright."""

    def handler(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def install_stop_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


class QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to us: one stop event governs the whole process."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def run_until_stopped(runners: list[Runner], stop: asyncio.Event, grace: float) -> None:
    """Run worker coroutines until ``stop``; each drains its work within ``grace`` (its
    ``WorkerConfig.grace``). A worker that dies stops the process: it would otherwise go on
    serving without the work it was started for."""
    tasks = [asyncio.create_task(r(stop)) for r in runners]
    if not tasks:
        await stop.wait()
        return
    stop_wait = asyncio.create_task(stop.wait())
    await asyncio.wait([*tasks, stop_wait], return_when=asyncio.FIRST_COMPLETED)
    for t in tasks:
        if t.done() and not t.cancelled() and t.exception() is not None:
            log.error("a worker died", exc_info=t.exception())
    stop.set()
    # Workers end on their own within the grace; this bound only catches one that does not.
    _done, still = await asyncio.wait(tasks, timeout=grace + RELEASE_TIMEOUT + 5.0)
    if still:
        log.warning("%d workers did not stop within their grace; cancelling", len(still))
        for t in still:
            t.cancel()
        await asyncio.wait(still)
    stop_wait.cancel()
