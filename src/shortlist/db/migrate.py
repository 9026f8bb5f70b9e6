"""Numbered ``.sql`` migrations, applied in order, each in its own transaction; then the plain
indexes of ``indexes.sql`` and the vector indexes (shortlist.db.vector_index), built
CONCURRENTLY outside any transaction.

Safe under concurrent starts: every migrator takes one session-level advisory lock first, so
a second process waits and then finds nothing left to do.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Collection
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from shortlist.db.sql import load_queries
from shortlist.db.vector_index import (
    NO_OVERRIDES,
    BuildOverrides,
    active_space_indexes,
    drop_index,
    ensure_vector_indexes,
    index_is_valid,
)

log = logging.getLogger(__name__)

MIGRATIONS_PACKAGE = "shortlist.db.migrations"
# Any constant will do; it only has to be the same in every shortlist process.
_ADVISORY_LOCK_KEY = 0x5_0071_1157
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def available_migrations() -> list[Migration]:
    found: list[Migration] = []
    for entry in resources.files(MIGRATIONS_PACKAGE).iterdir():
        m = _FILE.match(entry.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda mig: mig.version)
    versions = [mig.version for mig in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions: {versions}")
    return found


_HAS_TABLE = "SELECT to_regclass('public.schema_migrations') IS NOT NULL"
_APPLIED = "SELECT version FROM schema_migrations"


def _not_in(applied: Collection[int]) -> list[Migration]:
    return [m for m in available_migrations() if m.version not in applied]


def applied_versions(conn: psycopg.Connection[Any]) -> set[int]:
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(_HAS_TABLE)
        exists = cur.fetchone()
        if not exists or not exists[0]:
            return set()
        cur.execute(_APPLIED)
        return {int(r[0]) for r in cur.fetchall()}


def pending_migrations(conn: psycopg.Connection[Any]) -> list[Migration]:
    return _not_in(applied_versions(conn))


async def pending_migrations_async(conn: psycopg.AsyncConnection[Any]) -> list[Migration]:
    """:func:`pending_migrations` on an async connection (the readiness probe's), in a
    transaction of its own."""
    async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(_HAS_TABLE)
        exists = await cur.fetchone()
        if not exists or not exists[0]:
            return _not_in(())
        await cur.execute(_APPLIED)
        return _not_in({int(r[0]) for r in await cur.fetchall()})


# How often a second migrator tries the lock again.
_LOCK_RETRY = 0.2


def _wait_for_lock(conn: psycopg.Connection[Any]) -> None:
    """Take the migrators' advisory lock, trying again until it is free. Not a blocking
    pg_advisory_lock: a session blocked in that statement holds a snapshot, and CREATE INDEX
    CONCURRENTLY (run by the lock holder) waits for every older snapshot: a deadlock."""
    while True:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_ADVISORY_LOCK_KEY,)).fetchone()
        if row is not None and row[0]:
            return
        time.sleep(_LOCK_RETRY)


PLAIN_INDEXES = load_queries("shortlist.db", "indexes.sql")
"""Plain indexes built CONCURRENTLY after the numbered migrations, by name."""


def ensure_plain_indexes(conn: psycopg.Connection[Any]) -> list[str]:
    """Build each of :data:`PLAIN_INDEXES` that is missing, CONCURRENTLY (an invalid leftover
    of an interrupted build is dropped first); returns the names built. ``conn``: autocommit."""
    built: list[str] = []
    for name, create in PLAIN_INDEXES.items():
        state = index_is_valid(conn, name)
        if state:
            continue
        if state is False:
            log.warning("dropping invalid index %s (an interrupted build)", name)
            drop_index(conn, name)
        log.info("building index %s", name)
        conn.execute(create)
        built.append(name)
    return built


def retune_indexes(url: str, overrides: BuildOverrides = NO_OVERRIDES) -> list[str] | None:
    """Rebuild (CONCURRENTLY) each vector index of the active model space that no longer fits
    its table; returns the indexes built, or None when a migrator holds the lock (this round
    is skipped: it will do the same, or the next round will). Never waits for the lock."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_ADVISORY_LOCK_KEY,)).fetchone()
        if row is None or not row[0]:
            return None
        try:
            built = ensure_vector_indexes(
                conn, active_space_indexes(conn), overrides=overrides, retune=True
            )
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_ADVISORY_LOCK_KEY,))
    return [b.name for b in built]


def migrate(
    url: str, *, index_build: BuildOverrides | None = None, retune: bool = False
) -> list[Migration]:
    """Apply every migration not yet applied, then build any missing vector index (``retune``:
    and rebuild those that no longer fit their table); returns the migrations this call
    applied."""
    applied: list[Migration] = []
    with psycopg.connect(url, autocommit=True) as conn:
        _wait_for_lock(conn)
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version integer PRIMARY KEY,"
                " name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for mig in pending_migrations(conn):
                log.info("applying migration %04d_%s", mig.version, mig.name)
                with conn.transaction():
                    conn.execute(mig.sql.encode("utf-8"))
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        (mig.version, mig.name),
                    )
                applied.append(mig)
            ensure_plain_indexes(conn)
            ensure_vector_indexes(
                conn,
                active_space_indexes(conn),
                overrides=index_build or NO_OVERRIDES,
                retune=retune,
            )
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_ADVISORY_LOCK_KEY,))
    return applied
