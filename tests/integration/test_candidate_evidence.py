"""The text evidence of a candidate's relevance score (shortlist.talent.evidence): query words
weighted by their rarity in the corpus, matched against the title and skills only."""

from __future__ import annotations

import uuid

import pytest

from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.embedding.model_space import first_space
from shortlist.talent import repository as repo
from shortlist.talent.evidence import query_terms
from shortlist.talent.repository import CorpusFilters
from tests.fakes import hash_embed
from tests.integration.rows import insert_candidate


async def scores(conn: AsyncConn, *, vector_of: str, text: str) -> dict[uuid.UUID, float]:
    """Everyone the corpus search finds for ``text`` (embedded as ``vector_of``), with scores."""
    hits = await repo.search_corpus(
        conn,
        space=first_space(384),
        embedding=hash_embed(vector_of),
        text=text,
        filters=CorpusFilters(location=None, min_years=None, skills=[]),
        min_score=0.0,
        limit=10,
        pool_size=50,
    )
    return {h.candidate_id: h.score for h in hits}


async def test_a_rare_query_word_weighs_more_than_one_everybody_has(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        for name in ("Ada", "Bob", "Cy"):
            await insert_candidate(conn, name, role_title="Backend Engineer")
        await insert_candidate(conn, "Di", role_title="Technical Recruiter", skills=("hiring",))
        terms = await query_terms(conn, "engineer recruiter")
        nothing = await query_terms(conn, "")
        # Quotes, backslashes and tsquery operators in a brief are words, never syntax.
        awkward = await query_terms(conn, "o'neil's c:\\tools & | !go 'fpga'")
    weights = dict(zip(terms.lexemes, terms.weights, strict=True))
    assert set(weights) == {"engin", "recruit"}
    assert sum(weights.values()) == pytest.approx(1.0)
    assert weights["recruit"] > 2 * weights["engin"]
    assert (nothing.lexemes, nothing.weights) == ([], [])
    assert "fpga" in awkward.lexemes
    assert sum(awkward.weights) == pytest.approx(1.0)


async def test_the_person_asked_for_outranks_people_sharing_only_a_common_word(
    pool: AsyncPool,
) -> None:
    query = "hire engineers and run recruiting"
    async with pool.connection() as conn:
        engineers = [
            await insert_candidate(conn, name, role_title="Backend Engineer", text=query)
            for name in ("Ada", "Bob", "Cy", "Dan")
        ]
        recruiter = await insert_candidate(
            conn, "Eve", role_title="Technical Recruiter", skills=("recruiting",), text=query
        )
        found = await scores(conn, vector_of=query, text=query)
    # Everyone's vector is equally close: the words decide.
    assert set(found) == {recruiter, *engineers}
    assert found[recruiter] > max(found[e] for e in engineers)


async def test_the_employer_in_a_headline_is_not_the_persons_role(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        informatics = await insert_candidate(
            conn, "Ada", role_title="Health Informatics Specialist", text="someone"
        )
        coder = await insert_candidate(
            conn, "Bob", role_title="Backend Engineer", skills=("go",), text="someone"
        )
        await conn.execute(
            "UPDATE candidates SET headline = 'Backend Engineer at Ironbark Health' WHERE id = %s",
            (coder,),
        )
        found = await scores(conn, vector_of="health", text="health")
    # Full text finds both (a title, an employer in a headline); only one works in health.
    assert found[informatics] > 0.5 > found[coder]
