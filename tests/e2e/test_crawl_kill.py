"""A crawl (``shortlist sources crawl`` in a real process) killed by SIGKILL mid-crawl: another
process takes the source over once the dead one's lease runs out, without loss or duplicates."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import psycopg
import pytest

from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.listings.sources import service
from tests.helpers import wait_for
from tests.job_boards import (
    FakeBoards,
    board_env,
    job_posting_page,
)

CRAWL_CLI = "import sys; from shortlist.cli import main; sys.argv[0] = 'shortlist'; main()"


async def count_listings(db_url: str, spec: str) -> tuple[int, int]:
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT count(*), count(DISTINCT external_id) FROM job_listings WHERE source = %s",
            (spec,),
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@pytest.mark.slow
async def test_crawl_killed_by_sigkill_resumes_without_loss_or_duplicates(
    db_url: str, pool: AsyncPool, boards: FakeBoards
) -> None:
    base = boards.base_url
    pages = [f"/jobs/p{n}" for n in range(6)]
    boards.pages["/sitemap.xml"] = (
        "application/xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{base}{p}</loc></url>" for p in pages)
        + "</urlset>",
    )
    for n, path in enumerate(pages):
        boards.pages[path] = ("text/html", job_posting_page(f"Job {n}", identifier=f"id-{n}"))
    boards.delay["/jobs/p3"] = 60.0  # the crawl is stuck here when it is killed
    spec = f"{base}/sitemap.xml"
    env = board_env(db_url, boards) | {
        "SHORTLIST_LEASE_SECONDS": "2",
        "SHORTLIST_HEARTBEAT_INTERVAL": "0.5",
    }
    settings = Settings(**{k.removeprefix("SHORTLIST_").lower(): v for k, v in env.items()})  # type: ignore[arg-type]
    source = await service.add_source(pool, settings, spec, "Killed Co")

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRAWL_CLI,
        "sources",
        "crawl",
        str(source.id),
        env={**os.environ, **env},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await wait_for(
            lambda: asyncio.sleep(0, result=bool(boards.served("/jobs/p3"))),
            timeout=60,
            message="the crawl reached the slow page",
        )
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    # Killed before its commit: nothing of the crawl is written, the source is still leased.
    assert await count_listings(db_url, spec) == (0, 0)
    assert (await service.get_source(pool, source.id)).last_crawl_at is None

    # A second `sources crawl` (the crawl queue's worker in drain mode) takes the source over
    # once the dead one's lease runs out, and exits when the crawl is done.
    del boards.delay["/jobs/p3"]
    second = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRAWL_CLI,
        "sources",
        "crawl",
        str(source.id),
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(second.communicate(), timeout=120)
    assert second.returncode == 0, err.decode()
    assert "6 new" in out.decode()
    assert await count_listings(db_url, spec) == (6, 6)
    [again] = await service.crawl_now(pool, settings, [source.id])
    assert again.outcome is not None and again.outcome.unchanged == 6
    assert await count_listings(db_url, spec) == (6, 6)
