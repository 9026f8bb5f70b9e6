"""The crawl queue: job sources, claimed when due, crawled, and the outcome recorded.

    claim   active sources whose next_crawl_at has passed (or the ids asked for by `sources
            crawl`), FOR UPDATE SKIP LOCKED, leased to this worker and committed
    handle  fetch the board (no transaction open meanwhile), then ONE transaction: the diff
            (``sync``), the pages' validators, and the source due again after
            ``SHORTLIST_CRAWL_INTERVAL``

An outcome belongs to its source, not to the worker: a board that answers 5xx or times out
is retried on its own (``Retry``: ``next_crawl_at`` after base × 2^attempts, at most the
interval) while the others go on; one that does not exist (404) is ``Failed`` with its error
(``source_outcome`` writes both). Only a database failure is the worker's ``TransientError``.
A crawl killed before its commit wrote nothing; its lease runs out and any worker crawls the
source again from the start, which the diff makes idempotent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg
from psycopg.types.json import Jsonb

from shortlist.config import Settings
from shortlist.db import channels
from shortlist.db.pool import single_statement
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool
from shortlist.errors import PermanentError, TransientError
from shortlist.listings.sources import ashby, careers, greenhouse, lever
from shortlist.listings.sources.context import ApiBases, CrawlContext, PageMemo
from shortlist.listings.sources.fetch import Fetcher, FetchPolicy, Validators
from shortlist.listings.sources.models import Board, SourceSpec
from shortlist.listings.sources.sync import CrawlOutcome, SourceRow, apply_board
from shortlist.queue import DONE, Batch, Failed, LeaseTable, Outcome, Retry, backoff_delay, each
from shortlist.redact import redact_emails

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.listings.sources")
MAX_ERROR_CHARS = 1000


@dataclass
class CrawlResult:
    source: SourceRow
    outcome: CrawlOutcome | None = None
    error: str | None = None
    permanent: bool = False
    requests: int = 0


async def crawl_board(ctx: CrawlContext, source: SourceRow) -> Board:
    """What the source publishes now, through its vendor's adapter."""
    if source.kind == "careers":
        # The URL as it was added: a careers source stays one, even if that URL would now
        # parse as a Lever job site.
        return await careers.crawl(ctx, source.spec)
    spec = SourceSpec.parse(source.spec)
    match source.kind:
        case "greenhouse":
            return await greenhouse.crawl(ctx, spec.key)
        case "lever":
            return await lever.crawl(ctx, spec.key, spec.instance)
        case _:
            return await ashby.crawl(ctx, spec.key)


