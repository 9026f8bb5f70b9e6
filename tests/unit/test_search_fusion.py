"""Rank fusion of job search's keyword and meaning hits, and LIKE patterns, without a database."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from shortlist.db.sql import like_pattern
from shortlist.listings.search import (
    fuse,
    fusion_windows,
)
from shortlist.relevance import JOB_SCORE


def row(distance: float | None = None, name: str = "x", match: float = 0.0) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(),
        "company_name": name,
        "job_title": name,
        "distance": distance,
        "title_match": match,
        "title_similarity": match,
    }


def test_fuse_orders_by_each_hits_own_score() -> None:
    a, b, c = row(0.2, "a"), row(0.3, "b", match=1.0), row(0.4, "c")
    text_only = row(name="t", match=1.0)
    ranked = fuse([a, b, c], [{**b}, {**text_only}])
    assert len(ranked) == 4
    scores = [x.score for x in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    # Each score is the hit's own, never borrowed from a neighbour.
    for cand in ranked:
        cosine = None if cand.distance is None else 1.0 - cand.distance
        assert cand.score == pytest.approx(
            JOB_SCORE.score(cosine, cand.title_match, cand.title_similarity)
        )
    # b: nearer than c and its title matches; it outranks both a and c.
    assert ranked[0].id == b["id"]


def test_fusion_windows_double_until_the_last_position_is_covered() -> None:
    assert fusion_windows(10, 0) == fusion_windows(5, 35) == fusion_windows(1, 0) == [40]
    assert fusion_windows(10, 40) == fusion_windows(80, 0) == fusion_windows(1, 79) == [40, 80]
    assert fusion_windows(50, 0) == [40, 80]
    assert fusion_windows(50, 1000) == [40, 80, 160, 320, 640, 1280]


def test_windowed_fusion_places_each_position_from_its_own_window() -> None:
    """Positions below the first window come from the first window's fusion alone: a row
    that only a longer list reaches cannot push its way into them; past that window, the
    longer lists decide the rest, without repeating what is placed."""
    vec = [row(0.1 + i / 100, f"v{i}") for i in range(40)]
    text = [row(name=f"t{i}") for i in range(40)]
    # Beyond the first window of both lists, the best listing of all: one 40-window would put
    # it first.
    both = row(0.05, "both", match=1.0)
    vec[30], text[30] = both, {**both}
    single = fuse(vec, text)
    assert single[0].id == both["id"]
    ranked = fuse(vec, text, [20, 40])
    ids = [c.id for c in ranked]
    assert len(ids) == len(set(ids)) == 79
    assert ids[:20] == [c.id for c in fuse(vec[:20], text[:20])][:20]
    assert both["id"] not in ids[:20] and ids[20] == both["id"]


def test_like_pattern_matches_its_text_literally() -> None:
    assert like_pattern("New York") == "%New York%"
    assert like_pattern("50%_off\\") == "%50\\%\\_off\\\\%"
