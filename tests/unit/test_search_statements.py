"""The candidates statement as search_jobs sends it: short enough for psycopg to cache its
converted form (else every search re-parses ~4 kB of SQL for its placeholders)."""

from __future__ import annotations

from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from shortlist.embedding.spaces import first_space
from shortlist.listings.search import candidates_statement


def test_the_candidates_statements_fit_psycopgs_statement_cache() -> None:
    for with_facets in (True, False):
        statement = candidates_statement(first_space(384), with_facets=with_facets)
        text = statement.as_bytes(None)
        assert b"--" not in text  # comments stay in search.sql
        assert len(text) <= MAX_CACHED_STATEMENT_LENGTH, (
            f"{len(text)} bytes: shorten it, or accept that psycopg converts it on every search"
        )
