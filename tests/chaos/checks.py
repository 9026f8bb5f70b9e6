"""What must hold after any amount of chaos, read straight from the database; and the scan of
captured logs for e-mail addresses and tokens.

Every check returns figures (for the report) and raises ``AssertionError`` naming each broken
invariant with a few offending rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.rows import dict_row

from shortlist.simulator import SimulatorConfig, population_of


def sql(url: str, query: str, params: Any = None) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return list(cur.fetchall()) if cur.description else []


def scalar(url: str, query: str, params: Any = None) -> Any:
    rows = sql(url, query, params)
    return next(iter(rows[0].values())) if rows else None


# --- listings -------------------------------------------------------------------------------------

AUDIT_DDL = """
CREATE TABLE IF NOT EXISTS chaos_embed_audit (
    listing_id  uuid NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE OR REPLACE FUNCTION chaos_audit_embedding() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chaos_embed_audit (listing_id) VALUES (NEW.id);
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS chaos_audit_embedding ON job_listings;
CREATE TRIGGER chaos_audit_embedding AFTER UPDATE OF embedding ON job_listings
    FOR EACH ROW EXECUTE FUNCTION chaos_audit_embedding();
"""


def install_embed_audit(url: str) -> None:
    """Record every committed vector write of a listing (test instrumentation only).

    The trigger's row lives and dies with the indexer's transaction, so ``chaos_embed_audit``
    holds one row per *committed* embedding: "embedded exactly once" is one row per listing,
    whatever the provider was asked (a batch whose worker died before its commit is asked
    again, and that is fine — it never reached the table).
    """
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(AUDIT_DDL)


def insert_listings(url: str, n: int, tag: str) -> int:
    """``n`` pending listings with distinct texts (``tag`` makes them distinct across calls)."""
    with psycopg.connect(url) as conn:
        conn.execute(
            """
            INSERT INTO job_listings (company_name, job_title, city_location, description,
                                      detail_page_slug, source, created_at)
            SELECT 'Chaos Co ' || %(tag)s, 'Engineer ' || %(tag)s || '-' || i, 'Lisbon',
                   'Listing ' || %(tag)s || '-' || i || ': builds reliable queue workers.',
                   'chaos-' || %(tag)s || '-' || i, 'file',
                   now() + i * interval '1 microsecond'
              FROM generate_series(1, %(n)s) AS i
            """,
            {"tag": tag, "n": n},
        )
    return n


def listing_progress(url: str) -> dict[str, int]:
    rows = sql(
        url,
        "SELECT embedding_status::text AS status, count(*) AS n,"
        " count(*) FILTER (WHERE locked_by IS NOT NULL) AS locked"
        " FROM job_listings GROUP BY 1",
    )
    out = {r["status"]: int(r["n"]) for r in rows}
    out["locked"] = sum(int(r["locked"]) for r in rows)
    return out


def all_listings_embedded(url: str) -> bool:
    p = listing_progress(url)
    return p.get("pending", 0) == 0 and p.get("failed", 0) == 0 and p["locked"] == 0


def check_listings(url: str) -> dict[str, int]:
    """Every listing embedded, with a vector, unclaimed, and written exactly once."""
    problems: list[str] = []
    progress = listing_progress(url)
    total = sum(v for k, v in progress.items() if k != "locked")
    if progress.get("embedded", 0) != total:
        problems.append(f"not every listing is embedded: {progress}")
    if progress["locked"]:
        problems.append(f"{progress['locked']} listings still claimed")
    counts = sql(
        url,
        "SELECT l.id, count(a.listing_id) AS writes FROM job_listings l"
        " LEFT JOIN chaos_embed_audit a ON a.listing_id = l.id GROUP BY l.id",
    )
    never = [r["id"] for r in counts if r["writes"] == 0]
    twice = [(r["id"], r["writes"]) for r in counts if r["writes"] > 1]
    if never:
        problems.append(f"{len(never)} listings never had a vector committed, e.g. {never[:3]}")
    if twice:
        problems.append(f"{len(twice)} listings had a vector committed twice, e.g. {twice[:3]}")
    without_vector = scalar(
        url,
        "SELECT count(*) FROM job_listings WHERE embedding_status = 'embedded'"
        " AND (embedding IS NULL OR embedded_hash IS DISTINCT FROM content_hash)",
    )
    if without_vector:
        problems.append(f"{without_vector} embedded listings without their own vector")
    if problems:
        raise AssertionError("listing invariants broken:\n  " + "\n  ".join(problems))
    return {"listings": total, "vector_commits": sum(int(r["writes"]) for r in counts)}


# --- candidate backfill ---------------------------------------------------------------------------

TERMINAL = ("succeeded", "failed_no_email", "failed_transient", "failed_permanent")


def backfill_progress(url: str) -> dict[str, int]:
    rows = sql(
        url,
        "SELECT 'search_' || status::text AS k, count(*) AS n FROM searches GROUP BY 1"
        " UNION ALL SELECT 'stub_' || status::text, count(*) FROM search_candidates GROUP BY 1"
        " UNION ALL SELECT 'tier_' || status::text, count(*) FROM search_tiers GROUP BY 1"
        " UNION ALL SELECT 'results', count(*) FROM search_results",
    )
    return {r["k"]: int(r["n"]) for r in rows}


def backfill_settled(url: str) -> bool:
    """No search running, nothing queued or running."""
    p = backfill_progress(url)
    return not any(p.get(k, 0) for k in ("search_running", "stub_queued", "stub_running"))


def check_backfill(url: str) -> dict[str, int]:
    """No result lost, none duplicated, ranks contiguous, nothing running past its lease,
    nothing half-written. Returns the counts."""
    problems: list[str] = []

    def none(label: str, query: str) -> None:
        rows = sql(url, query)
        if rows:
            problems.append(f"{label}: {len(rows)} rows, e.g. {rows[:3]}")

    none(
        "succeeded candidate without exactly one result row",
        "SELECT s.search_id, s.id, s.candidate_id, count(r.rank) AS results"
        "  FROM search_candidates s"
        "  LEFT JOIN search_results r"
        "    ON r.search_id = s.search_id AND r.candidate_id = s.candidate_id"
        " WHERE s.status = 'succeeded'"
        " GROUP BY 1, 2, 3 HAVING count(r.rank) <> 1",
    )
    none(
        "duplicate (search, candidate) result",
        "SELECT search_id, candidate_id, count(*) FROM search_results"
        " GROUP BY 1, 2 HAVING count(*) > 1",
    )
    none(
        "duplicate (search, external id) stub",
        "SELECT search_id, external_id, count(*) FROM search_candidates"
        " GROUP BY 1, 2 HAVING count(*) > 1",
    )
    none(
        "ranks not exactly 1..result_count",
        "SELECT s.id, s.result_count, count(r.rank) AS n, min(r.rank) AS lo, max(r.rank) AS hi"
        "  FROM searches s LEFT JOIN search_results r ON r.search_id = s.id"
        " GROUP BY s.id, s.result_count"
        " HAVING count(r.rank) <> s.result_count"
        "    OR coalesce(min(r.rank), 1) <> 1"
        "    OR coalesce(max(r.rank), 0) <> s.result_count",
    )
    none(
        "result row of a stub that is not succeeded (half-written)",
        "SELECT r.search_id, r.rank, s.status FROM search_results r"
        "  JOIN search_candidates s ON s.id = r.search_candidate_id"
        " WHERE s.status <> 'succeeded'",
    )
    none(
        "candidate running past its lease",
        "SELECT id, search_id, locked_by, locked_until FROM search_candidates"
        " WHERE status = 'running' AND locked_until < now()",
    )
    none(
        "tier running past its lease",
        "SELECT search_id, tier, locked_by FROM search_tiers"
        " WHERE status = 'running' AND locked_until < now()",
    )
    none(
        "claim left on a finished row",
        "SELECT id, status FROM search_candidates"
        " WHERE status <> 'running' AND locked_by IS NOT NULL",
    )
    none(
        "failed candidate without a reason",
        "SELECT id, status FROM search_candidates"
        " WHERE status::text LIKE 'failed%' AND last_error IS NULL",
    )
    if problems:
        raise AssertionError("backfill invariants broken:\n  " + "\n  ".join(problems))
    return backfill_progress(url)


def held_by_pid(url: str, pid: int) -> dict[str, int]:
    """Rows claimed by any worker of OS process ``pid`` (worker ids are host:pid:queue:…)."""
    pattern = f"%:{pid}:%"
    row = sql(
        url,
        "SELECT (SELECT count(*) FROM job_listings WHERE locked_by LIKE %(p)s) AS listings,"
        " (SELECT count(*) FROM search_candidates WHERE status = 'running'"
        "   AND locked_by LIKE %(p)s) AS candidates,"
        " (SELECT count(*) FROM search_tiers WHERE status = 'running'"
        "   AND locked_by LIKE %(p)s) AS tiers",
        {"p": pattern},
    )[0]
    return {k: int(v) for k, v in row.items()}


# --- logs -----------------------------------------------------------------------------------------

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


@lru_cache(maxsize=4)
def population_emails(config: SimulatorConfig | None = None) -> frozenset[str]:
    people = population_of(config or SimulatorConfig())
    return frozenset(p.email.lower() for p in people if p.email)


def scan_logs(
    texts: Iterable[str], *, tokens: Iterable[str] = (), emails: frozenset[str] | None = None
) -> dict[str, Any]:
    """E-mail addresses (any, and the simulator population's) and tokens found in ``texts``."""
    known = population_emails() if emails is None else emails
    secrets = [t for t in tokens if t]
    found: set[str] = set()
    leaked_tokens: set[str] = set()
    size = 0
    for text in texts:
        size += len(text)
        found.update(m.group(0).lower() for m in EMAIL.finditer(text))
        leaked_tokens.update(t for t in secrets if t in text)
        # A token cut in half is still a leak of most of it.
        leaked_tokens.update(t for t in secrets if t[: len(t) // 2] in text)
    return {
        "bytes": size,
        "emails": sorted(found),
        "population_emails": sorted(found & known),
        "tokens": sorted(leaked_tokens),
    }


def assert_no_leaks(scan: dict[str, Any]) -> None:
    assert not scan["population_emails"], f"e-mail addresses in logs: {scan['population_emails']}"
    assert not scan["emails"], f"e-mail-like strings in logs: {scan['emails'][:10]}"
    assert not scan["tokens"], "API tokens in logs"
