"""Trust, second pass (issue 36), the parts that need no database: a linear log redactor cut
before it runs, brief parsing with one compiled matcher, the ONNX graph loaded only from a cache
this user alone can write, and source specs shown without credentials."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from shortlist import public_address
from shortlist.embedding.onnx_model import (
    default_model_path,
    ensure_graph,
    ensure_query_graph,
    graph_path,
    query_graph_path,
)
from shortlist.errors import ConfigError, TransientError
from shortlist.listings.sources import fetch
from shortlist.redact import redact_emails
from shortlist.status import spec_shown
from shortlist.talent import brief
from shortlist.talent.brief import find_role, find_skills
from tests.job_boards import FakeBoards

# --- point 13: the redactor ------------------------------------------------------------------


def test_the_redactor_is_linear_in_a_long_run_without_spaces() -> None:
    # 400 KB without a space or an @: the address pattern tried at every position scanned the
    # rest of the run each time (40 KB: 2.6 s, so 400 KB: minutes). A deadline, not a timing:
    # linear, it takes a fraction of a second even on a loaded machine.
    code = (
        "from shortlist.redact import redact_emails, redact_person_ids\n"
        "for t in ('x' * 400_000, 'a@' + 'b' * 400_000, 'a@' * 200_000):\n"
        "    redact_person_ids(redact_emails(t))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, check=False)
    assert done.returncode == 0


def test_the_redactor_still_finds_every_address_and_is_cut_first() -> None:
    text = "from jane.doe@example.com, cc <bob@x.org>; mary.jane@example.com.au"
    assert redact_emails(text) == "from [e-mail], cc <[e-mail]>; [e-mail]"
    # Cut at the limit, before the work: an address the limit cuts is still redacted whole.
    long = "y" * 10 + " jane@example.com " + "z" * 100_000
    assert redact_emails(long, 14) == "y" * 10 + " [e-"
    assert len(redact_emails("q" * 100_000, 50)) == 50


# --- point 14: one compiled matcher ------------------------------------------------------------


def test_brief_parsing_compiles_one_matcher_per_vocabulary(monkeypatch: Any) -> None:
    vocabulary = [f"skill{i}" for i in range(2000)] + ["Python", "Machine Learning", "Learning"]
    text = "Senior machine learning engineer with python and skill1999, not skill20000"
    assert find_skills(text, vocabulary, "Engineer") == (
        "Machine Learning",
        "Learning",
        "Python",
        "skill1999",
    )
    assert find_role("FPGA verification engineer in Munich") == "FPGA Verification Engineer"
    compiled: list[object] = []
    real = re._compile  # type: ignore[attr-defined]

    def counting(pattern: Any, flags: Any) -> Any:
        compiled.append(pattern)
        return real(pattern, flags)

    monkeypatch.setattr(re, "_compile", counting)
    # A pattern per skill (2,000 of them, past re's cache of 512) took 68-109 ms per brief.
    assert find_skills(text, vocabulary, "Engineer")[0] == "Machine Learning"
    assert find_role("FPGA verification engineer in Munich") == "FPGA Verification Engineer"
    assert compiled == []
    brief._matcher.cache_clear()
    find_skills(text, vocabulary, None)
    assert len(compiled) == 1


# --- point 10: the model cache ---------------------------------------------------------------


def test_the_onnx_graph_is_loaded_only_from_a_cache_this_user_alone_can_write(
    tmp_path: Path,
) -> None:
    model = default_model_path()
    graph = graph_path(tmp_path, model)
    graph.parent.mkdir(mode=0o700)
    graph.write_bytes(b"not a graph anyone checked")
    graph.chmod(0o666)  # anyone may replace what ONNX Runtime would run
    with pytest.raises(ConfigError, match="not this user's alone"):
        ensure_graph(tmp_path, model)
    graph.chmod(0o644)
    graph.parent.chmod(0o777)  # anyone may swap the file itself
    with pytest.raises(ConfigError, match="not this user's alone"):
        ensure_graph(tmp_path, model)
    graph.parent.chmod(0o700)
    assert ensure_graph(tmp_path, model) == graph
    # The int8 query graph, the same.
    query = query_graph_path(tmp_path, model)
    query.write_bytes(b"not a graph anyone checked")
    query.chmod(0o666)
    with pytest.raises(ConfigError, match="not this user's alone"):
        ensure_query_graph(tmp_path, model)
    query.chmod(0o644)
    assert ensure_query_graph(tmp_path, model) == query


# --- point 15: source specs without credentials --------------------------------------------


def test_a_source_spec_is_shown_without_its_credentials() -> None:
    assert spec_shown("https://bot:s3cret@careers.example/jobs?token=t0k#top") == (
        "https://careers.example/jobs"
    )
    assert spec_shown("greenhouse:acme") == "greenhouse:acme"


# --- points 8, 9: the crawler -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("64:ff9b::a9fe:a9fe", False),  # NAT64 of 169.254.169.254 (cloud metadata)
        ("64:ff9b:1::a00:1", False),  # local-use NAT64 of 10.0.0.1
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
        ("::127.0.0.1", False),  # IPv4-compatible
        ("::ffff:10.0.0.1", False),  # mapped
        ("::1", False),
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", False),  # Teredo of 10.0.0.1
        ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8
        ("2606:4700:4700::1111", True),
        ("8.8.8.8", True),
    ],
)
def test_ipv6_forms_of_private_addresses_are_refused(address: str, public: bool) -> None:
    assert public_address.is_public(address) is public


def _policy(**overrides: Any) -> fetch.FetchPolicy:
    return fetch.FetchPolicy(user_agent="shortlist-test", host_delay=0, **overrides)


async def test_the_crawler_connects_to_the_address_it_checked(monkeypatch: Any) -> None:
    boards = FakeBoards().start()
    try:
        boards.pages["/careers"] = ("text/html", "<p>jobs</p>")
        port = urlsplit(boards.base_url).port
        loop = asyncio.get_running_loop()
        real = loop.getaddrinfo
        answers: list[str] = []

        async def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
            # The name's first answer is the address checked; every later one points elsewhere
            # (an unroutable address: a connection there would never be made).
            if host != "rebind.test":
                return await real(host, *args, **kwargs)
            answers.append(host)
            address = "127.0.0.1" if len(answers) == 1 else "10.255.255.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

        monkeypatch.setattr(loop, "getaddrinfo", rebinding)
        # 127.0.0.1 stands for a public address here: the check approves only it.
        monkeypatch.setattr(public_address, "is_public", lambda a: a == "127.0.0.1")
        fetcher = fetch.Fetcher(None, _policy(timeout=3.0))  # type: ignore[arg-type]
        try:
            page = await asyncio.wait_for(fetcher.get(f"http://rebind.test:{port}/careers"), 30)
        finally:
            await fetcher.aclose()
        assert page.status == 200 and page.body == b"<p>jobs</p>"
        assert answers == ["rebind.test"]  # resolved once, by the check
        [seen] = [r for r in boards.requests if r.path == "/careers"]
        assert seen.headers["host"] == f"rebind.test:{port}"  # the URL's host, not the address
    finally:
        boards.stop()


async def test_a_server_sending_a_byte_now_and_then_cannot_hold_a_fetch() -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n")
        with contextlib.suppress(ConnectionError):
            for _ in range(1000):
                writer.write(b"x")
                await writer.drain()
                await asyncio.sleep(0.2)  # each read well within the read timeout

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    fetcher = fetch.Fetcher(
        None,  # type: ignore[arg-type]
        _policy(allow_private=True, timeout=5.0, fetch_deadline=1.0),
    )
    try:
        with pytest.raises(TransientError, match="took more than 1 s"):
            await asyncio.wait_for(fetcher.get(f"http://127.0.0.1:{port}/slow"), 30)
    finally:
        await fetcher.aclose()
        server.close()


async def test_robots_txt_is_read_up_to_its_cap() -> None:
    boards = FakeBoards().start()
    try:
        early = "User-agent: *\nDisallow: /early/\n"
        late = "User-agent: *\nDisallow: /late/\n"
        filler = "# " + "x" * 98 + "\n"
        boards.pages["/robots.txt"] = ("text/plain", early + filler * 8000 + late)  # ~800 KB
        fetcher = fetch.Fetcher(None, _policy(allow_private=True))  # type: ignore[arg-type]
        try:
            parsed = await fetcher.robots(f"{boards.base_url}/careers")
        finally:
            await fetcher.aclose()
        assert parsed is not None
        assert not parsed.can_fetch(f"{boards.base_url}/early/1", "shortlist")
        # Past the first 500 KiB: not read (RFC 9309 2.5), so not obeyed either.
        assert parsed.can_fetch(f"{boards.base_url}/late/1", "shortlist")
    finally:
        boards.stop()


# --- point 16: a client that leaves mid-body ---------------------------------------------------


async def test_a_client_leaving_mid_body_is_a_bad_request_not_a_server_error() -> None:
    from starlette.requests import Request

    from shortlist.api.routes.jobs import read_body
    from shortlist.errors import BadInput

    messages = [
        {"type": "http.request", "body": b"From: a@b.example\r\n", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    scope = {"type": "http", "method": "POST", "headers": [], "path": "/api/jobs/email"}
    with pytest.raises(BadInput, match="disconnected"):
        await read_body(Request(scope, receive), 10_000, 5.0)
