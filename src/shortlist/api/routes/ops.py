"""Operations endpoints: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

from shortlist.api.deps import PoolDep
from shortlist.db.migrate import available_migrations

router = APIRouter(tags=["ops"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (says nothing about the database)."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    responses={
        200: {"description": "Ready"},
        503: {"description": "Database unreachable or migrations not applied"},
    },
)
async def readyz(pool: PoolDep) -> Response:
    """Ready to serve: the database answers and every migration is applied."""
    want = max(m.version for m in available_migrations())
    try:
        async with pool.connection(timeout=2.0) as conn:
            cur = await conn.execute("SELECT coalesce(max(version), 0) AS v FROM schema_migrations")
            row = await cur.fetchone()
    except Exception as exc:
        return JSONResponse(
            {"status": "unavailable", "database": "unreachable", "detail": type(exc).__name__},
            status_code=503,
        )
    have = int(row["v"]) if row else 0
    if have < want:
        return JSONResponse(
            {"status": "unavailable", "database": "ok", "migrations": f"{have}/{want}"},
            status_code=503,
        )
    return JSONResponse({"status": "ready", "database": "ok", "migrations": f"{have}/{want}"})


# Queue depths are read at scrape time, so /metrics is right whichever process did the work.
DEPTH_SQL = """
SELECT 'job_listings' AS queue, embedding_status::text AS status, count(*) AS n
  FROM job_listings GROUP BY 2
UNION ALL
SELECT 'candidates', embedding_status::text, count(*) FROM candidates GROUP BY 2
UNION ALL
SELECT 'search_candidates', status::text, count(*) FROM search_candidates GROUP BY 2
UNION ALL
SELECT 'searches', status::text, count(*) FROM searches GROUP BY 2
"""


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(pool: PoolDep) -> Response:
    rows: list[dict[str, Any]] = []
    try:
        async with pool.connection(timeout=2.0) as conn:
            cur = await conn.execute(DEPTH_SQL)
            rows = await cur.fetchall()
    except Exception:
        rows = []
    depth = GaugeMetricFamily(
        "shortlist_queue_depth", "Rows per queue table and status", labels=["queue", "status"]
    )
    for r in rows:
        depth.add_metric([str(r["queue"]), str(r["status"])], float(r["n"]))
    body = generate_latest(REGISTRY) + generate_latest(_OneShot([depth]))
    return Response(body, media_type=CONTENT_TYPE_LATEST)


class _OneShot(Collector):
    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self.families = families

    def collect(self) -> Any:
        return iter(self.families)
