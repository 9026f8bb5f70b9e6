"""The one way SQL is loaded and filled (shortlist.db.sql): each ``.sql`` file read once, a
block's leading comments kept out of the statement, ``{name}`` filled only for the names given,
and every named statement used by its name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from psycopg import sql

import shortlist
from shortlist.db.sql import compose, load_queries

_SRC = Path(shortlist.__file__).parent


def _named_files() -> list[tuple[str, str]]:
    found = []
    for path in sorted(_SRC.rglob("*.sql")):
        if "migrations" in path.parts:
            continue
        package = ".".join(path.parent.relative_to(_SRC.parent).parts)
        found.append((package, path.name))
    return found


@pytest.mark.parametrize(("package", "filename"), _named_files())
def test_every_named_file_loads_once_into_statements_without_their_comments(
    package: str, filename: str
) -> None:
    queries = load_queries(package, filename)
    assert load_queries(package, filename) is queries  # one read, however many modules ask
    assert queries, f"{package}/{filename} names no statement"
    for name, statement in queries.items():
        assert statement, name
        assert not statement.lstrip().startswith("--"), name
        assert not statement.endswith(";"), name


def test_loaded_statements_cannot_be_changed_by_one_user_for_the_others() -> None:
    queries = load_queries("shortlist.queue", "lease.sql")
    with pytest.raises(TypeError):
        queries["settle"] = "SELECT 1"  # type: ignore[index]


def test_compose_fills_only_the_names_given() -> None:
    statement = compose(
        "SELECT {col} FROM {table} WHERE tags && '{a}' AND {col} IS NOT NULL",
        col=sql.Identifier("embedding"),
        table=sql.Identifier("job_listings"),
    )
    assert statement.as_string(None) == (
        'SELECT "embedding" FROM "job_listings" WHERE tags && \'{a}\' AND "embedding" IS NOT NULL'
    )


RUN_IN_TURN = {("shortlist.db", "indexes.sql")}
"""Files whose statements are run one after the other, never by name (``migrate.PLAIN_INDEXES``:
each block builds the index it is named after)."""


def test_every_named_statement_is_used_by_its_name() -> None:
    """A statement nothing runs is a second truth that drifts from the one that runs: each name
    appears quoted in a module of ``src/`` (``QUERIES["name"]``), or as a ``{name}`` fragment of
    another statement."""
    python = "\n".join(p.read_text(encoding="utf-8") for p in _SRC.rglob("*.py"))
    # Every run of characters between two quotes, overlapping ones included (one scan; a
    # search per name took seconds).
    quoted = set(re.findall(r"(?=[\"']([^\"'\s]+)[\"'])", python))
    sql_text = "\n".join(
        (_SRC.parent / package.replace(".", "/") / filename).read_text(encoding="utf-8")
        for package, filename in _named_files()
    )
    unused = [
        f"{package}/{filename}: {name}"
        for package, filename in _named_files()
        if (package, filename) not in RUN_IN_TURN
        for name in load_queries(package, filename)
        if name not in quoted and "{" + name + "}" not in sql_text
    ]
    assert unused == []
