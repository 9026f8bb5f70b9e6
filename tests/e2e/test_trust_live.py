"""Trust on a live server (uvicorn on a loopback socket): an open event stream of a revoked
token ends, streams are capped per token and in all, a stale search's stream ends; posts that
send their headers and go silent hold no database connection."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import httpx
import pytest

from shortlist.auth import Role
from tests.backfill_support import BACKFILL, auth
from tests.helpers import wait_for_sync
from tests.live_server import LiveServer

pytestmark = pytest.mark.settings(BACKFILL)

NICHE = {
    "query": "Rust embedded firmware for battery-powered sensors",
    "role": "Rust Embedded Firmware Engineer",
}


@pytest.mark.slow
def test_streams_end_on_revocation_and_stale_and_are_capped(db_url: str) -> None:
    overrides = {"sse_per_token": 2, "sse_max_streams": 3, "backfill_min_results": 15}
    with LiveServer(
        db_url, use_simulator=False, workers=set(), settings_overrides=overrides
    ) as server:
        rita = server.token("rita", Role.recruiter)
        sam = server.token("sam", Role.recruiter)
        tina = server.token("tina", Role.recruiter)
        with httpx.Client(base_url=server.base_url, timeout=30) as client:

            def start(token: str) -> str:
                r = client.post("/api/searches", json=NICHE, headers=auth(token))
                assert r.status_code == 202 and r.json()["status"] == "running"
                return str(r.json()["searchId"])

            mine, sams, tinas = start(rita), start(sam), start(tina)
            with (
                client.stream("GET", f"/api/searches/{mine}/events", headers=auth(rita)) as a,
                client.stream("GET", f"/api/searches/{mine}/events", headers=auth(rita)) as b,
            ):
                assert a.status_code == b.status_code == 200
                third = client.get(f"/api/searches/{mine}/events", headers=auth(rita))
                assert third.status_code == 429
                assert third.json()["error"]["limit"] == "SHORTLIST_SSE_PER_TOKEN"
                assert "Retry-After" in third.headers
                with client.stream("GET", f"/api/searches/{sams}/events", headers=auth(sam)) as c:
                    assert c.status_code == 200
                    over = client.get(f"/api/searches/{tinas}/events", headers=auth(tina))
                    assert over.status_code == 429
                    assert over.json()["error"]["limit"] == "SHORTLIST_SSE_MAX_STREAMS"

                    # Revoked: both of rita's open streams end within 10 s, saying so.
                    revoked_at = time.monotonic()
                    server.sql("UPDATE api_tokens SET revoked_at = now() WHERE name = 'rita'")
                    for stream in (a, b):
                        body = "".join(stream.iter_text())
                        assert '"status":"revoked"' in body
                    assert time.monotonic() - revoked_at < 10.0

                    # A stale search's stream ends too (any terminal status).
                    server.sql("UPDATE searches SET status = 'stale' WHERE id = %s", (sams,))
                    body = "".join(c.iter_text())
                    assert "event: complete" in body and '"status":"stale"' in body
            # Every slot was given back (the responses' background tasks run after the body).
            assert server._server is not None
            slots = server._server.config.app.state.stream_slots
            wait_for_sync(lambda: slots.open == 0, timeout=5, message="slots released")
            assert client.get("/api/searches", headers=auth(rita)).status_code == 401


@pytest.mark.slow
def test_silent_email_posts_hold_no_database_connection(db_url: str) -> None:
    import socket as socketlib

    with LiveServer(
        db_url,
        use_simulator=False,
        workers=set(),
        settings_overrides={"mail_body_timeout": 60.0},
        pool_max=4,
    ) as server:
        acme = server.token("acme", Role.company)
        host, port = urlsplit(server.base_url).hostname, urlsplit(server.base_url).port
        silent = []
        try:
            # Twelve posts that send their headers, promise a body and go silent: three times
            # the pool.
            for _ in range(12):
                s = socketlib.create_connection((host, port))
                s.sendall(
                    f"POST /api/jobs/email HTTP/1.1\r\nHost: {host}\r\n"
                    f"Authorization: Bearer {acme}\r\nContent-Type: message/rfc822\r\n"
                    "Content-Length: 5000\r\n\r\n".encode()
                )
                silent.append(s)
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                # Longer than the pool's wait for a connection (5 s): a post holding one each
                # would have turned these into 503s by now.
                until = time.monotonic() + 8
                while time.monotonic() < until:
                    ready = client.get("/readyz")
                    assert ready.status_code == 200, ready.text
                    search = client.get("/api/jobs/search", params={"q": "engineer"})
                    assert search.status_code == 200, search.text
        finally:
            for s in silent:
                s.close()
