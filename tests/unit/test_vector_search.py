"""HNSW search settings (shortlist.db.vector_search): the candidate list each search scans."""

from __future__ import annotations

from shortlist.db.vector_search import (
    EF_SEARCH,
    FILTERED_EF_SEARCH,
    MAX_EF_SEARCH,
    ef_search_for,
)


def test_a_first_page_scans_the_session_list_and_a_filtered_one_a_longer_list() -> None:
    assert ef_search_for(10, filtered=False) == EF_SEARCH
    assert ef_search_for(10, filtered=True) == FILTERED_EF_SEARCH
    assert FILTERED_EF_SEARCH > EF_SEARCH


def test_a_long_limit_gets_a_list_longer_than_itself_up_to_pgvectors_cap() -> None:
    assert ef_search_for(320, filtered=False) > 320
    assert ef_search_for(1280, filtered=False) == MAX_EF_SEARCH
    assert ef_search_for(1280, filtered=True) == MAX_EF_SEARCH
