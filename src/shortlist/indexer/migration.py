"""Changing the embedding model without downtime.

    shortlist embeddings migrate --embedder openai --model text-embedding-3-large --dim 3072
        register: probe the model once (a wrong URL, key or dimension ends here, nothing
        written), then in ONE transaction the ``building`` row and its columns on both corpora
        (``ALTER TABLE … ADD COLUMN``: a catalog change, no rewrite); then the partial index the
        build claims from. Returns at once.
    the indexer (every process running it)
        embeds each row into the new space as well, through the same queue: pending and edited
        rows get both models' vectors, the rest are claimed for the new space alone
        (``shortlist.indexer.queue``). Searches go on with the active model meanwhile.
    the coordinator (:func:`coordinate`, in every indexer process; one at a time by advisory lock)
        embeds the alerts' saved queries (``alert_queries``) with the new model into their
        column of the space (:func:`fill_saved_queries`; a query saved meanwhile is embedded by
        both models when saved); once the space covers every row of both corpora and every
        saved query: its vector indexes on the corpora (HNSW, or IVFFlat for a large table:
        shortlist.db.vector_index), built CONCURRENTLY (the saved queries need none: the match
        queue reads their vectors into memory, shortlist.alerts.query_vectors);
        then the switch, in ONE transaction (rows the new model rejected are marked failed, the
        old model retired, the new one active, the corpus's "embedded means a vector" check
        moved to the new column). NOTIFY reloads every process: from then on queries are
        embedded by the new model. After :data:`RETIRED_GRACE` seconds (every process has
        reloaded; a search still on the old space finds its columns until then) the old
        columns and their index are dropped.
    shortlist embeddings cancel
        stops a build: the row is ``cancelled`` and its columns dropped.

Every DDL on a corpus table takes an ACCESS EXCLUSIVE lock for a moment; it is taken with a
short ``lock_timeout`` and retried, so a long query delays the step instead of queueing every
search behind it. A restart at any point resumes from the table: the build's progress is the
rows' hashes, an interrupted index build is dropped and built again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, LiteralString

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.db.vector_index import (
    NO_OVERRIDES,
    BuildOverrides,
    ensure_space_indexes,
    vector_text,
)
from shortlist.embedding.base import EmbeddingError, embed_queries
from shortlist.embedding.model_space import MAX_INDEXED_DIM, ModelSpace
from shortlist.embedding.query_cache import normalised_text
from shortlist.embedding.spaces import EmbedderFactory, ModelInUse, Spaces
from shortlist.errors import ConfigError, ShortlistError
from shortlist.indexer.breaker import probe_embedder
from shortlist.indexer.corpora import CORPORA
from shortlist.queue.periodic import Periodic, run_periodic

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.indexer", "migration.sql")

RETIRED_GRACE = 30.0
"""Seconds a retired space's columns are kept after the switch: every process reloads within
``spaces.RELOAD_INTERVAL`` (at once on the NOTIFY), and a search lasts well under a second."""
COORDINATE_INTERVAL = 5.0
LOCK_TIMEOUT = "2s"
DDL_ATTEMPTS = 10
COORDINATOR_LOCK_KEY = 0x5_0071_1158
"""Session advisory lock of the coordinator: one process builds indexes and switches."""

SAVED_QUERIES = "alert_queries"
"""The alerts' saved queries (migration 0047): a query vector per space, like the corpora's,
filled by the coordinator (:func:`fill_saved_queries`, with the new model, as job search embeds
a query) and switched with them, so a saved search is matched in the listings' space."""
QUERY_FILL_BATCH = 64
"""Saved queries embedded per model call while filling a space."""

FIRST_SPACE_CHECKS = {
    "job_listings": "embedded_has_vector",
    "candidates": "candidate_embedded_has_vector",
}
"""The "embedded means a vector" constraints of the first space (migrations 0001, 0002)."""


class ModelMigrationError(ShortlistError):
    """A model migration step that cannot be done as asked (the CLI prints it in one line)."""


@dataclass(frozen=True)
class ModelRequest:
    kind: str
    model: str
    dim: int
    url: str | None = None

    def check(self) -> None:
        if self.kind not in ("local", "openai"):
            raise ModelMigrationError(f"--embedder must be local or openai, not {self.kind!r}")
        if not self.model.strip() or len(self.model) > 200:
            raise ModelMigrationError("--model must be a model name of 1 to 200 characters")
        if not 1 <= self.dim <= MAX_INDEXED_DIM:
            raise ModelMigrationError(
                f"--dim must be between 1 and {MAX_INDEXED_DIM} (vectors are indexed as halfvec)"
            )
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ModelMigrationError("--url must be an http(s) URL")
        if self.url is not None and self.kind == "local":
            raise ModelMigrationError("--url is for --embedder openai; the local model runs here")

    def as_space(self) -> ModelSpace:
        return ModelSpace(
            id=0, kind=self.kind, model=self.model, url=self.url, dim=self.dim, state="building"
        )


