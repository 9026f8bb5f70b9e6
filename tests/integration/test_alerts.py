"""Saved searches that alert (issue 42), with real parts: PostgreSQL, the product's indexer and
queues, a loopback aiosmtpd relay that receives the digests, the e-mail intake receiving a DSN
at a digest's VERP address."""

from __future__ import annotations

import asyncio
import email
import email.policy
import hashlib
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from email.message import EmailMessage
from typing import Any

import aiosmtplib
import httpx
import psycopg
import pytest
from aiosmtpd.smtp import SMTP, Envelope, Session
from psycopg.types.json import Jsonb

from shortlist.alerts import reverse, store
from shortlist.alerts.bounces import Bounces
from shortlist.alerts.digests import DigestQueue
from shortlist.alerts.matcher import MatchQueue
from shortlist.alerts.query_vectors import QueryVectors, TrigramIndex
from shortlist.bootstrap import Services
from shortlist.db.types import AsyncPool
from shortlist.listings.mail.reply import Relay as RelayAddress
from shortlist.listings.mail.smtp import IntakeHandler, make_server
from shortlist.queue import Batch, QueueWorker, WorkerConfig
from tests.api_fixtures import EmbedPending
from tests.fakes import hash_embed

QUERY = "python developer"


@dataclass
class Sink:
    """A loopback relay: keeps every message with its envelope; answers ``codes`` at RCPT for
    the addresses named there (``{"bad@x": "550 5.1.1 no such user"}``), each until cleared."""

    port: int = 0
    received: list[tuple[str, list[str], bytes]] = field(default_factory=list)
    rcpt_answers: dict[str, str] = field(default_factory=dict)

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        answer = self.rcpt_answers.get(address)
        if answer:
            return answer
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        assert isinstance(envelope.content, bytes)
        self.received.append((str(envelope.mail_from), list(envelope.rcpt_tos), envelope.content))
        return "250 OK"

    def messages(self) -> list[EmailMessage]:
        return [
            email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[misc]
            for _f, _t, raw in self.received
        ]


@pytest.fixture
async def sink(services: Services) -> AsyncIterator[Sink]:
    sink = Sink()
    server = await asyncio.get_running_loop().create_server(
        lambda: SMTP(sink), host="127.0.0.1", port=0
    )
    sink.port = server.sockets[0].getsockname()[1]
    services.settings = services.settings.model_copy(
        update={
            "smtp_relay_url": f"smtp://127.0.0.1:{sink.port}",
            "public_url": "https://board.test",
            "mail_domain": "board.test",
            "alert_retry_base": 0.2,
        }
    )
    yield sink
    server.close()


async def drain(queue: Any, batch: int = 32) -> None:
    """Run a queue on the product's worker until a claim comes back empty."""
    config = WorkerConfig(batch_size=batch, poll_interval=0.05, backoff_base=0.05, grace=5.0)
    await QueueWorker(queue, config).run(asyncio.Event(), drain=True)


async def match_all(services: Services) -> None:
    await drain(MatchQueue(services.pool, services.spaces, min_score=0.8))


async def send_all(services: Services) -> DigestQueue:
    queue = DigestQueue(
        services.pool,
        services.settings,
        RelayAddress.from_url(services.settings.smtp_relay_url or ""),
    )
    await drain(queue, batch=1)
    return queue


async def add_listing(
    pool: AsyncPool,
    title: str,
    company: str = "Acme",
    city: str = "Berlin",
    description: str = "Write Python services.",
    **extra: Any,
) -> uuid.UUID:
    slug = f"{title.lower().replace(' ', '-')}-{uuid.uuid4().hex[:8]}"
    cols = ["job_title", "company_name", "city_location", "description", "detail_page_slug"]
    vals: list[Any] = [title, company, city, description, slug]
    for k, v in extra.items():
        cols.append(k)
        vals.append(v)
    async with pool.connection() as conn:
        cur = await conn.execute(
            f"INSERT INTO job_listings ({', '.join(cols)}) VALUES"
            f" ({', '.join(['%s'] * len(vals))}) RETURNING id",
            vals,
        )
        row = await cur.fetchone()
    assert row is not None
    return uuid.UUID(str(row["id"]))


async def active_search(
    services: Services, query: str = QUERY, email_address: str = "ada@example.com", **filters: Any
) -> uuid.UUID:
    async def embed(text: str) -> dict[str, list[float]]:
        return {"embedding": hash_embed(text)}

    saved = await store.save(
        services.pool,
        store.NewSearch(query, email_address, "instant", **filters),
        embed,
        min_score=0.8,
    )
    assert saved.stored
    async with services.pool.connection() as conn:
        await conn.execute(
            "UPDATE saved_searches SET status = 'active', consent_at = now() WHERE id = %s",
            (saved.id,),
        )
    return saved.id


async def scalar(pool: AsyncPool, query: str, *params: Any) -> Any:
    async with pool.connection() as conn:
        cur = await conn.execute(query, params)  # type: ignore[arg-type]
        row = await cur.fetchone()
    assert row is not None
    return next(iter(row.values()))


# --- the whole path ----------------------------------------------------------------------------


