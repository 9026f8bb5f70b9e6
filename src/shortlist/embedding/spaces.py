"""Embedding model spaces: the model is data (``embedding_models``, migration 0013).

A *space* is one model's vectors: a row of ``embedding_models`` and, on each embedded corpus,
a vector column and a hash column of its own (the text hash each vector was computed from).
The first space uses the original columns ``embedding`` / ``embedded_hash``; a space registered
by ``shortlist embeddings migrate`` gets ``embedding_m<id>`` / ``embedded_hash_m<id>``.

Exactly one space is *active*: queries are embedded by its model and searched against its
column and vector index. While another is *building*, the indexer embeds every row into it as
well (``shortlist.indexer.queue``); when it covers every row it becomes active in one
transaction (``shortlist.indexer.migration``).

Every process holds a :class:`Spaces`: the models in use and one embedder per model. It reloads
on the ``embedding_models`` NOTIFY and at least every :data:`RELOAD_INTERVAL` seconds, so a
switch reaches every process without a restart. A search takes one :class:`ModelInUse` for its
whole life: its query vector and the column it reads are always of the same model, and a
process that has not reloaded yet reads the retired space, whose columns are kept for
:data:`shortlist.indexer.migration.RETIRED_GRACE` seconds after the switch.

Statements that touch vectors are written with ``{embedding}``, ``{embedded_hash}`` and
``{halfvec}`` where the space's column and type go; :func:`shortlist.db.sql.compose` fills them
in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import LiteralString, TypeVar

import psycopg
from psycopg import sql

from shortlist.db.sql import compose, compose_named, load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.db.vector_index import ensure_space_indexes
from shortlist.embedding.base import Embedder
from shortlist.embedding.model_space import MAX_INDEXED_DIM, ModelSpace, first_space
from shortlist.embedding.query_cache import QueryCache
from shortlist.errors import ConfigError
from shortlist.queue.worker import wait_any

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.embedding", "spaces.sql")

RELOAD_INTERVAL = 5.0
"""Longest a process goes without reading ``embedding_models`` (the NOTIFY is the fast path)."""

T = TypeVar("T")


class SpaceStatements:
    """Statements composed for one space, cached by (statement, space); ``parts`` fill the
    statements' other placeholders, the same for every space, and a ``{block}`` of the same
    statements is filled by that block, composed the same way (``compose_named``)."""

    def __init__(self, statements: Mapping[str, LiteralString], **parts: sql.Composable) -> None:
        self._statements = statements
        self._parts = parts
        self._cache: dict[tuple[object, ...], sql.Composed] = {}

    def get(self, name: str, space: ModelSpace) -> sql.Composed:
        key = (name, space.id, space.vector_column, space.hash_column, space.dim)
        composed = self._cache.get(key)
        if composed is None:
            composed = self._cache[key] = compose_named(
                self._statements, name, **self._parts, **space.parts()
            )
        return composed


async def active_space(conn: AsyncConn) -> ModelSpace:
    """The active space as the database has it now (for one-off commands)."""
    cur = await conn.execute(QUERIES["spaces_in_use"])
    for row in await cur.fetchall():
        if row["state"] == "active":
            return ModelSpace.from_row(row)
    raise ConfigError("no active embedding model in embedding_models (migration 0013)")


@dataclass(frozen=True)
class ModelInUse:
    """A space and the embedder of its model: what one search or one batch uses throughout."""

    space: ModelSpace
    embedder: Embedder


EmbedderFactory = Callable[[ModelSpace], Embedder]


class Spaces:
    """The models in use in this process (see the module docstring)."""

    def __init__(
        self,
        pool: AsyncPool,
        factory: EmbedderFactory,
        database_url: str,
        *,
        query_cache_size: int = 4096,
    ) -> None:
        self.pool = pool
        self.database_url = database_url
        self.factory = factory
        self._embedders: dict[tuple[object, ...], Embedder] = {}
        """By :meth:`ModelSpace.model_key`: a space keeps its embedder through the switch."""
        self._active: ModelInUse | None = None
        self._building: ModelInUse | None = None
        self._loaded = False
        self._lock = asyncio.Lock()
        self.query_cache = QueryCache(query_cache_size)
        """Query vectors by model and text; emptied when the active model switches."""

    # -- what callers use -----------------------------------------------------------------------

    def active(self) -> ModelInUse:
        if self._active is None:
            raise RuntimeError("Spaces.refresh() was never awaited")
        return self._active

    def building(self) -> ModelInUse | None:
        return self._building

    @property
    def loaded(self) -> bool:
        """Whether ``embedding_models`` has been read (not just :meth:`of_embedder`'s guess)."""
        return self._loaded

    @classmethod
    def of_embedder(cls, pool: AsyncPool, embedder: Embedder, database_url: str = "") -> Spaces:
        """One embedder for every space; until the first :meth:`refresh`, the active space is
        taken to be the first one, of ``embedder``'s dimension (benchmarks, tests)."""
        spaces = cls(pool, lambda _space: embedder, database_url)
        spaces._active = ModelInUse(first_space(embedder.dim), embedder)
        return spaces

    async def run(self, call: Callable[[ModelInUse], Awaitable[T]]) -> T:
        """``call`` with the active model; once more with a reloaded one if the space it read was
        dropped meanwhile (a switch this process had not heard of yet)."""
        try:
            return await call(self.active())
        except psycopg.errors.UndefinedColumn:
            await self.refresh()
            return await call(self.active())

    # -- loading --------------------------------------------------------------------------------

    async def refresh(self) -> None:
        async with self._lock, self.pool.connection() as conn:
            cur = await conn.execute(QUERIES["spaces_in_use"])
            rows = [ModelSpace.from_row(r) for r in await cur.fetchall()]
        active = next((s for s in rows if s.state == "active"), None)
        if active is None:
            raise ConfigError("no active embedding model in embedding_models (migration 0013)")
        building = next((s for s in rows if s.state == "building"), None)
        previous = self._active.space.id if self._active is not None else None
        self._active = ModelInUse(active, self._embedder(active))
        self._building = (
            None if building is None else ModelInUse(building, self._embedder(building))
        )
        self._loaded = True
        if previous is not None and previous != active.id:
            self.query_cache.clear()
            log.info("embedding model switched: now %s (%d-d)", active.label, active.dim)
        await self._close_unused({s.model_key() for s in rows})

    def _embedder(self, space: ModelSpace) -> Embedder:
        embedder = self._embedders.get(space.model_key())
        if embedder is None:
            embedder = self._embedders[space.model_key()] = self.factory(space)
        return embedder

    async def _close_unused(self, in_use: set[tuple[object, ...]]) -> None:
        for key in [k for k in self._embedders if k not in in_use]:
            embedder = self._embedders.pop(key)
            with contextlib.suppress(Exception):
                await embedder.aclose()

    async def watch(self, changed: asyncio.Event, stop: asyncio.Event) -> None:
        """Reload on every NOTIFY (``changed``) and every :data:`RELOAD_INTERVAL` seconds."""
        while not stop.is_set():
            await wait_any(changed.wait(), stop.wait(), timeout=RELOAD_INTERVAL)
            changed.clear()
            if stop.is_set():
                return
            try:
                await self.refresh()
            except (psycopg.Error, OSError) as exc:
                log.warning("reloading embedding models failed: %s", exc)

    async def aclose(self) -> None:
        await self._close_unused(set())

    # -- the first start ------------------------------------------------------------------------

    async def adopt(self, kind: str, model: str, dim: int) -> None:
        """Name the first space after this process's settings if it is still unnamed; a fresh
        database takes the configured model's dimension. Settings that disagree with a named
        active model are the table's to decide: one warning, and the table wins."""
        async with self.pool.connection() as conn:
            active = await active_space(conn)
        if active.kind is None:
            if active.dim != dim:
                await self._retype_first(active.dim, dim, kind, model)
            async with self.pool.connection() as conn:
                await conn.execute(QUERIES["adopt_first"], {"kind": kind, "model": model})
        await self.refresh()
        active = self.active().space
        if (active.kind, active.model, active.dim) != (kind, model, dim):
            log.warning(
                "SHORTLIST_EMBEDDER=%s (model %s, %d-d) is not the active embedding model %s"
                " (%d-d): the active model is used; change it with `shortlist embeddings migrate`",
                kind,
                model,
                dim,
                active.label,
                active.dim,
            )

    async def _retype_first(self, stored_dim: int, dim: int, kind: str, model: str) -> None:
        if not 1 <= dim <= MAX_INDEXED_DIM:
            raise ConfigError(
                f"SHORTLIST_EMBEDDING_DIM={dim}: vectors are indexed as halfvec, at most"
                f" {MAX_INDEXED_DIM} dimensions"
            )
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(QUERIES["stored_vectors"])
            row = await cur.fetchone()
            if row is not None and row["any"]:
                raise ConfigError(
                    f"SHORTLIST_EMBEDDER={kind} ({model}) makes {dim}-d vectors, but the stored"
                    f" ones are {stored_dim}-d: change models with `shortlist embeddings migrate`"
                )
            await conn.execute(compose(QUERIES["retype_first"], dim=sql.Literal(dim)))
            space = await active_space(conn)
        log.info(
            "first start: the embedding columns take the configured model's %d dimensions", dim
        )
        await asyncio.to_thread(ensure_space_indexes, self.database_url, space.indexes())
