"""Hostile mail is harmless: each of the issue's hostile messages, and a 1 MB one, through both
producers (HTTP ``POST /api/jobs/email`` and SMTP) of a live server, while another client polls
``/healthz`` every 200 ms. No poll may take over 1.5 s, no answer may be a 5xx, and every SMTP
message ends as a row that says what became of it."""

from __future__ import annotations

import asyncio
import base64
import smtplib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from shortlist.listings.mail.smtp import serve_intake
from shortlist.runtime import bind_socket
from tests.helpers import environ_without_settings, wait_for_sync
from tests.live_server import LiveServer

SHORTLIST = str(Path(sys.executable).with_name("shortlist"))
POLL_EVERY = 0.2
LONGEST_POLL = 1.5


def _message(body: bytes, *, content_type: bytes = b"text/plain", from_: bytes = b"") -> bytes:
    """A message as a mail server carries it: CRLF, no line over 998 bytes (bodies base64)."""
    encoded = base64.encodebytes(body).replace(b"\n", b"\r\n")
    return (
        (from_ or b"From: Jobs <jobs@acme.example>\r\n")
        + b"Subject: Engineer - Berlin\r\nMIME-Version: 1.0\r\n"
        + b"Content-Type: " + content_type + b"; charset=utf-8\r\n"
        + b"Content-Transfer-Encoding: base64\r\n\r\n" + encoded
    )  # fmt: skip


def hostile_messages() -> dict[str, bytes]:
    folded = b"From: " + b",\r\n ".join([b"a" * 18] * 8_000) + b"\r\n"  # 160 KB, folded
    return {
        "salary then 40,000 spaces": _message(b"Salary: 1" + b" " * 40_000 + b"\nEngineer job."),
        "160 KB folded From": _message(b"Engineer job in Berlin.", from_=folded),
        "<a x 40,000": _message(b"<a" * 40_000, content_type=b"text/html"),
        "309-digit salary": _message(b"Engineer job in Berlin. Salary: EUR " + b"9" * 309),
        "<![<![ in HTML": _message(b"<p>Engineer job</p><![<![", content_type=b"text/html"),
        "1 MB": _message(
            (b"Engineer job in Berlin, salary \xe2\x82\xac 1" + b" " * 900 + b"\n") * 760
        ),
    }


class Poller:
    """Another client of the server: GET /healthz every 200 ms, each request timed."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.durations: list[float] = []
        self.statuses: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=10) as http:
            while not self._stop.is_set():
                began = time.perf_counter()
                try:
                    self.statuses.append(http.get(self.url).status_code)
                except httpx.HTTPError:
                    self.statuses.append(0)
                self.durations.append(time.perf_counter() - began)
                self._stop.wait(POLL_EVERY)

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


@pytest.fixture
def server(live_server_factory: Callable[..., LiveServer]) -> Iterator[tuple[LiveServer, int]]:
    """A live server running the mail queue, with the SMTP intake on its loop."""
    server = live_server_factory(
        workers={"mail"}, settings_overrides={"mail_domain": "jobs.example"}
    )
    sock = bind_socket("127.0.0.1", 0, "the test intake")
    handles: dict[str, Any] = {}

    async def start() -> None:
        handles["stop"] = asyncio.Event()
        handles["task"] = asyncio.create_task(
            serve_intake(sock, server.services.intake, server.services.settings, handles["stop"])
        )

    async def stop() -> None:
        handles["stop"].set()
        await handles["task"]

    server.call(start)
    yield server, sock.getsockname()[1]
    server.call(stop)
    sock.close()


def test_hostile_mail_through_both_producers_never_stalls_the_server(
    server: tuple[LiveServer, int],
) -> None:
    live, smtp_port = server
    token = live.token("Acme", "company")
    auth = {"Authorization": f"Bearer {token}"}
    address = httpx.get(live.url("/api/intake"), headers=auth).json()["address"]
    answers: dict[str, tuple[int, float]] = {}
    with Poller(live.url("/healthz")) as poller, httpx.Client(timeout=60) as http:
        for name, raw in hostile_messages().items():
            began = time.perf_counter()
            response = http.post(
                live.url("/api/jobs/email"),
                content=raw,
                headers={**auth, "Content-Type": "message/rfc822"},
            )
            answers[name] = (response.status_code, time.perf_counter() - began)
            with smtplib.SMTP("127.0.0.1", smtp_port, timeout=30) as smtp:
                assert smtp.sendmail("jobs@acme.example", [address], raw) == {}, name

        def settled() -> list[dict[str, Any]] | None:
            rows = live.sql("SELECT status::text AS status, reason FROM inbound_mail ORDER BY id")
            done = [r for r in rows if r["status"] not in ("queued", "running")]
            return rows if len(done) == len(hostile_messages()) else None

        rows = wait_for_sync(settled, timeout=60, message="every hostile message settled")
    for name, (status, seconds) in answers.items():
        assert status < 500 and status in (201, 400, 413, 422), (name, status)
        assert seconds < 10.0, (name, seconds)  # each read in well under a second when idle
    assert all(r["status"] in ("posted", "rejected", "failed") for r in rows)
    assert all(r["reason"] for r in rows if r["status"] != "posted")
    assert poller.durations and set(poller.statuses) == {200}
    assert max(poller.durations) < LONGEST_POLL, max(poller.durations)


# --- start-up ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["mail"], ["serve", "--port", "0"]])
def test_a_taken_smtp_port_ends_the_command_with_one_line(
    command: list[str], tmp_path: Path
) -> None:
    env = environ_without_settings()
    env |= {"SHORTLIST_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env["SHORTLIST_SMTP_PORT"] = str(port)
        if command[0] == "serve":
            with socket.socket() as free:
                free.bind(("127.0.0.1", 0))
                command = ["serve", "--port", str(free.getsockname()[1])]
        done = subprocess.run(
            [SHORTLIST, *command], env=env, capture_output=True, text=True, timeout=60
        )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"127.0.0.1:{port}" in lines[0] and "already in use" in lines[0]
    assert "SHORTLIST_SMTP_PORT" in lines[0]
    assert not (tmp_path / "data").exists(), "nothing may start before the ports are bound"