async def test_saved_confirmed_matched_digested_and_unsubscribed_in_one_click(
    client: httpx.AsyncClient, services: Services, sink: Sink, embed_pending: EmbedPending
) -> None:
    saved = await client.post(
        "/api/alerts",
        json={"query": QUERY, "email": "ada@example.com", "frequency": "instant"},
    )
    assert saved.status_code == 202, saved.text
    assert saved.json()["status"] == "pending" and saved.json()["confirmationSent"] is True
    [confirmation] = sink.messages()
    body = confirmation.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    [link] = re.findall(r"https://board\.test/api/alerts/confirm\?token=\S+", body)
    # Not yet confirmed: a matching listing alerts nobody.
    await add_listing(services.pool, "Python Developer", description="python developer")
    await embed_pending()
    await match_all(services)
    assert await scalar(services.pool, "SELECT count(*) FROM alert_matches") == 0

    confirmed = await client.get(link.removeprefix("https://board.test"))
    assert confirmed.status_code == 200
    assert await scalar(services.pool, "SELECT consent_at IS NOT NULL FROM saved_searches"), (
        "the consent time is kept"
    )

    await add_listing(services.pool, "Senior Python Developer", description="python developer")
    await add_listing(services.pool, "Pastry Chef", description="croissants and bread")
    await embed_pending()
    await match_all(services)
    await send_all(services)
    digests = sink.messages()[1:]
    assert len(digests) == 1
    [digest] = digests
    mail_from, rcpt, _raw = sink.received[-1]
    assert rcpt == ["ada@example.com"]
    assert re.fullmatch(r"bounce-\d+-[0-9a-f]{16}@board\.test", mail_from)
    assert digest["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    [unsubscribe] = re.findall(r"<(https://[^>]+)>", digest["List-Unsubscribe"])
    assert unsubscribe.startswith("https://board.test/api/alerts/unsubscribe?token=")
    text = digest.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "Senior Python Developer" in text and "Pastry Chef" not in text
    assert "https://board.test/jobs/senior-python-developer-" in text and "?q=python" in text

    # A GET of the link (a link scanner) changes nothing; the one-click POST unsubscribes.
    path = unsubscribe.removeprefix("https://board.test")
    page = await client.get(path)
    assert page.status_code == 200 and "<form method=post" in page.text
    assert await scalar(services.pool, "SELECT status FROM saved_searches") == "active"
    posted = await client.post(
        path,
        content=b"List-Unsubscribe=One-Click",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert posted.status_code == 200
    assert await scalar(services.pool, "SELECT status FROM saved_searches") == "unsubscribed"
    assert (await client.post(path)).status_code == 200  # idempotent

    await add_listing(services.pool, "Python Developer II", description="python developer")
    await embed_pending()
    await match_all(services)
    await send_all(services)
    assert len(sink.received) == 2  # the confirmation and the one digest


async def test_without_a_relay_the_answer_says_no_confirmation_went_and_the_log_has_the_link(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="shortlist.api.routes.alerts"):
        saved = await client.post(
            "/api/alerts",
            json={"query": QUERY, "email": "ada@example.com", "frequency": "daily"},
        )
    assert saved.status_code == 202, saved.text
    assert saved.json()["status"] == "pending" and saved.json()["confirmationSent"] is False
    [line] = [r.getMessage() for r in caplog.records if "confirmation link" in r.getMessage()]
    assert "/api/alerts/confirm?token=" in line and "ada@example.com" not in line
    link = line[line.index("http") :]
    confirmed = await client.get(link[link.index("/api/") :])
    assert confirmed.status_code == 200


async def test_bad_tokens_and_input_are_4xx_json(client: httpx.AsyncClient) -> None:
    for path in (
        "/api/alerts/confirm?token=nope",
        "/api/alerts/unsubscribe?token=u.0123456789abcdef0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAA",
    ):
        response = await client.get(path)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"]
    bad = await client.post(
        "/api/alerts", json={"query": QUERY, "email": "not an address", "frequency": "instant"}
    )
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "email"
    bad = await client.post(
        "/api/alerts", json={"query": QUERY, "email": "a@b.example", "frequency": "hourly"}
    )
    assert bad.status_code == 422


async def test_an_unsubscribe_cancels_what_was_queued(
    services: Services, sink: Sink, embed_pending: EmbedPending
) -> None:
    search = await active_search(services)
    await add_listing(services.pool, "Python Developer", description="python developer")
    await embed_pending()
    await match_all(services)
    assert await scalar(services.pool, "SELECT count(*) FROM alert_matches") == 1
    async with services.pool.connection() as conn:
        await store.end(conn, search, "unsubscribed")
    assert await scalar(services.pool, "SELECT status FROM alert_matches") == "cancelled"
    await send_all(services)
    assert sink.received == []


# --- digests -----------------------------------------------------------------------------------


async def test_a_digest_has_at_most_ten_jobs_two_per_company_and_each_job_once(
    services: Services, sink: Sink, embed_pending: EmbedPending
) -> None:
    await active_search(services)
    for company in ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne"):
        for n in range(3):
            await add_listing(
                services.pool,
                f"Python Developer {company} {n}",
                company=company,
                description="python developer",
            )
    await embed_pending()
    await match_all(services)
    assert await scalar(services.pool, "SELECT count(*) FROM alert_matches") == 21
    await send_all(services)
    sizes = []
    seen: list[str] = []
    for msg in sink.messages():
        text = msg.get_body(("plain",)).get_content()  # type: ignore[union-attr]
        jobs = re.findall(r"^• (Python Developer (\w+) \d)", text, re.M)
        sizes.append(len(jobs))
        companies = [c for _t, c in jobs]
        assert all(companies.count(c) <= 2 for c in companies)
        seen += [t for t, _c in jobs]
    assert max(sizes) <= 10 and sizes[0] == 10
    assert len(seen) == len(set(seen)) == 21  # every job once, none twice


async def test_nothing_is_sent_when_a_digest_would_be_empty(
    services: Services, sink: Sink, embed_pending: EmbedPending
) -> None:
    await active_search(services)
    listing = await add_listing(services.pool, "Python Developer", description="python developer")
    await embed_pending()
    await match_all(services)
    async with services.pool.connection() as conn:
        await conn.execute(
            "UPDATE job_listings SET status = 'closed', closed_at = now() WHERE id = %s", (listing,)
        )
    await send_all(services)
    assert sink.received == []
    assert await scalar(services.pool, "SELECT status FROM alert_matches") == "dropped"
    assert await scalar(services.pool, "SELECT due_at FROM saved_searches") is None


async def test_a_repost_and_a_near_duplicate_of_an_alerted_job_alert_nobody_again(
    services: Services, sink: Sink, embed_pending: EmbedPending
) -> None:
    await active_search(services)
    original = await add_listing(
        services.pool, "Python Developer", description="python developer, Django and Postgres"
    )
    await embed_pending()
    await match_all(services)
    await send_all(services)
    assert len(sink.received) == 1
    # A near-duplicate while the original is open: linked by the indexer, never matched.
    await add_listing(
        services.pool, "Python Developer", description="python developer, Django and Postgres!"
    )
    await embed_pending()
    assert await scalar(
        services.pool, "SELECT count(*) FROM job_listings WHERE duplicate_of = %s", original
    )
    await match_all(services)
    # The original closes; the job is posted again, the same job at the same place.
    async with services.pool.connection() as conn:
        await conn.execute("UPDATE job_listings SET status = 'closed', closed_at = now()")
    await add_listing(services.pool, "Python  developer", description="python developer (repost)")
    await embed_pending()
    await match_all(services)
    await send_all(services)
    assert len(sink.received) == 1
    assert await scalar(services.pool, "SELECT count(*) FROM alert_matches") == 1


async def test_two_batches_in_flight_with_listings_of_the_same_jobs_write_each_job_once(
    services: Services, embed_pending: EmbedPending
) -> None:
    """The product runs two match batches at once (bootstrap.ALERT_MATCH_CONCURRENCY). Here
    both hold a listing of each of the same jobs, one batch in the jobs' order and the other in
    the reverse: their transactions insert the same (subscriber, job) rows and schedule the
    same searches, in one order both keep, so neither deadlocks nor is rolled back, and each
    subscriber gets each job once."""
    subscribers = 6
    for i in range(subscribers):
        await active_search(services, email_address=f"s{i}@example.com")
    queue = MatchQueue(services.pool, services.spaces, min_score=0.8)
    for round_ in range(3):
        jobs = [f"Company {round_}-{j}" for j in range(8)]
        first = [
            await add_listing(
                services.pool, "Python Developer", company=c, description=f"python developer {c}"
            )
            for c in jobs
        ]
        second = [
            await add_listing(
                services.pool,
                "Python Developer",
                company=c,
                description=f"python developer at {c} again, remote, kotlin and go",
            )
            for c in jobs
        ]
        await embed_pending()
        assert not await scalar(
            services.pool, "SELECT count(*) FROM job_listings WHERE duplicate_of IS NOT NULL"
        )
        claimed = {i.id: i for i in await queue.claim("w", 100, 30.0)}
        assert set(claimed) == set(first) | set(second)
        batches = [
            Batch("w", [claimed[i] for i in first], queue.leases),
            Batch("w", [claimed[i] for i in reversed(second)], queue.leases),
        ]
        await asyncio.gather(*(queue.handle(b) for b in batches))
        assert await scalar(services.pool, "SELECT count(*) FROM alert_listing_queue") == 0
        assert await scalar(
            services.pool, "SELECT count(*) FROM alert_matches WHERE company_key LIKE %s",
            f"company {round_}-%",
        ) == subscribers * len(jobs)  # fmt: skip
    assert await scalar(
        services.pool, "SELECT count(DISTINCT (subscriber_id, job_key)) FROM alert_matches"
    ) == await scalar(services.pool, "SELECT count(*) FROM alert_matches")


# --- delivery trouble --------------------------------------------------------------------------


async def test_a_deferral_backs_off_and_a_hard_bounce_suppresses(
    services: Services, sink: Sink, embed_pending: EmbedPending
) -> None:
    await active_search(services, email_address="slow@example.com")
    await active_search(services, email_address="gone@example.com")
    sink.rcpt_answers = {
        "slow@example.com": "451 4.3.0 try again later",
        "gone@example.com": "550 5.1.1 no such user",
    }
    await add_listing(services.pool, "Python Developer", description="python developer")
    await embed_pending()
    await match_all(services)
    # A back-off long enough that the drained sender does not try again meanwhile.
    services.settings = services.settings.model_copy(update={"alert_retry_base": 600.0})
    await send_all(services)
    assert sink.received == []
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT sub.email, sub.status, s.attempts,"
            " s.due_at > now() + interval '500 seconds' AS later,"
            " s.due_at IS NULL AS idle FROM saved_searches s"
            " JOIN alert_subscribers sub ON sub.id = s.subscriber_id ORDER BY sub.email"
        )
        rows = {r["email"]: r for r in await cur.fetchall()}
    assert rows["gone@example.com"]["status"] == "suppressed"
    assert rows["gone@example.com"]["idle"]
    assert rows["slow@example.com"]["attempts"] == 1 and rows["slow@example.com"]["later"]
    # The relay takes it now: the same digest goes once its wait is over.
    sink.rcpt_answers = {}
    async with services.pool.connection() as conn:
        await conn.execute("UPDATE saved_searches SET due_at = now() WHERE due_at IS NOT NULL")
    await send_all(services)
    assert [to for _f, to, _r in sink.received] == [["slow@example.com"]]


async def test_a_dsn_to_the_verp_address_suppresses_the_recipient(
    services: Services, sink: Sink, embed_pending: EmbedPending
) -> None:
    await active_search(services, email_address="bounces@example.com")
    await add_listing(services.pool, "Python Developer", description="python developer")
    await embed_pending()
    await match_all(services)
    await send_all(services)
    [(verp, _to, _raw)] = sink.received
    # The e-mail intake, with the alerts' bounce sink, on loopback.
    bounces = Bounces(services.pool, services.settings)
    handler = IntakeHandler(services.pool, services.settings, bounces)
    server = await asyncio.get_running_loop().create_server(
        lambda: make_server(handler, services.settings), host="127.0.0.1", port=0
    )
    port = server.sockets[0].getsockname()[1]
    try:
        forged = verp.replace("bounce-", "bounce-9")
        async with aiosmtplib.SMTP(hostname="127.0.0.1", port=port) as smtp:
            # A bounce's envelope sender is null (RFC 5321 §4.5.5).
            with pytest.raises(aiosmtplib.SMTPRecipientsRefused):
                await smtp.sendmail("", [forged], dsn("bounces@example.com", forged))
            await smtp.sendmail("", [verp], dsn("bounces@example.com", verp))
    finally:
        server.close()
    assert bounces.suppressed == 1
    assert await scalar(services.pool, "SELECT status FROM alert_subscribers") == "suppressed"
    await add_listing(services.pool, "Python Developer II", description="python developer")
    await embed_pending()
    await match_all(services)
    await send_all(services)
    assert len(sink.received) == 1  # nothing more to a suppressed address


def dsn(recipient: str, to: str) -> bytes:
    """A delivery status notification as RFC 3464 shapes it (multipart/report)."""
    return (
        f"From: MAILER-DAEMON@mx.example.com\r\nTo: {to}\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n'
        "--B\r\nContent-Type: text/plain\r\n\r\nThe mail could not be delivered.\r\n"
        "--B\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.com\r\n\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\nAction: failed\r\nStatus: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n--B--\r\n"
    ).encode()


# --- crash safety ------------------------------------------------------------------------------


async def test_a_sender_that_dies_after_the_relay_took_a_digest_resends_it_with_its_message_id(
    services: Services, sink: Sink, embed_pending: EmbedPending
) -> None:
    """A sender killed between the relay's 250 and marking the digest sent: the lease runs out,
    the next sender sends the same digest (same Message-ID, same jobs), and nothing new."""
    await active_search(services)
    await add_listing(services.pool, "Python Developer", description="python developer")
    await embed_pending()
    await match_all(services)
    queue = DigestQueue(
        services.pool,
        services.settings,
        RelayAddress.from_url(services.settings.smtp_relay_url or ""),
    )
    [item] = await queue.claim("doomed", 1, lease=30.0)
    batch: Batch[Any] = Batch("doomed", [item], queue.leases)
    # The doomed sender makes the digest and the relay takes it; it dies before marking it.
    digest = await queue._make(batch, item)
    assert digest is not None
    await send_all_once(queue, digest)
    # The lease of the dead sender runs out.
    async with services.pool.connection() as conn:
        await conn.execute("UPDATE saved_searches SET locked_until = now() - interval '1 second'")
    await send_all(services)
    ids = [m["Message-ID"] for m in sink.messages()]
    assert len(ids) == 2 and ids[0] == ids[1]
    assert await scalar(services.pool, "SELECT status FROM alert_digests") == "sent"
    assert await scalar(services.pool, "SELECT status FROM alert_matches") == "sent"


async def send_all_once(queue: DigestQueue, digest: Any) -> None:
    """What _send_one does between making the digest and marking it: hand it to the relay."""
    from shortlist.alerts import mail, tokens
    from shortlist.alerts.digests import base_url

    key = await queue._key()
    msg = mail.digest_message(
        sender="shortlist alerts <alerts@board.test>",
        to=digest.email,
        message_id=digest.message_id,
        query=digest.query,
        location=digest.location,
        jobs=digest.jobs,
        base=base_url(queue.settings),
        unsubscribe_token=tokens.make(key, tokens.UNSUBSCRIBE, digest.search_id),
    )
    envelope = f"{tokens.verp_local_part(key, digest.id)}@board.test"
    await mail.deliver(queue.relay, msg, envelope_from=envelope, to=digest.email)


# --- reverse search ----------------------------------------------------------------------------


async def test_the_presearch_finds_what_an_exhaustive_check_finds(
    services: Services, embed_pending: EmbedPending
) -> None:
    """Keyword and meaning paths together against scoring every saved search, with filters,
    the listings matched as one batch in one statement: what it writes is what the exhaustive
    check says, listing by listing, but for a closed listing and a duplicate (none) and the
    second listing of one job (none for a subscriber the first one got)."""
    queries = [
        "python developer",
        "senior python engineer",
        "data engineer",
        "registered nurse",
        "nurse",
        "the",
        "sre",
        "frontend react developer",
        "pastry chef",
        "java developer",
    ]
    for i, q in enumerate(queries):
        await active_search(services, q, f"p{i}@example.com")
        await active_search(services, q, f"q{i}@example.com", location="Berlin")
        await active_search(services, q, f"r{i}@example.com", work_mode="remote")
        await active_search(services, q, f"s{i}@example.com", salary_min=90)
    titles = [
        ("Python Developer", "Berlin", "python developer django"),
        ("Data Engineer", "Munich", "data pipelines spark engineer"),
        ("Registered Nurse", "Berlin", "nurse in the ICU"),
        ("Pastry Chef", "Paris", "croissants"),
        ("Site Reliability Engineer", "Remote", "sre on call kubernetes"),
        ("Frontend Developer (React)", "Berlin", "react typescript frontend developer"),
        # The first listing's job again (its company, title and city), in other words.
        ("Python Developer", "Berlin", "python developer django rest"),
        ("Python Developer", "Hamburg", "python developer, closed before it is matched"),
        ("Data Engineer", "Cologne", "data engineer, a duplicate of another listing"),
    ]
    ids = [
        await add_listing(services.pool, t, city=c, description=d, salary_max_ks=100)
        for t, c, d in titles
    ]
    await embed_pending()
    closed, duplicate = ids[-2:]
    async with services.pool.connection() as conn:
        await conn.execute(
            "UPDATE job_listings SET status = 'closed', closed_at = now() WHERE id = %s",
            (closed,),
        )
        await conn.execute(
            "UPDATE job_listings SET duplicate_of = %s WHERE id = %s", (ids[1], duplicate)
        )
    statements = reverse.Statements.of(None)
    expected: dict[tuple[uuid.UUID, uuid.UUID], float] = {}
    got: dict[tuple[uuid.UUID, uuid.UUID], float] = {}
    vectors = QueryVectors(similarity=reverse.KEYWORD_SIMILARITY)
    async with services.pool.connection() as conn:
        await vectors.refresh(conn, statements.column, statements.dim)
    async with services.pool.connection() as conn:
        for listing in ids[:-2]:
            for search, score in (
                await reverse.exhaustive_matches(conn, statements, listing, 0.8)
            ).items():
                # Each subscriber has one search: the same job's second listing gets nothing.
                if not any(s == search for s, _ in expected):
                    expected[search, listing] = score
        async with conn.transaction():
            found = await reverse.match_batch(conn, statements, vectors, ids, 0.8)
            cur = await conn.execute(
                "SELECT search_id, listing_id, score FROM alert_matches"
                " WHERE listing_id = ANY (%s)",
                (ids,),
            )
            got = {(r["search_id"], r["listing_id"]): r["score"] for r in await cur.fetchall()}
            raise psycopg.Rollback
    assert got.keys() == expected.keys()
    for key, score in expected.items():
        assert got[key] == pytest.approx(score, abs=1e-6)
    assert found.written == len(expected) >= 6
    assert found.searches == sorted({s for s, _ in expected})
    assert not any(listing in (ids[6], closed, duplicate) for _, listing in got)


async def meaning_only_listing(services: Services, query: str) -> uuid.UUID:
    """A listing whose vector is the saved query's and whose title shares no word with it:
    only the meaning path can find the query (score σ(b + w_cos) = 0.87 at cosine 1)."""
    listing = await add_listing(services.pool, "Zyx Qwv", description="nothing alike")
    async with services.pool.connection() as conn:
        await conn.execute(
            "UPDATE job_listings SET embedding = q.embedding, embedding_status = 'embedded',"
            " embedded_at = now() FROM alert_queries AS q"
            " WHERE job_listings.id = %s AND q.normalised = %s",
            (listing, query),
        )
    return listing


async def test_a_query_saved_after_the_vectors_were_read_is_matched(
    services: Services,
) -> None:
    """The meaning path's vectors in memory: a query saved after they were read is matched by
    the next batch's statement before any refresh (the statement takes every query its read
    did not see), and from memory after the refresh, which reads only what was written."""
    await active_search(services, "pastry chef", "early@example.com")
    statements = reverse.Statements.of(None)
    vectors = QueryVectors(similarity=reverse.KEYWORD_SIMILARITY)
    async with services.pool.connection() as conn:
        assert await vectors.refresh(conn, statements.column, statements.dim) == 1
    late = await active_search(services, "registered nurse", "late@example.com")
    listing = await meaning_only_listing(services, "registered nurse")

    async def match() -> list[uuid.UUID]:
        async with services.pool.connection() as conn, conn.transaction():
            found = await reverse.match_batch(conn, statements, vectors, [listing], 0.8)
            raise psycopg.Rollback
        return found.searches

    assert await match() == [late]
    async with services.pool.connection() as conn:
        assert await vectors.refresh(conn, statements.column, statements.dim) == 1
        assert await vectors.refresh(conn, statements.column, statements.dim) == 0
    assert vectors.size == 2
    assert await match() == [late]


async def test_the_matcher_matches_a_query_saved_after_its_first_batch(
    services: Services, embed_pending: EmbedPending
) -> None:
    """One match queue, as a worker keeps it: its vectors read at its first batch, a search
    saved afterwards is matched by meaning alone in a later batch."""
    await active_search(services, "pastry chef", "early@example.com")
    queue = MatchQueue(services.pool, services.spaces, min_score=0.8)
    await add_listing(services.pool, "Pastry Chef", description="croissants")
    await embed_pending()
    await drain(queue)
    assert queue.vectors.size == 1
    late = await active_search(services, "registered nurse", "late@example.com")
    listing = await meaning_only_listing(services, "registered nurse")
    await drain(queue)
    assert (
        await scalar(
            services.pool, "SELECT count(*) FROM alert_listing_queue WHERE listing_id = %s", listing
        )
        == 0
    )
    matched = await scalar(
        services.pool,
        "SELECT array_agg(search_id ORDER BY search_id) FROM alert_matches WHERE listing_id = %s",
        listing,
    )
    assert matched == [late]
    assert queue.vectors.size == 2


KEYWORD_QUERIES = [
    "python",
    "python developer",
    "senior python engineer",
    "registered nurse",
    "sre",
    "frontend react developer",
    "pastry chef",
    "data engineer",
    "machine learning engineer",
    "ux",
    "a",
    "c",
    "the python",
    "",
]
KEYWORD_TITLES = [
    "Python Developer",
    "Senior Python Developer (Django)",
    "Pythonista",
    "Developer",
    "Data Engineer",
    "Data Engineering Lead",
    "Registered Nurse - ICU",
    "Nurse",
    "SRE",
    "Site Reliability Engineer",
    "Frontend Developer (React)",
    "React Native Developer",
    "Pastry Chef",
    "Chef de Partie",
    "Machine Learning Engineer",
    "ML Engineer",
    "UX Designer",
    "A",
    "Developer Advocate, Python",
    "C Programmer",
    "Python",
]


async def test_the_trigram_counts_find_every_title_similar_enough(services: Services) -> None:
    """The keyword path in the matcher's memory is exact: every (query, title) whose
    word_similarity is above KEYWORD_SIMILARITY is found by counting shared trigrams, from the
    inverted lists and from the queries added since (checked one by one), and "Developer"
    alone does not find "python developer"."""
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT q.q, t.title, show_trgm(w.words) AS query_trigrams,"
            " show_trgm(t.title) AS title_trigrams,"
            " word_similarity(nullif(w.words, ''), t.title) > %(s)s AS similar"
            " FROM unnest(%(queries)s::text[]) WITH ORDINALITY AS q (q, o),"
            " LATERAL (" + store.SQL["title_words"].replace("%(terms)s", "q.q") + ") AS w0,"
            " LATERAL (SELECT w0.title_words AS words) AS w,"
            " unnest(%(titles)s::text[]) AS t (title) ORDER BY q.o",
            {
                "s": reverse.KEYWORD_SIMILARITY,
                "queries": KEYWORD_QUERIES,
                "titles": [*KEYWORD_TITLES, "Senior Developer"],
            },
        )
        rows = await cur.fetchall()
    assert sum(bool(r["similar"]) for r in rows) >= 10
    positions = {q: i for i, q in enumerate(KEYWORD_QUERIES)}
    trigrams = {r["q"]: r["query_trigrams"] for r in rows}
    for built in (True, False):
        index = TrigramIndex(reverse.KEYWORD_SIMILARITY)
        for q in KEYWORD_QUERIES:
            assert index.add(trigrams[q]) == positions[q]
        if built:
            index.build(force=True)
        for r in rows:
            found = positions[r["q"]] in index.sharing(r["title_trigrams"]).tolist()
            assert found or not r["similar"], (r["q"], r["title"], built)
            if (r["q"], r["title"]) == ("python developer", "Senior Developer"):
                assert not found


async def test_the_search_page_offers_an_alert_on_hits_and_on_an_empty_result(
    client: httpx.AsyncClient, services: Services, embed_pending: EmbedPending
) -> None:
    await add_listing(services.pool, "Python Developer", description="python developer")
    await embed_pending()
    for q in ("python developer", "zzzz qqqq"):
        page = await client.get("/", params={"q": q, "location": "Berlin"})
        assert page.status_code == 200
        assert "data-alert-form" in page.text, q
        assert f'name="query" value="{q}"' in page.text
        assert 'name="location" value="Berlin"' in page.text
        assert "/static/alerts." in page.text
    assert "data-alert-form" not in (await client.get("/")).text
    # The search's other filters go with it: the floor's currency (the one the page shows
    # salaries in), the country and visa.
    page = await client.get(
        "/",
        params={"q": "python developer", "location": "Berlin", "salary_min": "90",
                "remote_country": "pt", "visa": "offered"},
    )  # fmt: skip
    for name, value in (("salary_min", "90"), ("currency", "EUR"), ("remote_country", "PT"),
                         ("visa", "offered")):  # fmt: skip
        assert f'name="{name}" value="{value}"' in page.text, name
    bad = await client.post(
        "/api/alerts",
        json={"query": "python", "email": "a@b.example", "frequency": "daily",
              "salary_min": 90, "currency": "XQQ"},
    )  # fmt: skip
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "currency"
    bad = await client.post(
        "/api/alerts",
        json={"query": "python", "email": "a@b.example", "frequency": "daily",
              "remote_country": "Portugal"},
    )  # fmt: skip
    assert bad.status_code in (400, 422)


# --- a recruiter's saved people search ----------------------------------------------------------


async def test_a_people_search_alert_reports_new_people_who_fit_once_and_spends_no_credit(
    client: httpx.AsyncClient,
    services: Services,
    sink: Sink,
    make_token: Any,
) -> None:
    from shortlist.alerts import people
    from shortlist.auth import Role
    from tests.integration.rows import insert_candidate

    token = await make_token("rita", Role.recruiter)
    headers = {"Authorization": f"Bearer {token}"}
    token_hash = hashlib.sha256(token.encode()).digest()
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO searches (owner_token_id, user_id, query, role, location,"
            " query_embedding, target_count, status, brief)"
            " SELECT t.id, t.user_id, 'rust firmware engineer', 'Firmware Engineer', 'Berlin',"
            " %s, 15, 'stale', %s FROM api_tokens t WHERE t.token_hash = %s"
            " RETURNING id",
            (
                str(hash_embed("rust firmware engineer")),
                Jsonb({"role": "Firmware Engineer", "location": "Berlin"}),
                token_hash,
            ),
        )
        search = await cur.fetchone()
        await insert_candidate(
            conn, "Old Hand", role_title="Rust Firmware Engineer", text="rust firmware engineer"
        )
    assert search is not None
    made = await client.post(f"/api/searches/{search['id']}/alert", headers=headers)
    assert made.status_code == 201, made.text
    again = await client.post(f"/api/searches/{search['id']}/alert", headers=headers)
    assert again.status_code == 200 and again.json()["id"] == made.json()["id"]
    # A token is a service account's key (no address): the recruiter who reads the digests.
    async with services.pool.connection() as conn:
        await conn.execute(
            "WITH u AS (INSERT INTO users (email, name) VALUES ('rita@example.com', 'Rita')"
            " RETURNING id) UPDATE people_alerts SET user_id = (SELECT id FROM u)"
        )
    relay = RelayAddress.from_url(services.settings.smtp_relay_url or "")
    assert await people.check(services.pool, services.spaces, services.settings, relay) == 0

    async with services.pool.connection() as conn:
        await insert_candidate(
            conn, "New Hand", role_title="Rust Firmware Engineer", text="rust firmware engineer"
        )
        await insert_candidate(
            conn, "Baker", role_title="Pastry Chef", text="pastry chef croissants"
        )
        await insert_candidate(
            conn,
            "Far Away",
            role_title="Rust Firmware Engineer",
            location="Sydney, Australia",
            text="rust firmware engineer",
        )
    assert await people.check(services.pool, services.spaces, services.settings, relay) == 1
    assert await people.check(services.pool, services.spaces, services.settings, relay) == 0
    [mail_to] = [to for _f, to, _r in sink.received]
    assert mail_to == ["rita@example.com"]
    text = sink.messages()[0].get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "Rust Firmware Engineer" in text and "Old Hand" not in text
    assert await scalar(services.pool, "SELECT count(*) FROM provider_calls") == 0

    # The relay defers the next digest: its person stays to be told of, after a back-off.
    services.settings = services.settings.model_copy(update={"alert_retry_base": 600.0})
    sink.rcpt_answers = {"rita@example.com": "451 4.3.0 try again later"}
    async with services.pool.connection() as conn:
        await insert_candidate(
            conn, "Third Hand", role_title="Rust Firmware Engineer", text="rust firmware engineer"
        )
    assert await people.check(services.pool, services.spaces, services.settings, relay) == 1
    assert len(sink.received) == 1
    held = (
        "SELECT notify_attempts, notify_after > now() + interval '500 seconds' FROM people_alerts"
    )
    async with services.pool.connection() as conn:
        cur = await conn.execute(held)
        assert tuple((await cur.fetchone() or {}).values()) == (1, True)
    sink.rcpt_answers = {}
    assert await people.check(services.pool, services.spaces, services.settings, relay) == 0
    assert len(sink.received) == 1, "not before its back-off ran out"
    async with services.pool.connection() as conn:
        await conn.execute("UPDATE people_alerts SET notify_after = now()")
    assert await people.check(services.pool, services.spaces, services.settings, relay) == 0
    assert len(sink.received) == 2
    text = sink.messages()[1].get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert text.count("Rust Firmware Engineer") == 1
    assert await scalar(services.pool, "SELECT count(*) FROM people_alert_matches"
                        " WHERE notified_at IS NULL") == 0  # fmt: skip
    assert await scalar(services.pool, "SELECT notify_attempts FROM people_alerts") == 0


async def test_a_people_alert_finds_a_new_person_however_many_older_people_rank_above(
    client: httpx.AsyncClient, services: Services, make_token: Any
) -> None:
    """The new people are scored themselves, not looked for among the corpus's nearest: 450
    older people who fit the brief better than a newcomer (the search's two lists hold 200
    each) do not hide the newcomer."""
    from shortlist.alerts import people
    from shortlist.auth import Role
    from tests.integration.rows import insert_candidate

    token = await make_token("rita", Role.recruiter)
    token_hash = hashlib.sha256(token.encode()).digest()
    brief = "rust firmware engineer"
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO searches (owner_token_id, user_id, query, role, location,"
            " query_embedding, target_count, status, brief)"
            " SELECT t.id, t.user_id, %s, 'Firmware Engineer', 'Berlin', %s, 15, 'stale', %s"
            " FROM api_tokens t WHERE t.token_hash = %s RETURNING id",
            (
                brief,
                str(hash_embed(brief)),
                Jsonb({"role": "Firmware Engineer", "location": "Berlin"}),
                token_hash,
            ),
        )
        search = await cur.fetchone()
        assert search is not None
        first = await insert_candidate(
            conn, "Old 0", role_title="Rust Firmware Engineer", text=brief
        )
        await conn.execute(
            "INSERT INTO candidates (full_name, email, role_title, skills, location,"
            " years_experience, embedding, embedding_status, embedded_at)"
            " SELECT 'Old ' || n, email, role_title, skills, location, years_experience,"
            " embedding, 'embedded', now() FROM candidates, generate_series(1, 449) AS n"
            " WHERE id = %s",
            (first,),
        )
    made = await client.post(
        f"/api/searches/{search['id']}/alert", headers={"Authorization": f"Bearer {token}"}
    )
    assert made.status_code == 201, made.text
    assert await people.check(services.pool, services.spaces, services.settings, None) == 0
    async with services.pool.connection() as conn:
        newcomer = await insert_candidate(
            conn,
            "Newcomer",
            role_title="Rust Firmware Engineer",
            text="embedded rust firmware engineer for sensors",
        )
    assert await people.check(services.pool, services.spaces, services.settings, None) == 1
    reported = await scalar(services.pool, "SELECT candidate_id FROM people_alert_matches")
    assert reported == newcomer


async def test_a_daily_digest_falls_due_at_the_subscribers_local_hour(
    client: httpx.AsyncClient, services: Services
) -> None:
    saved = await client.post(
        "/api/alerts",
        json={
            "query": QUERY,
            "email": "ada@example.com",
            "frequency": "daily",
            "timezone": "Asia/Tokyo",
            "hour": 7,
        },
    )
    assert saved.status_code == 202, saved.text
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT extract(hour FROM slot AT TIME ZONE 'Asia/Tokyo') AS hour,"
            " slot > now() AND slot <= now() + interval '1 day' AS within_a_day"
            " FROM (SELECT alert_next_slot(frequency, timezone, local_hour, NULL) AS slot"
            "       FROM saved_searches) AS s"
        )
        row = await cur.fetchone()
    assert row is not None and int(row["hour"]) == 7 and row["within_a_day"]
    bad = await client.post(
        "/api/alerts",
        json={"query": QUERY, "email": "a@b.example", "frequency": "daily", "timezone": "Mars"},
    )
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "timezone"


