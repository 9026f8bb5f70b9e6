"""Trust without a database: the limiter's keys and memory, the one forwarded header, CSV
cells, query words, log and error-body redaction, the embedder key bound to its URL, the
stream caps and the probe cache."""

from __future__ import annotations

import asyncio
import csv
import io
import logging

import pytest

from shortlist.api.clientip import client_ip
from shortlist.api.errors import error_body
from shortlist.api.probe_cache import ProbeCache
from shortlist.api.ratelimit import RateLimiter, client_key
from shortlist.api.streams import StreamSlots
from shortlist.config import Settings
from shortlist.embedding.factory import api_key_for, make_space_embedder
from shortlist.embedding.model_space import ModelSpace
from shortlist.errors import QuotaExceeded, RateLimited
from shortlist.privacy import Erasure, parse_target, person_keys
from shortlist.redact import RedactingFormatter
from shortlist.relevance import MAX_QUERY_WORDS, text_terms
from shortlist.talent.marks import csv_cell


def test_ipv6_clients_are_keyed_by_their_64_and_ipv4_by_address() -> None:
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:ffff::9")
    assert client_key("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_key("192.0.2.7") == "192.0.2.7"

    limiter = RateLimiter(2)
    limiter.check("2001:db8:1:2::1")
    limiter.check("2001:db8:1:2::2")
    with pytest.raises(RateLimited):  # a new address in the same /64 is the same client
        limiter.check("2001:db8:1:2:ffff:ffff:ffff:ffff")
    limiter.check("2001:db8:9::1")  # another /64 has its own bucket


def test_the_limiter_forgets_the_least_recent_client_never_everyone() -> None:
    limiter = RateLimiter(1, max_clients=3)
    limiter.check("198.51.100.1")  # limited from now on
    for i in range(2, 50):  # a flood of new addresses
        with pytest.raises(RateLimited):
            limiter.check("198.51.100.1")  # touched: stays the most recent, stays limited
        limiter.check(f"203.0.113.{i}")
    assert len(limiter) == 3


def test_one_configured_forwarded_header_is_believed() -> None:
    headers = {"x-forwarded-for": "198.51.100.9", "x-real-ip": "203.0.113.5"}
    proxy = "10.0.0.1"
    assert client_ip(proxy, headers, "10.0.0.0/8") == "198.51.100.9"
    # Behind a proxy that sets only X-Real-IP, a client's own X-Forwarded-For is ignored.
    assert client_ip(proxy, headers, "10.0.0.0/8", "x-real-ip") == "203.0.113.5"
    assert client_ip(proxy, {"x-real-ip": "203.0.113.5"}, "10.0.0.0/8") == proxy
    assert client_ip("198.51.100.1", headers, "10.0.0.0/8", "x-real-ip") == "198.51.100.1"


@pytest.mark.parametrize(
    ("value", "inert"),
    [
        ("=1+1", "'=1+1"),
        ('x;=HYPERLINK("http://evil")', 'x;\'=HYPERLINK("http://evil")'),
        ("a, +SUM(1)", "a, '+SUM(1)"),
        ("ok\n@cmd", "ok\n'@cmd"),
        ("a|-2", "a|'-2"),
        ("a\t=b", "a\t'=b"),
        ("Jean-Luc Picard", "Jean-Luc Picard"),
        ("0.9000", "0.9000"),
        ("1", "1"),
    ],
)
def test_a_formula_character_is_neutralised_wherever_a_cell_could_start(
    value: str, inert: str
) -> None:
    assert csv_cell(value) == inert


def test_every_csv_cell_is_quoted() -> None:
    from shortlist.talent.marks import results_csv
    from shortlist.talent.why import CandidateWhy

    why = CandidateWhy.model_construct(summary="fits")
    row = {
        "rank": 1, "full_name": "x;=cmd()", "role_title": "SRE", "location": "Berlin",
        "years_experience": 5, "skills": ["k8s", "-x"], "email": "a@example.com",
        "profile_url": None, "score": 0.9, "tier": "internal", "status": "succeeded",
        "mark": None, "why": why,
    }  # fmt: skip
    text = results_csv([row])
    for line in text.strip().split("\r\n"):
        cells = next(csv.reader(io.StringIO(line)))
        assert line == ",".join('"' + c.replace('"', '""') + '"' for c in cells)
    data = list(csv.reader(io.StringIO(text)))[1]
    assert data[1] == "x;'=cmd()" and data[5] == "k8s; '-x"
    # Read as ";"-separated, no piece starts a formula.
    for piece in text.replace("\r\n", ";").replace(",", ";").split(";"):
        assert not piece.strip().strip('"').startswith(("=", "+", "-", "@"))


def test_at_most_32_query_words_reach_full_text() -> None:
    words = " ".join(f"w{i}x" for i in range(400))
    assert len(text_terms(words).split()) == MAX_QUERY_WORDS == 32
    assert text_terms("senior staff") == "senior staff"
    assert text_terms("401 2024") == "401 2024"


def test_log_lines_and_error_bodies_pass_the_redactor() -> None:
    formatter = RedactingFormatter("%(levelname)s %(message)s")
    try:
        raise RuntimeError("provider said: jane@example.com unknown (linkedin:jane-doe-42)")
    except RuntimeError:
        import sys

        exc_info = sys.exc_info()
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "enrich %s", ("linkedin:jd",), None)
    record.exc_info = exc_info
    line = formatter.format(record)
    assert "jane@example.com" not in line and "[e-mail]" in line
    assert "jane-doe-42" not in line and "linkedin:jd" not in line
    debug = logging.LogRecord("x", logging.DEBUG, __file__, 1, "enrich %s", ("linkedin:jd",), None)
    assert "linkedin:jd" in formatter.format(debug)  # personal ids: at DEBUG only
    assert error_body("bad", "no such person: jane@example.com")["error"]["message"] == (
        "no such person: [e-mail]"
    )