class CrawlQueue:
    """The ``shortlist.queue.worker.Queue`` of job sources.

    ``ids``: claim only these sources, due or not, failed ones too, each once (``sources crawl``
    runs this queue in drain mode); ``on_done`` hears every crawl's result."""

    def __init__(
        self,
        pool: AsyncPool,
        settings: Settings,
        *,
        ids: Sequence[int] | None = None,
        on_done: Callable[[CrawlResult], None] | None = None,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self.name = "crawl"
        self.channel: str | None = channels.SOURCES
        self.leases = LeaseTable(
            "job_sources", outcome=QUERIES["source_outcome"], records=frozenset({"retry", "failed"})
        )
        self.todo: list[int] | None = None if ids is None else list(dict.fromkeys(ids))
        """The sources still to crawl when ``ids`` were given."""
        self.on_done = on_done
        self.policy = FetchPolicy.from_settings(settings)
        self.bases = ApiBases(
            greenhouse=settings.greenhouse_api_url,
            lever=settings.lever_api_url,
            lever_eu=settings.lever_eu_api_url,
            ashby=settings.ashby_api_url,
        )

    async def claim(
        self,
        worker_id: str,
        limit: int,
        lease: float,
    ) -> list[SourceRow]:
        if self.todo is not None and not self.todo:
            return []
        ids = self.todo
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(
                QUERIES["claim_due_sources"],
                {
                    "worker_id": worker_id,
                    "limit": limit,
                    "lease": lease,
                    "ids": None if ids is None else list(ids),
                },
            )
            rows = await cur.fetchall()
        claimed = [
            SourceRow(r["id"], r["spec"], r["kind"], r["company_name"], r["attempts"]) for r in rows
        ]
        if self.todo is not None:
            taken = {s.id for s in claimed}
            self.todo = [i for i in self.todo if i not in taken]
        return claimed

    async def handle(self, batch: Batch[SourceRow]) -> None:
        await each(batch, self.crawl)

    async def crawl(self, batch: Batch[SourceRow], source: SourceRow) -> Outcome:
        """Crawl one claimed source; its outcome is the source's own (see the module)."""
        result = CrawlResult(source)
        outcome: Outcome = DONE
        try:
            board, memos = await self._fetch_board(source, result)
        except PermanentError as exc:
            result.error, result.permanent = str(exc), True
            outcome = Failed(self._reason(str(exc)))
        except TransientError as exc:
            result.error = str(exc)
            outcome = Retry(self._retry_delay(source, exc.retry_after), self._reason(str(exc)))
        except psycopg.Error as exc:
            raise TransientError(f"database unavailable: {exc}") from exc
        except Exception as exc:
            # A board this adapter cannot read (a bug, or a shape no document describes): the
            # source backs off like any other trouble of its own, and the others go on.
            log.exception("crawl of source %d (%s) failed", source.id, source.spec)
            result.error = f"{type(exc).__name__}: {exc}"
            outcome = Retry(self._retry_delay(source, None), self._reason(result.error))
        else:
            try:
                result.outcome = await self._commit(batch, source, board, memos, result)
            except psycopg.Error as exc:
                raise TransientError(f"database unavailable: {exc}") from exc
        if result.error:
            log.warning("source %d (%s): %s", source.id, source.spec, result.error)
        else:
            log.info("source %d (%s) crawled: %s", source.id, source.spec, result.outcome)
        if self.on_done is not None:
            self.on_done(result)
        return outcome

    async def _fetch_board(
        self, source: SourceRow, result: CrawlResult
    ) -> tuple[Board, dict[str, PageMemo]]:
        """The board, and this crawl's memo of every URL it read."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(QUERIES["page_memos"], {"id": source.id})
            previous = {
                r["url"]: PageMemo(Validators(r["etag"], r["last_modified"]), r["external_ids"])
                for r in await cur.fetchall()
            }
        ctx = CrawlContext(
            Fetcher(self.pool, self.policy),
            self.bases,
            max_pages=self.settings.crawl_max_pages,
            previous=previous,
        )
        try:
            # A deadline for the whole crawl: a site that answers slowly page after page does
            # not hold a crawl slot past it.
            async with asyncio.timeout(self.settings.crawl_deadline):
                if source.kind == "careers":
                    await ctx.fetcher.check_url(source.spec)
                return await crawl_board(ctx, source), ctx.memos
        except TimeoutError as exc:
            raise TransientError(
                f"the crawl took more than {self.settings.crawl_deadline:g} s"
            ) from exc
        finally:
            result.requests = ctx.fetcher.requests
            await ctx.fetcher.aclose()

    async def _commit(
        self,
        batch: Batch[SourceRow],
        source: SourceRow,
        board: Board,
        memos: dict[str, PageMemo],
        result: CrawlResult,
    ) -> CrawlOutcome | None:
        async with self.pool.connection() as conn, conn.transaction():
            # The lease ends first: the diff commits only while this worker held the source (a
            # worker whose lease ran out, and whose source another took over, writes nothing);
            # two crawls of one source apply one after the other.
            if not await batch.finish(conn, {source.id: DONE}):
                result.error = "lease lost before the commit: another worker crawls it"
                return None
            cur = await conn.execute("SELECT now() AS now")
            row = await cur.fetchone()
            assert row is not None
            outcome = await apply_board(conn, source, board, now=row["now"])
            await conn.execute(QUERIES["forget_pages"], {"id": source.id})
            async with conn.cursor() as pages:
                await pages.executemany(
                    QUERIES["store_page"],
                    [
                        {
                            "id": source.id,
                            "url": url,
                            "etag": memo.validators.etag,
                            "last_modified": memo.validators.last_modified,
                            "external_ids": memo.external_ids,
                        }
                        for url, memo in memos.items()
                    ],
                )
            await conn.execute(
                QUERIES["crawl_succeeded"],
                {
                    "id": source.id,
                    "outcome": Jsonb({**outcome.as_json(), "requests": result.requests}),
                    "interval": self.settings.crawl_interval,
                },
            )
        return outcome

    def _retry_delay(self, source: SourceRow, retry_after: float | None) -> float:
        """The source's own back-off: base × 2^attempts, at most the crawl interval, at least
        what the board asked for (Retry-After)."""
        delay = min(
            self.settings.crawl_interval,
            backoff_delay(source.attempts, self.settings.crawl_backoff_base, 1e9),
        )
        return max(delay, retry_after) if retry_after else delay

    @staticmethod
    def _reason(error: str) -> str:
        return redact_emails(error)[:MAX_ERROR_CHARS]
