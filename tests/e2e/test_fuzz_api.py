"""Schemathesis over the app's OpenAPI schema (in-process, ASGI), reduced: a few cases per
operation, auth mode and data mode (``make chaos`` runs ≥ 1,000). Zero 5xx, zero violations
of the documented schema (status codes, content types, bodies, headers), and every input that
violates the schema rejected with a 4xx."""

from __future__ import annotations

from tests.chaos.fuzz import run_fuzz
from tests.chaos.scenarios import record

REDUCED_EXAMPLES = 3


def test_fuzzed_requests_get_documented_answers_and_never_a_5xx(db_url: str) -> None:
    report = run_fuzz(db_url, max_examples=REDUCED_EXAMPLES, give_up_early=True)
    record("schemathesis (reduced)", "pytest tests/e2e/test_fuzz_api.py", report.figures())
    assert report.cases >= 200, report.figures()
    assert report.server_errors == 0, report.failures[:5]
    assert not report.failures, "\n\n".join(report.failures[:10])
