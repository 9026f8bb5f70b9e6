"""Query normalisation and the calibrated score (shortlist.relevance); no database."""

from __future__ import annotations

import pytest

from shortlist.relevance import (
    ABBREVIATED,
    ABBREVIATIONS,
    CANDIDATE_SCORE,
    JOB_SCORE,
    PENDING_COSINE,
    abbreviate,
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


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("chief technology officer", "chief technology officer CTO"),
        ("Chief  Technology Officer jobs", "Chief  Technology Officer CTO jobs"),
        ("search engine optimization specialist", "search engine optimization SEO specialist"),
        ("director of human resources", "director of human resources HR"),
        # The longest spelled-out form is read whole.
        ("human resources business partner", "human resources business partner HRBP"),
        ("vice president of sales", "vice president VP of sales"),
        # Not when the query already holds the abbreviation.
        ("CTO chief technology officer", "CTO chief technology officer"),
        # Single words are not abbreviated, nor forms that are not what the abbreviation names.
        ("senior developer", "senior developer"),
        ("project management", "project management"),
        ("occupational safety and health", "occupational safety and health"),
        # Whole words only.
        ("chief technology officers", "chief technology officers"),
        ("vice presidential", "vice presidential"),
        ("chieftechnology officer", "chieftechnology officer"),
    ],
)
def test_abbreviate_appends_the_abbreviation_of_spelled_out_forms_of_two_or_more_words(
    query: str, expected: str
) -> None:
    assert abbreviate(query) == expected


def test_a_spelled_out_role_is_searched_by_its_abbreviation_but_not_embedded_with_it() -> None:
    # normalise_query is what is embedded (and the query cache's key): spelled out only.
    assert normalise_query("chief technology officer") == "chief technology officer"
    assert text_terms(normalise_query("senior chief technology officer")) == (
        "chief technology officer CTO"
    )
    # Both directions: an abbreviation is spelled out, and not abbreviated again.
    assert text_terms(normalise_query("CTO")) == "CTO chief technology officer"
    assert text_terms(normalise_query("SEO")) == "SEO search engine optimization"


@pytest.mark.parametrize(
    "query",
    [
        "CTO",
        "chief technology officer",
        "sr python dev",
        "HRBP",
        "head of IT security",
        "ML/NLP person",
        "PMP program mgr",
        "SEO and SEM",
        "information security analyst",
        "human resources business partner",
    ],
)
def test_abbreviating_twice_changes_nothing(query: str) -> None:
    once = abbreviate(normalise_query(query))
    assert abbreviate(once) == once
    assert text_terms(once) == text_terms(normalise_query(query))


def test_abbreviations_inside_words_are_left_alone() -> None:
    # "it", "pr", "vp" are keys; "with", "print", "mvp" hold them, not as words.
    assert normalise_query("print with mvp") == "print with mvp"
    assert abbreviate("print with mvp") == "print with mvp"


def test_every_abbreviated_form_spells_out_its_abbreviation() -> None:
    for full, abbreviation in ABBREVIATED.items():
        assert len(full.split()) >= 2
        assert ABBREVIATIONS[abbreviation] == full
