"""Probes: liveness (``/healthz``), readiness (``/readyz``) and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

from shortlist.api.deps import ClientIPDep, PoolDep, ServicesDep
from shortlist.api.probe_cache import ProbeCache
from shortlist.auth import authenticate
from shortlist.db.migrate import pending_migrations_async
from shortlist.db.types import AsyncPool, Row
from shortlist.indexer import CORPORA
from shortlist.indexer.migration import status as embedding_status
from shortlist.status import indexer_pauses, queue_depths

router = APIRouter(tags=["probes"])
CORPUS_TABLES = tuple(c.table for c in CORPORA)


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
async def readyz(request: Request, pool: PoolDep, services: ServicesDep) -> Response:
    """Ready to serve: the database answers and every migration is applied. With read
    replicas, each one's state; any replica not serving makes the status ``degraded`` (still
    200: searches fall back to the primary). Replicas' names (host:port/database) and errors
    are shown to an admin token only."""
    try:
        async with pool.connection(timeout=2.0) as conn:
            pending = await pending_migrations_async(conn)
    except Exception as exc:
        return JSONResponse(
            {"status": "unavailable", "database": "unreachable", "detail": type(exc).__name__},
            status_code=503,
        )
    if pending:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in pending)
        return JSONResponse(
            {"status": "unavailable", "database": "ok", "migrations": f"pending: {names}"},
            status_code=503,
        )
    body: dict[str, Any] = {"status": "ready", "database": "ok", "migrations": "up to date"}
    if services.reads.replicas:
        report = services.reads.report()
        if not await _is_admin(request, pool):
            report = [{"state": r["state"], "lag_seconds": r["lag_seconds"]} for r in report]
        body["replicas"] = report
        if services.reads.degraded:
            body["status"] = "degraded"
    return JSONResponse(body)


async def _is_admin(request: Request, pool: AsyncPool) -> bool:
    """Whether the request carries a valid admin token. A probe never refuses: a missing,
    malformed or unknown token is an anonymous caller (so the token is not part of the probe's
    contract, and a load balancer's check cannot fail on a header)."""
    header = request.headers.get("authorization") or ""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return False
    async with pool.connection(timeout=2.0) as conn:
        principal = await authenticate(conn, token.strip())
    return principal is not None and principal.is_admin


async def _metrics_data(pool: AsyncPool) -> tuple[list[Row], dict[str, Row], dict[str, Any]]:
    async with pool.connection(timeout=2.0) as conn, conn.transaction():
        return await queue_depths(conn), await indexer_pauses(conn), await embedding_status(conn)


# Queue depths are read at scrape time, so /metrics is right whichever process did the work;
# at most once per SHORTLIST_STATUS_CACHE_SECONDS per process (shortlist.api.probe_cache), and
# rate limited per client like /status.
@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(request: Request, pool: PoolDep, client_ip: ClientIPDep) -> Response:
    request.app.state.probe_limiter.check(client_ip)
    cache: ProbeCache = request.app.state.probe_cache
    rows: list[Row] = []
    pauses: dict[str, Row] = {}
    models: dict[str, Any] = {}
    try:
        rows, pauses, models = await cache.get("metrics", lambda: _metrics_data(pool))
    except Exception:
        rows = []
    depth = GaugeMetricFamily(
        "shortlist_queue_depth", "Rows per queue table and status", labels=["queue", "status"]
    )
    backlog = GaugeMetricFamily(
        "shortlist_indexer_backlog",
        "Rows waiting for the embedding indexer per corpus: pending, or edited since embedded",
        labels=["corpus"],
    )
    paused = GaugeMetricFamily(
        "shortlist_indexer_paused",
        "1 while the breaker holds a corpus's embedding queue paused (see /status for why)",
        labels=["corpus"],
    )
    waiting: dict[str, float] = {}
    for r in rows:
        depth.add_metric([str(r["queue"]), str(r["status"])], float(r["n"]))
        if r["queue"] in CORPUS_TABLES and r["status"] in ("pending", "embedded"):
            extra = r["n"] if r["status"] == "pending" else r["reembed_due"]
            waiting[r["queue"]] = waiting.get(r["queue"], 0.0) + float(extra)
    if rows:
        for corpus in CORPUS_TABLES:
            backlog.add_metric([corpus], waiting.get(corpus, 0.0))
            paused.add_metric([corpus], 1.0 if corpus in pauses else 0.0)
    coverage = GaugeMetricFamily(
        "shortlist_embedding_model_coverage",
        "Share of each corpus's rows embedded by each model in use: for the active one, rows"
        " whose status is embedded; the one being built fills up to 1, then becomes active",
        labels=["corpus", "model", "state"],
    )
    if rows and models:
        active, building = models["active"], models["building"]
        for corpus in CORPUS_TABLES:
            label = f"{active['kind']}:{active['model']}"
            counts = {str(r["status"]): float(r["n"]) for r in rows if r["queue"] == corpus}
            total = sum(counts.values())
            share = counts.get("embedded", 0.0) / total if total else 1.0
            coverage.add_metric([corpus, label, "active"], share)
            if building is not None:
                label = f"{building['kind']}:{building['model']}"
                coverage.add_metric([corpus, label, "building"], building["coverage"][corpus])
    families = [depth, backlog, paused, coverage]
    body = generate_latest(REGISTRY) + generate_latest(_OneShot(families))
    return Response(body, media_type=CONTENT_TYPE_LATEST)


class _OneShot(Collector):
    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self.families = families

    def collect(self) -> Any:
        return iter(self.families)
