"""The e-mail intake end to end: real SMTP (smtplib) to the aiosmtpd intake on a free loopback
port, the parse queue on the one primitive, and a loopback SMTP server (aiosmtpd) as the relay
that receives the answers."""

from __future__ import annotations

import asyncio
import email
import email.policy
import logging
import re
import smtplib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from aiosmtpd.smtp import SMTP, Envelope, Session
from psycopg.rows import dict_row
from typer.testing import CliRunner

from shortlist import places
from shortlist.auth import Role, create_token_async
from shortlist.bootstrap import Services
from shortlist.cli import build_app
from shortlist.cli.common import setup_logging
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.listings.mail.queue import MailQueue
from shortlist.listings.mail.smtp import serve_intake
from shortlist.queue import Batch, QueueWorker, WorkerConfig
from shortlist.runtime import bind_socket
from shortlist.status import collect_status
from tests.api_fixtures import MakeToken
from tests.helpers import FromFixture, wait_for

MAIL = Path(__file__).parent.parent / "data" / "mail"
DOMAIN = "jobs.example"
AUTHSERV = "mx.jobs.example"
"""The authserv-id of the MTA in front of the intake, as its Authentication-Results name it."""
MAX_BYTES = 300_000


@dataclass
class Relay:
    """A loopback SMTP server standing in for the relay: it keeps what it is given."""

    port: int = 0
    received: list[tuple[list[str], bytes]] = field(default_factory=list)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        assert isinstance(envelope.content, bytes)
        self.received.append((list(envelope.rcpt_tos), envelope.content))
        return "250 OK"

    def bodies(self) -> list[str]:
        out = []
        for _to, raw in self.received:
            msg = email.message_from_bytes(raw, policy=email.policy.default)
            body = msg.get_body(("plain",))  # type: ignore[attr-defined]
            out.append(f"{msg['Subject']}\n{body.get_content() if body else ''}")
        return out


@pytest.fixture
async def relay() -> AsyncIterator[Relay]:
    relay = Relay()
    sock = bind_socket("127.0.0.1", 0, "the test relay")
    relay.port = sock.getsockname()[1]
    server = await asyncio.get_running_loop().create_server(lambda: SMTP(relay), sock=sock)
    yield relay
    server.close()


pytestmark = pytest.mark.settings(
    mail_domain=DOMAIN,
    mail_max_bytes=MAX_BYTES,
    smtp_relay_url=FromFixture("relay", lambda relay: f"smtp://127.0.0.1:{relay.port}"),
    mail_authserv_id=AUTHSERV,
    public_url="https://board.example",
)


@pytest.fixture
async def intake(services: Services, settings: Settings) -> AsyncIterator[int]:
    """The SMTP intake and its parse queue on this test's loop; yields the SMTP port."""
    await asyncio.to_thread(places.load)
    sock = bind_socket("127.0.0.1", 0, "the test intake")
    stop = asyncio.Event()
    worker = QueueWorker(
        MailQueue(services.pool, services.mail_parser, settings),
        WorkerConfig(poll_interval=0.05, lease=30, heartbeat=10, grace=5, backoff_base=0.1),
        keeper=services.keeper,
    )
    tasks = [
        asyncio.create_task(serve_intake(sock, services.intake, settings, stop)),
        asyncio.create_task(worker.run(stop)),
    ]
    yield sock.getsockname()[1]
    stop.set()
    await asyncio.gather(*tasks)
    services.mail_parser.close()
    sock.close()


async def company_token(pool: AsyncPool, company: str) -> str:
    async with pool.connection() as conn:
        _principal, token = await create_token_async(conn, company.lower(), Role.company, company)
    return token


async def intake_address(client: httpx.AsyncClient, token: str) -> str:
    response = await client.get("/api/intake", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    address = response.json()["address"]
    assert isinstance(address, str) and address.endswith("@" + DOMAIN)
    return address


_FROM_DOMAIN = re.compile(rb"(?im)^from:.*@([a-z0-9.-]+)>?[ \t]*$")


def send(
    port: int,
    to: str,
    raw: bytes,
    sender: str = "jobs@northwind.example",
    *,
    authenticated: bool = True,
) -> Any:
    """As the MTA in front of the intake sends: CRLF line ends (smtplib sends bytes as they
    are), and, when ``authenticated``, its DMARC verdict on the From domain first."""
    m = _FROM_DOMAIN.search(raw.partition(b"\n\n")[0])
    if authenticated and m is not None:
        raw = (
            f"Authentication-Results: {AUTHSERV}; dmarc=pass (p=reject)"
            f" header.from={m.group(1).decode()}\n"
        ).encode() + raw
    wire = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as smtp:
        return smtp.sendmail(sender, [to], wire)


async def settled(pool: AsyncPool, n: int) -> list[dict[str, Any]]:
    """Wait until ``n`` inbound messages left the queue; their rows, oldest first."""

    async def done() -> list[dict[str, Any]] | None:
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT m.id, m.status::text AS status, m.reason, m.replied_at, l.company_name,"
                " l.job_title, l.city_location, l.salary_min_ks, l.salary_max_ks,"
                " l.currency_code, l.work_mode, l.detail_page_slug, l.source, l.description"
                " FROM inbound_mail m LEFT JOIN job_listings l ON l.id = m.listing_id"
                " ORDER BY m.id"
            )
            rows = await cur.fetchall()
        finished = [r for r in rows if r["status"] not in ("queued", "running")]
        return rows if len(finished) >= n else None

    return await wait_for(done, timeout=30, message=f"{n} messages parsed")


