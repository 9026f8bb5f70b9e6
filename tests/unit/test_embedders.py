"""Embedders: the seed's transient/permanent error matrix against a fake OpenAI-compatible
server, failure isolation within a batch, the fake embedder, and the real local model."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from prometheus_client import REGISTRY

from shortlist.config import Settings
from shortlist.embedding import (
    EmbeddingError,
    EmbeddingPermanentError,
    EmbeddingTransientError,
    classify_http_status,
    embed_isolating_failures,
    local,
    make_embedder,
)
from shortlist.embedding.local import LocalEmbedder
from shortlist.embedding.openai import OpenAIEmbedder, parse_retry_after
from shortlist.errors import ConfigError, PermanentError, TransientError
from tests.fake_openai import FakeOpenAI, Reply
from tests.fake_openai import fake_openai as fake_openai  # the fixture
from tests.fakes import FakeEmbedder, cosine, hash_embed

TEXTS = ["senior python developer", "registered nurse night shift", "rust backend engineer"]


def _norm(v: Sequence[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


async def _raises(embedder: OpenAIEmbedder, texts: Sequence[str] = TEXTS) -> EmbeddingError:
    try:
        await embedder.embed(texts)
    except EmbeddingError as exc:
        return exc
    finally:
        await embedder.aclose()
    raise AssertionError("expected an EmbeddingError")


# --- classification ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, EmbeddingPermanentError),
        (404, EmbeddingPermanentError),
        (413, EmbeddingPermanentError),
        (422, EmbeddingPermanentError),
        (401, EmbeddingTransientError),
        (403, EmbeddingTransientError),
        (429, EmbeddingTransientError),
        (500, EmbeddingTransientError),
        (503, EmbeddingTransientError),
        (529, EmbeddingTransientError),
    ],
)
def test_classify_http_status(status: int, expected: type[EmbeddingError]) -> None:
    assert classify_http_status(status) is expected


def test_error_types_fit_the_worker_split() -> None:
    assert issubclass(EmbeddingTransientError, TransientError)
    assert issubclass(EmbeddingPermanentError, PermanentError)
    assert EmbeddingTransientError("x", retry_after=3).retry_after == 3
    assert EmbeddingPermanentError("x", bad_index=2).bad_index == 2


def test_parse_retry_after() -> None:
    now = datetime(2026, 8, 5, 12, 0, tzinfo=UTC)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30)), now=now) == 30.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30)), now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


# --- the error matrix against the fake server -------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 401, 403])
async def test_transient_statuses(fake_openai: FakeOpenAI, status: int) -> None:
    fake_openai.script([Reply.error(status, "busy", retry_after=7)])
    before = REGISTRY.get_sample_value(
        "shortlist_embed_errors_total", {"embedder": "openai", "kind": "transient"}
    )
    exc = await _raises(fake_openai.embedder())
    assert isinstance(exc, EmbeddingTransientError)
    assert exc.status == status
    assert exc.retry_after == 7.0
    assert "busy" in str(exc)
    after = REGISTRY.get_sample_value(
        "shortlist_embed_errors_total", {"embedder": "openai", "kind": "transient"}
    )
    assert after == (before or 0) + 1
    assert fake_openai.requests == 1  # no retries inside the embedder: that's the indexer's job


async def test_429_without_retry_after(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([429])
    exc = await _raises(fake_openai.embedder())
    assert isinstance(exc, EmbeddingTransientError)
    assert exc.retry_after is None


async def test_timeout_is_transient(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([Reply.slow(3.0)])
    started = time.monotonic()
    exc = await _raises(fake_openai.embedder(timeout=0.3))
    assert isinstance(exc, EmbeddingTransientError)
    assert "timed out" in str(exc)
    assert time.monotonic() - started < 2.0
    # the server is still usable after a client gave up on it
    embedder = fake_openai.embedder()
    assert len(await embedder.embed(TEXTS)) == 3
    await embedder.aclose()


async def test_connection_refused_is_transient() -> None:
    with FakeOpenAI() as server:
        embedder = server.embedder()
    exc = await _raises(embedder)
    assert isinstance(exc, EmbeddingTransientError)


@pytest.mark.parametrize("reply", [Reply.empty(), Reply.empty_data()], ids=["body", "data"])
async def test_empty_response_is_transient(fake_openai: FakeOpenAI, reply: Reply) -> None:
    fake_openai.script([reply])
    assert isinstance(await _raises(fake_openai.embedder()), EmbeddingTransientError)


@pytest.mark.parametrize(
    "reply",
    [
        Reply.malformed(),
        Reply(body=b'{"object": "list"}'),
        Reply(body=b'{"data": [{"index": 0, "embedding": "AAAA"}]}'),
        Reply(body=b"[1, 2, 3]"),
        Reply.error(400, "bad request"),
        Reply.error(422),
        Reply.wrong_dim(16),
    ],
    ids=["malformed", "no-data", "base64", "not-object", "400", "422", "wrong-dim"],
)
async def test_permanent_replies(fake_openai: FakeOpenAI, reply: Reply) -> None:
    fake_openai.script([reply])
    exc = await _raises(fake_openai.embedder())
    assert isinstance(exc, EmbeddingPermanentError)
    assert exc.bad_index is None


async def test_wrong_count_is_permanent(fake_openai: FakeOpenAI) -> None:
    one = b'{"data": [{"index": 0, "embedding": [1.0, 0.0]}]}'
    fake_openai.script([Reply(body=one)])
    exc = await _raises(OpenAIEmbedder(fake_openai.url, "k", "m", 2, 5.0))
    assert isinstance(exc, EmbeddingPermanentError)
    assert "1 embeddings for 3 inputs" in str(exc)


async def test_400_naming_an_input_sets_bad_index(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([Reply.ok(reject=lambda t: "nurse" in t)])
    exc = await _raises(fake_openai.embedder())
    assert isinstance(exc, EmbeddingPermanentError)
    assert exc.bad_index == 1
    assert exc.status == 400


async def test_blank_input_is_rejected_without_a_request(fake_openai: FakeOpenAI) -> None:
    exc = await _raises(fake_openai.embedder(), ["fine", "   "])
    assert isinstance(exc, EmbeddingPermanentError)
    assert exc.bad_index == 1
    assert fake_openai.requests == 0


async def test_success_normalised_and_ordered_by_index(fake_openai: FakeOpenAI) -> None:
    fake_openai.script([Reply.ok(reverse=True)])
    embedder = fake_openai.embedder(model="my-model")
    vectors = await embedder.embed(TEXTS)
    await embedder.aclose()
    assert len(vectors) == 3
    for text, vector in zip(TEXTS, vectors, strict=True):
        assert len(vector) == 384
        assert _norm(vector) == pytest.approx(1.0)
        assert vector == pytest.approx(hash_embed(text))  # the server scaled it by 3
    (request,) = fake_openai.received
    assert request.json == {"model": "my-model", "input": TEXTS, "encoding_format": "float"}
    assert request.headers["Authorization"] == "Bearer test-key"
    assert await embedder.embed([]) == []
    assert fake_openai.requests == 1


async def test_text_embedding_3_asks_for_the_configured_dimension(
    fake_openai: FakeOpenAI,
) -> None:
    embedder = fake_openai.embedder(model="text-embedding-3-small")
    await embedder.embed(["x"])
    await embedder.aclose()
    assert fake_openai.received[0].json["dimensions"] == 384


async def test_server_checks_api_key() -> None:
    with FakeOpenAI(api_key="right") as server:
        exc = await _raises(server.embedder(api_key="wrong"))
        assert isinstance(exc, EmbeddingTransientError)
        assert exc.status == 401
        good = server.embedder()
        assert len(await good.embed(["x"])) == 1
        await good.aclose()


async def test_shared_client_is_not_closed() -> None:
    import httpx

    async with httpx.AsyncClient() as client:
        embedder = OpenAIEmbedder("http://127.0.0.1:9/v1", "", "m", 4, 1.0, client=client)
        await embedder.aclose()
        assert not client.is_closed


# --- failure isolation ------------------------------------------------------------------------


async def test_isolating_failures_with_bad_index() -> None:
    fake = FakeEmbedder(fail_permanent_on=lambda t: "poison" in t)
    texts = [f"job {i}" for i in range(10)]
    texts[3] = "poison pill"
    texts[7] = "more poison"
    results = await embed_isolating_failures(fake, texts)
    assert len(results) == 10
    for i, result in enumerate(results):
        if i in (3, 7):
            assert isinstance(result, EmbeddingPermanentError)
        else:
            assert result == pytest.approx(hash_embed(texts[i]))
    # whole batch, then split around each named culprit: far fewer calls than one per text
    assert fake.calls <= 5


class _AnonymousRejector:
    """Rejects the whole batch without saying which input is at fault."""

    name = "anon"
    dim = 384

    def __init__(self, bad: set[str]) -> None:
        self.bad = bad
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if any(t in self.bad for t in texts):
            raise EmbeddingPermanentError("something in there is bad")
        return [hash_embed(t) for t in texts]


async def test_isolating_failures_bisects_without_bad_index() -> None:
    texts = [f"text {i}" for i in range(16)]
    embedder = _AnonymousRejector({"text 5"})
    results = await embed_isolating_failures(embedder, texts)
    assert [i for i, r in enumerate(results) if isinstance(r, EmbeddingPermanentError)] == [5]
    assert all(isinstance(r, list) for i, r in enumerate(results) if i != 5)
    assert embedder.calls <= 1 + 2 * 4  # one batch, then two halves per level


async def test_isolating_failures_propagates_transient() -> None:
    fake = FakeEmbedder(fail_transient_times=1)
    with pytest.raises(EmbeddingTransientError):
        await embed_isolating_failures(fake, ["a", "b"])
    assert await embed_isolating_failures(fake, []) == []


async def test_isolating_failures_over_http(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_default(Reply.ok(reject=lambda t: t.startswith("bad")))
    embedder = fake_openai.embedder()
    texts = ["good one", "bad one", "good two", "", "good three"]
    results = await embed_isolating_failures(embedder, texts)
    await embedder.aclose()
    failed = [i for i, r in enumerate(results) if isinstance(r, EmbeddingPermanentError)]
    assert failed == [1, 3]
    assert results[0] == pytest.approx(hash_embed("good one"))


async def test_isolating_failures_whole_batch_malformed(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_default(Reply.malformed())
    embedder = fake_openai.embedder()
    results = await embed_isolating_failures(embedder, ["a", "b", "c"])
    await embedder.aclose()
    assert all(isinstance(r, EmbeddingPermanentError) for r in results)


# --- the fake embedder ------------------------------------------------------------------------


async def test_fake_embedder_similarity_and_counters() -> None:
    fake = FakeEmbedder()
    query, python_job, nurse_job = await fake.embed(
        [
            "python backend engineer",
            "Senior Python Backend Engineer at Acme, Django and PostgreSQL",
            "Registered nurse for the night shift at a city hospital",
        ]
    )
    assert len(query) == 384
    assert _norm(query) == pytest.approx(1.0)
    assert cosine(query, python_job) > 0.5 > cosine(query, nurse_job)
    assert await fake.embed(["python backend engineer"]) == [query]  # deterministic
    assert fake.calls == 2
    assert fake.texts_embedded == 4

    flaky = FakeEmbedder(fail_transient_times=2)
    for _ in range(2):
        with pytest.raises(EmbeddingTransientError):
            await flaky.embed(["x"])
    assert len(await flaky.embed(["x"])) == 1
    assert flaky.calls == 3


async def test_fake_embedder_hooks() -> None:
    seen: list[list[str]] = []

    async def hook(batch: list[str]) -> None:
        seen.append(batch)

    fake = FakeEmbedder(before_return=hook, fail_permanent_on=lambda t: t == "no")
    await fake.embed(["a", "b"])
    with pytest.raises(EmbeddingPermanentError) as info:
        await fake.embed(["a", "no"])
    assert info.value.bad_index == 1
    assert seen == [["a", "b"]]
    assert fake.texts_embedded == 2


# --- the factory ------------------------------------------------------------------------------


def test_make_embedder() -> None:
    local = make_embedder(Settings(embedder="local", embedding_dim=384))
    assert isinstance(local, LocalEmbedder)
    assert local.dim == 384
    remote = make_embedder(
        Settings(
            embedder="openai",
            embedder_url="http://127.0.0.1:11434/v1/",
            embedder_api_key="k",
            embedder_model="nomic-embed-text",
            embedder_timeout=12.0,
            embedding_dim=384,
        )
    )
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.url == "http://127.0.0.1:11434/v1/embeddings"
    assert (remote.model, remote.dim, remote.timeout) == ("nomic-embed-text", 384, 12.0)
    with pytest.raises(ConfigError, match="384"):
        make_embedder(Settings(embedder="local", embedding_dim=768))


# --- the real local model ---------------------------------------------------------------------


@pytest.mark.slow
async def test_local_embedder_ranks_by_meaning() -> None:
    embedder = LocalEmbedder()
    embedder.warm_up()
    query, python_job, nurse_job = await embedder.embed(
        [
            "python backend engineer",
            "Senior Software Engineer, Platform. Build and scale our Django and FastAPI "
            "services, design PostgreSQL schemas and REST APIs.",
            "Registered Nurse, ICU night shift. Provide patient care, administer medication "
            "and work with physicians at a city hospital.",
        ]
    )
    for vector in (query, python_job, nurse_job):
        assert len(vector) == 384
        assert _norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert cosine(query, python_job) > cosine(query, nurse_job) + 0.1

    with pytest.raises(EmbeddingPermanentError) as info:
        await embedder.embed(["ok", " \n"])
    assert info.value.bad_index == 1


@pytest.mark.slow
async def test_a_query_never_waits_for_the_indexers_batches() -> None:
    """Queries run on a copy of the model of their own: while the bulk copy is busy (its lock
    held, as during an indexer batch), a query is embedded, and equals the bulk copy's vector."""
    from shortlist.embedding.local import _default_model_path, _load

    embedder = LocalEmbedder()
    expected = (await embedder.embed(["python backend engineer"] * 5))[0]  # bulk copy (> 4 texts)
    bulk = _load(_default_model_path(), "bulk")
    assert _load(_default_model_path(), "query") is not bulk
    with bulk.lock:
        [vector] = await asyncio.wait_for(embedder.embed(["python backend engineer"]), 60)
    assert vector == pytest.approx(expected, abs=1e-5)


