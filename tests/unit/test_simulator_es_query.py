"""The Elasticsearch subset of the simulator's PDL search, held to the Elasticsearch 7.7 Query
DSL reference (Boolean, Match, Match phrase, Term, Terms, Range, Exists, Match all)."""

from __future__ import annotations

from typing import Any

import pytest

from shortlist.simulator.es_query import QueryError, Store, evaluate

DOCS: list[dict[str, Any]] = [
    {"job_title": "fpga verification engineer", "skills": ["systemverilog", "uvm"],
     "location_country": "germany", "years": 8},
    {"job_title": "backend engineer", "skills": ["python"], "location_country": "germany",
     "years": 3},
    {"job_title": "verification engineer fpga", "skills": ["uvm"],
     "location_country": "france", "years": 12},
    {"job_title": "registered nurse", "skills": [], "location_country": "canada", "years": None},
]  # fmt: skip
KINDS: dict[str, Any] = {
    "job_title": "text",
    "skills": "keyword",
    "location_country": "keyword",
    "years": "integer",
}


def store() -> Store:
    return Store(len(DOCS), KINDS, lambda name: [d.get(name) for d in DOCS], [0.4, 0.3, 0.2, 0.1])


def ids(query: Any) -> set[int]:
    return {int(i) for i in evaluate(store(), query)}


def test_match_ors_the_analysed_words_by_default() -> None:
    # Match query: "the default operator is OR": any engineer matches.
    assert ids({"match": {"job_title": "FPGA Verification Engineer"}}) == {0, 1, 2}


def test_matches_come_in_an_order_unrelated_to_the_query() -> None:
    # No PDL page promises an order of Person Search results, nor that `should` ranks: matches
    # come in the store's fixed order, whichever words or optional clauses they hold.
    fpga = {"match_phrase": {"job_title": "fpga verification"}}
    assert list(evaluate(store(), {"match": {"job_title": "engineer fpga"}})) == [0, 1, 2]
    assert list(evaluate(store(), {"match": {"job_title": "backend engineer"}})) == [0, 1, 2]
    preferred = {"bool": {"must": [{"match": {"job_title": "engineer"}}], "should": [fpga]}}
    assert list(evaluate(store(), preferred)) == [0, 1, 2]
    backwards = Store(len(DOCS), KINDS, lambda name: [d.get(name) for d in DOCS], [0, 1, 2, 3])
    assert list(evaluate(backwards, preferred)) == [2, 1, 0]


def test_match_operator_and_and_minimum_should_match() -> None:
    q = {"match": {"job_title": {"query": "fpga verification engineer", "operator": "and"}}}
    assert ids(q) == {0, 2}
    q = {"match": {"job_title": {"query": "fpga nurse engineer", "minimum_should_match": 2}}}
    assert ids(q) == {0, 2}


def test_match_phrase_needs_the_words_in_order() -> None:
    assert ids({"match_phrase": {"job_title": "fpga verification"}}) == {0}
    assert ids({"match_phrase": {"job_title": "verification fpga"}}) == set()


def test_term_is_exact_and_not_analysed() -> None:
    assert ids({"term": {"skills": "uvm"}}) == {0, 2}
    assert ids({"term": {"skills": "UVM"}}) == set()  # keyword values are as stored
    assert ids({"terms": {"location_country": ["france", "canada"]}}) == {2, 3}
    assert ids({"term": {"skills": {"value": "python"}}}) == {1}


def test_range_exists_and_match_all() -> None:
    assert ids({"range": {"years": {"gte": 5}}}) == {0, 2}
    assert ids({"range": {"years": {"gt": 3, "lt": 12}}}) == {0}
    assert ids({"exists": {"field": "years"}}) == {0, 1, 2}
    assert ids({"match_all": {}}) == {0, 1, 2, 3}


def test_bool_clauses_follow_the_boolean_query_rules() -> None:
    # filter on a country that does not exist: nobody.
    assert ids({"bool": {"filter": [{"term": {"location_country": "atlantis"}}]}}) == set()
    assert ids(
        {"bool": {"must": {"match": {"job_title": "engineer"}},
                  "must_not": [{"term": {"location_country": "france"}}]}}
    ) == {0, 1}  # fmt: skip
    # should is optional beside must/filter...
    q: dict[str, Any] = {
        "bool": {
            "filter": [{"term": {"location_country": "germany"}}],
            "should": [{"term": {"skills": "uvm"}}],
        }
    }
    assert ids(q) == {0, 1}
    # ...unless minimum_should_match says otherwise; alone, one should clause must match.
    q["bool"]["minimum_should_match"] = 1
    assert ids(q) == {0}
    assert ids({"bool": {"should": [{"term": {"skills": "python"}}]}}) == {1}
    assert ids({"bool": {"must": [{"bool": {"should": [{"term": {"skills": "uvm"}}]}}]}}) == {0, 2}


@pytest.mark.parametrize(
    "query",
    [
        {"fuzzy": {"job_title": "fpga"}},
        {"match": {"no_such_field": "x"}},
        {"bool": {"must": [{"match": {"job_title": "x"}}], "unknown": []}},
        {"match": {"job_title": "x"}, "term": {"skills": "y"}},
        {"range": {"skills": {"gte": 1}}},
        {"match": {"job_title": {"operator": "and"}}},
    ],
)
def test_anything_else_is_refused(query: Any) -> None:
    with pytest.raises(QueryError):
        evaluate(store(), query)
