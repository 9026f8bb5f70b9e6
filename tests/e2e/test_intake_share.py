"""One company's e-mail posts cannot take the service down (issue 36 points 2 and 16): the
intake (SMTP sessions and ``POST /api/jobs/email``) holds at most its share of the API's pool
(``SHORTLIST_MAIL_DB_CONNECTIONS``), and the workers have a pool of their own
(``SHORTLIST_DB_WORKER_POOL_MAX``). Probed over sockets against a live server while twelve
posts go silent, ten PDFs that cost seconds each are read, and eight SMTP deliveries hang in the
database: ``/readyz`` and a search answer 200 throughout, another company's post is embedded by
the workers and its mail is taken."""

from __future__ import annotations

import asyncio
import io
import smtplib
import socket
import threading
import zlib
from base64 import encodebytes
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from shortlist.auth import Role
from shortlist.listings.mail import store
from shortlist.listings.mail.smtp import message_id_of, serve_intake
from shortlist.runtime import bind_socket
from tests.helpers import wait_for_sync
from tests.live_server import LiveServer

MAIL = Path(__file__).parent.parent / "data" / "mail"
DOMAIN = "jobs.example"


def slow_pdf(operations: int = 20_000) -> bytes:
    """A 3 KB PDF whose one page is ``operations`` text-showing operators (deflated): pypdf
    spends seconds extracting it (6 s for 20,000 on the 2-core test machine)."""
    content = zlib.compress(b"BT /F1 12 Tf 1 0 0 1 10 10 Tm (a) Tj ET\n" * operations, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources"
        b" << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content)
        + content
        + b"\nendstream",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (5, xref))
    return out.getvalue()


def pdf_post(n: int) -> bytes:
    pdf = encodebytes(slow_pdf()).replace(b"\n", b"\r\n")
    return (
        b"From: Jobs <jobs@acme.example>\r\nSubject: Engineer - Berlin\r\n"
        b"Message-ID: <pdf-%d@acme.example>\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/plain\r\n\r\nEngineer job in Berlin, see the PDF.\r\n"
        b"--b\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n"
        b'Content-Disposition: attachment; filename="job.pdf"\r\n\r\n' + pdf + b"--b--\r\n"
    ) % n


@pytest.fixture
def server(db_url: str) -> Iterator[tuple[LiveServer, int]]:
    """A live server as ``serve`` runs it (the workers on their own pool), its API pool small
    (4), the SMTP intake on its loop through the intake's share."""
    with LiveServer(
        db_url,
        use_simulator=False,
        workers={"indexer", "mail"},
        pool_max=4,
        worker_pool_max=3,
        settings_overrides={
            "mail_domain": DOMAIN,
            "mail_body_timeout": 120.0,
            "mail_parse_timeout": 2.0,
            "mail_parse_processes": 2,
            "mail_db_connections": 2,
        },
    ) as live:
        assert live.services is not None
        services = live.services
        sock = bind_socket("127.0.0.1", 0, "the test intake")
        handles: dict[str, Any] = {}

        async def start() -> None:
            handles["stop"] = asyncio.Event()
            handles["task"] = asyncio.create_task(
                serve_intake(sock, services.intake, services.settings, handles["stop"])
            )

        async def stop() -> None:
            handles["stop"].set()
            await handles["task"]

        live.call(start)
        try:
            yield live, sock.getsockname()[1]
        finally:
            live.call(stop)
            sock.close()


