"""relevance: is what search returns relevant? Measured on labelled data nobody here wrote.

Job search — ``/work/shared/relevance/usajobs_2024_2025.csv`` (``SHORTLIST_BENCH_RELEVANCE_CSV``
overrides it): real USAJOBS postings, each labelled by the hiring agency with its occupational
series. Reposts (same title and agency) are kept once: 23k rows → ~9.1k listings, a
deterministic subset that also keeps one advert posted twelve times from filling a top 10. The
rows go through the product's own path: ``shortlist ingest jobs`` (``ListingFileReader`` +
``ingest_listings``; agency as company, department as description, no city in the data) and
the embedding indexer with the local all-MiniLM-L6-v2. ``bench/relevance/job_queries.csv``:
queries written as a job seeker types them (paraphrases, abbreviations, seniority words,
typos; never a copied title), each with the series that answer it.

Candidate search — the bundled sample corpus (1,500 people, ``load_sample_candidates``,
embedded by the same indexer); ``bench/relevance/candidate_queries.csv``: recruiter briefs, a
person is relevant when their role family is in the brief's set (and, when the brief names
skills, they have one of them).

Each half (``tune``: every other query of a group, starting with the first; ``held-out``: the
rest) is scored for four rankings:

  (a) vector   exact cosine of the raw query's MiniLM vector (numpy over every stored vector)
  (b) text     Okapi BM25 (k1 1.2, b 0.75) over the lexemes of the product's ``search_tsv``
  (c) RRF      plain reciprocal rank fusion, k = 60, of the top 100 of (a) and (b)
  (d) product  the default ranking: ``search_jobs`` / the corpus statement of candidate search

Metrics: precision@10, nDCG@10 (binary gains) and recall@50 (relevant in the top 50 over
``min(50, relevant)``, since a series can have hundreds of postings). Per query in
``results/relevance-queries.csv``; means in ``latest.json``, with the targets of the issue:
(d) ≥ (c) + 0.03 P@10 on the held-out half, and (d) no more than 0.1 below (a) or (b) in any
query group. ``results/relevance-calibration.json``: for the product's scores, the share of
hits at or above each score that are relevant, the internal-corpus floor check, and the
candidate score's weights fitted afresh on the tune half (``fit_candidate_score``; the
product's ``CANDIDATE_SCORE`` is that fit).
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from bench.bench_indexer import run_indexer
from bench.common import Context, Record, Stat, report
from shortlist.embedding.model_space import first_space

NAME = "relevance"
HERE = Path(__file__).resolve().parent / "relevance"
DEFAULT_CSV = Path("/work/shared/relevance/usajobs_2024_2025.csv")
SMOKE_CSV = HERE / "usajobs_smoke.csv"
METHODS = ("vector", "text", "rrf", "product")
LABELS = {"vector": "(a) vector", "text": "(b) text", "rrf": "(c) RRF", "product": "(d) product"}
HALVES = ("tune", "held-out")
DEPTH = 50
POOL = 100
RRF_K = 60
BM25_K1, BM25_B = 1.2, 0.75
GAIN_OVER_RRF = 0.03
GROUP_SLACK = 0.1
CALIBRATION_STEPS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
SMOKE_QUERIES_PER_GROUP = 2
"""A smoke run's queries: the first of each group (its tune half) and the second (held-out)."""


# --- queries and metrics ---------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    group: str
    text: str
    half: str
    is_relevant: Callable[[str], bool]
    """Whether a document (by key: listing or candidate id) answers the query."""
    relevant_count: int


def split_halves(groups: Sequence[str]) -> list[str]:
    """Every other query of a group is tuned on, starting with the group's first."""
    seen: dict[str, int] = defaultdict(int)
    halves = []
    for group in groups:
        halves.append(HALVES[seen[group] % 2])
        seen[group] += 1
    return halves


def precision_at(ranked: Sequence[bool], k: int) -> float:
    return sum(ranked[:k]) / k