EXPECTED = {
    "english.eml": ("Senior Data Engineer", "Lisbon", 70, 90, "EUR", "hybrid"),
    "german.eml": ("Senior Backend-Entwickler Java", "Munich", 65, 80, "EUR", "hybrid"),
    "html_forwarded.eml": ("Backend Engineer (Python)", "London", 55, 65, "GBP", "hybrid"),
    "pdf_description.eml": ("Product Designer", "Amsterdam", 60, 75, "EUR", "hybrid"),
}


async def test_free_form_messages_become_the_companys_listings_and_the_sender_hears_back(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool, relay: Relay
) -> None:
    token = await company_token(pool, "Northwind")
    address = await intake_address(client, token)
    assert await intake_address(client, token) == address  # stable until rotated
    for name in EXPECTED:
        assert await asyncio.to_thread(send, intake, address, (MAIL / name).read_bytes()) == {}
    rows = await settled(pool, len(EXPECTED))
    for name, row in zip(EXPECTED, rows, strict=True):
        assert row["status"] == "posted", (name, row["reason"])
        got = (
            row["job_title"],
            row["city_location"],
            row["salary_min_ks"],
            row["salary_max_ks"],
            row["currency_code"],
            row["work_mode"],
        )
        assert got == EXPECTED[name], name
        # The intake address is Northwind's: whatever the message says, Northwind posts it.
        assert (row["company_name"], row["source"]) == ("Northwind", "email")
    await wait_for(lambda: _replied(pool, len(EXPECTED)), message="replies recorded")
    bodies = "\n".join(relay.bodies())
    for row in rows:
        assert f"https://board.example/jobs/{row['detail_page_slug']}" in bodies
    assert all(to == ["jobs@northwind.example"] for to, _raw in relay.received[:1])


async def _replied(pool: AsyncPool, n: int) -> bool:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM inbound_mail WHERE replied_at IS NOT NULL"
        )
        row = await cur.fetchone()
    return row is not None and row["n"] >= n


async def test_a_bounce_is_parsed_but_never_answered(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool, relay: Relay
) -> None:
    # A null envelope sender (MAIL FROM:<>), the headers' From a plain address: RFC 3834
    # forbids answering it (and a forged From would get backscatter).
    address = await intake_address(client, await company_token(pool, "Northwind"))
    bounce = (MAIL / "no_job.eml").read_bytes()
    assert await asyncio.to_thread(send, intake, address, bounce, "") == {}
    [row] = await settled(pool, 1)
    assert row["status"] == "rejected"
    # Then a normal message: its reply is the first the relay sees.
    assert await asyncio.to_thread(send, intake, address, (MAIL / "english.eml").read_bytes()) == {}
    await settled(pool, 2)
    await wait_for(lambda: _replied(pool, 1), message="the second message answered")
    assert len(relay.received) == 1 and "does not describe a job" not in relay.bodies()[0]


VICTIM = "victim@victim.example"
FORGED = {
    # Nothing vouches for the From: the envelope, From and Reply-To all name the victim.
    "unauthenticated": ("", f"From: <{VICTIM}>\nReply-To: <{VICTIM}>"),
    # The sender wrote its own verdict, under another MTA's id.
    "another MTA's verdict": (
        "Authentication-Results: mx.elsewhere.example; dmarc=pass header.from=victim.example\n",
        f"From: <{VICTIM}>",
    ),
    # The sender's verdict under our MTA's id, but the MTA's own (first) says DMARC failed.
    "DMARC failed": (
        f"Authentication-Results: {AUTHSERV}; dmarc=fail header.from=victim.example\n"
        f"Authentication-Results: {AUTHSERV}; dkim=pass header.d=victim.example\n",
        f"From: <{VICTIM}>",
    ),
    # The attacker's own domain passed; the From names the victim's.
    "another domain signed": (
        f"Authentication-Results: {AUTHSERV}; spf=pass smtp.mailfrom=a@attacker.example;"
        " dkim=pass header.d=attacker.example; dmarc=pass header.from=attacker.example\n",
        f"From: <{VICTIM}>",
    ),
    # A signer below the From's domain (a customer's subdomain on a shared host).
    "a subdomain signed": (
        f"Authentication-Results: {AUTHSERV}; dkim=pass header.d=evil.victim.example\n",
        f"From: <{VICTIM}>",
    ),
    # Two From addresses: which one was authenticated is anyone's guess.
    "two From addresses": (
        f"Authentication-Results: {AUTHSERV}; dkim=pass header.d=northwind.example\n",
        f"From: <jobs@northwind.example>, <{VICTIM}>",
    ),
}