def check_name(space: ModelSpace, table: str) -> str:
    if space.vector_column == "embedding" and table in FIRST_SPACE_CHECKS:
        return FIRST_SPACE_CHECKS[table]
    return f"{table}_{space.vector_column}_embedded_check"


def todo_index_name(space: ModelSpace, table: str) -> str:
    return f"{table}_{space.vector_column}_todo_idx"


def _in(
    statement: LiteralString, space: ModelSpace, table: str, **extra: sql.Composable
) -> sql.Composed:
    """``statement`` for ``space`` on ``table``: its columns, its todo index, its check."""
    return compose(
        statement,
        **space.parts(),
        table=sql.Identifier(table),
        index=sql.Identifier(todo_index_name(space, table)),
        constraint=sql.Identifier(check_name(space, table)),
        **extra,
    )


def _each_corpus(name: str, space: ModelSpace) -> list[sql.Composed]:
    return [_in(QUERIES[name], space, corpus.table) for corpus in CORPORA]


def _queries(name: str, space: ModelSpace, **extra: sql.Composable) -> sql.Composed:
    """``name`` for ``space`` on the saved queries (its column, its todo index)."""
    return _in(QUERIES[name], space, SAVED_QUERIES, **extra)


async def _ddl(url: str, step: Callable[[AsyncConn], Awaitable[None]]) -> None:
    """Run ``step`` in a transaction under a short lock_timeout, again while the lock is busy."""
    for attempt in range(DDL_ATTEMPTS):
        try:
            conn = await psycopg.AsyncConnection.connect(url, row_factory=dict_row)
            async with conn, conn.transaction():
                await conn.execute(QUERIES["set_lock_timeout"], {"timeout": LOCK_TIMEOUT})
                await step(conn)
            return
        except psycopg.errors.LockNotAvailable:
            log.info("corpus tables busy, DDL attempt %d/%d", attempt + 1, DDL_ATTEMPTS)
            await asyncio.sleep(min(5.0, 0.5 * 2**attempt))
    raise ModelMigrationError(
        f"the corpus tables stayed locked by other work through {DDL_ATTEMPTS} attempts;"
        " try again when it is done"
    )


async def _autocommit(url: str, statements: list[sql.Composed]) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for statement in statements:
            await conn.execute(statement)


# -- register, cancel, status ------------------------------------------------------------------


async def probe(request: ModelRequest, factory: EmbedderFactory) -> None:
    """Embed one text with the requested model: the URL, key, model name and dimension are
    checked before anything is written."""
    try:
        embedder = factory(request.as_space())
    except ConfigError as exc:
        raise ModelMigrationError(str(exc)) from exc
    try:
        reason = await probe_embedder(embedder, request.dim)
    except EmbeddingError as exc:
        raise ModelMigrationError(f"the model did not embed a probe text: {exc}") from exc
    finally:
        await embedder.aclose()
    if reason is not None:
        raise ModelMigrationError(f"the model did not embed a probe text: {reason}")


async def register(
    pool: AsyncPool, url: str, request: ModelRequest, factory: EmbedderFactory
) -> ModelSpace:
    """Register ``request`` as the space being built (see the module docstring); ``factory``
    makes the embedder of a space (``make_space_embedder`` with the process's settings)."""
    request.check()
    async with pool.connection() as conn:
        cur = await conn.execute(
            QUERIES["same_as_active"],
            {"kind": request.kind, "model": request.model, "dim": request.dim, "url": request.url},
        )
        row = await cur.fetchone()
    if row is not None and row["same"]:
        raise ModelMigrationError(
            f"{request.kind}:{request.model} ({request.dim}-d) is the active model already"
        )
    await probe(request, factory)
    registered: list[ModelSpace] = []

    async def insert(conn: AsyncConn) -> None:
        try:
            cur = await conn.execute(
                QUERIES["register"],
                {
                    "kind": request.kind,
                    "model": request.model,
                    "url": request.url,
                    "dim": request.dim,
                },
            )
        except psycopg.errors.UniqueViolation as exc:
            raise ModelMigrationError(
                "a model is being built already (`shortlist embeddings status`);"
                " `shortlist embeddings cancel` stops it"
            ) from exc
        row = await cur.fetchone()
        assert row is not None
        space = ModelSpace.from_row(row)
        for corpus in CORPORA:
            await conn.execute(
                _in(QUERIES["add_columns"], space, corpus.table, dim=sql.Literal(space.dim))
            )
        await conn.execute(_queries("add_query_column", space, dim=sql.Literal(space.dim)))
        registered[:] = [space]

    await _ddl(url, insert)
    [space] = registered
    await _autocommit(
        url, [*_each_corpus("create_todo_index", space), _queries("create_query_todo_index", space)]
    )
    log.info("registered embedding model %s (%d-d) as space %d", space.label, space.dim, space.id)
    return space