def ndcg_at(ranked: Sequence[bool], k: int, relevant_count: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, rel in enumerate(ranked[:k]) if rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, relevant_count)))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: Sequence[bool], k: int, relevant_count: int) -> float:
    return sum(ranked[:k]) / min(k, relevant_count) if relevant_count else 0.0


def scores(query: Query, ranked_keys: Sequence[str]) -> dict[str, float]:
    rel = [query.is_relevant(key) for key in ranked_keys]
    return {
        "P@10": precision_at(rel, 10),
        "nDCG@10": ndcg_at(rel, 10, query.relevant_count),
        "recall@50": recall_at(rel, DEPTH, query.relevant_count),
    }


def rrf(*lists: Sequence[str]) -> list[str]:
    fused: dict[str, float] = defaultdict(float)
    for ranked in lists:
        for rank, key in enumerate(ranked, start=1):
            fused[key] += 1.0 / (RRF_K + rank)
    return sorted(fused, key=lambda key: (-fused[key], key))


# --- the two reference rankings, outside the product ------------------------------------------


@dataclass
class Corpus:
    keys: list[str]
    vectors: np.ndarray[Any, Any]
    term_freqs: list[dict[str, int]]
    doc_freq: dict[str, int] = field(default_factory=dict)
    avg_len: float = 0.0

    def __post_init__(self) -> None:
        df: dict[str, int] = defaultdict(int)
        for tf in self.term_freqs:
            for term in tf:
                df[term] += 1
        self.doc_freq = dict(df)
        self.avg_len = sum(sum(tf.values()) for tf in self.term_freqs) / max(1, len(self.keys))

    def nearest(self, query_vector: Sequence[float], k: int) -> list[str]:
        sims = self.vectors @ np.asarray(query_vector, dtype=np.float32)
        order = np.lexsort((np.arange(len(sims)), -sims))[:k]
        return [self.keys[i] for i in order]

    def bm25(self, terms: Sequence[str], k: int) -> list[str]:
        n = len(self.keys)
        scored = []
        for i, tf in enumerate(self.term_freqs):
            length = sum(tf.values())
            s = 0.0
            for term in terms:
                f = tf.get(term, 0)
                if f:
                    df = self.doc_freq[term]
                    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                    s += (
                        idf
                        * f
                        * (BM25_K1 + 1)
                        / (f + BM25_K1 * (1 - BM25_B + BM25_B * length / self.avg_len))
                    )
            if s > 0:
                scored.append((-s, self.keys[i]))
        return [key for _, key in sorted(scored)[:k]]


