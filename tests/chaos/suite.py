"""The full-size chaos suite (``make chaos`` = ``python -m tests.chaos``). Not collected by
``make test`` (the file name does not match ``test_*.py``); the reduced versions of these
scenarios are ``tests/e2e/test_reliability.py`` and ``tests/e2e/test_fuzz_api.py``."""

from __future__ import annotations

import pytest

from tests.chaos import scenarios
from tests.chaos.fuzz import run_fuzz
from tests.chaos.scenarios import FULL

COMMAND = "make chaos"
FULL_FUZZ_EXAMPLES = 25
"""Per (operation, data mode, auth mode): about 1,100 requests in all."""


def test_worker_crashes(db_url: str) -> None:
    figures = scenarios.worker_crashes(FULL, db_url)
    scenarios.record("worker crashes", COMMAND, figures)
    assert figures["kills"] == FULL.crash_rounds


def test_worker_kills_during_backfills(db_url: str) -> None:
    figures = scenarios.kills_during_backfills(FULL, db_url)
    scenarios.record("worker kills during backfills (default lease)", COMMAND, figures)
    assert figures["kills"] == FULL.kill_count
    assert figures["release_max_s"] <= 45.0
    assert figures["not_running_with_work_samples"] == 0
    assert figures["lost_worker_casualties"] == 0, figures


def test_embedded_postgres_killed() -> None:
    figures = scenarios.embedded_postgres_killed(FULL)
    scenarios.record("embedded PostgreSQL killed", COMMAND, figures)
    assert figures["search_answers_again_s"] <= 15.0
    assert figures["supervisor_logged_restart"]
    assert (figures["vectors_lost"], figures["results_lost"]) == (0, 0)
    assert figures["serve_exit_code"] == 0
    assert not figures["postgres_left_running"]


def test_database_restarts() -> None:
    figures = scenarios.database_restart(FULL)
    scenarios.record("database restarts", COMMAND, figures)
    assert figures["worst_resume_s"] <= 10.0


def test_provider_chaos(db_url: str) -> None:
    figures = scenarios.provider_chaos(FULL, db_url)
    scenarios.record("provider chaos", COMMAND, figures)


@pytest.mark.parametrize("command", ["worker", "serve"])
def test_graceful_stop_under_load(db_url: str, command: str) -> None:
    figures = scenarios.graceful_stop(FULL, db_url, command=command)
    scenarios.record(f"graceful stop ({command})", COMMAND, figures)


def test_graceful_stop_with_a_hung_call(db_url: str) -> None:
    figures = scenarios.stop_with_hung_call(db_url)
    scenarios.record("graceful stop (hung call)", COMMAND, figures)


def test_schemathesis_full(db_url: str) -> None:
    report = run_fuzz(db_url, max_examples=FULL_FUZZ_EXAMPLES)
    scenarios.record("schemathesis (full)", COMMAND, report.figures())
    assert report.cases >= 1000, report.figures()
    assert report.server_errors == 0, report.failures[:5]
    assert not report.failures, "\n\n".join(report.failures[:10])
