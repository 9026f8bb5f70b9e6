"""Test harness: one embedded PostgreSQL per test process (``make test`` runs four), a migrated
template database, and a fresh database cloned from it (``CREATE DATABASE … TEMPLATE``) for
every test that touches SQL, cloned one test ahead and dropped one test behind on a thread of
its own (:class:`_Clones`). No state is shared between tests.

Scratch files (that server's data, ``tmp_path``, the chaos scenarios' data dirs, whatever the
``shortlist`` processes the tests start write to their temp dir) live in memory, on ``/dev/shm``,
when there is one with room: a clone creates about a thousand files, and creating a file on the
disk of the 2-core machine costs ~1 ms of kernel time (a clone ~0.35 s; on tmpfs ~0.02 s).
An explicit ``TMPDIR`` is kept.

Indexes built from packaged data — the gazetteer (``shortlist.places``, ~4 s of CPU) and the
simulator's population (~14 s) — are built at most once per test run (shortlist.derived): every
process of the run (pytest's, its xdist workers, the ``shortlist`` processes tests start) shares
one ``SHORTLIST_CACHE_DIR``, the product's default (the user's cache directory) unless one is
set: a run after the first on a machine loads them (:func:`_choose_cache`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher

from shortlist import derived
from shortlist.accounts import passwords
from shortlist.config import Settings, get_settings
from shortlist.db.embedded import EmbeddedServer
from shortlist.db.migrate import migrate
from shortlist.db.pool import open_async_pool
from shortlist.db.types import AsyncPool
from shortlist.listings import rates
from tests.helpers import FromFixture

# No network but loopback, and never a model download.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TEMPLATE_DB = "shortlist_template"
MEMORY_TMP = Path("/dev/shm")
MEMORY_TMP_MIN_FREE = 4 << 30
"""Room a test run needs there (each process's server, the databases of its running test)."""


def _use_memory_tmp() -> bool:
    """Scratch files in memory (module docstring). Runs at import, in pytest's main process and
    in each xdist worker, before ``tmp_path`` or any server is made; subprocesses inherit
    ``TMPDIR``. True: this process's scratch files are in memory."""
    if "TMPDIR" in os.environ:
        return Path(os.environ["TMPDIR"]).resolve() == MEMORY_TMP
    if not MEMORY_TMP.is_dir() or not os.access(MEMORY_TMP, os.W_OK):
        return False
    stat = os.statvfs(MEMORY_TMP)
    if stat.f_bavail * stat.f_frsize < MEMORY_TMP_MIN_FREE:
        return False
    os.environ["TMPDIR"] = str(MEMORY_TMP)
    tempfile.tempdir = str(MEMORY_TMP)
    return True


IN_MEMORY = _use_memory_tmp()
CLONE_STRATEGY = "FILE_COPY" if IN_MEMORY else "WAL_LOG"
"""How a test's database is cloned from the template. In memory, FILE_COPY: the template's
files are copied, not written page by page into the WAL (WAL_LOG, the default; ~9 MB of WAL per
test, which in memory would pile up to max_wal_size per process), and the checkpoint FILE_COPY
takes costs nothing on tmpfs. On disk that checkpoint per test would cost more than it saves."""

TEST_SERVER_SETTINGS = {"fsync": "off", "full_page_writes": "off"}
"""The test server's durability traded for speed, against an operating-system crash only: a
killed PostgreSQL still recovers everything it committed from the WAL in the page cache (tests
that kill it rely on that; ``synchronous_commit`` stays on so they can)."""


def _choose_cache() -> tuple[bool, Path | None]:
    """The derived-data cache of this run, chosen by pytest's main process (xdist workers and
    the processes tests start inherit ``SHORTLIST_CACHE_DIR``): the product's own default, the
    user's cache directory, whose files are named after everything they are built from, so a
    run loads what an earlier run or ``shortlist serve`` of the same code built (the population
    alone is ~14 s of CPU); a folder of this run's own, removed at its end, when that one is
    not usable. (True, None): this process chose the user's; (True, folder): its own."""
    if derived.ENV in os.environ:
        return False, None
    folder = derived.user_dir()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        usable = derived.trusted(folder.stat()) and os.access(folder, os.W_OK)
    except OSError:
        usable = False
    if usable:
        os.environ[derived.ENV] = str(folder)
        return True, None
    own = Path(tempfile.mkdtemp(prefix="shortlist-tests-cache-"))
    os.environ[derived.ENV] = str(own)
    return True, own


def _cheap_password_hashes() -> None:
    """This process's password hashes at Argon2id's least cost. The product's (shortlist.accounts.
    passwords: ~50 ms of CPU and 64 MB a hash, ~0.2 s on the loaded test machine) is what one
    sign-in should cost an attacker; the tests hash and verify passwords thousands of times, and
    what they check is that a password is hashed and verified, never the cost. The processes
    tests start (``shortlist serve``, workers) keep the product's."""
    hasher = PasswordHash((Argon2Hasher(time_cost=1, memory_cost=8, parallelism=1),))
    passwords._HASHER = hasher
    passwords._DUMMY_HASH = hasher.hash("shortlist: no such account")


_cheap_password_hashes()

_CHOSE_CACHE, _OWN_CACHE = _choose_cache()
"""Whether this process chose the run's cache (it then warms it), and the folder of this run's
own it made, if it had to (removed when the run ends)."""


_warming: subprocess.Popen[bytes] | None = None
_own_basetemp: Path | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """In the process that made the cache, when it runs workers (``-n``), fill it
    (tests/warm_cache.py) beside their start-up: the simulator's population first, which most
    integration tests' first simulator waits for."""
    global _warming, _own_basetemp
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        # tmp_path under a directory of this run's own: pytest's default root,
        # $TMPDIR/pytest-of-<user>, is set back to 0700 by every process that starts, so a
        # test's embedded PostgreSQL (run as its own user, which the wheel let through at its
        # start) could no longer reach its data dir when the test restarted it.
        _own_basetemp = Path(tempfile.mkdtemp(prefix="shortlist-pytest-"))
        config.option.basetemp = str(_own_basetemp / "t")
    workers = getattr(config.option, "numprocesses", None)
    if _CHOSE_CACHE and workers and not hasattr(config, "workerinput"):
        _warming = subprocess.Popen(
            [sys.executable, "-m", "tests.warm_cache"], cwd=Path(__file__).resolve().parent.parent
        )


E2E_DIR = Path(__file__).resolve().parent / "e2e"


def _is_long(item: pytest.Item) -> bool:
    """An end-to-end test, or one marked ``slow`` (a real model, processes, seconds of work)."""
    return E2E_DIR in item.path.parents or item.get_closest_marker("slow") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With workers, the long tests (end-to-end: processes, servers, browsers, leases; and those
    marked ``slow``) first in every worker's share, dealt out in turn. ``--dist worksteal``
    gives each worker a contiguous share of the collection (the first ``len // n``, the next
    ``rest // (n - 1)``, ...) and an idle one steals from the end of a busy one's queue: in
    collection order, one worker drew all of them, and the long ones it had not reached were
    stolen last, to run alone at the end (a whole suite took 320-400 s by where they fell)."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 0))
    if workers < 2:
        return
    first = [_is_long(item) for item in items]
    long = [item for item, is_long in zip(items, first, strict=True) if is_long]
    if not long:
        return
    rest = iter([item for item, is_long in zip(items, first, strict=True) if not is_long])
    ordered: list[pytest.Item] = []
    left = len(items)
    for k in range(workers):
        size = left // (workers - k)
        left -= size
        share = long[k::workers]
        ordered += share + [item for _, item in zip(range(size - len(share)), rest, strict=False)]
    ordered += list(rest)
    items[:] = ordered


def pytest_unconfigure(config: pytest.Config) -> None:
    if _warming is not None:
        _warming.kill()
        _warming.wait()
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)
    if _own_basetemp is not None:
        shutil.rmtree(_own_basetemp, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    root = Path(tempfile.mkdtemp(prefix="shortlist-test-pg-"))
    os.chmod(root, 0o755)
    server = EmbeddedServer(root, delete_on_close=True)
    with psycopg.connect(server.url(), autocommit=True) as conn:
        for name, value in TEST_SERVER_SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield server
    finally:
        clones = _clones.pop(server.url(), None)
        if clones is not None:
            clones.close()
        admin = _admin.pop(server.url(), None)
        if admin is not None:
            admin.close()
        server.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def template_url(pg_server: Any) -> str:
    admin = pg_server.url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB}")
        conn.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    url = pg_server.url(TEMPLATE_DB)
    migrate(url)
    rates.seed_bundled(url)
    return url


_admin: dict[str, psycopg.Connection[Any]] = {}
"""This process's connection to its server's maintenance database, by URL: one per process,
not two per test (a connection costs the server ~5 ms of CPU, the client ~1 ms)."""
_admin_lock = threading.Lock()
"""Held while that connection runs a statement: the clone thread (:class:`_Clones`) and the
test's own thread share it."""


def admin_execute(server: Any, statement: str) -> None:
    """Run ``statement`` (CREATE or DROP DATABASE) on ``server``'s maintenance database, on the
    connection this process keeps; a new one if that one broke (a test restarted the server)."""
    url = server.url()
    with _admin_lock:
        for attempt in (1, 2):
            conn = _admin.get(url)
            if conn is None or conn.closed or conn.broken:
                conn = _admin[url] = psycopg.connect(url, autocommit=True)
            try:
                conn.execute(statement)
                return
            except psycopg.OperationalError:
                broken = conn.broken
                conn.close()
                if attempt == 2 or not broken:
                    raise


class _Clones:
    """This process's test databases, cloned from the template one test ahead and dropped one
    test behind, on a thread of their own: a clone and a drop each wait ~0.1 s on the server
    (its checkpoint, a thousand files), which the test before and the test after then run
    beside instead of waiting for. One database stays ready; a used one is dropped while
    the next test runs."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="test-db-clones")
        self._ready: Future[str] | None = None

    def _clone(self) -> str:
        name = f"t_{uuid.uuid4().hex[:16]}"
        admin_execute(
            self.server, f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB} STRATEGY {CLONE_STRATEGY}"
        )
        return name

    def _drop(self, name: str) -> None:
        admin_execute(self.server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def take(self) -> str:
        """A fresh clone, the one made ahead if it was made (else one made now); the next one
        is started."""
        ready, self._ready = self._ready, None
        name: str | None = None
        if ready is not None:
            try:
                name = ready.result()
            except psycopg.Error:
                name = None  # the server was restarted under it: clone again, now
        if name is None:
            name = self._thread.submit(self._clone).result()
        self._ready = self._thread.submit(self._clone)
        return name

    def give_back(self, name: str) -> None:
        self._thread.submit(self._drop, name)

    def close(self) -> None:
        self._thread.shutdown(wait=True, cancel_futures=True)


_clones: dict[str, _Clones] = {}


@pytest.fixture
def db_url(pg_server: Any, template_url: str) -> Iterator[str]:
    """A fresh, migrated database owned by this test alone."""
    clones = _clones.get(pg_server.url())
    if clones is None:
        clones = _clones[pg_server.url()] = _Clones(pg_server)
    name = clones.take()
    try:
        yield pg_server.url(name)
    finally:
        clones.give_back(name)


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[AsyncPool]:
    p = await open_async_pool(db_url, min_size=1, max_size=8)
    try:
        yield p
    finally:
        await p.close()


@pytest.fixture
def cli_env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``shortlist`` commands invoked in-process run against this test's database."""
    monkeypatch.setenv("SHORTLIST_DATABASE_URL", db_url)
    monkeypatch.setenv("SHORTLIST_LOG_LEVEL", "WARNING")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


API_DEFAULTS: dict[str, Any] = {
    "load_sample_data": False,
    "search_rate_limit": 0,  # off unless a test is about it
    "trusted_proxies": "",
}


@pytest.fixture
def settings(request: pytest.FixtureRequest, db_url: str) -> Settings:
    """The test's ``Settings``: its own database, no sample data, no search rate limit.

    A module, class or test changes them with ``@pytest.mark.settings(*profiles, **values)``
    (a module with ``pytestmark``): each profile is a dict of field values (such as
    ``tests.backfill_support.BACKFILL``), applied in order, then the keyword values; a
    :class:`FromFixture` value is read from that fixture. Marks apply from the farthest (the
    module's) to the closest (the test's), so the closest wins for a field both name."""
    values: dict[str, Any] = dict(API_DEFAULTS)
    for mark in reversed(list(request.node.iter_markers("settings"))):
        for profile in mark.args:
            values |= profile
        values |= mark.kwargs
    for name, value in values.items():
        if isinstance(value, FromFixture):
            values[name] = value.read(request.getfixturevalue(value.fixture))
    return Settings(**(values | {"database_url": db_url}))
