"""Job search: vector retrieval, full-text retrieval, rerank by fusion.

1. **Vector candidates** — the query's embedding against ``job_listings.embedding`` through
   the vector index (HNSW, or IVFFlat on a large table: ``shortlist.db.vector_index``) on
   cosine distance (``<=>``), with pgvector's iterative scan so that the
   location / salary filters still yield a full candidate list. A selective location filter
   is served by the trigram index and an exact scan instead: the planner's choice, which is
   why a statement with filters is planned for its values on every search; one without runs
   on a prepared generic plan (:func:`execute_generic`).
2. **Full-text candidates** — any of the query's words against ``search_tsv``, ranked by
   ``ts_rank`` (not ``ts_rank_cd``: as good on the labelled postings, held-out P@10 0.62 →
   0.64 and nDCG@10 0.64 → 0.65, and half the cost: it was ~5 µs of a search's time per
   match, the largest part of it). This also finds listings whose embedding is still pending,
   so a listing is searchable the moment it is written, before the indexer gets to it. A
   *broad* word (in more than :data:`BROAD_MATCHES` listings by the planner's statistics, or
   in more than :data:`BROAD_SHARE` of a smaller table's) has only its :data:`BROAD_WINDOW`
   newest matches ranked, so a word every listing has does not make a search read every
   listing (at a million, "engineer" took seconds).
   A page within the first fusion window (every first page) is one statement (search.sql,
   ``first_page``): both lists, their fusion by the calibrated score, the page's listings with
   each hit's ``why`` (``shortlist.listings.why``: the snippet made for the hits shown only)
   and the facet counts (``shortlist.listings.facets``, on the full-text matches it reads
   anyway). A deeper page takes two: both lists (``candidates``), fused in Python
   (:func:`fuse`), then the page's listings. Before them, a small statement tells the query's
   narrow words from its broad ones, only for words not seen in the last :data:`WORDS_TTL`
   seconds: one round trip per search, rarely two (what one statement saved: bench/README.md,
   search-http).
3. **Rerank** — every listing either list found is scored on its own evidence (cosine
   similarity, title words, title trigram similarity; see ``shortlist.relevance``): the
   estimated probability that it is relevant, fitted and checked on labelled postings
   (bench/bench_relevance.py). The list is ordered by that score, so the order and the number
   shown agree, and no hit is given another's score. The query is searched with its
   abbreviations spelled out; the full-text list looks for any of its words but seniority
   ones, and for the abbreviation of a role it spells out.

**Fusion windows.** Each list contributes its top ``W`` to the fusion, and ``W`` grows in
steps: 40, 80, 160, … (:data:`FIRST_WINDOW`). Positions 0–39 of the result are the fusion of
the two top-40 lists; positions 40–79 are the best of the fusion of the top-80 lists *that are
not already placed*;
and so on. So position ``p`` always comes from the same window whatever the page size and
offset: consecutive pages neither overlap nor skip a hit (exactly for the full-text list; up to
the approximation of the HNSW scan for the vector list, whose longer fetch may find a nearer
row the shorter one missed). A request fetches both lists once, at the window of its last
position (``fusion_windows``), and ranks every step from prefixes of them.
Why windows no longer: a filtered vector scan must walk past every non-matching neighbour, so
its cost grows with the number of matches it has to find: bench/bench_search.py measured a
first window of 20 at ~1.5 ms more per search than one of 10 with a 10% location filter at
100k listings, and the former fixed pool of 100 at ~8x the bare query.

``score`` (in [0, 1], higher is better) is that probability: of the hits scored about X, about
X are relevant on the development set. A listing pending its embedding is scored on its words.

The vector-order top-N and the final order are logged at DEBUG (logger
``shortlist.listings.search``) in the seed's ``format_vector_top_for_log`` format, for
offline rerank evaluation.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, LiteralString
from uuid import UUID

import numpy as np
from cachetools import TTLCache
from psycopg import AsyncRawCursor, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from pydantic import BaseModel, PrivateAttr

from shortlist import metrics, places
from shortlist.db.pool import HNSW_EF_SEARCH, single_statement
from shortlist.db.sql import (
    Positional,
    compose_named,
    execute_positional,
    like_pattern,
    load_queries,
    positional,
)
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.embedding.base import Embedder, EmbeddingError, embed_queries
from shortlist.embedding.model_space import ModelSpace, first_space
from shortlist.embedding.query_cache import QueryCache
from shortlist.errors import BadInput
from shortlist.listings import facets as facet_counts
from shortlist.listings import why as explain
from shortlist.listings.facets import Facets
from shortlist.listings.models import MAX_CITY, MAX_SALARY_KS, WORK_MODES, ListingOut
from shortlist.listings.money import salary_step
from shortlist.listings.rates import Rates
from shortlist.listings.rates import load as load_rates
from shortlist.listings.why import Why
from shortlist.relevance import JOB_SCORE, PENDING_COSINE, normalise_query, text_terms
from shortlist.validation import is_storable_text

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.listings", "search.sql")


def _compact(statement: LiteralString) -> LiteralString:
    """``statement`` without its comment lines and indentation (no literal spans lines).

    psycopg converts a statement's ``%(name)s`` placeholders on every call unless the statement
    is at most ``psycopg._queries.MAX_CACHED_STATEMENT_LENGTH`` (4,096) bytes, which it caches;
    the commented candidates statement was 6.4 kB (search.sql keeps the comments)."""
    lines = [line.strip() for line in statement.splitlines()]
    # ", " → ",": no literal of search.sql has a comma followed by a space it needs
    text = "\n".join(line for line in lines if line and not line.startswith("--"))
    return text.replace(", ", ",")


_BLOCKS = {name: _compact(text) for name, text in QUERIES.items()}
"""search.sql's blocks as they are sent (see :func:`_compact`)."""

