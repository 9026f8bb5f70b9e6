"""Named SQL: ``-- name: foo`` blocks in a ``.sql`` file, loaded into a mapping (as procrastinate),
and the one rule that fills a statement's placeholders.

Queries stay plain SQL next to the code that runs them; Python refers to them by name. A block's
leading comment lines say what it does (they are for the reader of the file, not sent with it).
Each file is read once per process, however many modules use it.

A statement that needs what only Python knows (a table, a model space's column, another named
fragment) says so with ``{name}``; :func:`compose` puts a :mod:`psycopg.sql` composable there.
Only the names given are filled: any other brace (an array literal such as ``'{a}'``) is kept.
A statement made of other blocks of its file names them the same way (:func:`compose_named`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import LiteralString

from psycopg import AsyncRawCursor, sql
from psycopg.rows import dict_row

from shortlist.db.types import AsyncConn, Row

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_TOKEN = re.compile(r"\{([a-z_]+)\}")


def like_pattern(text: str) -> str:
    """``%text%`` for (I)LIKE, with LIKE's own metacharacters (``%``, ``_``, ``\\``) taken
    literally. With ILIKE, a case-insensitive substring match that a trigram index can serve."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _statement(block: str) -> LiteralString:
    lines = block.strip().splitlines(keepends=True)
    while lines and lines[0].lstrip().startswith("--"):
        lines.pop(0)
    return "".join(lines).strip().rstrip(";")


@functools.cache
def load_queries(package: str, filename: str = "queries.sql") -> Mapping[str, LiteralString]:
    """The named statements of ``package/filename``, read once; a name defined twice is an error."""
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    parts = _NAME.split(text)
    queries: dict[str, LiteralString] = {}
    # parts = [preamble, name1, body1, name2, body2, ...]
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"duplicate query name {name!r} in {package}/{filename}")
        queries[name] = _statement(body)
    return MappingProxyType(queries)


def compose(statement: LiteralString, **parts: sql.Composable) -> sql.Composed:
    """``statement`` with each ``{name}`` of ``parts`` replaced by its composable."""
    pieces: list[sql.Composable] = []
    last = 0
    for match in _TOKEN.finditer(statement):
        if match.group(1) not in parts:
            continue
        pieces.append(sql.SQL(statement[last : match.start()]))
        pieces.append(parts[match.group(1)])
        last = match.end()
    pieces.append(sql.SQL(statement[last:]))
    return sql.Composed(pieces)


def compose_named(
    queries: Mapping[str, LiteralString], name: str, **parts: sql.Composable
) -> sql.Composed:
    """Statement ``name`` of ``queries`` by :func:`compose`'s rule, where a ``{x}`` that
    ``parts`` does not fill is filled by the block ``x`` of ``queries``, composed the same way
    (with the same ``parts``): a statement names the blocks it is made of, and the file says
    how they fit together."""
    statement = queries[name]
    blocks = {
        token: compose_named(queries, token, **parts)
        for token in {m.group(1) for m in _TOKEN.finditer(statement)}
        if token not in parts and token in queries
    }
    return compose(statement, **parts, **blocks)


_PLACEHOLDER = re.compile(rb"%\(([a-z_][a-z0-9_]*)\)s|%%")


@dataclass(frozen=True)
class Positional:
    """A statement whose ``%(name)s`` placeholders are PostgreSQL's own ``$1``, ``$2``, … (one
    number per name, as psycopg numbers them), converted once, to run on a raw cursor
    (:func:`execute_positional`). psycopg converts a statement's placeholders on every execute
    unless the statement is at most 4,096 bytes (``psycopg._queries.MAX_CACHED_STATEMENT_LENGTH``,
    which it caches): ~0.25 ms of the event loop for a job search's 4.8 kB first-page
    statement."""

    query: bytes
    names: tuple[str, ...]

    def values(self, params: Mapping[str, object]) -> list[object]:
        return [params[name] for name in self.names]


def positional(statement: sql.Composable) -> Positional:
    """``statement`` (with ``%(name)s`` placeholders only, and ``%%`` for a percent sign) as a
    :class:`Positional`."""
    names: dict[bytes, int] = {}

    def number(match: re.Match[bytes]) -> bytes:
        if match.group(0) == b"%%":
            return b"%"
        return b"$%d" % names.setdefault(match.group(1), len(names) + 1)

    query = _PLACEHOLDER.sub(number, statement.as_bytes(None))
    if b"%" in _PLACEHOLDER.sub(b"", statement.as_bytes(None)):
        raise ValueError("only %(name)s placeholders (and %%) are converted")
    return Positional(query, tuple(name.decode() for name in names))


async def execute_positional(
    conn: AsyncConn, statement: Positional, params: Mapping[str, object]
) -> list[Row]:
    """The rows of ``statement`` run once with ``params`` (by name; others are ignored), not
    prepared (a custom plan for these values every time)."""
    cur = AsyncRawCursor(conn, row_factory=dict_row)
    async with cur:
        await cur.execute(statement.query, statement.values(params), prepare=False)
        return await cur.fetchall()
