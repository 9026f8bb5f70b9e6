"""The parser processes' bounds on what a message may cost: a ceiling on each process's memory
(SHORTLIST_MAIL_PARSE_MEMORY_MB) and, inside the parser, on what a DOCX attachment may unpack
to. A message past them fails with its reason; the next message is read as usual."""

from __future__ import annotations

import asyncio
import io
import json
import multiprocessing.forkserver
import os
import pickle
import time
import zipfile
from email.message import EmailMessage
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import docx
import pytest

from shortlist.errors import BadInput
from shortlist.listings.mail.parse import MAX_DOCX_UNPACKED, _docx_text, read_message
from shortlist.listings.mail.sandbox import ParseCrashed, ParserPool, ParseTooLarge

JOB = "We are hiring a registered nurse for our ICU in Berlin. Night shifts, full time."


def _message(body: str, attachment: bytes | None = None) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Jobs <jobs@clinic.example>"
    msg["To"] = "post-abc@localhost"
    msg["Subject"] = "Registered Nurse - Berlin"
    msg.set_content(body)
    if attachment is not None:
        msg.add_attachment(
            attachment,
            maintype="application",
            subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
            filename="job.docx",
        )
    return bytes(msg)


def _docx(text: str, *, inflated_to: int = 0) -> bytes:
    """A DOCX (python-docx) with one paragraph; ``inflated_to``: its document.xml padded with
    whitespace to that many bytes (a zip bomb: it deflates ~1000 to 1)."""
    out = io.BytesIO()
    document = docx.Document()
    document.add_paragraph(text)
    document.save(out)
    if not inflated_to:
        return out.getvalue()
    bomb = io.BytesIO()
    with zipfile.ZipFile(out) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for member in src.infolist():
            data = src.read(member)
            if member.filename != "word/document.xml":
                dst.writestr(member, data)
                continue
            with dst.open("word/document.xml", "w") as f:
                head, _, tail = data.partition(b"<w:body>")
                f.write(head + b"<w:body>")
                pad = b" " * (1 << 20)
                for _ in range(inflated_to >> 20):
                    f.write(pad)
                f.write(tail)
    return bomb.getvalue()


def test_a_docx_attachment_is_read_and_a_zip_bomb_skipped_unread() -> None:
    real = read_message(_message("Please see the attached job.", _docx(JOB)))
    assert "registered nurse for our ICU" in real.description

    bomb = _docx(JOB, inflated_to=5 * MAX_DOCX_UNPACKED)
    assert len(bomb) < 1_000_000  # what it unpacks to is a hundred times more
    started = time.perf_counter()
    with pytest.raises(ValueError, match="unpacks to"):
        _docx_text(bomb)
    assert time.perf_counter() - started < 0.5  # its directory read, nothing inflated
    reading = read_message(_message(JOB, bomb))  # the message's own text still counts
    assert "registered nurse for our ICU" in reading.description


async def test_a_message_that_needs_more_memory_than_a_parser_may_have_fails_alone() -> None:
    # ~75 MB of address space is the parser process itself: 40 MB more is less than reading a
    # 10 MB message takes (its bytes, the parsed message, the decoded text), and more than an
    # ordinary one needs.
    pool = ParserPool(processes=1, timeout=20.0, max_bytes=20_000_000, memory_mb=115)
    try:
        assert "ICU" in (await pool.read(_message(JOB))).description
        huge = _message((JOB + "\n") * 120_000)
        assert len(huge) > 9_000_000
        with pytest.raises(ParseTooLarge, match="more than 115 MB"):
            await pool.read(huge)
        assert "ICU" in (await pool.read(_message(JOB))).description
        assert pool.replaced == 0  # a MemoryError is an answer, not a stuck process
    finally:
        pool.close()


def tell_environment(conn: Connection, max_bytes: int, limit_bytes: int) -> None:
    """A parser process's loop that answers with what its environment holds."""
    conn.recv_bytes()
    seen = {k: os.environ.get(k) for k in ("SHORTLIST_DATABASE_URL", "SHORTLIST_PDL_API_KEY")}
    conn.send_bytes(json.dumps({"kind": "bad", "reason": json.dumps(seen)}).encode())