async def test_a_weekly_digest_falls_due_a_week_after_the_last_at_the_local_hour(
    services: Services,
) -> None:
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT extract(hour FROM s.slot AT TIME ZONE 'America/New_York') AS hour,"
            " s.slot - t.last AS gap"
            " FROM (SELECT now() - interval '1 hour' AS last) AS t,"
            " LATERAL (SELECT alert_next_slot('weekly', 'America/New_York', 9::smallint, t.last)"
            " AS slot) AS s"
        )
        row = await cur.fetchone()
        assert row is not None
        assert int(row["hour"]) == 9
        assert timedelta(days=6, hours=20) <= row["gap"] <= timedelta(days=8)
        cur = await conn.execute(
            "SELECT alert_next_slot('weekly', 'UTC', 9::smallint, NULL) - now() AS first_gap"
        )
        first = await cur.fetchone()
        assert first is not None and first["first_gap"] <= timedelta(days=1)


async def test_a_saved_search_holds_new_jobs_to_its_currency_country_and_visa_filters(
    services: Services, embed_pending: EmbedPending
) -> None:
    """As job search holds them: a floor in euros converted to each listing's currency, remote
    jobs open to the country, visa sponsorship offered."""
    euros = await active_search(services, email_address="eur@example.com", salary_min=90,
                                salary_currency="EUR")  # fmt: skip
    portugal = await active_search(services, email_address="pt@example.com", remote_country="PT")
    visa = await active_search(services, email_address="visa@example.com", visa="offered")
    listed = {
        "sek": await add_listing(services.pool, "Python Developer", "Krona AB", "Stockholm",
                                 "python developer", salary_max_ks=500, currency_code="SEK"),
        "usd": await add_listing(services.pool, "Python Developer", "Dollar Inc", "Boston",
                                 "python developer", salary_max_ks=120, currency_code="USD"),
        "anywhere": await add_listing(services.pool, "Python Developer", "Remote Co", "Remote",
                                      "python developer", work_mode="remote"),
        "us_only": await add_listing(services.pool, "Python Developer", "Yanks Co", "Remote US",
                                     "python developer", work_mode="remote",
                                     remote_countries=["US"]),
        "sponsor": await add_listing(services.pool, "Python Developer", "Visa Ltd", "London",
                                     "python developer", visa_sponsorship="offered"),
        "no_sponsor": await add_listing(services.pool, "Python Developer", "Local Ltd", "Leeds",
                                        "python developer", visa_sponsorship="not_offered"),
    }  # fmt: skip
    await embed_pending()
    await match_all(services)
    async with services.pool.connection() as conn:
        cur = await conn.execute("SELECT search_id, listing_id FROM alert_matches")
        matched = {(r["search_id"], r["listing_id"]) for r in await cur.fetchall()}
    named = {v: k for k, v in listed.items()}
    assert {named[li] for s, li in matched if s == euros} == {"usd"}  # 500k SEK < 90k EUR
    assert {named[li] for s, li in matched if s == portugal} == {"anywhere"}
    assert {named[li] for s, li in matched if s == visa} == {"sponsor"}
    # The exhaustive check (tests' and the bench's) reads the filters as the matcher does.
    statements = reverse.Statements.of(None)
    for listing_id in listed.values():
        async with services.pool.connection() as conn:
            exhaustive = set(await reverse.exhaustive_matches(conn, statements, listing_id, 0.8))
        assert exhaustive & {euros, portugal, visa} == {s for s, li in matched if li == listing_id}


