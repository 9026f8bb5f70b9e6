"""The search statements as search_jobs sends them: composed from search.sql's named blocks,
only the filters a request sets, and converted to PostgreSQL's placeholders once (they are
longer than psycopg's statement cache takes, which would convert ~4.8 kB on every search)."""

from __future__ import annotations

import itertools

import pytest
from psycopg import sql

from shortlist.db.sql import compose_named, positional
from shortlist.embedding.model_space import first_space
from shortlist.listings.search import (
    FILTERS,
    _positional,
    candidates_statement,
    first_page_statement,
)

# salary_min and salary_converted are one filter (without and with a currency): never both.
_COMBINATIONS = [
    c
    for n in range(len(FILTERS) + 1)
    for c in itertools.combinations(FILTERS, n)
    if not {"salary_min", "salary_converted"} <= set(c)
]


@pytest.mark.parametrize("filters", _COMBINATIONS)
def test_the_search_statements_are_whole_and_converted_once(filters: tuple[str, ...]) -> None:
    space = first_space(384)
    for name in ("first_page", "candidates", "candidates_with_facets"):
        for with_facets in (True, False):
            text = _positional(name, space, with_facets=with_facets, filters=filters).query
            assert b"--" not in text  # comments stay in search.sql
            assert b"%(" not in text and b"{" + b"counts}" not in text
            assert b"{facets}" not in text and b"{evidence}" not in text
            again = _positional(name, space, with_facets=with_facets, filters=filters)
            assert again is _positional(name, space, with_facets=with_facets, filters=filters)


def test_only_the_filters_a_request_sets_are_in_its_statement() -> None:
    space = first_space(384)
    bare = candidates_statement(space).as_bytes(None)
    assert b"%(location)s" not in bare and b"%(posted_within_days)s" not in bare
    both = candidates_statement(space, filters=["work_mode", "location"]).as_bytes(None)
    assert b"l.work_mode=%(work_mode)s" in both and b"ILIKE %(location)s" in both
    assert b"%(salary_min)s" not in both
    with pytest.raises(ValueError, match="unknown filters"):
        candidates_statement(space, filters=["colour"])
    with pytest.raises(ValueError, match="unknown filters"):
        first_page_statement(space, filters=["colour"])


def test_facets_are_counted_only_when_asked() -> None:
    space = first_space(384)
    counted = first_page_statement(space, with_facets=True).as_bytes(None)
    assert b"GROUPING SETS" in counted and b"jsonb_build_object" in counted
    plain = first_page_statement(space).as_bytes(None)
    assert b"GROUPING SETS" not in plain and b"jsonb_build_object" not in plain


def test_a_statement_names_its_blocks() -> None:
    blocks = {"outer": "SELECT {inner} FROM t WHERE {col} = '{a}'", "inner": "{col} + 1"}
    composed = compose_named(blocks, "outer", col=sql.Identifier("x"))
    assert composed.as_bytes(None) == b"""SELECT "x" + 1 FROM t WHERE "x" = '{a}'"""


def test_placeholders_become_postgresqls_numbered_once_each() -> None:
    statement = positional(sql.SQL("SELECT %(b)s, %(a)s, %(b)s || '%%'"))
    assert statement.query == b"SELECT $1, $2, $1 || '%'"
    assert statement.names == ("b", "a")
    assert statement.values({"a": 1, "b": 2, "c": 3}) == [2, 1]
    with pytest.raises(ValueError, match="placeholders"):
        positional(sql.SQL("SELECT %s"))