@pytest.mark.slow
def test_a_flood_of_one_companys_posts_leaves_probes_searches_and_workers_their_connections(
    server: tuple[LiveServer, int], db_url: str
) -> None:
    live, smtp_port = server
    assert live.services is not None
    acme = live.token("Acme", Role.company)
    globex = live.token("Globex", Role.company)
    with httpx.Client(base_url=live.base_url, timeout=60) as http:
        acme_address = http.get("/api/intake", headers={"Authorization": f"Bearer {acme}"}).json()[
            "address"
        ]
        globex_address = http.get(
            "/api/intake", headers={"Authorization": f"Bearer {globex}"}
        ).json()["address"]
    host, port = urlsplit(live.base_url).hostname, urlsplit(live.base_url).port
    assert host is not None and port is not None

    # Deliveries the database makes wait: another transaction inserted the same message and
    # has not committed (as a slow disk or a 10 MB message would make them wait). Each holds
    # the connection it writes on until then.
    stalled = (MAIL / "english.eml").read_bytes().replace(b"\n", b"\r\n")
    blocker = psycopg.connect(db_url)
    blocker.execute(
        "INSERT INTO inbound_mail (company_name, recipient, dedup_key, raw)"
        " VALUES ('Acme', 'x', %s, '')",
        (store.dedup_key(message_id_of(stalled), stalled),),
    )
    silent: list[socket.socket] = []
    answers: dict[str, list[Any]] = {"pdf": [], "smtp": []}

    def post_pdf(n: int) -> None:
        with httpx.Client(base_url=live.base_url, timeout=120) as client:
            response = client.post(
                "/api/jobs/email",
                content=pdf_post(n),
                headers={"Authorization": f"Bearer {acme}", "Content-Type": "message/rfc822"},
            )
        answers["pdf"].append(response.status_code)

    def deliver_stalled() -> None:
        try:
            with smtplib.SMTP("127.0.0.1", smtp_port, timeout=120) as smtp:
                smtp.sendmail("jobs@acme.example", [acme_address], stalled)
            answers["smtp"].append(250)
        except smtplib.SMTPResponseException as exc:
            answers["smtp"].append(exc.smtp_code)
        except smtplib.SMTPRecipientsRefused as exc:
            answers["smtp"].extend(code for code, _text in exc.recipients.values())

    threads = [threading.Thread(target=post_pdf, args=(n,)) for n in range(10)]
    threads += [threading.Thread(target=deliver_stalled) for _ in range(8)]
    try:
        for _ in range(12):  # headers sent, a body promised, then silence
            s = socket.create_connection((host, port))
            s.sendall(
                f"POST /api/jobs/email HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Bearer {acme}\r\nContent-Type: message/rfc822\r\n"
                "Content-Length: 5000\r\n\r\n".encode()
            )
            silent.append(s)
        for thread in threads:
            thread.start()
        with httpx.Client(base_url=live.base_url, timeout=30) as client:
            # Another company's work goes on: its listing embedded by the workers.
            posted = client.post(
                "/api/jobs",
                json={
                    "job_title": "Site Reliability Engineer",
                    "company_name": "Globex",
                    "city_location": "Berlin",
                    "description": "Run our platform.",
                },
                headers={"Authorization": f"Bearer {globex}"},
            )
            assert posted.status_code == 201, posted.text
            german = (MAIL / "german.eml").read_bytes().replace(b"\n", b"\r\n")
            with smtplib.SMTP("127.0.0.1", smtp_port, timeout=60) as smtp:
                assert (
                    smtp.sendmail("a.schmidt@lindwurm-software.de", [globex_address], german) == {}
                )
            probes = 0

            def others_served() -> bool | None:
                nonlocal probes
                ready = client.get("/readyz")
                assert ready.status_code == 200, ready.text
                search = client.get("/api/jobs/search", params={"q": "engineer"})
                assert search.status_code == 200, search.text
                probes += 1
                rows = live.sql(
                    "SELECT embedding_status::text AS s FROM job_listings WHERE id = %s",
                    (posted.json()["id"],),
                )
                return rows == [{"s": "embedded"}] or None

            wait_for_sync(others_served, timeout=90, message="Globex's listing embedded")
            # The flood is still on: the PDFs are being read, the deliveries still wait.
            flooding = live.sql(
                "SELECT count(*) AS n FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )[0]["n"]
            while any(t.is_alive() for t in threads[:10]):
                ready = client.get("/readyz")
                assert ready.status_code == 200, ready.text
                probes += 1
    finally:
        blocker.rollback()
        blocker.close()
        for s in silent:
            s.close()
        for thread in threads:
            thread.join(timeout=120)
    assert flooding >= 1, "the deliveries no longer waited while the others were served"
    assert probes >= 3
    # Each PDF read out of time (a 400 saying so), never a 5xx.
    assert answers["pdf"] == [400] * 10, answers
    # Two deliveries held the intake's share; the others found no turn and were told to try
    # again (451), as a busy mail server says.
    assert len(answers["smtp"]) == 8 and set(answers["smtp"]) <= {250, 451}, answers
    assert 451 in answers["smtp"]
    assert live.services.intake.most_in_use <= 2
    # Globex's delivery was taken (250) while Acme's waited: a company's stalled writes leave
    # the other turn of the share to another company.
    assert live.sql("SELECT count(*) AS n FROM inbound_mail WHERE company_name = 'Globex'") == [
        {"n": 1}
    ]
