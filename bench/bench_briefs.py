"""briefs: what the backfill buys for recruiter briefs — technical, niche and non-technical —
and what it costs, on the product's default path (PDL and SerpApi adapters against the bundled
simulator's vendor dialects, product defaults, the internal corpus out of play so every search
is a full backfill).

Each brief is judged by rules of this benchmark, not of the product: a result is **relevant**
when its title or headline holds every word group of the brief's role (any spelling of each
group: "pediatric" / "paediatric") and, when the brief names a place, the person lives in that
place's country (GeoNames, through ``shortlist.places``). Reported:

``credits per relevant result``  every credit the search spent (PDL records and enrichments,
                                 SerpApi searches; the provider_calls ledger) ÷ relevant results
``billed relevance``             relevant results ÷ PDL records billed: the share of the records
                                 paid for that became a result the brief asked for (a record
                                 paid for and never shown counts against it)
``briefs reaching 15``           of the briefs someone in the world can match
``results for briefs nobody matches``  should stay 0
A table per brief is logged and saved (``briefs.json``).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from bench.common import Context, Record, Stat, report
from bench.talent_support import (
    BACKFILL_TIME_SCALE,
    SMOKE_TIME_SCALE,
    backfill_settings,
    simulator_config,
)

NAME = "briefs"
TARGET = 15
PARALLEL = 4


@dataclass(frozen=True)
class Brief:
    query: str
    role: tuple[tuple[str, ...], ...]
    """Word groups the title or headline must hold, each with its accepted spellings."""
    place: str | None = None
    matchable: bool = True


BRIEFS: tuple[Brief, ...] = (
    Brief(
        "Senior FPGA verification engineer in Munich, 5+ years SystemVerilog",
        (("fpga",), ("verification",)),
        "Munich",
    ),
    Brief("data engineer in Lisbon", (("data",), ("engineer",)), "Lisbon"),
    Brief("product designer in Berlin", (("designer",),), "Berlin"),
    Brief("nurse in Toronto", (("nurse",),), "Toronto"),
    Brief(
        "marine geophysicist with seismic interpretation experience in Aberdeen, 7+ years",
        (("geophysic",),),
        "Aberdeen",
    ),
    Brief("pediatric oncology nurse", (("nurse",), ("pediatric", "paediatric", "children"))),
    Brief("avionics test engineer", (("avionic", "aeronautical", "aerospace"), ("engineer",))),
    Brief("hydrogeologist groundwater modelling", (("hydrogeolog",),)),
    Brief("actuary pensions valuation", (("actuar",),)),
    Brief("kotlin multiplatform engineer", (("kotlin", "android", "mobile"),)),
    Brief("Senior backend engineer in Berlin", (("backend", "back-end", "back end"),), "Berlin"),
    Brief("Registered nurse in London", (("nurse",),), "London"),
    Brief("iOS developer in Tokyo", (("ios",),), "Tokyo"),
    Brief(
        "Corporate lawyer in New York",
        (("lawyer", "attorney", "solicitor", "counsel"),),
        "New York",
    ),
    Brief("underwater basket weaving sommelier", (("sommelier",), ("basket",)), None, False),
    Brief("dragon tamer for a medieval castle", (("dragon",),), None, False),
)


def _fold(text: str) -> str:
    from shortlist.text import fold

    return fold(text)


def holds_role(brief: Brief, title: str, headline: str) -> bool:
    held = _fold(f"{title} {headline}")
    return all(any(spelling in held for spelling in group) for group in brief.role)


def in_place(brief: Brief, location: str) -> bool | None:
    from shortlist.places import resolve

    if brief.place is None:
        return None
    wanted, held = resolve(brief.place), resolve(location)
    if wanted is None or held is None:
        return False
    return wanted.country_code == held.country_code


def _time_scale(ctx: Context) -> float:
    raw = ctx.options.get("time_scale")
    return float(raw) if raw else (SMOKE_TIME_SCALE if ctx.smoke else BACKFILL_TIME_SCALE)


async def _judge(url: str, brief: Brief, search_id: Any) -> dict[str, Any]:
    import psycopg
    from psycopg.rows import dict_row

    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
        cur = await conn.execute(
            "SELECT c.role_title, c.headline, c.location, r.tier::text AS tier"
            "  FROM search_results r JOIN candidates c ON c.id = r.candidate_id"
            " WHERE r.search_id = %s ORDER BY r.rank",
            (search_id,),
        )
        results = await cur.fetchall()
        cur = await conn.execute(
            "SELECT provider, kind, coalesce(sum(credits), 0)::int AS credits, count(*) AS calls"
            "  FROM provider_calls WHERE search_id = %s GROUP BY provider, kind",
            (search_id,),
        )
        ledger = await cur.fetchall()
        cur = await conn.execute(
            "SELECT tier::text AS tier, status::text AS status FROM search_tiers"
            " WHERE search_id = %s ORDER BY tier",
            (search_id,),
        )
        tiers = {r["tier"]: r["status"] for r in await cur.fetchall()}
        cur = await conn.execute("SELECT status::text FROM searches WHERE id = %s", (search_id,))
        status = await cur.fetchone()
    relevant = [
        r
        for r in results
        if holds_role(brief, r["role_title"] or "", r["headline"] or "")
        and in_place(brief, r["location"] or "") is not False
    ]
    placed = [r for r in results if in_place(brief, r["location"] or "")]
    credits = sum(int(r["credits"]) for r in ledger)
    pdl_records = sum(int(r["credits"]) for r in ledger if str(r["provider"]).startswith("pdl"))
    return {
        "query": brief.query,
        "status": status["status"] if status else None,
        "tiers": tiers,
        "results": len(results),
        "relevant": len(relevant),
        "in_place": len(placed) if brief.place else None,
        "credits": credits,
        "pdl_records": pdl_records,
        "ledger": {f"{r['provider']}:{r['kind']}": int(r["credits"]) for r in ledger},
    }


def chosen(ctx: Context) -> list[int]:
    """The briefs a run searches: all of them; a smoke run one matchable and one not."""
    if not ctx.smoke:
        return list(range(len(BRIEFS)))
    return [1, next(i for i, b in enumerate(BRIEFS) if not b.matchable)]


async def _run(ctx: Context, urls: list[str], sim_url: str, scale: float) -> list[dict[str, Any]]:
    from bench.bench_backfill import _deployment, _embedder

    embedder = _embedder(ctx)
    shares: list[list[tuple[int, dict[str, Any]]]] = [[] for _ in urls]
    for k, i in enumerate(chosen(ctx)):
        shares[k % len(urls)].append((i, {"query": BRIEFS[i].query}))
    parts = await asyncio.gather(
        *(
            _deployment(ctx, url, sim_url, scale, embedder, share, deployments=len(urls))
            for url, share in zip(urls, shares, strict=True)
        )
    )
    rows: list[dict[str, Any]] = []
    for k, part in enumerate(parts):
        for number, timeline in part:
            row = await _judge(urls[k], BRIEFS[number], timeline.search_id)
            row["number"] = number
            rows.append(row)
    rows.sort(key=lambda r: int(r["number"]))
    for row in rows:
        ctx.log(
            f"briefs: {row['query']!r}: {row['status']}, {row['results']} results,"
            f" {row['relevant']} relevant, in place {row['in_place']}, {row['credits']} credits"
            f" ({row['pdl_records']} PDL records), tiers {row['tiers']}"
        )
    return rows


def records(rows: list[dict[str, Any]]) -> list[Record]:
    briefs = [BRIEFS[int(r["number"])] for r in rows]
    matchable = [r for r, b in zip(rows, briefs, strict=True) if b.matchable]
    nobody = [r for r, b in zip(rows, briefs, strict=True) if not b.matchable]
    relevant = sum(int(r["relevant"]) for r in matchable)
    credits = sum(int(r["credits"]) for r in matchable)
    billed = sum(int(r["pdl_records"]) for r in matchable)
    results = sum(int(r["results"]) for r in matchable)
    placed = [r for r, b in zip(rows, briefs, strict=True) if b.place]
    nan = float("nan")
    return [
        Record(
            NAME,
            "credits per relevant result",
            Stat.one(credits / relevant if relevant else nan),
            Stat.one(1.0),
            target=2.5,
            better="lower",
            unit="credits",
            baseline_name="one credit",
            note=f"{credits} credits, {relevant} relevant of {results} results, "
            f"{len(matchable)} matchable briefs",
        ),
        Record(
            NAME,
            "billed relevance (relevant results / PDL records billed)",
            Stat.one(relevant / billed if billed else nan),
            Stat.one(1.0),
            target=0.6,
            unit="%",
            baseline_name="every record",
            note=f"{billed} PDL records billed",
        ),
        Record(
            NAME,
            "results holding the brief's role and place",
            Stat.one(relevant / results if results else nan),
            Stat.one(1.0),
            target=0.9,
            unit="%",
            baseline_name="all results",
        ),
        report(
            NAME,
            f"briefs reaching {TARGET} relevant results, of {len(matchable)} matchable",
            sum(1 for r in matchable if int(r["relevant"]) >= TARGET),
            note=", ".join(f"{r['query']}: {r['relevant']}/{r['results']}" for r in matchable),
        ),
        report(
            NAME,
            "results in the brief's country, place briefs",
            sum(int(r["in_place"] or 0) for r in placed)
            / max(1, sum(int(r["results"]) for r in placed)),
            unit="%",
        ),
        report(
            NAME,
            "results for briefs nobody matches",
            sum(int(r["results"]) for r in nobody),
            note=", ".join(f"{r['query']}: {r['results']}" for r in nobody),
        ),
        report(
            NAME,
            "tiers failed",
            sum(1 for r in rows for s in r["tiers"].values() if s == "failed"),
        ),
    ]


def run(ctx: Context) -> list[Record]:
    from shortlist.simulator import SimulatorServer

    scale = _time_scale(ctx)
    parallel = int(ctx.options.get("parallel") or ctx.size(PARALLEL, 2))
    urls = [ctx.pg.create_database(f"bench_briefs_{k}") for k in range(parallel)]
    ctx.log(f"briefs: {len(chosen(ctx))} briefs in {parallel} deployment(s), time scale {scale:g}")
    with SimulatorServer(simulator_config(scale)) as sim:
        backfill_settings(urls[0], sim.base_url, scale)  # fails early on a bad setting
        rows = asyncio.run(_run(ctx, urls, sim.base_url, scale))
    (ctx.results_dir / ("briefs-smoke.json" if ctx.smoke else "briefs.json")).write_text(
        json.dumps(rows, indent=1) + "\n", encoding="utf-8"
    )
    return records(rows)
