"""Unit tests: no database. Loopback HTTP fakes of the providers (the simulator app, a fake
OpenAI-compatible server) are allowed; nothing here opens a PostgreSQL connection."""

import pytest


@pytest.fixture(autouse=True)
def _no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit test that reaches for the database fails at once instead of starting one."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("unit tests must not touch the database; move it to integration")

    monkeypatch.setattr("psycopg.connect", refuse)
    monkeypatch.setattr("psycopg.AsyncConnection.connect", refuse)
