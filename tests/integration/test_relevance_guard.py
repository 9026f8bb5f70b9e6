"""The relevance guard (tests/relevance_guard.py): held-out queries of the relevance development
set through the real search and the real local model rank as well as the recorded figures say;
and the guard's scorer fails a worse ranking."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from shortlist.embedding.base import EmbeddingTransientError
from tests import relevance_guard as guard
from tests.conftest import CLONE_STRATEGY, TEMPLATE_DB, admin_execute


@pytest.fixture(scope="module")
def guard_db(pg_server: Any, template_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    """One database with the guard's slice for this module's tests (loading it is most of
    their time); the tests only read it."""
    name = f"t_guard_{uuid.uuid4().hex[:12]}"
    admin_execute(
        pg_server, f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB} STRATEGY {CLONE_STRATEGY}"
    )
    try:
        url = pg_server.url(name)
        yield url, asyncio.run(guard.load(url))
    finally:
        admin_execute(pg_server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.slow
async def test_held_out_queries_rank_as_well_as_recorded(
    guard_db: tuple[str, dict[str, str]],
) -> None:
    url, series_of = guard_db
    queries = guard.held_out_queries()
    measured = guard.figures(queries, await guard.rankings(url, queries), series_of)
    assert guard.departures(measured, guard.recorded()) == [], measured


class DownEmbedder:
    """The model unavailable: the product degrades to its full-text list alone."""

    name = "down"
    dim = 384

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingTransientError("the model is down (test)")


async def test_the_guard_fails_a_worse_ranking(guard_db: tuple[str, dict[str, str]]) -> None:
    """The same search path ranking by words alone (the vector list gone) is worse on these
    queries than the recorded figures by more than the tolerance: the guard says so."""
    url, series_of = guard_db
    queries = guard.held_out_queries()
    worse = guard.figures(queries, await guard.rankings(url, queries, DownEmbedder()), series_of)
    problems = guard.departures(worse, guard.recorded())
    assert any(p.startswith("P@10 fell") for p in problems), worse
    assert any(p.startswith("nDCG@10 fell") for p in problems), worse