@pytest.mark.slow
async def test_local_embedder_keeps_input_order_across_length_sorted_mini_batches() -> None:
    """Mini-batches are grouped longest first; the vectors still come back in input order."""
    embedder = LocalEmbedder(batch_size=2)
    texts = [
        "python",
        "Registered Nurse, ICU night shift, patient care at a city hospital with physicians.",
        "gardening tips",
        "Senior Software Engineer building Django and FastAPI services on PostgreSQL.",
        "a",
    ]
    together = await embedder.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        [alone] = await embedder.embed([text])
        assert cosine(vector, alone) > 0.999, text


# --- coalescing small calls (no model: the encode step is replaced) ------------------------------


class SlowEncode:
    """Stands in for ``LocalEmbedder._encode`` (it runs in a thread): records each model call,
    takes ``seconds``, maps a text to ``[len(text)]``; a text "bad" fails its whole call."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        time.sleep(self.seconds)
        if "bad" in texts:
            raise EmbeddingPermanentError("the model rejects 'bad'")
        return [[float(len(t))] for t in texts]


async def test_concurrent_small_calls_share_model_calls_and_keep_their_own_vectors() -> None:
    embedder = LocalEmbedder(batch_size=8)
    encode = SlowEncode(0.05)
    embedder._encode = encode  # type: ignore[method-assign]
    texts = ["a" * n for n in range(1, 13)]
    results = await asyncio.gather(*(embedder.embed([t]) for t in texts))
    assert results == [[[float(len(t))]] for t in texts]
    # Twelve calls at once: two model calls, at most a mini-batch (8) each.
    assert [len(c) for c in encode.calls] == [8, 4]
    # A lone call is not held back.
    started = time.perf_counter()
    assert await embedder.embed(["solo"]) == [[4.0]]
    assert time.perf_counter() - started < 0.5


async def test_a_call_arriving_among_others_waits_for_them_to_join(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Long bounds: only a full mini-batch ends the hold here, so the test waits on nothing timed.
    monkeypatch.setattr(local, "HOLD_SECONDS", 60.0)
    monkeypatch.setattr(local, "BUSY_SECONDS", 60.0)
    embedder = LocalEmbedder(batch_size=2)
    encode = SlowEncode(0)
    embedder._encode = encode  # type: ignore[method-assign]
    async with asyncio.timeout(30):
        # One client's calls one after another are never held back.
        for text in ("one", "after", "another"):
            assert await embedder.embed([text]) == [[float(len(text))]]
        # Two at once share a model call: calls are arriving together.
        assert await asyncio.gather(embedder.embed(["a"]), embedder.embed(["bb"])) == [
            [[1.0]],
            [[2.0]],
        ]
        # The next call waits, and the one after it joins its model call.
        held = asyncio.ensure_future(embedder.embed(["held"]))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not held.done() and len(encode.calls) == 4
        assert await embedder.embed(["joins"]) == [[5.0]]
        assert await held == [[4.0]]
    assert encode.calls == [["one"], ["after"], ["another"], ["a", "bb"], ["held", "joins"]]


async def test_a_failing_text_fails_only_its_own_call() -> None:
    embedder = LocalEmbedder(batch_size=8)
    encode = SlowEncode(0.05)
    embedder._encode = encode  # type: ignore[method-assign]
    first = asyncio.ensure_future(embedder.embed(["warm"]))  # keeps the model busy
    await asyncio.sleep(0.01)
    calls = [embedder.embed(["ok"]), embedder.embed(["bad"]), embedder.embed(["fine", "x"])]
    ok, bad, fine = await asyncio.gather(*calls, return_exceptions=True)
    assert await first == [[4.0]]
    assert ok == [[2.0]] and fine == [[4.0], [1.0]]
    assert isinstance(bad, EmbeddingPermanentError)
    # One coalesced call failed; each caller's texts were then encoded on their own.
    assert encode.calls[1] == ["ok", "bad", "fine", "x"]
    assert sorted(map(tuple, encode.calls[2:])) == [("bad",), ("fine", "x"), ("ok",)]


async def test_a_cancelled_caller_does_not_stop_the_others() -> None:
    embedder = LocalEmbedder(batch_size=8)
    encode = SlowEncode(0.05)
    embedder._encode = encode  # type: ignore[method-assign]
    first = asyncio.ensure_future(embedder.embed(["warm"]))
    await asyncio.sleep(0.01)
    gone = asyncio.ensure_future(embedder.embed(["gone"]))
    kept = asyncio.ensure_future(embedder.embed(["kept"]))
    await asyncio.sleep(0)
    gone.cancel()
    assert await kept == [[4.0]]
    assert await first == [[4.0]]
    assert gone.cancelled()
    assert ["gone"] not in encode.calls and ["gone", "kept"] not in encode.calls


async def test_search_queries_go_to_embed_query_where_an_embedder_has_one() -> None:
    """``embed_queries``: the local model's int8 query copy (``embed_query``); any other
    embedder's ``embed``. The settings choose the local embedder's."""
    from shortlist.embedding.base import embed_queries
    from shortlist.embedding.factory import make_embedder

    fake = FakeEmbedder()
    assert await embed_queries(fake, ["nurse"]) == await fake.embed(["nurse"])

    class Split(FakeEmbedder):
        async def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0] for _ in texts]

    assert await embed_queries(Split(), ["nurse"]) == [[1.0]]
    embedder = make_embedder(Settings(embedder="local"))
    assert isinstance(embedder, LocalEmbedder) and not embedder.int8_queries  # the default
    embedder = make_embedder(Settings(embedder="local", query_int8=True))
    assert isinstance(embedder, LocalEmbedder) and embedder.int8_queries


@pytest.mark.slow
def test_warm_up_loads_the_copy_search_queries_run_on() -> None:
    from shortlist.embedding import local

    path = str(local._default_model_path())
    LocalEmbedder(int8_queries=True).warm_up()
    assert (path, "query-int8") in local._models
    LocalEmbedder().warm_up()
    assert (path, "query") in local._models