def load_corpus(url: str, table: str) -> Corpus:
    """Every embedded row's vector and the term frequencies of its ``search_tsv``."""
    with psycopg.connect(url) as conn:
        register_vector(conn)
        rows = conn.execute(
            f"SELECT id::text, embedding,"
            f" (SELECT coalesce(jsonb_object_agg(lexeme, cardinality(positions)), '{{}}')"
            f"    FROM unnest(search_tsv)) AS tf"
            f"  FROM {table} WHERE embedding IS NOT NULL ORDER BY id"
        ).fetchall()
    vectors = np.asarray([r[1].to_numpy() for r in rows], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return Corpus([r[0] for r in rows], vectors, [dict(r[2]) for r in rows])


def query_terms(url: str, texts: Sequence[str]) -> list[list[str]]:
    """The lexemes PostgreSQL's English configuration makes of each query (as for BM25)."""
    with psycopg.connect(url) as conn:
        return [
            [
                r[0]
                for r in conn.execute(
                    "SELECT lexeme FROM unnest(to_tsvector('english', %s))", (t,)
                ).fetchall()
            ]
            for t in texts
        ]


# --- the corpora -----------------------------------------------------------------------------


def job_rows(ctx: Context) -> list[dict[str, str]]:
    path = (
        SMOKE_CSV
        if ctx.smoke
        else Path(os.environ.get("SHORTLIST_BENCH_RELEVANCE_CSV", DEFAULT_CSV))
    )
    if not path.exists():
        raise FileNotFoundError(f"relevance: no development set at {path}")
    seen: set[tuple[str, str]] = set()
    rows = []
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            key = (row["position_title"].strip().casefold(), row["agency"].strip())
            if key not in seen and row["position_title"].strip() and row["agency"].strip():
                seen.add(key)
                rows.append(row)
    limit = ctx.options.get("relevance_rows")
    return rows[: int(limit)] if limit else rows


async def ingest_jobs(url: str, rows: Sequence[dict[str, str]]) -> int:
    """Through ``shortlist ingest jobs``' own reader and inserter, from a CSV file."""
    from psycopg.rows import dict_row

    from shortlist.listings.ingest import ListingFileReader, ingest_listings

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "usajobs.csv"
        with path.open("w", encoding="utf-8", newline="") as f:
            out = csv.writer(f)
            out.writerow(["company", "title", "city", "description"])
            for row in rows:
                out.writerow(
                    [row["agency"], row["position_title"], "United States", row["department"]]
                )
        conn = await psycopg.AsyncConnection.connect(url, row_factory=dict_row)
        try:
            with ListingFileReader(path).open() as reader:
                result = await ingest_listings(conn, reader)
        finally:
            await conn.close()
    return result.inserted


def query_specs(name: str, smoke: bool) -> list[dict[str, str]]:
    """The rows of ``relevance/<name>``; a smoke run's: :data:`SMOKE_QUERIES_PER_GROUP` per
    group (every ranking, metric and half still computed, on a few hundred fewer searches)."""
    with (HERE / name).open(encoding="utf-8", newline="") as f:
        specs = list(csv.DictReader(f))
    if not smoke:
        return specs
    taken: dict[str, int] = defaultdict(int)
    kept = []
    for spec in specs:
        if taken[spec["group"]] < SMOKE_QUERIES_PER_GROUP:
            taken[spec["group"]] += 1
            kept.append(spec)
    return kept


def job_queries(url: str, rows: Sequence[dict[str, str]], *, smoke: bool = False) -> list[Query]:
    series_of = {
        (r["position_title"].strip(), r["agency"].strip()): r["occupation_series"][:4] for r in rows
    }
    with psycopg.connect(url) as conn:
        listing_series = {
            str(i): series_of[(t, c)]
            for i, t, c in conn.execute("SELECT id, job_title, company_name FROM job_listings")
        }
    counts: dict[str, int] = defaultdict(int)
    for s in listing_series.values():
        counts[s] += 1
    specs = query_specs("job_queries.csv", smoke)
    queries = []
    for spec, half in zip(specs, split_halves([s["group"] for s in specs]), strict=True):
        wanted = frozenset(spec["relevant_series"].split())
        queries.append(
            Query(
                spec["group"],
                spec["query"],
                half,
                lambda key, wanted=wanted: listing_series.get(key) in wanted,  # type: ignore[misc]
                sum(counts[s] for s in wanted),
            )
        )
    return queries


def candidate_queries(url: str, *, smoke: bool = False) -> list[Query]:
    with psycopg.connect(url) as conn:
        people = {
            str(i): (family, {s.casefold() for s in skills})
            for i, family, skills in conn.execute("SELECT id, role_family, skills FROM candidates")
        }
    specs = query_specs("candidate_queries.csv", smoke)
    queries = []
    for spec, half in zip(specs, split_halves([s["group"] for s in specs]), strict=True):
        families = frozenset(spec["relevant_families"].split())
        skills = frozenset(s.strip().casefold() for s in spec["required_skills"].split(";") if s)

        def relevant(
            key: str, families: frozenset[str] = families, skills: frozenset[str] = skills
        ) -> bool:
            person = people.get(key)
            return (
                person is not None
                and person[0] in families
                and (not skills or bool(skills & person[1]))
            )

        queries.append(
            Query(spec["group"], spec["query"], half, relevant, sum(map(relevant, people)))
        )
    return queries


# --- running the rankings --------------------------------------------------------------------


@dataclass
class Outcome:
    """One query's ranked keys per method, and the product's (score, key) pairs."""

    ranked: dict[str, list[str]]
    scored: list[tuple[float, str]]


async def product_jobs(
    url: str,
    embedder: Any,
    queries: Sequence[Query],
    labels: dict[tuple[str, str], list[str]] | None = None,
) -> list[list[tuple[float, str]]]:
    """The product's (score, key) per query; ``labels``: filled with each hit's match in words
    (``why.labels``), by (query, key)."""
    from shortlist.db.pool import open_async_pool
    from shortlist.listings.search import search_jobs

    pool = await open_async_pool(url, min_size=1, max_size=2, name="bench-relevance")
    try:
        out = []
        for q in queries:
            result = await search_jobs(pool, embedder, q.text, size=DEPTH)
            out.append([(h.score, str(h.listing.id)) for h in result.hits])
            if labels is not None:
                for h in result.hits:
                    labels[(q.text, str(h.listing.id))] = h.why.labels
        return out
    finally:
        await pool.close()


LABEL_KINDS = ("Title matches", "Title matches in part", "Mentions", "Similar in meaning")
PAGE = 10


def label_precision(
    queries: Sequence[Query],
    results: Sequence[Outcome],
    labels: dict[tuple[str, str], list[str]],
    half: str,
) -> dict[str, Any]:
    """Of the first page's hits (10 per query) carrying each match label ("Title matches",
    …; shortlist.listings.why.match_labels), the share that is relevant; and the pages whose ten
    hits all show the same percentage (the page then hides it and says why they are equal)."""
    counts: dict[str, list[bool]] = {k: [] for k in LABEL_KINDS}
    equal_pages = 0
    mine = [(q, r) for q, r in zip(queries, results, strict=True) if q.half == half]
    for q, res in mine:
        page = res.scored[:PAGE]
        if len(page) == PAGE and len({round(score * 100) for score, _ in page}) == 1:
            equal_pages += 1
        for _score, key in page:
            relevant = q.is_relevant(key)
            for label in labels.get((q.text, key), []):
                # "Mentions Python, Kotlin" by its kind; the others as they are
                kind = "Mentions" if label.startswith("Mentions") else label
                if kind in counts:
                    counts[kind].append(relevant)
    return {
        "labels": {
            kind: {
                "hits": len(flags),
                "relevant_share": round(sum(flags) / len(flags), 4) if flags else None,
            }
            for kind, flags in counts.items()
        },
        "pages_with_ten_equal_percentages": equal_pages,
        "queries": len(mine),
    }


async def product_candidates(
    url: str,
    embedder: Any,
    queries: Sequence[Query],
    min_score: float = 0.0,
    model: Any = None,
    limit: int = DEPTH,
) -> list[list[tuple[float, str]]]:
    from shortlist.db.pool import open_async_pool
    from shortlist.embedding.base import embed_queries
    from shortlist.relevance import CANDIDATE_SCORE
    from shortlist.talent import repository as repo
    from shortlist.talent.models import SearchCreate
    from shortlist.talent.repository import CorpusFilters
    from shortlist.talent.service import CORPUS_POOL_SIZE, query_embedding_text, search_text

    pool = await open_async_pool(url, min_size=1, max_size=2, name="bench-relevance")
    try:
        out = []
        for q in queries:
            brief = SearchCreate(query=q.text)
            text = search_text(brief)
            [embedding] = await embed_queries(embedder, [query_embedding_text(brief)])
            async with pool.connection() as conn:
                hits = await repo.search_corpus(
                    conn,
                    space=first_space(embedder.dim),
                    embedding=embedding,
                    text=text,
                    filters=CorpusFilters(None, None, []),
                    min_score=min_score,
                    limit=limit,
                    pool_size=CORPUS_POOL_SIZE,
                    model=model or CANDIDATE_SCORE,
                )
            out.append([(h.score, str(h.candidate_id)) for h in hits])
        return out
    finally:
        await pool.close()


def outcomes(
    url: str,
    table: str,
    embedder: Any,
    queries: Sequence[Query],
    product: list[list[tuple[float, str]]],
) -> list[Outcome]:
    corpus = load_corpus(url, table)
    vectors = asyncio.run(embedder.embed([q.text for q in queries]))
    terms = query_terms(url, [q.text for q in queries])
    out = []
    for vector, words, scored in zip(vectors, terms, product, strict=True):
        by_vector = corpus.nearest(vector, POOL)
        by_text = corpus.bm25(words, POOL)
        ranked = {
            "vector": by_vector,
            "text": by_text,
            "rrf": rrf(by_vector, by_text),
            "product": [key for _, key in scored],
        }
        out.append(Outcome(ranked, scored))
    return out


# --- fitting the candidate score -------------------------------------------------------------

FEATURES = ("cosine", "title_match", "title_similarity")
FIT_L2 = 1.0
"""Ridge penalty on the weights (not the intercept): keeps them finite when a feature separates
the tune half perfectly."""


def fit_logistic(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Intercept and weights of a ridge-penalised logistic regression (Newton steps)."""
    design = np.column_stack([np.ones(len(x)), x])
    penalty = FIT_L2 * np.diag([0.0] + [1.0] * x.shape[1])
    w = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-design @ w))
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, design.T @ (p - y) + penalty @ w)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def candidate_evidence(
    url: str, embedder: Any, queries: Sequence[Query]
) -> list[tuple[list[str], np.ndarray[Any, Any]]]:
    """Per query, everyone the corpus search finds (its whole pool) and their evidence.

    Read through the product's own statement: with a model whose only weight is 1 on one
    feature, the score is σ(feature), so the logit of the score is that feature."""
    from shortlist.relevance import ScoreModel
    from shortlist.talent.service import CORPUS_POOL_SIZE

    columns = []
    for i in range(len(FEATURES)):
        unit = ScoreModel(0.0, *(1.0 if j == i else 0.0 for j in range(len(FEATURES))))
        columns.append(
            asyncio.run(
                product_candidates(url, embedder, queries, model=unit, limit=2 * CORPUS_POOL_SIZE)
            )
        )
    out = []
    for per_feature in zip(*columns, strict=True):
        keys = sorted(key for _, key in per_feature[0])
        values = [dict((k, s) for s, k in hits) for hits in per_feature]
        x = np.asarray([[values[f][k] for f in range(len(FEATURES))] for k in keys])
        x = np.clip(x, 1e-12, 1 - 1e-12)
        out.append((keys, np.log(x / (1 - x))))
    return out


def fit_candidate_score(
    queries: Sequence[Query], evidence: Sequence[tuple[list[str], np.ndarray[Any, Any]]]
) -> dict[str, float]:
    """The candidate score's weights, fitted on the tune half's hits as the product shows them:
    its top 50 per brief (the floor and the percentage apply there, not to the unseen tail of the
    candidate pool). Starts from a fit on the whole pools; two refits on the top 50 of the
    resulting order settle it."""
    tune = [
        (q, keys, x) for q, (keys, x) in zip(queries, evidence, strict=True) if q.half == "tune"
    ]

    def fit(top: int | None, w: np.ndarray[Any, Any] | None) -> np.ndarray[Any, Any]:
        xs, ys = [], []
        for q, keys, x in tune:
            order = np.arange(len(keys))
            if w is not None:
                z = w[0] + x @ w[1:]
                order = np.lexsort((np.asarray(keys), -z))[:top]
            xs.append(x[order])
            ys.append(np.asarray([q.is_relevant(keys[i]) for i in order], dtype=float))
        return fit_logistic(np.concatenate(xs), np.concatenate(ys))

    w = fit(None, None)
    for _ in range(2):
        w = fit(DEPTH, w)
    return {"intercept": float(w[0])} | {f: float(v) for f, v in zip(FEATURES, w[1:], strict=True)}


# --- reporting -------------------------------------------------------------------------------


Table = dict[tuple[str, str, str], float]
"""(half or group, method, metric) → mean."""


def per_query_rows(
    corpus: str, queries: Sequence[Query], results: Sequence[Outcome]
) -> list[dict[str, Any]]:
    rows = []
    for q, res in zip(queries, results, strict=True):
        for method in METHODS:
            s = scores(q, res.ranked[method])
            rows.append(
                {
                    "corpus": corpus,
                    "half": q.half,
                    "group": q.group,
                    "query": q.text,
                    "method": method,
                    "relevant": q.relevant_count,
                    **{k: round(v, 4) for k, v in s.items()},
                }
            )
    return rows


def means(rows: Sequence[dict[str, Any]], by: str) -> Table:
    sums: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in rows:
        for metric in ("P@10", "nDCG@10", "recall@50"):
            sums[(row[by], row["method"], metric)].append(row[metric])
    return {key: sum(v) / len(v) for key, v in sums.items()}


def calibration(
    queries: Sequence[Query], results: Sequence[Outcome], half: str
) -> list[dict[str, Any]]:
    """For each step X: of the product's hits scored ≥ X, the share that is relevant."""
    pairs = [
        (score, q.is_relevant(key))
        for q, res in zip(queries, results, strict=True)
        if q.half == half
        for score, key in res.scored
    ]
    out = []
    for step in CALIBRATION_STEPS:
        above = [rel for score, rel in pairs if score >= step]
        band = [rel for score, rel in pairs if step <= score < step + 0.1]
        out.append(
            {
                "score_at_least": step,
                "hits": len(above),
                "relevant_share": round(sum(above) / len(above), 4) if above else None,
                "band_hits": len(band),
                "band_relevant_share": round(sum(band) / len(band), 4) if band else None,
            }
        )
    return out


def records_for(corpus: str, halves: Table, groups: Table) -> list[Record]:
    recs: list[Record] = []
    for half in HALVES:
        for metric in ("P@10", "nDCG@10", "recall@50"):
            for method in METHODS:
                recs.append(
                    report(
                        NAME,
                        f"{corpus} {half} {metric} {LABELS[method]}",
                        halves[(half, method, metric)],
                    )
                )
    held = "held-out"
    d, c = halves[(held, "product", "P@10")], halves[(held, "rrf", "P@10")]
    recs.append(
        Record(
            NAME,
            f"{corpus} held-out P@10: (d) product vs (c) RRF + {GAIN_OVER_RRF}",
            Stat.one(d),
            Stat.one(c + GAIN_OVER_RRF),
            target=1.0,
            baseline_name="RRF + 0.03",
        )
    )
    for group in sorted({g for g, _, _ in groups}):
        worst = max(groups[(group, "vector", "P@10")], groups[(group, "text", "P@10")])
        recs.append(
            Record(
                NAME,
                f"{corpus} group {group} P@10: (d) vs best of (a),(b) − {GROUP_SLACK}",
                Stat.one(groups[(group, "product", "P@10")]),
                Stat.one(max(1e-9, worst - GROUP_SLACK)),
                target=1.0,
                baseline_name="best part − 0.1",
            )
        )
    return recs


def print_table(ctx: Context, corpus: str, halves: Table) -> None:
    ctx.log(f"relevance: {corpus}")
    for half in HALVES:
        for method in METHODS:
            cells = "  ".join(
                f"{metric} {halves[(half, method, metric)]:.3f}"
                for metric in ("P@10", "nDCG@10", "recall@50")
            )
            ctx.log(f"  {half:8} {LABELS[method]:12} {cells}")


# --- the benchmark ---------------------------------------------------------------------------


def _embedder(ctx: Context) -> Any:
    if ctx.smoke:
        from bench.talent_support import HashEmbedder

        return HashEmbedder()
    from shortlist.embedding.local import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.warm_up()
    return embedder


def _vacuum(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def prepare_jobs(ctx: Context, embedder: Any) -> tuple[str, list[dict[str, str]]]:
    rows = job_rows(ctx)
    url = ctx.pg.create_database("bench_relevance_jobs")
    inserted = asyncio.run(ingest_jobs(url, rows))
    ctx.log(f"relevance: {inserted:,} listings ingested; embedding them")
    embedded = asyncio.run(run_indexer(url, embedder, "job_listings"))
    ctx.log(f"relevance: {embedded:,} listings embedded")
    _vacuum(url)
    return url, rows


def evaluate_jobs(
    url: str, rows: Sequence[dict[str, str]], embedder: Any, *, smoke: bool = False
) -> tuple[list[Query], list[Outcome]]:
    queries = job_queries(url, rows, smoke=smoke)
    product = asyncio.run(product_jobs(url, embedder, queries, JOB_LABELS))
    return queries, outcomes(url, "job_listings", embedder, queries, product)


JOB_LABELS: dict[tuple[str, str], list[str]] = {}
"""Each job hit's match labels of the last :func:`evaluate_jobs`, by (query, key)."""


def prepare_candidates(ctx: Context, embedder: Any) -> str:
    from shortlist.talent.sample import load_sample_candidates

    url = ctx.pg.create_database("bench_relevance_candidates")

    async def load() -> int:
        from psycopg.rows import dict_row

        conn = await psycopg.AsyncConnection.connect(url, row_factory=dict_row)
        try:
            return await load_sample_candidates(conn)
        finally:
            await conn.close()

    loaded = asyncio.run(load())
    embedded = asyncio.run(run_indexer(url, embedder, "candidates"))
    ctx.log(f"relevance: {loaded:,} sample candidates, {embedded:,} embedded")
    _vacuum(url)
    return url


def evaluate_candidates(
    url: str, embedder: Any, *, smoke: bool = False
) -> tuple[list[Query], list[Outcome]]:
    queries = candidate_queries(url, smoke=smoke)
    product = asyncio.run(product_candidates(url, embedder, queries))
    return queries, outcomes(url, "candidates", embedder, queries, product)


def floor_check(url: str, embedder: Any, queries: Sequence[Query]) -> dict[str, Any]:
    """The internal-corpus floor at its default: per brief, how many people clear it, how many
    of those are relevant, and whether the search would go to the paid backfill."""
    from shortlist.config import Settings

    settings = Settings()
    kept = asyncio.run(product_candidates(url, embedder, queries, settings.internal_min_score))
    per_query = []
    for q, hits in zip(queries, kept, strict=True):
        relevant = sum(q.is_relevant(key) for _, key in hits)
        per_query.append(
            {
                "query": q.text,
                "half": q.half,
                "relevant_in_corpus": q.relevant_count,
                "hits": len(hits),
                "relevant_hits": relevant,
                "backfills": len(hits) < settings.backfill_min_results,
            }
        )
    hits = sum(r["hits"] for r in per_query)
    return {
        "floor": settings.internal_min_score,
        "hits": hits,
        "relevant_share": round(sum(r["relevant_hits"] for r in per_query) / hits, 4)
        if hits
        else None,
        "backfilling_queries": sum(r["backfills"] for r in per_query),
        "broad_briefs_backfilling": sum(
            r["backfills"] and r["relevant_in_corpus"] >= 50 for r in per_query
        ),
        "per_query": per_query,
    }


def constrained_records(
    ctx: Context, url: str, embedder: Any, base: Sequence[Query]
) -> list[Record]:
    """P@10 of the constrained variants of the candidate briefs, and how many backfill."""
    from bench import relevance_constrained

    rows = relevance_constrained.evaluate(url, embedder, base)
    summary = relevance_constrained.summary(rows)
    (ctx.results_dir / "relevance-constrained.json").write_text(
        json.dumps({"summary": summary, "briefs": rows}, indent=1) + "\n", encoding="utf-8"
    )
    ctx.log(f"relevance: constrained briefs {json.dumps(summary)}")
    out = [
        report(NAME, f"candidates constrained {key}", float(value))
        for key, value in summary.items()
        if key.endswith("P@10")
    ]
    out.append(
        report(
            NAME,
            "candidates constrained briefs whose backfill started",
            float(summary["backfill started"]),
            note=f"of {summary['briefs']} constrained briefs",
        )
    )
    return out


def run(ctx: Context) -> list[Record]:
    embedder = _embedder(ctx)
    if os.environ.get("SHORTLIST_BENCH_RELEVANCE_PARTS") == "constrained":
        # Only the constrained candidate briefs (a quick before/after of the brief's rules).
        cand_url = prepare_candidates(ctx, embedder)
        ctx.results_dir.mkdir(parents=True, exist_ok=True)
        return constrained_records(ctx, cand_url, embedder, candidate_queries(cand_url))
    job_url, job_source = prepare_jobs(ctx, embedder)
    job_q, job_res = evaluate_jobs(job_url, job_source, embedder, smoke=ctx.smoke)
    cand_url = prepare_candidates(ctx, embedder)
    cand_q, cand_res = evaluate_candidates(cand_url, embedder, smoke=ctx.smoke)
    rows = per_query_rows("jobs", job_q, job_res) + per_query_rows("candidates", cand_q, cand_res)
    ctx.results_dir.mkdir(parents=True, exist_ok=True)
    with (ctx.results_dir / "relevance-queries.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    records: list[Record] = []
    for corpus in ("jobs", "candidates"):
        mine = [r for r in rows if r["corpus"] == corpus]
        halves, groups = means(mine, "half"), means(mine, "group")
        print_table(ctx, corpus, halves)
        records += records_for(corpus, halves, groups)
    floor = floor_check(cand_url, embedder, cand_q)
    fitted = fit_candidate_score(cand_q, candidate_evidence(cand_url, embedder, cand_q))
    ctx.log(f"relevance: candidate score refitted on the tune half: {fitted}")
    job_labels = {h: label_precision(job_q, job_res, JOB_LABELS, h) for h in HALVES}
    detail = {
        "candidate_score_fit": {k: round(v, 3) for k, v in fitted.items()},
        "jobs": {h: calibration(job_q, job_res, h) for h in HALVES},
        "job_labels": job_labels,
        "candidates": {h: calibration(cand_q, cand_res, h) for h in HALVES},
        "candidate_floor": floor,
    }
    (ctx.results_dir / "relevance-calibration.json").write_text(
        json.dumps(detail, indent=2) + "\n", encoding="utf-8"
    )
    for half in HALVES:
        found = job_labels[half]
        title = found["labels"]["Title matches"]
        records.append(
            report(
                NAME,
                f"jobs {half}: 'Title matches' hits relevant (first page)",
                title["relevant_share"] or 0.0,
                note=f"{title['hits']} hits; pages of ten equal percentages:"
                f" {found['pages_with_ten_equal_percentages']} of {found['queries']}",
            )
        )
    records.append(
        report(
            NAME,
            "candidates: share of internal hits above the floor that are relevant",
            floor["relevant_share"] or 0.0,
            note=f"floor {floor['floor']}, {floor['hits']} hits over {len(cand_q)} briefs",
        )
    )
    records.append(
        report(
            NAME,
            "candidates: broad briefs (≥ 50 relevant people) sent to the backfill",
            float(floor["broad_briefs_backfilling"]),
            note=f"{floor['backfilling_queries']} of {len(cand_q)} briefs backfill",
        )
    )
    records += constrained_records(ctx, cand_url, embedder, cand_q)
    return records
