"""The relevance guard's scorer."""

from __future__ import annotations

from tests import relevance_guard as guard


def test_the_scorer_counts_what_is_relevant() -> None:
    queries = [guard.GuardQuery("q1", frozenset({"2210"})), guard.GuardQuery("q2", frozenset())]
    series_of = {f"a{i}": "2210" for i in range(5)} | {f"b{i}": "0301" for i in range(10)}
    best = [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]
    worst = [f"b{i}" for i in range(5)] + [f"a{i}" for i in range(5)]
    top = guard.figures(queries, [best, best], series_of)
    assert top == {"P@10": 0.25, "nDCG@10": 0.5}  # q2 has nothing relevant: 0 for both
    low = guard.figures(queries, [worst, worst], series_of)
    assert low["P@10"] == 0.25 and low["nDCG@10"] < top["nDCG@10"]
    assert guard.departures(low, top) and not guard.departures(top, top)
