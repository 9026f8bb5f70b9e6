"""shortlist.listings.result_cache: what is kept, for how long, and when nothing is."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from shortlist.listings import result_cache
from shortlist.listings.facets import EMPTY
from shortlist.listings.result_cache import ResultCache
from shortlist.listings.search import SearchResult
from tests.helpers import wait_for


def _is(condition: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return condition()

    return check


def _result(query: str = "nurse") -> SearchResult:
    return SearchResult(query=query, took_ms=12.5, hits=[], facets=EMPTY)


def _listening(max_bytes: int = 1 << 20, ttl: float = 60.0) -> ResultCache:
    cache = ResultCache(max_bytes, ttl=ttl)
    cache.listening = True
    return cache


def test_an_answer_is_kept_unless_the_cache_emptied_while_it_was_computed() -> None:
    cache = _listening()
    begun = cache.generation
    cache.invalidate()  # a listing changed during the search
    cache.put(("q",), _result(), begun, from_replica=False)
    assert cache.get(("q",)) is None
    cache.put(("q",), _result(), cache.generation, from_replica=False)
    kept = cache.get(("q",))
    assert kept is not None and kept.query == "nurse"


def test_nothing_is_kept_or_served_while_no_notification_can_arrive() -> None:
    cache = _listening()
    cache.put(("q",), _result(), cache.generation, from_replica=False)
    cache.listening = False
    assert cache.get(("q",)) is None
    cache.put(("r",), _result(), cache.generation, from_replica=False)
    cache.listening = True
    assert cache.get(("r",)) is None
    assert ResultCache(0, ttl=60).enabled is False


def test_answers_expire_and_a_replicas_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(result_cache.time, "monotonic", lambda: now[0])
    cache = _listening(ttl=60.0)
    cache.put(("primary",), _result(), cache.generation, from_replica=False)
    cache.put(("replica",), _result(), cache.generation, from_replica=True)
    assert cache.get(("replica",)) is None
    now[0] += 59.0
    assert cache.get(("primary",)) is not None
    now[0] += 1.0
    assert cache.get(("primary",)) is None


def test_the_bound_is_the_kept_json_size_least_recently_used_out_first() -> None:
    one = len(_result("q0").model_dump_json()) + 200
    cache = _listening(max_bytes=3 * one)
    for i in range(3):
        cache.put((i,), _result(f"q{i}"), cache.generation, from_replica=False)
    assert cache.get((0,)) is not None  # 0 is now the most recently used
    cache.put((3,), _result("q3"), cache.generation, from_replica=False)
    assert cache.get((1,)) is None
    assert {k for k in (0, 2, 3) if cache.get((k,)) is not None} == {0, 2, 3}
    huge = SearchResult(query="x" * (4 * one), took_ms=1, hits=[], facets=EMPTY)
    cache.put(("huge",), huge, cache.generation, from_replica=False)
    assert cache.get(("huge",)) is None


async def test_a_hit_reports_its_own_time_and_a_miss_computes_once() -> None:
    cache = _listening()
    calls = 0

    async def compute() -> tuple[SearchResult, bool]:
        nonlocal calls
        calls += 1
        return _result(), False

    first = await cache.answer(("q",), compute)
    second = await cache.answer(("q",), compute)
    assert calls == 1 and first.took_ms == 12.5
    assert second.took_ms < 12.5 and second.query == first.query
    # The miss was serialised once, and those bytes kept; the hit's JSON carries its own time.
    assert first.json_bytes() is first.json_bytes()
    assert SearchResult.model_validate_json(first.json_bytes()).model_dump() == first.model_dump()
    assert SearchResult.model_validate_json(second.json_bytes()).took_ms == second.took_ms


async def test_the_watcher_empties_on_notification_and_bypasses_while_disconnected() -> None:
    cache = ResultCache(1 << 20, ttl=60)
    changed, connected, disconnected = asyncio.Event(), asyncio.Event(), asyncio.Event()
    disconnected.set()
    task = asyncio.create_task(cache.watch(changed, connected, disconnected))
    try:
        await asyncio.sleep(0)
        assert not cache.listening
        disconnected.clear()
        connected.set()
        await wait_for(_is(lambda: cache.listening), timeout=5, message="listening")
        cache.put(("q",), _result(), cache.generation, from_replica=False)
        assert len(cache) == 1
        changed.set()
        await wait_for(_is(lambda: len(cache) == 0), timeout=5, message="emptied")
        cache.put(("q",), _result(), cache.generation, from_replica=False)
        connected.clear()
        disconnected.set()
        await wait_for(_is(lambda: not cache.listening), timeout=5, message="bypassed")
        assert len(cache) == 0 and cache.get(("q",)) is None
    finally:
        task.cancel()


async def test_searches_missing_the_same_answer_at_once_share_one_computation() -> None:
    cache = _listening()
    release = asyncio.Event()
    calls = 0

    async def compute() -> tuple[SearchResult, bool]:
        nonlocal calls
        calls += 1
        await release.wait()
        return _result(), False

    burst = [asyncio.create_task(cache.answer(("q",), compute)) for _ in range(5)]
    await wait_for(_is(lambda: calls >= 1), timeout=5, message="the first computation")
    release.set()
    answers = await asyncio.gather(*burst)
    assert calls == 1 and {a.query for a in answers} == {"nurse"}
    for answer in answers:  # a shared answer is served anew: its JSON, its own time
        assert SearchResult.model_validate_json(answer.json_bytes()).took_ms == answer.took_ms


async def test_a_waiter_computes_its_own_when_a_listing_changed_or_the_first_failed() -> None:
    cache = _listening()
    release = asyncio.Event()
    calls = 0

    async def compute() -> tuple[SearchResult, bool]:
        nonlocal calls
        calls += 1
        if calls == 1:
            await release.wait()
            raise RuntimeError("the database went away")
        return _result(), False

    first = asyncio.create_task(cache.answer(("q",), compute))
    await wait_for(_is(lambda: calls == 1), timeout=5, message="the first computation")
    waiter = asyncio.create_task(cache.answer(("q",), compute))
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(RuntimeError):
        await first
    assert (await waiter).query == "nurse" and calls == 2

    # A change during a computation: a search arriving after it does not wait for that one.
    calls = 0
    release.clear()

    async def slow() -> tuple[SearchResult, bool]:
        nonlocal calls
        calls += 1
        run = calls
        if run == 1:
            await release.wait()
        return _result(f"run {run}"), False

    before = asyncio.create_task(cache.answer(("r",), slow))
    await wait_for(_is(lambda: calls == 1), timeout=5, message="the first computation")
    cache.invalidate()
    after = await cache.answer(("r",), slow)
    release.set()
    assert after.query == "run 2" and (await before).query == "run 1"
    kept = cache.get(("r",))
    assert kept is not None and kept.query == "run 2"  # the first began before the change
