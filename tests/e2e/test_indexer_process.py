"""The indexer across OS processes (SKIP LOCKED between processes, SIGTERM and SIGKILL on the
real CLI) and with the real local model."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from pgvector import Vector

from shortlist.db.pool import open_async_pool
from shortlist.db.types import AsyncPool
from shortlist.embedding.local import LocalEmbedder
from shortlist.indexer import LISTINGS, EmbeddingQueue
from shortlist.queue import QueueWorker, WorkerConfig
from tests.fake_openai import FakeOpenAI, Reply
from tests.fake_openai import fake_openai as fake_openai  # the fixture
from tests.fakes import FakeEmbedder
from tests.helpers import wait_for_sync

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def insert_listings(url: str, n: int) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(
            """
            INSERT INTO job_listings (company_name, job_title, city_location, description,
                                      detail_page_slug, created_at)
            SELECT 'Company ' || i, 'Engineer ' || i, 'Lisbon', 'Listing #' || i,
                   'proc-' || i, now() + i * interval '1 millisecond'
              FROM generate_series(1, %s) AS i
            """,
            (n,),
        )


def count(url: str, where: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(f"SELECT count(*) FROM job_listings WHERE {where}").fetchone()
        assert row is not None
        return int(row[0])


def texts_by_id(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(f"SELECT id::text, {LISTINGS.text_sql} FROM job_listings").fetchall()
    return {text: row_id for row_id, text in rows}


def test_separate_processes_embed_each_row_exactly_once(db_url: str, tmp_path: Path) -> None:
    n = 3000
    outs = [tmp_path / f"proc{i}.jsonl" for i in range(3)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.indexer_proc", db_url, str(out)],
            cwd=ROOT,
            stderr=(tmp_path / f"proc{i}.err").open("wb"),
        )
        for i, out in enumerate(outs)
    ]
    try:
        # Rows only appear once every process is polling, so all three compete for them.
        wait_for_sync(
            lambda: all(Path(f"{o}.ready").exists() for o in outs),
            timeout=60,
            message="indexer processes ready",
        )
        insert_listings(db_url, n)
        wait_for_sync(
            lambda: count(db_url, "embedding_status = 'embedded' AND locked_by IS NULL") == n,
            timeout=120,
            message=f"{n} listings embedded",
        )
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        codes = [p.wait(timeout=30) for p in procs]
    assert codes == [0, 0, 0], [(tmp_path / f"proc{i}.err").read_text() for i in range(3)]

    per_process = [
        [text for line in out.read_text().splitlines() for text in json.loads(line)] for out in outs
    ]
    inputs = Counter(text for texts in per_process for text in texts)
    by_text = texts_by_id(db_url)
    assert set(inputs) == set(by_text)
    assert set(inputs.values()) == {1}, "a listing was embedded twice"
    assert all(per_process), [len(t) for t in per_process]


def start_cli_indexer_at_the_model(
    db_url: str, fake_openai: FakeOpenAI, tmp_path: Path, **env: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """``shortlist worker --only indexer`` on the fake provider, returned once its first batch
    (all 20 rows inserted before) is at the model; and the file its stderr goes to."""
    stderr = tmp_path / "worker.err"
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("shortlist")), "worker", "--only", "indexer"],
        cwd=ROOT,
        env=os.environ
        | {
            "SHORTLIST_DATABASE_URL": db_url,
            "SHORTLIST_DATA_DIR": str(tmp_path / "data"),
            "SHORTLIST_EMBEDDER": "openai",
            "SHORTLIST_EMBEDDER_URL": fake_openai.url,
            "SHORTLIST_EMBEDDER_API_KEY": "test-key",
            "SHORTLIST_EMBEDDER_MODEL": "fake-embed",
            "SHORTLIST_EMBEDDER_TIMEOUT": "120",
            "SHORTLIST_INDEXER_POLL_INTERVAL": "0.2",
            "SHORTLIST_INDEXER_BATCH_SIZE": "100",
            "SHORTLIST_LOG_LEVEL": "INFO",
        }
        | env,
        stdout=subprocess.DEVNULL,
        stderr=stderr.open("wb"),
    )
    try:
        wait_for_sync(
            lambda: fake_openai.requests >= 1 or proc.poll() is not None,
            timeout=60,
            message="batch in flight",
        )
        assert proc.poll() is None, stderr.read_text()
        assert count(db_url, "locked_by IS NOT NULL") == 20
        assert count(db_url, "embedding_status = 'embedded'") == 0
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, stderr


async def _embed_what_is_left(db_url: str) -> list[list[str]]:
    """A second indexer worker, in drain mode: the batches it sends to the model."""
    embedder = FakeEmbedder()
    pool = await open_async_pool(db_url, min_size=1, max_size=2)
    try:
        worker = QueueWorker(
            EmbeddingQueue(pool, embedder, LISTINGS),
            WorkerConfig(batch_size=100, poll_interval=0.05),
        )
        await asyncio.wait_for(worker.run(asyncio.Event(), drain=True), timeout=120)
    finally:
        await pool.close()
    return embedder.batches


def test_sigkill_mid_batch_the_lease_runs_out_and_another_worker_embeds_each_row_once(
    db_url: str, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A worker killed with its batch at the model leaves its rows leased; once the lease runs
    out (no heartbeat renews it), another worker claims them and embeds each exactly once."""
    insert_listings(db_url, 20)
    fake_openai.set_default(Reply.ok(delay=60.0))  # the batch is at the model when it is killed
    proc, _ = start_cli_indexer_at_the_model(
        db_url,
        fake_openai,
        tmp_path,
        SHORTLIST_LEASE_SECONDS="2",
        SHORTLIST_HEARTBEAT_INTERVAL="0.5",
    )
    try:
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=20) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Nothing was committed; the rows stay leased by the dead worker until the lease runs out.
    assert count(db_url, "embedding_status = 'embedded'") == 0
    assert count(db_url, "locked_by IS NOT NULL") == 20
    wait_for_sync(
        lambda: count(db_url, "locked_until < now()") == 20,
        timeout=30,
        message="the dead worker's leases run out",
    )

    batches = asyncio.run(_embed_what_is_left(db_url))
    texts = Counter(text for batch in batches for text in batch)
    assert set(texts) == set(texts_by_id(db_url))
    assert set(texts.values()) == {1}, "a listing was embedded twice"
    assert count(db_url, "embedding_status = 'embedded' AND embedding_attempts = 0") == 20
    assert count(db_url, "locked_by IS NOT NULL") == 0


