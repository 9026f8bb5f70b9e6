"""One embedding model space: a row of ``embedding_models`` (see :mod:`shortlist.embedding.spaces`
for what a space is and how a process holds the spaces in use)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from shortlist.db.vector_index import VectorIndex, space_indexes

MAX_INDEXED_DIM = 4000
"""pgvector indexes halfvec up to 4,000 dimensions (HNSW and IVFFlat); the index is on halfvec."""


@dataclass(frozen=True)
class ModelSpace:
    """One row of ``embedding_models``."""

    id: int
    kind: str | None
    model: str | None
    url: str | None
    dim: int
    state: str
    vector_column: str = "embedding"
    hash_column: str = "embedded_hash"

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ModelSpace:
        return cls(
            id=int(row["id"]),
            kind=row["kind"],
            model=row["model"],
            url=row["url"],
            dim=int(row["dim"]),
            state=str(row["state"]),
            vector_column=str(row["vector_column"]),
            hash_column=str(row["hash_column"]),
        )

    def model_key(self) -> tuple[object, ...]:
        """What the embedder is made from (not the state, which the switch changes)."""
        return (self.id, self.kind, self.model, self.url, self.dim)

    @property
    def label(self) -> str:
        """``kind:model`` as status and logs show it."""
        return f"{self.kind or '?'}:{self.model or '?'}"

    def indexes(self) -> tuple[VectorIndex, ...]:
        """The space's vector index on each corpus; queries order by exactly its expression."""
        return space_indexes(self.vector_column, self.dim)

    def parts(self) -> dict[str, sql.Composable]:
        return {
            "embedding": sql.Identifier(self.vector_column),
            "embedded_hash": sql.Identifier(self.hash_column),
            "halfvec": sql.SQL(f"halfvec({int(self.dim)})"),
        }


def first_space(dim: int) -> ModelSpace:
    """The space of the original columns, for callers without a :class:`Spaces` (benchmarks,
    tests on a database no model migration has touched)."""
    return ModelSpace(id=1, kind=None, model=None, url=None, dim=dim, state="active")