_FILTER_CONDITIONS: dict[str, str] = {
    "location": "filter_location",
    "salary_min": "filter_salary_min",
    "salary_converted": "filter_salary_converted",
    "work_mode": "filter_work_mode",
    "remote_country": "filter_remote_country",
    "visa": "filter_visa",
    "posted_within_days": "filter_posted_within_days",
}
FILTERS = tuple(_FILTER_CONDITIONS)
"""The search filters, in the order their conditions (search.sql) are added to
``listing_filters`` when a request sets them."""

_STATEMENTS: dict[tuple[object, ...], sql.Composed] = {}
"""Composed for each statement, model space, set of filters, facets or not and
:data:`BROAD_WINDOW` (a constant of the first page's statement)."""


def _statement(
    name: str, space: ModelSpace, *, with_facets: bool, filters: Iterable[str]
) -> sql.Composed:
    """search.sql's statement ``name`` in ``space`` with the conditions of ``filters`` (names
    of :data:`FILTERS`: those the request sets), counting the facets or not."""
    wanted = frozenset(filters)
    if not wanted <= set(FILTERS):
        raise ValueError(f"unknown filters: {sorted(wanted - set(FILTERS))}")
    key = (
        name,
        wanted,
        with_facets,
        space.id,
        space.vector_column,
        space.hash_column,
        space.dim,
        BROAD_WINDOW,
    )
    statement = _STATEMENTS.get(key)
    if statement is None:
        conditions = ["listing_filters"] + [
            block for f, block in _FILTER_CONDITIONS.items() if f in wanted
        ]
        # counts: the CTE; facets: the value the statement returns
        facets = {
            "counts": compose_named(_BLOCKS, "counts" if with_facets else "no_counts"),
            "facets": compose_named(_BLOCKS, "facets_value" if with_facets else "no_facets"),
        }
        statement = _STATEMENTS[key] = compose_named(
            _BLOCKS,
            name,
            listing_filters=sql.SQL(" AND ").join(sql.SQL(_BLOCKS[c]) for c in conditions),
            why_columns=explain.WHY_COLUMNS,
            **_limits(name),
            **facets,
            **space.parts(),
        )
    return statement


def _limits(name: str) -> dict[str, sql.Composable]:
    """The candidate lists' lengths (search.sql ``{k}``, ``{broad_window}``): constants in the
    first page's statement, whose window is always :data:`FIRST_WINDOW`, so that its generic
    plan (:func:`execute_generic`) is made knowing them (a LIMIT the planner does not know it
    takes for a tenth of the table); parameters in a deeper page's."""
    if name == "first_page":
        return {
            "k": sql.Literal(FIRST_WINDOW),
            "broad_window": sql.Literal(max(BROAD_WINDOW, FIRST_WINDOW)),
        }
    return {"k": sql.Placeholder("k"), "broad_window": sql.Placeholder("broad_window")}


_POSITIONAL: dict[tuple[object, ...], Positional] = {}