async def _drop_space(url: str, space: ModelSpace) -> None:
    async def drop(conn: AsyncConn) -> None:
        for corpus in CORPORA:
            await conn.execute(_in(QUERIES["drop_columns"], space, corpus.table))
        await conn.execute(_queries("drop_query_column", space))
        await conn.execute(QUERIES["mark_dropped"], {"id": space.id})

    await _ddl(url, drop)
    log.info("dropped the columns and index of embedding space %d (%s)", space.id, space.label)


async def cancel(pool: AsyncPool, url: str) -> ModelSpace | None:
    """Stop the build, if one runs: cancelled, columns dropped. Returns the space cancelled."""
    async with pool.connection() as conn:
        cur = await conn.execute(QUERIES["cancel_building"])
        row = await cur.fetchone()
    if row is None:
        return None
    space = ModelSpace.from_row(row)
    await _drop_space(url, space)
    return space


async def coverage(conn: AsyncConn, space: ModelSpace) -> dict[str, float]:
    shares: dict[str, float] = {}
    for corpus in CORPORA:
        cur = await conn.execute(_in(QUERIES["coverage"], space, corpus.table))
        row = await cur.fetchone()
        assert row is not None
        total, covered = int(row["total"]), int(row["covered"])
        shares[corpus.table] = 1.0 if total == 0 else round(covered / total, 4)
    cur = await conn.execute(_queries("query_coverage", space))
    row = await cur.fetchone()
    assert row is not None
    total, covered = int(row["total"]), int(row["covered"])
    shares[SAVED_QUERIES] = 1.0 if total == 0 else round(covered / total, 4)
    return shares


async def status(conn: AsyncConn) -> dict[str, Any]:
    """``{"active": {...}, "building": null | {..., "coverage": {corpus: share}}}``."""
    cur = await conn.execute(QUERIES["space_by_state"], {"state": "active"})
    active = ModelSpace.from_row(await _one(cur))
    cur = await conn.execute(QUERIES["space_by_state"], {"state": "building"})
    row = await cur.fetchone()
    building: dict[str, Any] | None = None
    if row is not None:
        space = ModelSpace.from_row(row)
        building = {**_describe(space), "coverage": await coverage(conn, space)}
    return {"active": _describe(active), "building": building}


async def _one(cur: psycopg.AsyncCursor[Any]) -> Any:
    row = await cur.fetchone()
    if row is None:
        raise ModelMigrationError("no active embedding model (is the database migrated?)")
    return row


def _describe(space: ModelSpace) -> dict[str, Any]:
    return {
        "id": space.id,
        "kind": space.kind,
        "model": space.model,
        "url": space.url,
        "dim": space.dim,
    }


# -- the coordinator --------------------------------------------------------------------------


async def _covers_everything(pool: AsyncPool, space: ModelSpace) -> bool:
    async with pool.connection() as conn:
        for corpus in CORPORA:
            cur = await conn.execute(_in(QUERIES["uncovered_exists"], space, corpus.table))
            row = await cur.fetchone()
            if row is None or row["any"]:
                return False
        return not await _queries_uncovered(conn, space)


async def _queries_uncovered(conn: AsyncConn, space: ModelSpace) -> bool:
    cur = await conn.execute(_queries("queries_uncovered", space))
    row = await cur.fetchone()
    return row is None or bool(row["any"])


async def fill_saved_queries(pool: AsyncPool, building: ModelInUse) -> int:
    """Embed the saved queries the space has no vector for yet, with its model, a batch per
    call, until none is left; returns how many were filled. A model error ends the round (the
    next one goes on: the progress is the column)."""
    space, embedder = building.space, building.embedder
    filled = 0
    while True:
        async with pool.connection() as conn:
            cur = await conn.execute(
                _queries("queries_to_embed", space), {"limit": QUERY_FILL_BATCH}
            )
            rows = await cur.fetchall()
        if not rows:
            return filled
        try:
            vectors = await embed_queries(
                embedder, [normalised_text(space, r["normalised"]) for r in rows]
            )
        except EmbeddingError as exc:
            log.warning(
                "embedding saved queries into space %d failed (%s); retrying next round",
                space.id,
                type(exc).__name__,
            )
            return filled
        async with pool.connection() as conn:
            await conn.execute(
                _queries("set_query_vectors", space),
                {
                    "ids": [r["id"] for r in rows],
                    "vectors": [vector_text(v) for v in vectors],
                },
            )
        filled += len(rows)