async def test_only_an_authenticated_sender_hears_back_never_a_forged_one(
    intake: int,
    client: httpx.AsyncClient,
    pool: AsyncPool,
    relay: Relay,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Issue 36 point 3: each message names the victim where a forger can (the envelope sender,
    # From, Reply-To); each is posted all the same, and only the last, whose domain the MTA
    # authenticated, is answered — at its From, not its Reply-To.
    caplog.set_level(logging.INFO, logger="shortlist.listings.mail.queue")
    address = await intake_address(client, await company_token(pool, "Northwind"))
    english = (MAIL / "english.eml").read_bytes()
    original_from = b"From: Jobs at Northwind <jobs@northwind.example>"
    for n, (verdicts, from_lines) in enumerate(FORGED.values()):
        raw = verdicts.encode() + english.replace(original_from, from_lines.encode()).replace(
            b"<20261201094500.4F2A@", f"<forged-{n}@".encode()
        )
        assert (
            await asyncio.to_thread(send, intake, address, raw, VICTIM, authenticated=False) == {}
        )
    genuine = english.replace(original_from, original_from + f"\nReply-To: <{VICTIM}>".encode())
    genuine = (
        f"Authentication-Results: {AUTHSERV}; dkim=pass header.d=northwind.example"
        " header.s=2026; dmarc=none header.from=northwind.example\n"
    ).encode() + genuine
    assert (
        await asyncio.to_thread(send, intake, address, genuine, VICTIM, authenticated=False) == {}
    )
    rows = await settled(pool, len(FORGED) + 1)
    assert [r["status"] for r in rows] == ["posted"] * (len(FORGED) + 1)
    await wait_for(lambda: _replied(pool, 1), message="the authenticated sender answered")
    assert [to for to, _raw in relay.received] == [["jobs@northwind.example"]]
    unanswered = [r for r in caplog.records if "not answered" in r.getMessage()]
    assert len(unanswered) == len(FORGED)
    assert VICTIM not in caplog.text


async def test_a_message_without_a_job_is_rejected_visibly_with_the_reason(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool, relay: Relay
) -> None:
    address = await intake_address(client, await company_token(pool, "Northwind"))
    await asyncio.to_thread(send, intake, address, (MAIL / "no_job.eml").read_bytes())
    [row] = await settled(pool, 1)
    assert row["status"] == "rejected" and "does not describe a job" in row["reason"]
    assert row["job_title"] is None
    await wait_for(lambda: _replied(pool, 1), message="reply recorded")
    assert "does not describe a job" in relay.bodies()[0]
    async with pool.connection() as conn:
        report = await collect_status(conn)
    assert report["inbound_mail"]["by_status"]["rejected"] == 1
    assert "does not describe a job" in report["inbound_mail"]["failures"][0]["reason"]


async def test_a_delivery_logs_neither_the_sender_nor_the_secret_address(
    intake: int,
    client: httpx.AsyncClient,
    pool: AsyncPool,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The commands' logging (aiosmtpd logs every SMTP command with its envelope at INFO).
    monkeypatch.setattr(logging.getLogger("mail.log"), "level", logging.NOTSET)
    setup_logging("INFO")
    caplog.set_level(logging.INFO)
    address = await intake_address(client, await company_token(pool, "Northwind"))
    sender = "hiring.manager@northwind.example"
    raw = (MAIL / "english.eml").read_bytes()
    assert await asyncio.to_thread(send, intake, address, raw, sender) == {}
    await settled(pool, 1)
    local = address.split("@")[0]
    # The messages as logged, before the redactor: nothing to redact in the first place.
    messages = "\n".join(r.getMessage() for r in caplog.records)
    assert local not in messages and sender not in messages
    # aiosmtpd's own lines quote the envelope as the client sent it (an intake domain without
    # a dot, as the default "localhost", is not even shaped like an address to the redactor).
    assert not [r.getMessage() for r in caplog.records if r.name == "mail.log"]


async def test_unknown_and_rotated_addresses_are_refused_at_rcpt(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    raw = (MAIL / "english.eml").read_bytes()
    for to in (f"post-0123456789abcdef0123456789abcdef@{DOMAIN}", "someone@elsewhere.example"):
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
            await asyncio.to_thread(send, intake, to, raw)
        assert refused.value.recipients[to][0] == 550
    token = await company_token(pool, "Northwind")
    old = await intake_address(client, token)
    rotated = await client.post("/api/intake/rotate", headers={"Authorization": f"Bearer {token}"})
    assert rotated.status_code == 200
    new = rotated.json()["address"]
    assert new != old and await intake_address(client, token) == new
    with pytest.raises(smtplib.SMTPRecipientsRefused):
        await asyncio.to_thread(send, intake, old, raw)
    assert await asyncio.to_thread(send, intake, new.upper(), raw) == {}  # any case
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM inbound_mail")
        assert (await cur.fetchone()) == {"n": 1}


async def test_an_address_replaced_between_rcpt_and_data_bounces_instead_of_a_lost_250(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    token = await company_token(pool, "Northwind")
    address = await intake_address(client, token)
    raw = (MAIL / "english.eml").read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    smtp = await asyncio.to_thread(smtplib.SMTP, "127.0.0.1", intake, timeout=30)
    try:
        await asyncio.to_thread(smtp.ehlo)
        assert (await asyncio.to_thread(smtp.mail, "hr@northwind.example"))[0] == 250
        assert (await asyncio.to_thread(smtp.rcpt, address))[0] == 250
        rotated = await client.post(
            "/api/intake/rotate", headers={"Authorization": f"Bearer {token}"}
        )
        assert rotated.status_code == 200
        code, _reply = await asyncio.to_thread(smtp.data, raw)
    finally:
        await asyncio.to_thread(smtp.close)
    assert code == 550, _reply
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM inbound_mail")
        assert (await cur.fetchone()) == {"n": 0}


async def test_the_same_message_twice_is_one_listing(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    address = await intake_address(client, await company_token(pool, "Northwind"))
    raw = (MAIL / "english.eml").read_bytes()
    for _ in range(2):  # a mail server retrying after a lost 250
        assert await asyncio.to_thread(send, intake, address, raw) == {}
    rows = await settled(pool, 1)
    assert [r["status"] for r in rows] == ["posted"]
    no_id = raw.replace(b"Message-ID: <20261201094500.4F2A@mail.northwind.example>\n", b"")
    for _ in range(2):  # without a Message-ID, the raw bytes say it is the same message
        await asyncio.to_thread(send, intake, address, no_id)
    rows = await settled(pool, 2)
    assert len(rows) == 2
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM job_listings")
        assert (await cur.fetchone()) == {"n": 2}


async def test_size_is_announced_and_enforced(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    address = await intake_address(client, await company_token(pool, "Northwind"))

    def ehlo_and_send_big() -> tuple[str | None, int]:
        with smtplib.SMTP("127.0.0.1", intake, timeout=10) as smtp:
            smtp.ehlo()
            size = smtp.esmtp_features.get("size")
            big = b"Subject: big\r\n\r\n" + (b"x" * 998 + b"\r\n") * (MAX_BYTES // 1000 + 10)
            try:
                smtp.sendmail("a@b.example", [address], big)
            except smtplib.SMTPResponseException as exc:
                return size, exc.smtp_code
            except smtplib.SMTPRecipientsRefused:
                return size, 0
            return size, 250

    size, code = await asyncio.to_thread(ehlo_and_send_big)
    assert size == str(MAX_BYTES)
    assert code == 552


async def test_company_tokens_post_as_their_company_only(
    client: httpx.AsyncClient, pool: AsyncPool, services: Services
) -> None:
    token = await company_token(pool, "Northwind")
    auth = {"Authorization": f"Bearer {token}"}
    body = {
        "company_name": "Globex",
        "job_title": "Engineer",
        "city_location": "Porto",
        "description": "Build things.",
    }
    refused = await client.post("/api/jobs", json=body, headers=auth)
    assert refused.status_code == 403
    assert "Northwind" in refused.json()["error"]["message"]
    created = await client.post(
        "/api/jobs", json={**body, "company_name": " northwind"}, headers=auth
    )
    assert created.status_code == 201, created.text
    # The HTTP producer of e-mail posts: free-form, read in the parser process, bound likewise.
    await asyncio.to_thread(places.load)
    try:
        posted = await client.post(
            "/api/jobs/email",
            content=(MAIL / "german.eml").read_bytes(),
            headers={**auth, "Content-Type": "message/rfc822"},
        )
        assert posted.status_code == 201, posted.text
        assert posted.json()["company_name"] == "Northwind"
        assert posted.json()["job_title"] == "Senior Backend-Entwickler Java"
        nojob = await client.post(
            "/api/jobs/email",
            content=(MAIL / "no_job.eml").read_bytes(),
            headers={**auth, "Content-Type": "message/rfc822"},
        )
        assert nojob.status_code == 400
        assert "does not describe a job" in nojob.json()["error"]["message"]
    finally:
        services.mail_parser.close()


# --- the command line: token binding, the MTA pipe ------------------------------------------------


def _sql(db_url: str, query: str, params: Any = None) -> list[dict[str, Any]]:
    with psycopg.connect(db_url, row_factory=dict_row, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return list(cur.fetchall()) if cur.description else []


def test_token_create_binds_a_company_token_to_its_company(cli_env: None, db_url: str) -> None:
    runner = CliRunner()
    app = build_app()
    missing = runner.invoke(app, ["token", "create", "nw", "--role", "company"])
    assert missing.exit_code == 2
    assert missing.stderr.strip().splitlines() == [
        "error: a company token needs the company it posts as: --company NAME"
    ]
    made = runner.invoke(
        app, ["token", "create", "nw", "--role", "company", "--company", "Northwind"]
    )
    assert made.exit_code == 0, made.output
    assert made.stdout.strip().splitlines()[-1].startswith("sl_")
    recruiter = runner.invoke(app, ["token", "create", "r", "--role", "recruiter"])
    assert recruiter.exit_code == 0
    rows = _sql(db_url, "SELECT name, role::text AS role, company_name FROM api_tokens ORDER BY id")
    assert rows == [
        {"name": "nw", "role": "company", "company_name": "Northwind"},
        {"name": "r", "role": "recruiter", "company_name": None},
    ]
    with pytest.raises(psycopg.errors.CheckViolation):  # the schema holds the rule too
        _sql(db_url, "UPDATE api_tokens SET company_name = NULL WHERE name = 'nw'")


def test_ingest_email_from_stdin_queues_for_an_intake_address(cli_env: None, db_url: str) -> None:
    _sql(
        db_url,
        "INSERT INTO mail_intakes (company_name, local_part) VALUES ('Northwind', %s)",
        ("post-" + "a" * 32,),
    )
    runner = CliRunner()
    app = build_app()
    raw = (MAIL / "german.eml").read_bytes()
    to = ["--to", "post-" + "a" * 32 + "@localhost", "--sender", "a@b.example"]
    first = runner.invoke(app, ["ingest", "email", "-", *to], input=raw)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("queued message")
    again = runner.invoke(app, ["ingest", "email", "-", *to], input=raw)
    assert (again.exit_code, again.stdout.strip()) == (0, "already received")
    unknown = runner.invoke(
        app, ["ingest", "email", "-", "--to", "post-nobody@localhost"], input=raw
    )
    assert unknown.exit_code == 67  # EX_NOUSER: the MTA bounces it
    rows = _sql(db_url, "SELECT company_name, status::text AS status, mail_from FROM inbound_mail")
    assert rows == [{"company_name": "Northwind", "status": "queued", "mail_from": "a@b.example"}]


# --- the queue's guarded transitions ----------------------------------------------------------


async def test_claim_and_finish_are_guarded_by_the_lease(pool: AsyncPool) -> None:
    from shortlist.listings.mail import store

    async with pool.connection() as conn:
        intake = await store.intake_for(conn, "Northwind", None)
        first = await store.receive(
            conn, intake, recipient="r", mail_from=None, message_id="<1@x>", raw=b"one"
        )
        assert (
            await store.receive(
                conn, intake, recipient="r", mail_from=None, message_id="<1@x>", raw=b"other bytes"
            )
            is None
        )  # same Message-ID: the same message
    queue = MailQueue(pool, None, Settings(mail_domain=DOMAIN))  # type: ignore[arg-type]
    [claimed] = await queue.claim("w1", 10, 30)
    assert claimed.id == first and claimed.attempts == 1
    assert await queue.claim("w2", 10, 30) == []  # held
    assert not await queue._finish_unposted(
        Batch("w2", [claimed], MailQueue.leases), claimed, "rejected", "not mine"
    )
    assert not await queue._finish_unposted(
        Batch("w1", [claimed], MailQueue.leases), claimed, "posted", "not a way to post"
    )
    async with pool.connection() as conn:
        await conn.execute("UPDATE inbound_mail SET locked_until = now() - interval '1 s'")
        await conn.commit()
    [again] = await queue.claim("w2", 10, 30)  # the lease ran out: w1 is gone
    assert again.attempts == 2
    assert not await queue._finish_unposted(
        Batch("w1", [again], MailQueue.leases), again, "rejected", "too late"
    )
    assert await queue._finish_unposted(
        Batch("w2", [again], MailQueue.leases), again, "failed", "the parser ran out of time"
    )
    assert await queue.claim("w3", 10, 30) == []  # finished rows stay finished
    assert await MailQueue.leases.release(pool, "w2", [again.id]) == 0


# --- personal data: retention, erasure on request, forgotten senders ------------------------------


def _message(sender: str, body: str = "Engineer role in Berlin.", mid: str | None = None) -> bytes:
    head = f"From: {sender}\r\nSubject: Engineer\r\n"
    if mid:
        head += f"Message-ID: <{mid}>\r\n"
    return f"{head}\r\n{body}\r\n".encode()


async def _receive(pool: AsyncPool, mail_from: str | None, raw: bytes, **kw: Any) -> int:
    from shortlist.listings.mail import store
    from shortlist.listings.mail.smtp import message_id_of

    async with pool.connection() as conn:
        intake = await store.intake_for(conn, "Northwind", None)
        row = await store.receive(
            conn,
            intake,
            recipient=f"{intake.local_part}@{DOMAIN}",
            mail_from=mail_from,
            message_id=message_id_of(raw),
            raw=raw,
            **kw,
        )
    assert row is not None
    return row


async def _mail(pool: AsyncPool) -> dict[int, dict[str, Any]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, status::text AS status, reason, listing_id, mail_from, message_id,"
            " dedup_key, raw IS NULL AS raw_erased, erased_at IS NOT NULL AS erased,"
            " sender_forgotten, received_at, updated_at, replied_at FROM inbound_mail"
        )
        return {r["id"]: r for r in await cur.fetchall()}


async def _set(pool: AsyncPool, ids: list[int], assignments: str) -> None:
    async with pool.connection() as conn:
        if "status =" in assignments:
            # A message reaches an outcome only through a parser's claim (migration 0027's
            # trigger): take it through `running` as the queue would.
            await conn.execute(
                "UPDATE inbound_mail SET status = 'running'"
                " WHERE id = ANY (%s) AND status = 'queued'",
                (ids,),
            )
        await conn.execute(f"UPDATE inbound_mail SET {assignments} WHERE id = ANY (%s)", (ids,))
        await conn.commit()


async def test_retention_erases_the_personal_data_of_old_handled_answered_messages_only(
    pool: AsyncPool,
) -> None:
    from shortlist.listings.mail import store
    from shortlist.listings.models import ListingCreate
    from shortlist.listings.repository import insert_listing
    from shortlist.talent.reaper import reap_once

    sender = "hr@northwind.example"
    replied = await _receive(pool, sender, _message(sender, mid="replied@x"))
    unanswered = await _receive(pool, sender, _message(sender, "No id: the bytes are its key."))
    bounce = await _receive(pool, None, _message(sender, mid="bounce@x"))
    just_parsed = await _receive(pool, sender, _message(sender, mid="just-parsed@x"))
    queued = await _receive(pool, sender, _message(sender, mid="queued@x"))
    running = await _receive(pool, sender, _message(sender, mid="running@x"))
    recent = await _receive(pool, sender, _message(sender, mid="recent@x"))
    async with pool.connection() as conn:
        listing = await insert_listing(
            conn,
            ListingCreate(
                company_name="Northwind",
                job_title="Engineer",
                city_location="Berlin",
                description="Build things.",
            ),
            source="email",
            owner_token_id=None,
        )
        await conn.commit()
    old = [replied, unanswered, bounce, just_parsed, queued, running]
    await _set(pool, old, "received_at = now() - interval '40 days'")
    await _set(pool, [recent], "received_at = now() - interval '5 days'")
    await _set(
        pool, [replied, just_parsed, recent], f"status = 'posted', listing_id = '{listing.id}'"
    )
    await _set(pool, [unanswered], "status = 'rejected', reason = 'no job in it'")
    await _set(pool, [bounce], "status = 'failed', reason = 'the parser ran out of time'")
    await _set(pool, [replied, recent], "replied_at = now() - interval '39 days'")
    # Handled long ago, answered or not (no relay, or it refused): the answer is settled. The
    # bounce was handled a minute ago, but nothing is ever sent to it.
    await _set(pool, [replied, unanswered], "updated_at = now() - interval '40 days'")
    await _set(pool, [bounce], "updated_at = now() - interval '1 minute'")
    # Parsed just now after a backlog: its answer may still be on its way.
    await _set(pool, [just_parsed], "updated_at = now()")
    await _set(
        pool, [running], "status = 'running', locked_by = 'w1', locked_until = now() + '1 h'"
    )
    before = await _mail(pool)

    forever = Settings(mail_domain=DOMAIN, mail_retention_days=0)
    assert (await reap_once(pool, forever)).erased_mail == 0
    assert await _mail(pool) == before

    report = await reap_once(pool, Settings(mail_domain=DOMAIN))  # the default: 30 days
    assert report.erased_mail == 3 and report
    after = await _mail(pool)
    erased = {replied, unanswered, bounce}
    assert {i for i, r in after.items() if r["erased"]} == erased
    for i, row in after.items():
        if i not in erased:
            assert row == before[i]  # untouched, to the last column
            continue
        assert row["raw_erased"] and row["mail_from"] is None and row["message_id"] is None
        # What dedupe and the record need stays.
        kept = ("status", "reason", "listing_id", "dedup_key", "received_at", "updated_at")
        assert {k: row[k] for k in kept} == {k: before[i][k] for k in kept}
        assert row["replied_at"] == before[i]["replied_at"]
    assert after[replied]["listing_id"] == listing.id
    # A redelivery of an erased message is still recognised: by its Message-ID, or its bytes.
    async with pool.connection() as conn:
        intake = await store.intake_for(conn, "Northwind", None)
        by_id = await store.receive(
            conn, intake, recipient="r", mail_from=sender, message_id="<replied@x>", raw=b"x"
        )
        by_bytes = await store.receive(
            conn,
            intake,
            recipient="r",
            mail_from=sender,
            message_id=None,
            raw=_message(sender, "No id: the bytes are its key."),
        )
    assert by_id is None and by_bytes is None
    # Erased once: the next round finds nothing more.
    assert (await reap_once(pool, Settings(mail_domain=DOMAIN))).erased_mail == 0
    # The schema holds the rule too: an erased message keeps no bytes, an unerased one all.
    async with pool.connection() as conn:
        with pytest.raises(psycopg.errors.CheckViolation):
            await conn.execute("UPDATE inbound_mail SET raw = NULL WHERE id = %s", (recent,))


async def test_an_address_is_found_in_a_raw_message_whole_and_in_any_case(pool: AsyncPool) -> None:
    from shortlist.privacy import address_pattern, escape_encoded

    cases = [
        (b"From: Jane <JANE@Example.COM>\r\n", True),
        (b"Reply to jane@example.com.\r\n", True),  # a sentence's end is not the domain's
        (b"jane@example.com", True),
        (b"mailto:jane@example.com?subject=x", True),
        (b"Cc: mary.jane@example.com\r\n", False),
        (b"Cc: jane@example.com.au\r\n", False),
        (b"Cc: jane@example.community\r\n", False),
        (b"\xff\xfe invalid UTF-8 around <jane@example.com> \x00", True),
    ]
    async with pool.connection() as conn:
        for raw, found in cases:
            cur = await conn.execute(
                "SELECT encode(%s::bytea, 'escape') ~* %s AS found",
                (raw, address_pattern("jane@example.com")),
            )
            assert await cur.fetchone() == {"found": found}, raw
        # The Python side writes an address as encode(…, 'escape') writes the message's bytes.
        odd = "jörg\\o'neil@exämple.com"
        cur = await conn.execute("SELECT encode(convert_to(%s, 'UTF8'), 'escape') AS e", (odd,))
        assert await cur.fetchone() == {"e": escape_encoded(odd)}
        cur = await conn.execute(
            "SELECT encode(%s::bytea, 'escape') ~* %s AS found",
            (f"To: {odd}\r\n".encode(), address_pattern(odd)),
        )
        assert await cur.fetchone() == {"found": True}


@pytest.mark.usefixtures("cli_env")
async def test_forgetting_an_address_erases_the_mail_it_sent_or_is_named_in(
    pool: AsyncPool, client: httpx.AsyncClient, make_token: MakeToken
) -> None:
    jane = "jane@example.com"
    # Held by a parser (claimed first: the claim takes the oldest).
    running = await _receive(pool, "bounces+7@mailer.example", _message(f"<{jane}>", mid="r@x"))
    queue = MailQueue(pool, None, Settings(mail_domain=DOMAIN))  # type: ignore[arg-type]
    [held] = await queue.claim("w1", 1, 30)
    assert held.id == running
    queued = await _receive(pool, jane, _message(f"Jane <{jane}>", mid="q@x"))
    by_envelope = await _receive(pool, "Jane@Example.com", _message("hr@northwind.example"))
    # Only the From header names her: the envelope is a mailing service's.
    by_header = await _receive(
        pool, "bounces+8@mailer.example", _message('"Jane Doe" <JANE@example.COM>', mid="h@x")
    )
    mary = await _receive(pool, "mary.jane@example.com", _message("mary.jane@example.com"))
    other = await _receive(
        pool, "ops@example.org", _message("ops@example.org", "Ask jane@example.com.au.")
    )
    handled = [by_envelope, by_header, mary, other]
    await _set(pool, handled, "status = 'posted'")
    before = await _mail(pool)

    out = await asyncio.to_thread(
        CliRunner().invoke, build_app(), ["privacy", "forget", "Jane@Example.com"]
    )
    assert out.exit_code == 0, out.output
    assert "4 e-mail message(s) erased" in out.output
    after = await _mail(pool)
    gone = {running, queued, by_envelope, by_header}
    assert {i for i, r in after.items() if r["erased"]} == gone
    for i in gone:
        row = after[i]
        assert row["raw_erased"] and row["mail_from"] is None and row["message_id"] is None
        assert row["dedup_key"] == before[i]["dedup_key"]
    # Handled ones keep their outcome; one waiting or being parsed is not parsed any more.
    assert [after[i]["status"] for i in (by_envelope, by_header)] == ["posted", "posted"]
    for i in (running, queued):
        assert (after[i]["status"], after[i]["reason"]) == ("failed", "forgotten on request")
    for i in (mary, other):
        assert after[i] == before[i]
    # The parser holding one can neither finish it nor give it back to the queue: its
    # give-back only ends its own lease.
    assert (
        await queue._finish_unposted(
            Batch("w1", [held], MailQueue.leases), held, "rejected", "no job in it"
        )
        is None
    )
    await MailQueue.leases.release(pool, "w1", [running])
    assert await queue.claim("w2", 10, 30) == []
    assert (await _mail(pool))[running]["status"] == "failed"

    # By candidate id over HTTP: the profile's address counts, and the answer says how many.
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO candidates (source, full_name, email) VALUES"
            " ('import', 'Mary Jane', 'Mary.Jane@example.com') RETURNING id"
        )
        row = await cur.fetchone()
        await conn.commit()
    assert row is not None
    admin = await make_token("ops", Role.admin)
    erased = await client.delete(
        f"/api/candidates/{row['id']}", headers={"Authorization": f"Bearer {admin}"}
    )
    assert erased.status_code == 200, erased.text
    assert erased.json()["messagesErased"] == 1
    final = await _mail(pool)
    assert final[mary]["erased"] and final[other] == before[other]


async def test_a_forgotten_senders_post_is_accepted_but_neither_kept_nor_answered(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool, relay: Relay, settings: Settings
) -> None:
    from shortlist import privacy

    forgotten = await privacy.forget(pool, "jane@example.com")
    assert forgotten.messages_erased == 0 and forgotten.identifiers_suppressed == 1
    address = await intake_address(client, await company_token(pool, "Northwind"))
    english = (MAIL / "english.eml").read_bytes()
    # Her envelope address (any case); then a message only its From header says is hers.
    assert await asyncio.to_thread(send, intake, address, english, "Jane@Example.com") == {}
    from_her = english.replace(
        b"From: Jobs at Northwind <jobs@northwind.example>", b"From: Jane <jane@example.com>"
    ).replace(b"<20261201094500.4F2A@", b"<her-own@")
    assert from_her != english
    assert await asyncio.to_thread(send, intake, address, from_her, "bounce@mailer.example") == {}
    rows = await settled(pool, 2)
    assert [r["status"] for r in rows] == ["posted", "posted"]  # the job is posted
    stored = await _mail(pool)
    for row in rows:
        kept = stored[row["id"]]
        assert kept["raw_erased"] and kept["mail_from"] is None and kept["message_id"] is None
    assert [stored[r["id"]]["sender_forgotten"] for r in rows] == [True, False]
    # Then someone else's: the only answer the relay ever gets.
    german = (MAIL / "german.eml").read_bytes()
    assert await asyncio.to_thread(send, intake, address, german) == {}
    await settled(pool, 3)
    await wait_for(lambda: _replied(pool, 1), message="the third message answered")
    assert [to for to, _raw in relay.received] == [["a.schmidt@lindwurm-software.de"]]
    assert all(r["replied_at"] is None for r in (stored[rows[0]["id"]], stored[rows[1]["id"]]))


AUTOMATIC_HEADERS = {
    "auto-submitted": "Auto-Submitted: auto-replied\n",
    "precedence": "Precedence: bulk\n",
    "list-id": "List-Id: Jobs <jobs.lists.example>\n",
    "list-unsubscribe": "List-Unsubscribe: <https://lists.example/u/1>\n",
    "dsn": "MIME-Version: 1.0\nContent-Type: multipart/report; report-type=delivery-status;"
    ' boundary="b"\n',
    "arf": "MIME-Version: 1.0\nContent-Type: multipart/report; report-type=feedback-report;"
    ' boundary="b"\n',
}


async def test_automatic_mail_is_never_posted_nor_answered(
    intake: int, client: httpx.AsyncClient, pool: AsyncPool, relay: Relay
) -> None:
    # Each carries the text of a real job post and a non-null envelope sender (an answer
    # could go somewhere): only its headers tell it apart.
    address = await intake_address(client, await company_token(pool, "Northwind"))
    post = (MAIL / "english.eml").read_bytes()
    head, _, body = post.partition(b"\n\n")
    for n, (kind, headers) in enumerate(AUTOMATIC_HEADERS.items()):
        head_lines = [
            line
            for line in head.split(b"\n")
            if not line.lower().startswith((b"message-id", b"content-type", b"mime-version"))
        ]
        raw = b"\n".join(head_lines) + f"\nMessage-ID: <auto-{n}@x.example>\n".encode()
        raw += headers.encode()
        if "multipart/report" in headers:
            report = "delivery-status" if kind == "dsn" else "feedback-report"
            raw += (
                f"\n--b\nContent-Type: text/plain\n\n{body.decode()}\n--b\n"
                f"Content-Type: message/{report}\n\nReporting-MTA: dns; mx.example\n\n--b--\n"
            ).encode()
        else:
            raw += b"Content-Type: text/plain; charset=utf-8\n\n" + body
        await asyncio.to_thread(send, intake, address, raw, "someone@northwind.example")
    rows = await settled(pool, len(AUTOMATIC_HEADERS))
    assert [r["status"] for r in rows] == ["rejected"] * len(AUTOMATIC_HEADERS), rows
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT rejected_as FROM inbound_mail ORDER BY id")
        assert {r["rejected_as"] for r in await cur.fetchall()} == {"automatic"}
        report = await collect_status(conn)
    assert report["inbound_mail"]["failures"][0]["rejected_as"] == "automatic"
    assert "automatic mail" in report["inbound_mail"]["failures"][0]["reason"]
    # Then a job post: its answer is the first, and only, one the relay sees.
    await asyncio.to_thread(send, intake, address, post)
    await settled(pool, len(AUTOMATIC_HEADERS) + 1)
    await wait_for(lambda: _replied(pool, 1), message="the job post answered")
    assert len(relay.received) == 1


async def test_the_email_route_answers_why_a_message_was_not_posted(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    token = await company_token(pool, "Northwind")
    raw = b"Auto-Submitted: auto-replied\n" + (MAIL / "english.eml").read_bytes()
    response = await client.post(
        "/api/jobs/email",
        content=raw,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "message/rfc822"},
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["rejected_as"] == "automatic" and "automatic mail" in error["message"]


async def test_smtp_sessions_and_stored_bytes_per_intake_are_capped(
    services: Services, settings: Settings, client: httpx.AsyncClient
) -> None:
    # Issue 36 point 17.
    capped = settings.model_copy(
        update={"mail_smtp_max_sessions": 2, "mail_max_stored_bytes": 12_000}
    )
    token = await company_token(services.pool, "Northwind")
    to = await intake_address(client, token)
    sock = bind_socket("127.0.0.1", 0, "the capped intake")
    port = sock.getsockname()[1]
    stop = asyncio.Event()
    task = asyncio.create_task(serve_intake(sock, services.intake, capped, stop))
    try:
        first = await asyncio.to_thread(smtplib.SMTP, "127.0.0.1", port, timeout=10)
        second = await asyncio.to_thread(smtplib.SMTP, "127.0.0.1", port, timeout=10)
        with pytest.raises(smtplib.SMTPConnectError) as refused:
            await asyncio.to_thread(smtplib.SMTP, "127.0.0.1", port, timeout=10)
        assert refused.value.smtp_code == 421
        for each in (first, second):
            await asyncio.to_thread(each.quit)
        # 7 KB stored; the next 7 KB would pass the intake's 12 KB: refused for now.
        body = "Engineer role in Berlin.\n" + ("x" * 70 + "\n") * 100
        await asyncio.to_thread(send, port, to, _message("a@northwind.example", body, mid="m1@x"))
        with pytest.raises(smtplib.SMTPDataError) as deferred:
            await asyncio.to_thread(
                send, port, to, _message("a@northwind.example", body, mid="m2@x")
            )
        assert deferred.value.smtp_code == 452
    finally:
        stop.set()
        await task
        sock.close()