def _positional(
    name: str, space: ModelSpace, *, with_facets: bool, filters: Sequence[str]
) -> Positional:
    """:func:`_statement` as :func:`search_jobs` sends it (converted once: the statements are
    longer than psycopg's cache takes)."""
    key = (
        name,
        frozenset(filters),
        with_facets,
        space.id,
        space.vector_column,
        space.dim,
        BROAD_WINDOW,
    )
    statement = _POSITIONAL.get(key)
    if statement is None:
        statement = _POSITIONAL[key] = positional(
            _statement(name, space, with_facets=with_facets, filters=filters)
        )
    return statement


def candidates_statement(
    space: ModelSpace, *, with_facets: bool = False, filters: Iterable[str] = ()
) -> sql.Composed:
    """The candidates statement of ``space`` (search.sql), as :func:`search_jobs` runs it for a
    deep page, with the conditions of ``filters`` (names of :data:`FILTERS`: those the request
    sets)."""
    name = "candidates_with_facets" if with_facets else "candidates"
    return _statement(name, space, with_facets=with_facets, filters=filters)


def first_page_statement(
    space: ModelSpace, *, with_facets: bool = False, filters: Iterable[str] = ()
) -> sql.Composed:
    """The statement of a page within the first fusion window (search.sql ``first_page``), as
    :func:`search_jobs` runs it, with the conditions of ``filters``."""
    return _statement("first_page", space, with_facets=with_facets, filters=filters)


WORDS_TTL = 60.0
"""Seconds a word's lexemes and their narrow / broad split are reused: the split follows the
table's statistics, which ANALYZE refreshes far less often. Kept per word, not per query: the
words of queries repeat far more than whole queries do, so a query never asked before rarely
needs the round trip that asks (search.sql, ``word_lexemes``)."""
_lexemes: TTLCache[tuple[object, ...], tuple[tuple[str, bool], ...]] = TTLCache(
    maxsize=65536, ttl=WORDS_TTL, timer=time.monotonic
)
"""By database (host, port, name), word and the broad thresholds (:func:`_broad_key`): (quoted
lexeme, broad)."""


def _broad_key() -> tuple[float, ...]:
    return (BROAD_MATCHES, BROAD_MIN_MATCHES, BROAD_SHARE)


async def query_words(conn: AsyncConn, terms: str) -> dict[str, str | None]:
    """``{"narrow": tsquery text, "broad": tsquery text}`` of ``terms``: any of its narrow
    lexemes, any of its broad ones (None: no such lexeme), for the candidates statement."""
    db = (conn.info.host, conn.info.port, conn.info.dbname)
    words = list(dict.fromkeys(terms.split()))
    thresholds = _broad_key()
    known = {w: _lexemes.get((*db, w, *thresholds)) for w in words}
    missing = [w for w, lexemes in known.items() if lexemes is None]
    if missing:
        cur = await conn.execute(
            QUERIES["word_lexemes"],
            {
                "words": missing,
                "broad_matches": BROAD_MATCHES,
                "broad_min": BROAD_MIN_MATCHES,
                "broad_share": BROAD_SHARE,
            },
            prepare=False,
        )
        found: dict[str, list[tuple[str, bool]]] = {w: [] for w in missing}
        for row in await cur.fetchall():
            found[row["word"]].append((row["quoted"], bool(row["broad"])))
        for w in missing:
            known[w] = _lexemes[(*db, w, *thresholds)] = tuple(found[w])
    split: dict[bool, dict[str, None]] = {False: {}, True: {}}
    for w in words:
        for quoted, broad in known[w] or ():
            split[broad][quoted] = None
    return {
        "narrow": " | ".join(split[False]) or None,
        "broad": " | ".join(k for k in split[True] if k not in split[False]) or None,
    }


def match_terms(normalised: str, terms: str) -> str:
    """The words whose listings the text list ranks: ``terms`` (text_terms of ``normalised``)
    without a place the query names ("nurse in Toronto": nurse; shortlist.places.locate_place).
    The place still counts in the text list's ranking, which reads every word of ``terms`` (a
    Toronto nurse before a Lisbon one), and in the query's vector; but a listing that shares
    only the place with the query is no match of it: a city is in a few percent of all
    listings, so ranking each of them (all ranked near the bottom) made most of such a search's
    cost, and its facets counted every job in that city. A query that is only a place, or a
    place and words that name no work (:data:`NO_WORK_WORDS`: "jobs in London"), is matched on
    the place (and one whose other words are all broad, in search_jobs)."""
    rest = text_terms(places.without_place(normalised))
    if rest == terms or not any(w.lower() not in NO_WORK_WORDS for w in _WORD.findall(rest)):
        return terms
    return rest