async def test_identical_queries_are_stored_once(services: Services) -> None:
    """A million saved searches of a hundred thousand queries hold a hundred thousand vectors:
    the same words (any spacing) in another search, by anyone, share the query."""
    first = await active_search(services, "python developer", "ada@example.com")
    second = await active_search(services, "  python   developer ", "bob@example.com")
    third = await active_search(services, "python developer", "cy@example.com", location="Berlin")
    other = await active_search(services, "pastry chef", "dee@example.com")
    assert len({first, second, third, other}) == 4
    assert await scalar(services.pool, "SELECT count(*) FROM alert_queries") == 2
    assert (
        await scalar(
            services.pool,
            "SELECT count(DISTINCT query_id) FROM saved_searches WHERE id = ANY(%s)",
            [first, second, third],
        )
        == 1
    )


@pytest.mark.settings(status_cache_seconds=0)
async def test_status_and_metrics_show_the_alert_queues(
    client: httpx.AsyncClient, services: Services, embed_pending: EmbedPending
) -> None:
    await active_search(services)
    await add_listing(services.pool, "Python Developer", description="python developer")
    await add_listing(services.pool, "Senior Python Developer", description="python developer")
    await embed_pending()
    metrics = (await client.get("/metrics")).text
    assert 'shortlist_queue_depth{queue="alert_listings",status="pending"} 2.0' in metrics
    page = (await client.get("/status")).text
    assert 'data-alerts="listings_to_match">2<' in page

    await match_all(services)
    metrics = (await client.get("/metrics")).text
    assert 'shortlist_queue_depth{queue="alert_listings",status="pending"} 0.0' in metrics
    assert 'shortlist_queue_depth{queue="alert_matches",status="queued"} 2.0' in metrics
    assert 'shortlist_queue_depth{queue="alert_digests",status="due"} 1.0' in metrics
    page = (await client.get("/status")).text
    assert 'data-alerts="matches_queued">2<' in page and 'data-alerts="digests_due">1<' in page


