from __future__ import annotations

import threading

import psycopg
import pytest

from shortlist.db.migrate import available_migrations, is_up_to_date, migrate
from shortlist.db.pool import connect


def test_migrations_are_idempotent_and_recorded(db_url: str) -> None:
    assert migrate(db_url) == []  # the template already applied everything
    with psycopg.connect(db_url) as conn:
        assert is_up_to_date(conn)
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    assert [r[0] for r in rows] == [m.version for m in available_migrations()]


def test_concurrent_migrators_apply_each_migration_once(pg_server: object) -> None:
    from shortlist.db.embedded import embedded_url

    admin = embedded_url(pg_server)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS concurrent_mig WITH (FORCE)")
        conn.execute("CREATE DATABASE concurrent_mig")
    url = embedded_url(pg_server, "concurrent_mig")
    results: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(len(migrate(url)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(results) == [0, 0, 0, len(available_migrations())]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE concurrent_mig WITH (FORCE)")


def test_listing_constraints_live_in_the_schema(db_url: str) -> None:
    with connect(db_url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "INSERT INTO job_listings (company_name, job_title, city_location, description,"
            " salary_min_ks, salary_max_ks, detail_page_slug)"
            " VALUES ('A', 'B', 'C', 'D', 200, 100, 'x')"
        )