NO_WORK_WORDS = frozenset({
    "job", "jobs", "work", "works", "position", "positions", "vacancy", "vacancies", "opening",
    "openings", "role", "roles", "career", "careers", "opportunity", "opportunities",
    "employment", "hiring",
})  # fmt: skip
"""Words of a job search that say it is one, not which work: with only these beside a place,
the place is what the query asks for."""
_WORD = re.compile(r"\w+")


BROAD_MATCHES = 20_000
"""A query word more listings than this contain (by the planner's statistics) is *broad*: the
text list ranks only its :data:`BROAD_WINDOW` newest matches (search.sql). So is, in a smaller
table, a word more than :data:`BROAD_SHARE` of its listings contain (and more than
:data:`BROAD_MIN_MATCHES`). Below both every match is ranked."""
BROAD_SHARE = 0.4
"""The share of a table's listings past which a word is broad whatever the table's size (below
:data:`BROAD_MATCHES` listings). Such a word barely tells one listing from another (its idf is
under 1), and ranking and counting every one of its matches was most of PostgreSQL's work per
search on search-http's corpus at 11,500 listings (every generated title says "engineer":
11.0 ms of PostgreSQL's CPU per search against 3.8 ms for the index-first RRF; bench/README.md).
0.4 leaves the relevance development set as it was: its commonest query word ("administr", of
"administrator") is in 37 % of its 8,987 postings, "specialist" 31 %, "offic" 29 %."""
BROAD_MIN_MATCHES = 1_000
"""A word is never broad for its share alone in fewer listings than this: ranking a thousand
matches costs about as much as the vector list's walk, and a small table is searched exactly."""
BROAD_WINDOW = 0
"""The newest matches of the query's broad words that are ranked, beyond the request's fusion
window (never fewer than that window). Zero: the window itself, as the vector list reads its k
nearest. A broad word barely tells one listing from another (the vector list does); ranking
its 2,000 newest matches, and counting the facets over them, was a third of PostgreSQL's work
per search on the 100k-listing benchmark, whose every listing says "engineer". Below
:data:`BROAD_MATCHES` (a corpus of fewer listings) nothing changes: every match is ranked."""
FIRST_WINDOW = 40
"""The first fusion window: the calibrated score chooses the first page among the top 40 of
each list. With the top 10 (the page) it could only reorder what each list put first, and a
list's tenth was often worse than the other's thirtieth: on the relevance development set
(bench/README.md) held-out P@10 0.635 → 0.654, nDCG@10 0.644 → 0.669; tune half P@10 0.680
either way (nDCG 0.697 → 0.693). The HNSW walk costs the same up to its ``ef_search``."""
EF_SEARCH = HNSW_EF_SEARCH
"""The longest HNSW candidate list a connection scans with (shortlist.db.pool; small graphs
scan a shorter one, ``vector_search.ef_search_for``, where the iterative scan carries a longer
window on); a search whose fusion window is longer widens it for its own transaction."""
MAX_SIZE = 50
MAX_OFFSET = 1000
MAX_QUERY_LENGTH = 500
MAX_POSTED_WITHIN_DAYS = 3650
LOG_TOP_N = 10


class SearchHit(BaseModel):
    listing: ListingOut
    score: float
    why: Why


class SearchResult(BaseModel):
    query: str
    took_ms: float
    hits: list[SearchHit]
    facets: Facets
    _degraded: bool = PrivateAttr(default=False)
    _json: bytes | None = PrivateAttr(default=None)

    @property
    def degraded(self) -> bool:
        """Whether the query could not be embedded and only full text was searched."""
        return self._degraded

    def json_bytes(self) -> bytes:
        """The answer as JSON, serialised once: the answer cache keeps the bytes the API sends
        (an answer is not changed once made; :meth:`timed` makes a new one)."""
        if self._json is None:
            self._json = self.model_dump_json().encode()
        return self._json

    def timed(self, took_ms: float) -> SearchResult:
        """This answer again, as taking ``took_ms`` (a kept or shared answer, served anew)."""
        copy = self.model_copy(update={"took_ms": took_ms})
        copy._json = None
        return copy