async def test_a_forgotten_subscriber_is_erased_and_never_stored_again(
    client: httpx.AsyncClient, services: Services, sink: Sink
) -> None:
    from shortlist import privacy

    await active_search(services, email_address="Jane@Example.com")
    await privacy.forget(services.pool, "jane@example.com")
    assert await scalar(services.pool, "SELECT count(*) FROM alert_subscribers") == 0
    assert await scalar(services.pool, "SELECT count(*) FROM saved_searches") == 0
    again = await client.post(
        "/api/alerts",
        json={"query": QUERY, "email": "jane@example.com", "frequency": "daily"},
    )
    # Answered as any save (nobody learns who was forgotten); nothing stored, nothing sent.
    assert again.status_code == 202 and again.json()["status"] == "pending"
    assert await scalar(services.pool, "SELECT count(*) FROM alert_subscribers") == 0
    assert sink.received == []


async def test_the_alerts_commands_list_test_and_disable(
    services: Services,
    sink: Sink,
    embed_pending: EmbedPending,
    cli_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    from shortlist.cli import build_app
    from shortlist.config import get_settings

    monkeypatch.setenv("SHORTLIST_SMTP_RELAY_URL", f"smtp://127.0.0.1:{sink.port}")
    monkeypatch.setenv("SHORTLIST_MAIL_DOMAIN", "board.test")
    get_settings.cache_clear()
    search = await active_search(services)
    async with services.pool.connection() as conn:
        await conn.execute("UPDATE saved_searches SET frequency = 'weekly'")
    await add_listing(services.pool, "Python Developer", description="python developer")
    await embed_pending()
    await match_all(services)

    def run(*args: str) -> Any:
        return CliRunner().invoke(build_app(), list(args))

    listed = await asyncio.to_thread(run, "alerts", "list", "--json")
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.output)
    assert row["id"] == str(search) and row["email"] == "ada@example.com" and row["queued"] == 1
    tested = await asyncio.to_thread(run, "alerts", "test", str(search))
    assert tested.exit_code == 0, tested.output
    assert "sent 1 digest" in tested.output
    assert [to for _f, to, _r in sink.received] == [["ada@example.com"]]
    disabled = await asyncio.to_thread(run, "alerts", "disable", str(search))
    assert disabled.exit_code == 0, disabled.output
    assert await scalar(services.pool, "SELECT status FROM saved_searches") == "disabled"
    bad = await asyncio.to_thread(run, "alerts", "disable", "not-a-uuid")
    assert bad.exit_code != 0