async def test_parser_processes_see_none_of_the_servers_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Issue 36 point 11: a memory-safety bug in a parser library must not hand over the
    # database URL, vendor keys or relay password.
    monkeypatch.setenv("SHORTLIST_DATABASE_URL", "postgresql://u:s3cret@db/x")
    monkeypatch.setenv("SHORTLIST_PDL_API_KEY", "pdl-s3cret")
    # A forkserver an earlier test started would not have these: start one afresh with them.
    multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]
    pool = ParserPool(
        processes=1, timeout=60, max_bytes=1_000_000, memory_mb=512, serve=tell_environment
    )
    try:
        with pytest.raises(BadInput) as told:
            await pool.read(b"")
        assert json.loads(str(told.value)) == {
            "SHORTLIST_DATABASE_URL": None,
            "SHORTLIST_PDL_API_KEY": None,
        }
        assert os.environ["SHORTLIST_DATABASE_URL"] == "postgresql://u:s3cret@db/x"  # ours kept
    finally:
        pool.close()


class _Touch:
    """Unpickling it creates a file: what a taken-over parser would send to run code."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (Path(self.path),))


def answer_a_pickle(conn: Connection, max_bytes: int, limit_bytes: int) -> None:
    """A parser process a hostile message took over: it answers with a pickle."""
    while True:
        path = conn.recv_bytes().decode()
        conn.send_bytes(pickle.dumps(_Touch(path)))


def answer_a_lie(conn: Connection, max_bytes: int, limit_bytes: int) -> None:
    """Or with JSON of the right kind and the wrong shape."""
    while True:
        conn.recv_bytes()
        conn.send_bytes(b'{"kind": "ok", "reading": {"title": ["not", "text"]}}')


async def test_nothing_a_parser_process_answers_is_unpickled(tmp_path: Path) -> None:
    # Issue 36 point 11: the answer is bytes read as JSON and validated by schema; a pickle
    # (which would run code in the server as it is loaded) is refused as a crash.
    marker = tmp_path / "unpickled"
    for serve in (answer_a_pickle, answer_a_lie):
        pool = ParserPool(processes=1, timeout=60, max_bytes=1_000_000, memory_mb=512, serve=serve)
        try:
            with pytest.raises(ParseCrashed, match="not an outcome"):
                await pool.read(str(marker).encode())
        finally:
            pool.close()
    assert not marker.exists()


def die(conn: Connection, max_bytes: int, limit_bytes: int) -> None:
    conn.recv_bytes()
    os._exit(1)


async def test_a_parser_process_that_dies_fails_its_message_and_is_replaced() -> None:
    pool = ParserPool(processes=1, timeout=60, max_bytes=1_000_000, memory_mb=512, serve=die)
    try:
        for _ in range(2):
            with pytest.raises(ParseCrashed, match="process died"):
                await pool.read(b"x")
    finally:
        pool.close()


async def test_parser_processes_are_shared_in_turn_between_companies() -> None:
    # Issue 36 point 2: one company's ten slow messages never hold up another's behind them.
    from shortlist.fair import FairSlots

    slots = FairSlots(1)
    order: list[str] = []
    release = asyncio.Event()

    async def read(company: str, n: int) -> None:
        async with slots.slot(company):
            order.append(f"{company}{n}")
            await release.wait()
            release.clear()

    first = asyncio.create_task(read("slowco", 0))
    await asyncio.sleep(0)
    tasks = [asyncio.create_task(read("slowco", n)) for n in range(1, 5)]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(read("acme", 0)))
    await asyncio.sleep(0)
    for _ in range(6):
        release.set()
        await asyncio.sleep(0.01)
    await asyncio.wait_for(asyncio.gather(first, *tasks), 5)
    assert order.index("acme0") == 1  # next in turn, not behind slowco's four


async def test_one_company_keeps_a_process_free_for_the_others() -> None:
    from shortlist.fair import FairSlots

    slots = FairSlots(2)
    await slots.acquire("slowco")
    blocked = asyncio.create_task(slots.acquire("slowco"))
    await asyncio.sleep(0)
    assert not blocked.done()  # its second message waits: one process stays for others
    await asyncio.wait_for(slots.acquire("acme"), 1)
    slots.release("slowco")
    await asyncio.wait_for(blocked, 1)