@dataclass
class Candidate:
    id: UUID
    company_name: str
    job_title: str
    distance: float | None = None
    vector_rank: int | None = None
    text_rank: int | None = None
    title_match: float = 0.0
    title_similarity: float = 0.0
    score: float = 0.0


def fusion_windows(size: int, offset: int) -> list[int]:
    """The fusion windows that rank positions ``0 … offset + size - 1``: 40, 80, … up to the
    first that covers the last position (see the module docstring)."""
    windows = [FIRST_WINDOW]
    while windows[-1] < offset + size:
        windows.append(windows[-1] * 2)
    return windows


def _rank(
    vector_rows: Sequence[dict[str, Any]], text_rows: Sequence[dict[str, Any]]
) -> list[Candidate]:
    by_id: dict[UUID, Candidate] = {}
    for list_name, rows in (("vector", vector_rows), ("text", text_rows)):
        for rank, row in enumerate(rows, start=1):
            cand = by_id.get(row["id"])
            if cand is None:
                distance = row["distance"]
                cand = by_id[row["id"]] = Candidate(
                    row["id"],
                    row["company_name"],
                    row["job_title"],
                    None if distance is None else float(distance),
                    title_match=float(row["title_match"]),
                    title_similarity=float(row["title_similarity"]),
                )
                cand.score = JOB_SCORE.score(
                    None if cand.distance is None else 1.0 - cand.distance,
                    cand.title_match,
                    cand.title_similarity,
                )
            if list_name == "vector":
                cand.vector_rank = rank
            else:
                cand.text_rank = rank
    return sorted(by_id.values(), key=_order)


_LAST = 1 << 30


def _order(c: Candidate) -> tuple[float, int, int, str]:
    """Best score first; an equal score goes to the better full-text rank (which weighs every
    word of the query), then the better vector rank, then by id (deterministic)."""
    return (-c.score, c.text_rank or _LAST, c.vector_rank or _LAST, str(c.id))


def fuse(
    vector_rows: Sequence[dict[str, Any]],
    text_rows: Sequence[dict[str, Any]],
    windows: Sequence[int] = (),
) -> list[Candidate]:
    """The two candidate lists as one, best score first (shortlist.relevance).

    With ``windows`` (see :func:`fusion_windows`), positions below ``windows[0]`` are ranked by
    the fusion of the lists' first ``windows[0]`` rows, the next positions up to
    ``windows[1]`` by the fusion of their first ``windows[1]`` rows (minus what is placed),
    and so on; the last window places everything left. Without, both lists are one window.

    Ties go by id, so the order is deterministic.
    """
    if not windows:
        ordered = _rank(vector_rows, text_rows)
    else:
        ordered = []
        placed: set[UUID] = set()
        for step, window in enumerate(windows):
            fill_to = None if step == len(windows) - 1 else window
            for cand in _rank(vector_rows[:window], text_rows[:window]):
                if fill_to is not None and len(ordered) >= fill_to:
                    break
                if cand.id not in placed:
                    placed.add(cand.id)
                    ordered.append(cand)
    return ordered


def format_vector_top_for_log(rows: Sequence[dict[str, Any]], n: int) -> str:
    """The seed's compact top-N summary, vector order."""
    return " ; ".join(
        f"{i}. {r['company_name']} | {r['job_title']} | id={r['id']} | distance={r['distance']:.4f}"
        for i, r in enumerate(rows[:n], start=1)
    )


def format_final_for_log(cands: Sequence[Candidate], n: int) -> str:
    def rank(r: int | None) -> str:
        return f"#{r}" if r else "-"

    return " ; ".join(
        f"{i}. {c.company_name} | {c.job_title} | id={c.id}"
        f" | vector={rank(c.vector_rank)} text={rank(c.text_rank)}"
        f" | match={c.title_match:.2f} sim={c.title_similarity:.2f} | score={c.score:.4f}"
        for i, c in enumerate(cands[:n], start=1)
    )


def _text_param(value: str, field: str, max_length: int) -> str:
    value = value.strip()
    if len(value) > max_length:
        raise BadInput(f"{field} is longer than {max_length} characters", field=field)
    if not is_storable_text(value):
        raise BadInput(f"{field} contains characters that are not text", field=field)
    return value