async def test_the_alerts_commands_list_test_and_disable_a_people_search_too(
    services: Services,
    sink: Sink,
    cli_env: None,
    make_token: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A recruiter's saved people search is one of the operator's saved searches: listed (kind
    people, by its search's id), its waiting people sent now by `test` whatever back-off holds
    them, and stopped by `disable`."""
    from typer.testing import CliRunner

    from shortlist.auth import Role
    from shortlist.cli import build_app
    from shortlist.config import get_settings
    from tests.integration.rows import insert_candidate

    monkeypatch.setenv("SHORTLIST_SMTP_RELAY_URL", f"smtp://127.0.0.1:{sink.port}")
    monkeypatch.setenv("SHORTLIST_MAIL_DOMAIN", "board.test")
    get_settings.cache_clear()
    token = await make_token("rita", Role.recruiter)
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO searches (owner_token_id, query, query_embedding, target_count, status)"
            " SELECT t.id, 'rust firmware engineer', %s, 15, 'stale' FROM api_tokens t"
            " WHERE t.token_hash = %s RETURNING id",
            (str(hash_embed("rust firmware engineer")), hashlib.sha256(token.encode()).digest()),
        )
        search = (await cur.fetchone() or {})["id"]
        person = await insert_candidate(
            conn, "New Hand", role_title="Rust Firmware Engineer", text="rust firmware engineer"
        )
        await conn.execute(
            "WITH u AS (INSERT INTO users (email, name) VALUES ('rita@example.com', 'Rita')"
            " RETURNING id), a AS (INSERT INTO people_alerts (search_id, user_id, notify_attempts,"
            " notify_after) SELECT %s, u.id, 3, now() + interval '1 day' FROM u RETURNING id)"
            " INSERT INTO people_alert_matches (alert_id, candidate_id, score)"
            " SELECT a.id, %s, 0.9 FROM a",
            (search, person),
        )

    def run(*args: str) -> Any:
        return CliRunner().invoke(build_app(), list(args))

    listed = await asyncio.to_thread(run, "alerts", "list", "--json")
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.output)
    assert (row["kind"], row["id"], row["email"]) == ("people", str(search), "rita@example.com")
    assert (row["status"], row["queued"], row["sent"]) == ("active", 1, 0)
    tested = await asyncio.to_thread(run, "alerts", "test", str(search))
    assert tested.exit_code == 0, tested.output
    assert "sent 1 digest naming 1 people" in tested.output
    assert [to for _f, to, _r in sink.received] == [["rita@example.com"]]
    assert "Rust Firmware Engineer" in sink.messages()[0].get_body(("plain",)).get_content()  # type: ignore[union-attr]
    again = await asyncio.to_thread(run, "alerts", "test", str(search))
    assert "nothing sent" in again.output and len(sink.received) == 1
    disabled = await asyncio.to_thread(run, "alerts", "disable", str(search))
    assert disabled.exit_code == 0, disabled.output
    assert await scalar(services.pool, "SELECT status FROM people_alerts") == "disabled"
    [row] = json.loads((await asyncio.to_thread(run, "alerts", "list", "--json")).output)
    assert (row["status"], row["queued"], row["sent"]) == ("disabled", 0, 1)
    missing = await asyncio.to_thread(run, "alerts", "disable", str(uuid.uuid4()))
    assert missing.exit_code == 1 and "no such saved search" in missing.output