async def switch(url: str, space: ModelSpace, previous: ModelSpace) -> bool:
    """Make ``space`` active in one transaction, if it still covers every row; True if it did."""
    switched: list[bool] = [False]

    async def step(conn: AsyncConn) -> None:
        cur = await conn.execute(QUERIES["lock_building"], {"id": space.id})
        if await cur.fetchone() is None:
            return  # cancelled, or switched by another process
        for corpus in CORPORA:
            cur = await conn.execute(_in(QUERIES["uncovered_exists"], space, corpus.table))
            row = await cur.fetchone()
            if row is None or row["any"]:
                return  # a row was added or edited since the check: the indexer catches up
        await conn.execute(QUERIES["lock_queries"])
        if await _queries_uncovered(conn, space):
            return  # a query was saved without the new vector: the next round fills it
        for corpus in CORPORA:
            await conn.execute(
                _in(QUERIES["fail_rejected"], space, corpus.table),
                {"error": f"the embedding model {space.label} rejected this text"},
            )
        # The DDL last: its ACCESS EXCLUSIVE locks are held only for the rest of this
        # transaction, which is two one-row updates.
        for statement in [
            *_each_corpus("drop_vector_check", previous),
            *_each_corpus("add_vector_check", space),
            _queries("queries_nullable", previous),
        ]:
            await conn.execute(statement)
        await conn.execute(QUERIES["retire_active"])
        await conn.execute(QUERIES["activate"], {"id": space.id})
        switched[0] = True

    await _ddl(url, step)
    if switched[0]:
        log.info(
            "embedding model switched to %s (%d-d), space %d", space.label, space.dim, space.id
        )
        await _autocommit(
            url,
            [
                *_each_corpus("validate_vector_check", space),
                *_each_corpus("drop_todo_index", space),
                _queries("drop_todo_index", space),
            ],
        )
    return switched[0]


async def coordinate_once(
    pool: AsyncPool, url: str, spaces: Spaces, overrides: BuildOverrides = NO_OVERRIDES
) -> str | None:
    """One round of the coordinator; returns what it did (for logs and tests)."""
    if not await _work_to_do(pool, spaces):
        return None
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, row_factory=dict_row
    ) as lock:
        cur = await lock.execute(QUERIES["try_coordinator_lock"], {"key": COORDINATOR_LOCK_KEY})
        row = await cur.fetchone()
        if row is None or not row["locked"]:
            return None
        try:
            return await _coordinate(pool, url, spaces, overrides)
        finally:
            await lock.execute(QUERIES["coordinator_unlock"], {"key": COORDINATOR_LOCK_KEY})


async def _work_to_do(pool: AsyncPool, spaces: Spaces) -> bool:
    """Whether a round has anything to do: read through the pool, so an idle coordinator opens
    no connection of its own."""
    building = spaces.building()
    if building is not None:
        async with pool.connection() as conn:
            if await _queries_uncovered(conn, building.space):
                return True
        if await _covers_everything(pool, building.space):
            return True
    async with pool.connection() as conn:
        cur = await conn.execute(QUERIES["droppable"], {"grace": RETIRED_GRACE})
        return await cur.fetchone() is not None


async def _coordinate(
    pool: AsyncPool, url: str, spaces: Spaces, overrides: BuildOverrides
) -> str | None:
    await spaces.refresh()
    done: str | None = None
    building = spaces.building()
    if building is not None:
        await fill_saved_queries(pool, building)
    if building is not None and await _covers_everything(pool, building.space):
        await asyncio.to_thread(ensure_space_indexes, url, building.space.indexes(), overrides)
        if await switch(url, building.space, spaces.active().space):
            done = f"switched to space {building.space.id}"
            await spaces.refresh()
    async with pool.connection() as conn:
        cur = await conn.execute(QUERIES["droppable"], {"grace": RETIRED_GRACE})
        droppable = [ModelSpace.from_row(r) for r in await cur.fetchall()]
    for space in droppable:
        await _drop_space(url, space)
        done = (done + "; " if done else "") + f"dropped space {space.id}"
    return done


async def coordinate(
    pool: AsyncPool,
    url: str,
    spaces: Spaces,
    stop: asyncio.Event,
    *,
    overrides: BuildOverrides = NO_OVERRIDES,
) -> None:
    """The coordinator loop of an indexer process (see the module docstring); ``overrides``:
    the operator's index build settings."""
    await run_periodic([coordinator_job(pool, url, spaces, overrides)], stop)


def coordinator_job(
    pool: AsyncPool, url: str, spaces: Spaces, overrides: BuildOverrides = NO_OVERRIDES
) -> Periodic:
    """A round every ``COORDINATE_INTERVAL`` (shortlist.queue.periodic)."""

    async def round_() -> None:
        try:
            await coordinate_once(pool, url, spaces, overrides)
        except ModelMigrationError as exc:
            log.warning("embedding model migration: %s", exc)

    return Periodic("embedding model migration", COORDINATE_INTERVAL, round_)