def _check_params(
    query: str, size: int, location: str | None, salary_min: int | None, offset: int
) -> tuple[str, str | None]:
    q = _text_param(query, "q", MAX_QUERY_LENGTH)
    if not q:
        raise BadInput("the search query must not be empty", field="q")
    if not 1 <= size <= MAX_SIZE:
        raise BadInput(f"size must be between 1 and {MAX_SIZE}", field="size")
    if not 0 <= offset <= MAX_OFFSET:
        raise BadInput(f"offset must be between 0 and {MAX_OFFSET}", field="offset")
    if salary_min is not None and not 0 <= salary_min <= MAX_SALARY_KS:
        raise BadInput(
            f"salary_min must be between 0 and {MAX_SALARY_KS} (thousands)", field="salary_min"
        )
    loc = _text_param(location, "location", MAX_CITY) if location else None
    return q, loc or None


_CURRENCY = re.compile(r"^[A-Z]{3}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
VISA_FILTERS = ("offered",)


def check_seeker_filters(
    currency: str | None, remote_country: str | None, visa: str | None
) -> tuple[str | None, str | None, str | None]:
    """``currency`` (ISO 4217), ``remote_country`` (ISO 3166 alpha-2), ``visa`` (offered),
    upper- / lower-cased; ``BadInput`` naming the parameter otherwise."""
    code = (currency or "").strip().upper() or None
    if code is not None and not _CURRENCY.match(code):
        raise BadInput("currency must be an ISO 4217 code such as EUR", field="currency")
    country = (remote_country or "").strip().upper() or None
    if country is not None and not _COUNTRY.match(country):
        raise BadInput(
            "remote_country must be an ISO 3166 alpha-2 code such as PT", field="remote_country"
        )
    wanted = (visa or "").strip().lower() or None
    if wanted is not None and wanted not in VISA_FILTERS:
        raise BadInput("visa must be 'offered'", field="visa")
    return code, country, wanted


def _check_filters(work_mode: str | None, posted_within_days: int | None) -> None:
    if work_mode is not None and work_mode not in WORK_MODES:
        raise BadInput(f"work_mode must be one of {', '.join(WORK_MODES)}", field="work_mode")
    if posted_within_days is not None and not 1 <= posted_within_days <= MAX_POSTED_WITHIN_DAYS:
        raise BadInput(
            f"posted_within_days must be between 1 and {MAX_POSTED_WITHIN_DAYS}",
            field="posted_within_days",
        )


async def _embed_query(
    embedder: Embedder, q: str, space: ModelSpace, cache: QueryCache | None
) -> np.ndarray[Any, np.dtype[np.float32]] | None:
    try:
        if cache is not None:
            return await cache.embed(space, embedder, q)
        [vector] = await embed_queries(embedder, [q])
    except EmbeddingError as exc:
        # Degrade to full-text results rather than fail the search: the provider being down
        # should not take job search down with it.
        log.warning("query embedding failed (%s); searching full text only", exc)
        return None
    return np.asarray(vector, dtype=np.float32)


@asynccontextmanager
async def _connection(pool: AsyncPool, *, widen: bool, k: int) -> AsyncIterator[AsyncConn]:
    """The connection of a search's statements (the query's words, then the page, or for a deep
    page the candidate lists and the page's listings), each one autocommit statement on the
    session's vector search settings. A window longer than their candidate list (deep pages)
    widens it in a transaction of its own."""
    if not widen:
        async with single_statement(pool) as conn:
            yield conn
        return
    async with pool.connection() as conn, conn.transaction():
        # pgvector caps ef_search at 1000; past that the iterative scan carries on.
        await conn.execute(QUERIES["widen_vector_scan"], {"ef_search": str(min(1000, k))})
        yield conn


async def execute_generic(
    conn: AsyncConn, statement: Positional, params: dict[str, Any]
) -> list[dict[str, Any]]:
    """The rows of ``statement`` (a first page without filters) on its prepared generic plan.

    Planning the first page's statement cost PostgreSQL about as much as executing everything
    but the HNSW walk (~2.5 ms of ~8 ms of CPU per search at 11,500 and 100,000 listings;
    bench/README.md, search-http). Without filters its best plan does not depend on the
    values: the vector list is the HNSW walk (its LIMIT a constant, :func:`_limits`), the
    narrow words' matches a GIN bitmap scan, a broad word's newest matches a walk down the
    ``created_at`` index (a filter the GIN index cannot serve, ``ts_match_vq``, so that no plan
    ranks all of its matches), each list skipped by a one-time filter when it has nothing to
    look for. So it is planned once per connection (again after an ANALYZE or a schema change:
    PostgreSQL invalidates the plan) instead of on every search; the same answers, measured
    on captured first pages at both sizes. A filter's selectivity does choose the plan (the
    trigram index's exact scan for a rare place, the iterative HNSW scan for a common one), so
    a statement with filters is planned for its values every time (:func:`execute_positional`).

    ``plan_cache_mode`` is set for this statement alone: in a pipeline, both are one implicit
    transaction up to its Sync, and ``set_config(…, true)`` ends with it (the connection's
    other statements, which psycopg prepares after a few runs, keep PostgreSQL's choice)."""
    cur = AsyncRawCursor(conn, row_factory=dict_row)
    async with cur:
        async with conn.pipeline():
            await conn.execute(QUERIES["force_generic_plan"], prepare=False)
            await cur.execute(statement.query, statement.values(params), prepare=True)
        return await cur.fetchall()


SCORE_PARAMS: dict[str, float] = {
    "w_intercept": JOB_SCORE.intercept,
    "w_cosine": JOB_SCORE.cosine,
    "w_title_match": JOB_SCORE.title_match,
    "w_title_similarity": JOB_SCORE.title_similarity,
    "pending_cosine": PENDING_COSINE,
}
"""The calibrated score's weights, for the first page's statement, which scores in SQL."""


def _hit(
    row: dict[str, Any],
    score: float,
    vector_rank: int | None,
    text_rank: int | None,
    title_match: float,
) -> SearchHit:
    """A hit from its row of why.sql's ``why_columns`` and its evidence."""
    listing = ListingOut.from_row(row)
    terms = list(row["matched_terms"])
    via = explain.via(vector_rank, text_rank)
    return SearchHit(
        listing=listing,
        score=score,
        why=Why(
            matched_terms=terms,
            snippet=explain.highlighted(row["snippet"] or ""),
            via=via,
            labels=explain.match_labels(title_match, listing.job_title, terms, via),
        ),
    )


async def _fused_page(
    conn: AsyncConn,
    space: ModelSpace,
    with_facets: bool,
    filters: Sequence[str],
    params: dict[str, Any],
    windows: Sequence[int],
    q: str,
    size: int,
    offset: int,
) -> tuple[list[SearchHit], dict[str, Any]]:
    """A page past the first fusion window (or any, with the debug log on): both lists, fused
    in Python (:func:`fuse`), then the page's listings with their why: two statements."""
    name = "candidates_with_facets" if with_facets else "candidates"
    statement = _positional(name, space, with_facets=with_facets, filters=filters)
    rows = await execute_positional(conn, statement, params)
    vector_rows = [r for r in rows if r["list"] == "vector"]
    text_rows = [r for r in rows if r["list"] == "text"]
    facet_counts_row: dict[str, Any] = next(
        (r["facets"] for r in rows if r["list"] == "facets"), {}
    )
    ranked = fuse(vector_rows, text_rows, windows)
    page = ranked[offset : offset + size]
    cur = await conn.execute(explain.PAGE_WITH_WHY, {**params, "ids": [c.id for c in page]})
    listings = {r["id"]: r for r in await cur.fetchall()}
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "job search %r vector top: %s", q, format_vector_top_for_log(vector_rows, LOG_TOP_N)
        )
        log.debug("job search %r final order: %s", q, format_final_for_log(ranked, LOG_TOP_N))
    # A listing deleted between the two statements is simply left out.
    hits = [
        _hit(listings[c.id], c.score, c.vector_rank, c.text_rank, c.title_match)
        for c in page
        if c.id in listings
    ]
    return hits, facet_counts_row


