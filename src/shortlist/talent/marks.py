"""A recruiter's shortlist: marks on candidates (``shortlisted`` / ``contacted`` / ``rejected``
with a note), the people a search hides because their recruiter already contacted or rejected
them, and the CSV export of a search's results.

Marks belong to one recruiter: only they (or an admin) read them, and a recruiter may mark only
people their own searches found — anyone else's candidate id answers 404, as a missing one.
"""

from __future__ import annotations

import csv
import io
import re
import uuid
from collections.abc import Iterable, Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from shortlist.accounts.scope import act_for
from shortlist.auth import Principal
from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn, AsyncPool, Row
from shortlist.embedding.model_space import ModelSpace
from shortlist.errors import NotFound
from shortlist.talent.repository import CorpusHit, SearchRecord
from shortlist.talent.why import Brief, CandidateWhy, Person, explain_candidate

QUERIES = load_queries("shortlist.talent", "marks.sql")

MarkStatus = Literal["shortlisted", "contacted", "rejected"]
MAX_NOTE = 2000
MAX_HIDDEN_LISTED = 200


class MarkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: MarkStatus
    note: Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_NOTE)] = ""


def parse_candidate_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise NotFound("no such candidate") from None


async def _all(conn: AsyncConn, name: str, params: dict[str, object]) -> list[Row]:
    cur = await conn.execute(QUERIES[name], params)
    return await cur.fetchall()


async def set_mark(pool: AsyncPool, principal: Principal, raw_id: str, mark: MarkIn) -> Row:
    candidate_id = parse_candidate_id(raw_id)
    params = {
        "candidate_id": candidate_id,
        "token_id": principal.token_id,
        "user_id": principal.user_id,
        "org_id": principal.org_id,
    }
    if principal.user_id is None or principal.org_id is None:
        raise NotFound("no such candidate")
    async with pool.connection() as conn, conn.transaction():
        await act_for(conn, principal)
        [allowed] = await _all(conn, "may_mark", {**params, "is_admin": principal.is_admin})
        if not allowed["allowed"]:
            raise NotFound("no such candidate")
        [row] = await _all(
            conn, "upsert_mark", {**params, "status": mark.status, "note": mark.note}
        )
    return row


async def list_marks(
    pool: AsyncPool, principal: Principal, status: MarkStatus | None, limit: int
) -> list[Row]:
    async with pool.connection() as conn, conn.transaction():
        await act_for(conn, principal)
        return await _all(
            conn,
            "list_marks",
            {
                "everyone": principal.is_admin,
                "org_id": principal.org_id,
                "status": status,
                "limit": limit,
            },
        )


async def marks_of(
    conn: AsyncConn, org_id: int | None, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Row]:
    if not ids or org_id is None:
        return {}
    rows = await _all(conn, "marks_of", {"org_id": org_id, "ids": list(ids)})
    return {r["candidate_id"]: r for r in rows}


# --- hiding people already handled -------------------------------------------------------------


async def drop_handled(
    conn: AsyncConn, search_id: uuid.UUID, org_id: int | None, hits: Sequence[CorpusHit]
) -> list[CorpusHit]:
    """The corpus hits nobody of the recruiter's team has contacted or rejected; the others are
    recorded as hidden for this search (counted and shown on request, never appended)."""
    if not hits or org_id is None:
        return list(hits)
    rows = await _all(
        conn, "handled_among", {"org_id": org_id, "ids": [h.candidate_id for h in hits]}
    )
    handled = {r["candidate_id"] for r in rows}
    if handled:
        hidden = [h for h in hits if h.candidate_id in handled]
        await conn.execute(
            QUERIES["record_hidden"],
            {
                "search_id": search_id,
                "ids": [h.candidate_id for h in hidden],
                "scores": [h.score for h in hidden],
            },
        )
    return [h for h in hits if h.candidate_id not in handled]


async def record_hidden_discovered(
    pool: AsyncPool, search_id: uuid.UUID, external_ids: Sequence[str], space: ModelSpace
) -> None:
    if external_ids:
        async with pool.connection() as conn:
            await conn.execute(
                compose(QUERIES["record_hidden_discovered"], **space.parts()),
                {"search_id": search_id, "external_ids": list(external_ids), "model_id": space.id},
            )