def test_sigterm_lets_the_batch_in_flight_commit(
    db_url: str, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    insert_listings(db_url, 20)
    fake_openai.set_default(Reply.ok(delay=3.0))
    proc, stderr = start_cli_indexer_at_the_model(db_url, fake_openai, tmp_path)
    try:
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = stderr.read_text()
    assert code == 0, log
    assert took < 10, log
    # The batch finished its ~3 s call and committed; nothing else was started.
    assert count(db_url, "embedding_status = 'embedded'") == 20
    assert count(db_url, "locked_by IS NOT NULL") == 0
    assert fake_openai.requests == 1
    assert "embed:job_listings worker" in log and "stopped" in log


LISTINGS_30 = [
    ("Backend Python Developer", "Build REST APIs with Python, Django and PostgreSQL."),
    ("Frontend Engineer", "Create user interfaces in React and TypeScript."),
    ("Registered Nurse", "Care for patients on the intensive care ward of a hospital."),
    ("Long-haul Truck Driver", "Drive a semi-trailer truck across the country; CDL needed."),
    ("Pastry Chef", "Bake croissants, cakes and tarts in our bakery every morning."),
    ("Tax Accountant", "Prepare tax returns and audit financial statements; CPA preferred."),
    ("Data Scientist", "Train machine learning models on large datasets."),
    ("Primary School Teacher", "Teach reading and arithmetic to children aged six to ten."),
    ("Electrician", "Install and repair electrical wiring in homes and offices."),
    ("SEO Marketing Manager", "Grow organic traffic and run online advertising campaigns."),
    ("Dental Hygienist", "Clean teeth and advise patients on oral health."),
    ("Forklift Operator", "Move pallets around a warehouse with a forklift."),
    ("UX Designer", "Design wireframes and run usability studies."),
    ("DevOps Engineer", "Run Kubernetes clusters and CI/CD pipelines in the cloud."),
    ("Corporate Lawyer", "Draft contracts and advise on mergers and acquisitions."),
    ("Airline Pilot", "Fly commercial passenger jets on international routes."),
    ("Plumber", "Fix leaking pipes, install sinks, toilets and water heaters."),
    ("Barista", "Make espresso drinks and serve customers in a busy cafe."),
    ("Financial Analyst", "Build financial models and forecasts for investment decisions."),
    ("iOS Developer", "Develop iPhone apps in Swift."),
    ("Carpenter", "Build wooden furniture, cabinets and roof frames."),
    ("Pharmacist", "Dispense prescription medication and counsel patients."),
    ("Sales Representative", "Sell software subscriptions to small businesses."),
    ("HR Recruiter", "Source and interview candidates for open positions."),
    ("Security Guard", "Patrol the premises and monitor CCTV at night."),
    ("Veterinarian", "Diagnose and treat sick dogs, cats and other animals."),
    ("Architect", "Design residential buildings and prepare construction drawings."),
    ("Translator", "Translate documents between German, French and English."),
    ("Customer Support Agent", "Answer customer questions by phone, chat and e-mail."),
    ("Physical Therapist", "Help patients recover mobility after injuries and surgery."),
]

OBVIOUS = {
    "nurse job in a hospital": "Registered Nurse",
    "python backend programming": "Backend Python Developer",
    "drive a truck": "Long-haul Truck Driver",
    "baking cakes": "Pastry Chef",
    "fix leaking pipes": "Plumber",
    "vet for pets": "Veterinarian",
    "kubernetes cloud infrastructure": "DevOps Engineer",
}


async def test_local_model_ranks_obviously_relevant_listings_first(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        for i, (title, description) in enumerate(LISTINGS_30):
            await conn.execute(
                "INSERT INTO job_listings (company_name, job_title, city_location, description,"
                " detail_page_slug) VALUES ('Acme', %s, 'Porto', %s, %s)",
                (title, description, f"local-{i}"),
            )
    embedder = LocalEmbedder()
    queue = EmbeddingQueue(pool, embedder, LISTINGS)
    while rows := await queue.claim("local", 64, 60.0):
        await queue.index_batch("local", rows)
    assert queue.totals.embedded == len(LISTINGS_30)

    vectors = await embedder.embed(list(OBVIOUS))
    for (query, expected), vector in zip(OBVIOUS.items(), vectors, strict=True):
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT job_title FROM job_listings WHERE embedding_status = 'embedded'"
                " ORDER BY embedding <=> %s LIMIT 3",
                (Vector(vector),),
            )
            top = [r["job_title"] for r in await cur.fetchall()]
        assert top[0] == expected, (query, top)