def test_the_embedder_key_goes_to_its_own_url_only() -> None:
    settings = Settings(
        embedder="openai",
        embedder_url="https://api.deepinfra.com/v1/openai",
        embedder_api_key="deepinfra-key",
        embedder_api_keys={"https://api.openai.com": "openai-key"},
    )
    assert api_key_for("https://API.deepinfra.com:443/v1/other", settings) == "deepinfra-key"
    assert api_key_for("https://api.openai.com/v1", settings) == "openai-key"
    assert api_key_for("https://evil.example/v1", settings) == ""
    assert api_key_for("http://api.deepinfra.com/v1/openai", settings) == ""  # not https
    space = ModelSpace(
        id=2, kind="openai", model="m", dim=8, url="https://evil.example/v1", state="building"
    )
    embedder = make_space_embedder(space, settings)
    assert embedder._api_key == ""


def test_stream_slots_cap_per_token_and_in_total() -> None:
    slots = StreamSlots(per_token=2, total=3)
    a1, a2 = slots.acquire(1), slots.acquire(1)
    with pytest.raises(QuotaExceeded) as per_token:
        slots.acquire(1)
    assert per_token.value.limit == "SHORTLIST_SSE_PER_TOKEN"
    b1 = slots.acquire(2)
    with pytest.raises(QuotaExceeded) as total:
        slots.acquire(3)
    assert total.value.limit == "SHORTLIST_SSE_MAX_STREAMS"
    a1.release()
    a1.release()  # idempotent
    assert slots.open == 2
    slots.acquire(3)
    a2.release()
    b1.release()
    assert slots.open == 1


async def test_the_probe_cache_computes_once_per_window_for_concurrent_callers() -> None:
    cache = ProbeCache(60.0)
    calls = 0

    async def compute() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)
        return calls

    assert await asyncio.gather(*(cache.get("k", compute) for _ in range(20))) == [1] * 20
    assert calls == 1


def test_a_person_is_named_by_id_email_or_linkedin() -> None:
    assert parse_target("Jane@Example.com")[1] == {"email:jane@example.com"}
    assert parse_target("https://www.linkedin.com/in/Jane-Doe/")[1] == {"linkedin:jane-doe"}
    assert parse_target("https://de.linkedin.com/in/jane-doe?trk=x")[1] == {"linkedin:jane-doe"}
    assert parse_target("linkedin:Jane-Doe")[1] == {"linkedin:jane-doe"}
    assert parse_target("pdl:qEnOZ5Oh0poWnQ1luFBfVw_0000")[1] == {"pdl:qEnOZ5Oh0poWnQ1luFBfVw_0000"}
    assert parse_target("00000000-0000-4000-8000-000000000001")[0] is not None
    assert person_keys(email="A@B.co", profile_url="linkedin.com/in/x", external_id="pdl:1") == {
        "email:a@b.co",
        "linkedin:x",
        "pdl:1",
    }


def test_an_erasure_reports_the_e_mail_messages_it_erased() -> None:
    erasure = Erasure([], 0, 0, 1, 2)
    assert erasure.as_json() == {
        "candidateIds": [],
        "resultsTombstoned": 0,
        "attemptsScrubbed": 0,
        "identifiersSuppressed": 1,
        "messagesErased": 2,
        "heldDropped": 0,
        "listingsRedacted": 0,
        "searchesRedacted": 0,
        "notesRedacted": 0,
    }
