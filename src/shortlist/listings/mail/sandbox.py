"""Reading messages in parser processes with a hard time limit, off every event loop.

Hostile mail is CPU work an attacker chooses (a crafted PDF, markup, header folding): it runs in
parser processes, one message per process at a time, and a message that takes longer than
``SHORTLIST_MAIL_PARSE_TIMEOUT`` has its process killed (that one alone) and replaced.
Each parser process also has a ceiling on its memory (``SHORTLIST_MAIL_PARSE_MEMORY_MB``, the
address-space limit of ``setrlimit``: https://docs.python.org/3/library/resource.html), so a
message that would need gigabytes (a decompression bomb past the parser's own bounds) fails
with ``MemoryError`` in its process instead of taking the host's memory from the server and
PostgreSQL. The pool's processes come from a ``forkserver`` that imported the parser and its
libraries once, so a replacement starts in milliseconds, and no process is forked from a
server's threads (https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods).

A parser process holds none of the server's secrets: the forkserver starts with an environment
cleared to :data:`ENV_KEPT` (no database URL, vendor keys or relay password), and every parser
process is forked from it. A message goes to its process as bytes and what it finds comes back
as JSON bytes on a pipe (``send_bytes`` / ``recv_bytes``, bounded), validated into a
:class:`Reading` by its schema on the server's side: nothing a parser process sends is ever
unpickled, so one that a hostile message took over can lie about the message, but not run code
in the server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import resource
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from pydantic import TypeAdapter, ValidationError

from shortlist.errors import BadInput
from shortlist.fair import FairSlots
from shortlist.listings.mail.parse import NoJob, Reading, read_message
from shortlist.listings.mail.screen import RejectedAs

log = logging.getLogger(__name__)

# Imported once by the forkserver, inherited by every parser process.
_PRELOAD = [
    "shortlist.listings.mail.sandbox",
    "shortlist.listings.mail.parse",
    "selectolax.lexbor",
    "pypdf",
    "docx",
    "mailparser_reply.parser",
    "price_parser",
    "flufl.bounce",
]


ENV_KEPT = frozenset({"PATH", "PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"})
"""The only variables a parser process sees."""
_READING = TypeAdapter(Reading)
_REJECTED_AS: TypeAdapter[RejectedAs] = TypeAdapter(RejectedAs)
_forkserver_lock = threading.Lock()


def _start_forkserver_cleared() -> None:
    """Start the forkserver (if it is not running) with the environment cut to
    :data:`ENV_KEPT`: the process is started from ``os.environ`` as it is at that moment, so
    the rest is taken out for the start and put back after."""
    with _forkserver_lock:
        saved = dict(os.environ)
        try:
            for key in list(os.environ):
                if key not in ENV_KEPT:
                    del os.environ[key]
            multiprocessing.forkserver.ensure_running()
        finally:
            os.environ.clear()
            os.environ.update(saved)


class ParseTimeout(BadInput):
    """The parser ran out of time on this message (a permanent failure: it would again)."""


class ParseCrashed(BadInput):
    """The parser failed on this message in a way no reason explains."""


class ParseTooLarge(BadInput):
    """Reading this message needs more memory than a parser process may have (permanent)."""


def _limit_memory(limit_bytes: int) -> None:
    """In each parser process, before its first message: the address-space ceiling."""
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


Outcome = dict[str, Any]
MAX_ANSWER = 16 << 20
"""Bytes of JSON a parser process may answer (a reading is bounded far below it)."""


def _read(raw: bytes, max_bytes: int) -> Outcome:
    """In the parser process: what became of a message, as plain JSON-able data."""
    try:
        return {"kind": "ok", "reading": dataclasses.asdict(read_message(raw, max_bytes))}
    except MemoryError:
        return {"kind": "memory"}
    except NoJob as exc:
        return {"kind": "nojob", "rejected_as": exc.kind, "reason": str(exc)}
    except BadInput as exc:
        return {"kind": "bad", "reason": str(exc)}
    except Exception as exc:  # a parser bug or a library failing on hostile input
        return {"kind": "crash", "error": type(exc).__name__}


def serve_messages(conn: Connection, max_bytes: int, limit_bytes: int) -> None:
    """A parser process's life: a message in as bytes, its outcome out as JSON bytes, until
    the server hangs up. Nothing crosses the pipe as a pickle in either direction after the
    start (``send_bytes`` / ``recv_bytes``)."""
    _limit_memory(limit_bytes)
    while True:
        try:
            raw = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            answer = json.dumps(_read(raw, max_bytes)).encode()
        except MemoryError:
            answer = b'{"kind": "memory"}'
        conn.send_bytes(answer)


@dataclass(eq=False)
class _Parser:
    """One parser process and the server's end of its pipe."""

    process: BaseProcess
    conn: Connection

    def kill(self) -> None:
        self.process.kill()
        self.conn.close()
        self.process.join(5)