async def search_jobs(
    pool: AsyncPool,
    embedder: Embedder,
    query: str,
    size: int = 10,
    location: str | None = None,
    salary_min: int | None = None,
    offset: int = 0,
    *,
    work_mode: str | None = None,
    posted_within_days: int | None = None,
    with_facets: bool = True,
    space: ModelSpace | None = None,
    query_cache: QueryCache | None = None,
    currency: str | None = None,
    remote_country: str | None = None,
    visa: str | None = None,
    rates: Rates | None = None,
) -> SearchResult:
    """Search job listings; raises ``BadInput`` for an empty query, an unknown work mode, or
    out-of-range paging or freshness. ``with_facets=False`` skips the facet counts (the
    benchmark's baseline; every caller of the product wants them). ``space``: the model space
    ``embedder`` embeds for (default: the first, of the embedder's dimension).
    ``query_cache``: where a repeated query's vector is kept (default: none, always embed).
    ``currency``: salaries in it (each hit's ``salary_converted``, ``salary_min`` and the
    salary facet; by ``rates``, else the table's); ``remote_country``: remote jobs open to a
    person there; ``visa``: ``offered``."""
    if space is None:
        space = first_space(embedder.dim)
    started = time.perf_counter()
    q, loc = _check_params(query, size, location, salary_min, offset)
    _check_filters(work_mode, posted_within_days)
    currency, remote_country, visa = check_seeker_filters(currency, remote_country, visa)
    money: dict[str, Any] = {}
    band_step: int | None = None
    if currency is not None:
        if rates is None:
            rates = Rates(await load_rates(pool))
        if currency not in rates.by_code:
            raise BadInput(f"no reference rate for {currency}", field="currency")
        band_step = salary_step(rates, currency)
        money["band_unit"] = facet_counts.CONVERTED_BAND_UNIT
        if salary_min is not None:
            money["salary_at"] = Jsonb(rates.thresholds(salary_min, currency))
    normalised = normalise_query(q)
    vector = await _embed_query(embedder, normalised, space, query_cache)
    windows = fusion_windows(size, offset)
    k = windows[-1]
    params = {
        "terms": text_terms(normalised),
        # A numpy array goes over the wire as a pgvector value (register_vector_async).
        "vector": vector,
        "location": like_pattern(loc) if loc else None,
        "salary_min": salary_min if currency is None else None,
        "salary_converted": True if currency is not None and salary_min is not None else None,
        "work_mode": work_mode,
        "remote_country": remote_country,
        "visa": visa,
        "posted_within_days": posted_within_days,
        "k": k,
        "broad_window": max(BROAD_WINDOW, k),
        **facet_counts.FACET_PARAMS,
        **money,
    }
    filters = [name for name in FILTERS if params[name] is not None]
    async with _connection(pool, widen=vector is not None and k > EF_SEARCH, k=k) as conn:
        # prepare=False (but a first page without filters, execute_generic): psycopg would
        # prepare a statement run 5 times, and PostgreSQL may then settle on a generic plan,
        # made without the filter values: it could no longer pick the exact scan for a
        # selective location and the HNSW graph for a broad one.
        matched = match_terms(normalised, params["terms"])
        words = await query_words(conn, matched)
        if matched != params["terms"] and words["narrow"] is None:
            # Without the place only broad words are left ("jobs in Berlin"): the place is
            # what the query asks for, so its listings are matched after all.
            words = await query_words(conn, params["terms"])
        params.update(words, **explain.why_params(q))
        if len(windows) == 1 and not log.isEnabledFor(logging.DEBUG):
            # Every first page: fused and read in one statement (search.sql, first_page). The
            # debug log wants both lists in full, which only the candidates statement returns.
            statement = _positional("first_page", space, with_facets=with_facets, filters=filters)
            page_params = {**params, **SCORE_PARAMS, "size": size, "offset": offset}
            rows = await (
                execute_generic(conn, statement, page_params)
                if not filters
                else execute_positional(conn, statement, page_params)
            )
            facet_counts_row: dict[str, Any] = (rows[0]["facets"] if rows else None) or {}
            hits = [
                _hit(r, r["score"], r["vector_rank"], r["text_rank"], r["title_match"])
                for r in rows
                if r["id"] is not None
            ]
        else:
            hits, facet_counts_row = await _fused_page(
                conn, space, with_facets, filters, params, windows, q, size, offset
            )
    if currency is not None and rates is not None:
        for hit in hits:
            item = hit.listing
            item.salary_converted = rates.convert(
                item.salary_min_ks, item.salary_max_ks, item.currency_code, currency
            )
    elapsed = time.perf_counter() - started
    metrics.SEARCH_LATENCY.labels("jobs").observe(elapsed)
    facets = (
        facet_counts.facets_from_counts(
            facet_counts_row,
            currency=currency,
            step=band_step,
            factors=None if currency is None or rates is None else rates.factors(currency),
        )
        if with_facets
        else facet_counts.EMPTY
    )
    result = SearchResult(query=q, took_ms=round(elapsed * 1000, 2), hits=hits, facets=facets)
    result._degraded = vector is None
    return result
