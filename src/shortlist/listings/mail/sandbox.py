"""Reading messages in parser processes with a hard time limit, off every event loop.

Hostile mail is CPU work an attacker chooses (a crafted PDF, markup, header folding): it runs in
a ``concurrent.futures.ProcessPoolExecutor``, one message per process at a time, and a message
that takes longer than ``SHORTLIST_MAIL_PARSE_TIMEOUT`` has its process killed and replaced.
Each parser process also has a ceiling on its memory (``SHORTLIST_MAIL_PARSE_MEMORY_MB``, the
address-space limit of ``setrlimit``: https://docs.python.org/3/library/resource.html), so a
message that would need gigabytes (a decompression bomb past the parser's own bounds) fails
with ``MemoryError`` in its process instead of taking the host's memory from the server and
PostgreSQL. The pool's processes come from a ``forkserver`` that imported the parser and its
libraries once, so a replacement starts in milliseconds, and no process is forked from a
server's threads (https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods).

A parser process holds none of the server's secrets: the forkserver starts with an environment
cleared to :data:`ENV_KEPT` (no database URL, vendor keys or relay password), and every parser
process is forked from it. What it finds comes back as JSON text, validated into a
:class:`Reading` by its schema on the server's side (never an object the parser built).
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
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from pydantic import TypeAdapter, ValidationError

from shortlist.errors import BadInput, TransientError
from shortlist.fair import FairSlots
from shortlist.listings.mail.parse import NoJob, Reading, read_message

log = logging.getLogger(__name__)

# Imported once by the forkserver, inherited by every parser process.
_PRELOAD = [
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


Outcome = tuple[str, object]


def _read(raw: bytes, max_bytes: int) -> Outcome:
    """In the parser process: plain tuples cross the process boundary (exceptions with
    keyword arguments do not pickle back)."""
    try:
        return ("ok", json.dumps(dataclasses.asdict(read_message(raw, max_bytes))))
    except MemoryError:
        return ("memory", "")
    except NoJob as exc:
        return ("nojob", (exc.kind, str(exc)))
    except BadInput as exc:
        return ("bad", str(exc))
    except Exception as exc:  # a parser bug or a library failing on hostile input
        return ("crash", type(exc).__name__)


class ParserPool:
    """``await pool.read(raw)`` → a :class:`Reading`, or ``BadInput`` (``NoJob``,
    ``ParseTimeout``, ``ParseTooLarge``, ``ParseCrashed``) saying why not."""

    def __init__(self, *, processes: int, timeout: float, max_bytes: int, memory_mb: int) -> None:
        self.processes = processes
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.memory_mb = memory_mb
        self._slots = FairSlots(processes)
        self._executor: ProcessPoolExecutor | None = None
        self.replaced = 0
        """Processes killed for running out of time (tests read it)."""

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(_PRELOAD)
            self._executor = ProcessPoolExecutor(
                self.processes,
                mp_context=context,
                initializer=_limit_memory,
                initargs=(self.memory_mb << 20,),
            )
        return self._executor

    def _replace(self, executor: ProcessPoolExecutor) -> None:
        """Kill the pool's processes (one of them is stuck) and start afresh. The executor has
        no public way to end a running task; its ``_processes`` map is the way."""
        if self._executor is not executor:
            return  # already replaced by another timed-out read
        self._executor = None
        self.replaced += 1
        for process in list(executor._processes.values()):
            process.kill()
        executor.shutdown(wait=False, cancel_futures=True)

    def _submit(self, executor: ProcessPoolExecutor, raw: bytes) -> Future[Outcome]:
        _start_forkserver_cleared()
        return executor.submit(_read, raw, self.max_bytes)

    async def read(self, raw: bytes, company: str = "") -> Reading:
        """``company``: whose message it is (processes are shared fairly between companies)."""
        # The time limit starts when a process is free: a message waiting its turn is not
        # the one that is slow.
        async with self._slots.slot(company):
            for attempt in range(2):
                executor = self._pool()
                try:
                    # Submitted from a thread: the executor starts its processes inside
                    # submit(), and the first start waits for the forkserver's imports.
                    submitted = await asyncio.to_thread(self._submit, executor, raw)
                    kind, value = await asyncio.wait_for(
                        asyncio.wrap_future(submitted), self.timeout
                    )
                    break
                except TimeoutError:
                    self._replace(executor)
                    raise ParseTimeout(
                        f"the message took longer than {self.timeout:g} s to read"
                    ) from None
                except (BrokenProcessPool, RuntimeError):  # RuntimeError: submit after shutdown
                    # Another message's process was killed under this one: read it again on
                    # the fresh pool.
                    self._replace(executor)
                    if attempt:
                        raise TransientError("the parser processes keep failing") from None
        if kind == "ok":
            try:
                return _READING.validate_json(str(value))
            except ValidationError as exc:
                raise ParseCrashed(
                    f"the parser's answer is not a reading ({exc.error_count()} error(s))"
                ) from None
        if kind == "nojob":
            assert isinstance(value, tuple)
            rejected_as, reason = value
            raise NoJob(str(reason), rejected_as)
        if kind == "bad":
            raise BadInput(str(value), field="body")
        if kind == "memory":
            raise ParseTooLarge(
                f"the message needs more than {self.memory_mb} MB of memory to read"
            )
        raise ParseCrashed(f"the message could not be read (the parser failed: {value})")

    def close(self) -> None:
        if self._executor is not None:
            executor, self._executor = self._executor, None
            for process in list(executor._processes.values()):
                process.kill()
            executor.shutdown(wait=False, cancel_futures=True)