def _exchange(parser: _Parser, raw: bytes, timeout: float) -> bytes | None:
    """In a thread of the pool's own: hand a message over and wait for the answer's bytes;
    None when none came within ``timeout``. Raises EOFError / OSError when the process died
    (or was killed for its time)."""
    parser.conn.send_bytes(raw)
    if not parser.conn.poll(timeout):
        return None
    return parser.conn.recv_bytes(MAX_ANSWER)


class ParserPool:
    """``await pool.read(raw)`` → a :class:`Reading`, or ``BadInput`` (``NoJob``,
    ``ParseTimeout``, ``ParseTooLarge``, ``ParseCrashed``) saying why not.

    Each parser process is the server's own ``multiprocessing.Process`` (from the forkserver)
    with a pipe: the message goes in as bytes and its outcome comes back as JSON bytes, read
    with a length bound and validated by schema — a parser process that a hostile message took
    over can answer anything, but never an object the server unpickles (as a
    ``ProcessPoolExecutor``'s result channel would). A process that runs out of time is killed
    alone: another company's message in another process reads on."""

    def __init__(
        self,
        *,
        processes: int,
        timeout: float,
        max_bytes: int,
        memory_mb: int,
        serve: Callable[[Connection, int, int], None] = serve_messages,
    ) -> None:
        """``serve``: the parser process's loop (tests give a hostile one)."""
        self.processes = processes
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.memory_mb = memory_mb
        self._serve = serve
        self._slots = FairSlots(processes)
        self._idle: list[_Parser] = []
        self._busy: set[_Parser] = set()
        self._threads: ThreadPoolExecutor | None = None
        self.replaced = 0
        """Processes killed for running out of time (tests read it)."""

    def _start(self) -> _Parser:
        """A new parser process (blocking: the forkserver forks it)."""
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        _start_forkserver_cleared()
        ours, theirs = context.Pipe(duplex=True)
        process = context.Process(
            target=self._serve,
            args=(theirs, self.max_bytes, self.memory_mb << 20),
            name="shortlist-mail-parser",
            daemon=True,
        )
        process.start()
        theirs.close()
        return _Parser(process, ours)

    def _executor(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(
                self.processes, thread_name_prefix="shortlist-mail-parser"
            )
        return self._threads

    async def read(self, raw: bytes, company: str = "") -> Reading:
        """``company``: whose message it is (processes are shared fairly between companies)."""
        loop = asyncio.get_running_loop()
        async with self._slots.slot(company):
            threads = self._executor()
            parser = self._idle.pop() if self._idle else None
            if parser is None or not parser.process.is_alive():
                if parser is not None:
                    parser.kill()
                parser = await loop.run_in_executor(threads, self._start)
            self._busy.add(parser)
            keep = False
            try:
                # The time limit starts when a process is free: a message waiting its turn is
                # not the one that is slow.
                answer = await loop.run_in_executor(threads, _exchange, parser, raw, self.timeout)
                if answer is None:
                    self.replaced += 1
                    raise ParseTimeout(f"the message took longer than {self.timeout:g} s to read")
                keep = True
            except (EOFError, OSError):
                raise ParseCrashed(
                    "the message could not be read (the parser process died)"
                ) from None
            finally:
                self._busy.discard(parser)
                if keep:
                    self._idle.append(parser)
                else:
                    await loop.run_in_executor(threads, parser.kill)
        return _outcome(answer, self.memory_mb)

    def close(self) -> None:
        for parser in [*self._idle, *self._busy]:
            parser.process.kill()
            parser.conn.close()
        self._idle.clear()
        self._busy.clear()
        if self._threads is not None:
            threads, self._threads = self._threads, None
            threads.shutdown(wait=False, cancel_futures=True)


def _outcome(answer: bytes, memory_mb: int) -> Reading:
    """The parser process's answer, trusted for nothing but its shape."""
    try:
        outcome = json.loads(answer)
        kind = outcome["kind"] if isinstance(outcome, dict) else None
        if kind == "ok":
            return _READING.validate_python(outcome["reading"])
        if kind == "nojob":
            rejected_as = _REJECTED_AS.validate_python(outcome["rejected_as"])
            raise NoJob(str(outcome["reason"])[:2000], rejected_as)
        if kind == "bad":
            raise BadInput(str(outcome["reason"])[:2000], field="body")
        if kind == "memory":
            raise ParseTooLarge(f"the message needs more than {memory_mb} MB of memory to read")
        if kind == "crash":
            error = str(outcome.get("error", ""))[:100]
            raise ParseCrashed(f"the message could not be read (the parser failed: {error})")
    except (ValueError, KeyError, TypeError, ValidationError):
        pass
    raise ParseCrashed("the parser's answer is not an outcome")
