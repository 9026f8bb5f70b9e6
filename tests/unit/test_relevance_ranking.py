"""Query normalisation and the calibrated score (shortlist.relevance); no database."""

from __future__ import annotations

import pytest

from shortlist.relevance import (
    CANDIDATE_SCORE,
    JOB_SCORE,
    PENDING_COSINE,
    normalise_query,
    text_terms,
)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("CTO", "CTO chief technology officer"),
        ("remote SRE role", "remote SRE site reliability engineer role"),
        ("QA inspector", "QA quality assurance inspector"),
        ("sr python dev", "sr senior python dev developer"),
        ("data engineer", "data engineer"),
        ("Italian", "Italian"),
    ],
)
def test_normalise_query_spells_out_whole_word_abbreviations(query: str, expected: str) -> None:
    assert normalise_query(query) == expected


def test_text_terms_drop_seniority_words_but_never_the_whole_query() -> None:
    assert text_terms("senior data scientist") == "data scientist"
    assert text_terms("entry level accounting job") == "accounting job"
    assert text_terms("senior lead") == "senior lead"


@pytest.mark.parametrize("model", [JOB_SCORE, CANDIDATE_SCORE])
def test_score_is_a_probability_rising_with_similarity(model: object) -> None:
    from shortlist.relevance import ScoreModel

    assert isinstance(model, ScoreModel)
    low = model.score(0.1, 0.0, 0.0)
    high = model.score(0.9, 0.0, 0.0)
    assert 0.0 < low < high < 1.0
    # A pending listing is scored as an unrelated text would be, on its words alone.
    assert model.score(None, 1.0, 1.0) == model.score(PENDING_COSINE, 1.0, 1.0)
