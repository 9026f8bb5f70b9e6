"""The candidates statement as search_jobs sends it: short enough for psycopg to cache its
converted form (else every search re-parses ~4 kB of SQL for its placeholders)."""

from __future__ import annotations

import itertools

import pytest
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from shortlist.embedding.model_space import first_space
from shortlist.listings.search import FILTERS, candidates_statement

# salary_min and salary_converted are one filter (without and with a currency): never both.
_COMBINATIONS = [
    c
    for n in range(len(FILTERS) + 1)
    for c in itertools.combinations(FILTERS, n)
    if not {"salary_min", "salary_converted"} <= set(c)
]
_JOB_SEEKERS = {"salary_converted", "remote_country", "visa"}


@pytest.mark.parametrize(
    "filters",
    [c for c in _COMBINATIONS if len(c) <= 3 or not _JOB_SEEKERS & set(c)],
)
def test_the_candidates_statements_fit_psycopgs_statement_cache(filters: tuple[str, ...]) -> None:
    """With any set of the first filters, and any three with a job seeker's (currency, remote
    country, visa): converting an uncached statement costs ~0.13 ms a search, which a search
    with four filters or more, one of them a job seeker's, pays."""
    for with_facets in (True, False):
        statement = candidates_statement(first_space(384), with_facets=with_facets, filters=filters)
        text = statement.as_bytes(None)
        assert b"--" not in text  # comments stay in search.sql
        assert len(text) <= MAX_CACHED_STATEMENT_LENGTH, (
            f"{len(text)} bytes: shorten it, or accept that psycopg converts it on every search"
        )


def test_only_the_filters_a_request_sets_are_in_its_statement() -> None:
    space = first_space(384)
    bare = candidates_statement(space).as_bytes(None)
    assert b"%(location)s" not in bare and b"%(posted_within_days)s" not in bare
    both = candidates_statement(space, filters=["work_mode", "location"]).as_bytes(None)
    assert b"l.work_mode=%(work_mode)s" in both and b"ILIKE %(location)s" in both
    assert b"%(salary_min)s" not in both
    with pytest.raises(ValueError, match="unknown filters"):
        candidates_statement(space, filters=["colour"])