async def hidden_of_search(conn: AsyncConn, search_id: uuid.UUID) -> list[Row]:
    return await _all(
        conn, "hidden_of_search", {"search_id": search_id, "limit": MAX_HIDDEN_LISTED}
    )


async def annotate_results(conn: AsyncConn, search: SearchRecord, rows: Sequence[Row]) -> int:
    """Give each result row its ``why`` and the search owner's ``mark`` (or None); returns how
    many people the search hid."""
    people = [r["candidate_id"] for r in rows if r["candidate_id"] is not None]
    marked = await marks_of(conn, search.org_id, people)
    brief = brief_of(search)
    for row in rows:
        # A tombstone (a forgotten person) has nothing to explain or mark.
        row["why"] = why_of(brief, row) if row["candidate_id"] is not None else None
        row["mark"] = marked.get(row["candidate_id"])
    [count] = await _all(conn, "hidden_count", {"search_id": search.id})
    return int(count["n"])


# --- why, and the export --------------------------------------------------------------------------


def brief_of(search: SearchRecord) -> Brief:
    """The brief as understood (free text included), as the search was judged by."""
    b = search.understood()
    return Brief(b.role, b.location, b.min_years_experience, b.skills)


def why_of(brief: Brief, row: Row) -> CandidateWhy:
    person = Person(
        role_title=row["role_title"],
        headline=row["headline"],
        location=row["location"],
        years_experience=row["years_experience"],
        skills=list(row["skills"] or ()),
        summary=row.get("summary") or "",
        email=row.get("email"),
        email_on_file=bool(row.get("email_on_file")),
    )
    role_score = row.get("role_score")
    return explain_candidate(
        brief,
        person,
        float(row["score"]),
        role_score=None if role_score is None else float(role_score),
        judged=row.get("constraints"),
    )


CSV_HEADER = (
    "rank", "name", "role", "location", "years_experience", "skills", "email", "profile_url",
    "score", "tier", "status", "mark", "note", "why",
)  # fmt: skip
# A spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV Injection").
# Quoting keeps a separator inside a cell, but a spreadsheet importing with another separator
# (";" in many locales, tab, "|") splits the text there and reads what follows as a new cell:
# so a formula character is neutralised wherever a cell could start, not only in the first
# character — after any of those separators or a line break, spaces between allowed.
_FORMULA_CHARS = "=+-@\t\r"
_CELL_BREAKS = ",;\t|\r\n"
_NEW_CELL_FORMULA = re.compile(
    f"(^|[{re.escape(_CELL_BREAKS)}])([ ]*)([{re.escape(_FORMULA_CHARS)}])"
)


def csv_cell(value: object) -> str:
    """A value as an inert cell: a ``'`` before every formula character that could begin a
    cell (the apostrophe is the spreadsheets' own "this is text" marker)."""
    text = "" if value is None else str(value)
    return _NEW_CELL_FORMULA.sub(lambda m: f"{m.group(1)}{m.group(2)}'{m.group(3)}", text)


def results_csv(rows: Iterable[Row]) -> str:
    """A search's results (annotated by :func:`annotate_results`) in rank order, one line each,
    with the ``why`` summary and the recruiter's mark; every cell quoted. A forgotten person's
    row keeps its rank and says so, nothing else."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_ALL)
    writer.writerow(CSV_HEADER)
    for row in rows:
        mark = row["mark"]
        why = row["why"]
        line = (
            row["rank"], row["full_name"], row["role_title"], row["location"],
            row["years_experience"], "; ".join(row["skills"] or ()), row["email"],
            row["profile_url"], f"{float(row['score']):.4f}", row["tier"], row["status"],
            mark["status"] if mark else "", mark["note"] if mark else "",
            why.summary if why is not None else "",
        )  # fmt: skip
        writer.writerow([csv_cell(v) for v in line])
    return out.getvalue()
