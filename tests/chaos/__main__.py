"""``python -m tests.chaos`` (``make chaos``): the full reliability and security suite.

Runs, with pytest, the full-size scenarios of ``tests/chaos/suite.py`` (20 crash rounds, three
database restarts, provider chaos, graceful stops, ≥ 1,000 schemathesis cases, 20 kills of the
alert and webhook senders) and the
access-control and bad-input tests, then prints every figure. Extra arguments go to pytest
(e.g. ``python -m tests.chaos -k crashes``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGETS = [
    "tests/chaos/suite.py",
    "tests/e2e/test_access_control.py",
    "tests/integration/test_bad_input.py",
    # Issue 42's proof at full size: 20 SIGKILLs of the alert matcher and sender, of the
    # webhook sender (`make test` runs them with 5).
    "tests/e2e/test_alerts_kill.py",
    "tests/e2e/test_webhook_sender_kill.py",
]


class FiguresReport:
    """Prints the figures of every scenario that ran, at the end of the session."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from tests.chaos.scenarios import FIGURES

        terminalreporter.section("chaos figures")
        for entry in FIGURES:
            terminalreporter.write_line(json.dumps(entry, default=str))


def main(argv: list[str]) -> int:
    os.chdir(ROOT)
    os.environ.setdefault("SHORTLIST_TEST_KILLS", "20")
    args = [*TARGETS, "-p", "no:cacheprovider", "-o", "timeout=1800", "-ra", *argv]
    return int(pytest.main(args, plugins=[FiguresReport()]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
