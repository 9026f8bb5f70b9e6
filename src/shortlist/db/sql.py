"""Named SQL: ``-- name: foo`` blocks in a ``.sql`` file, loaded into a mapping (as procrastinate),
and the one rule that fills a statement's placeholders.

Queries stay plain SQL next to the code that runs them; Python refers to them by name. A block's
leading comment lines say what it does (they are for the reader of the file, not sent with it).
Each file is read once per process, however many modules use it.

A statement that needs what only Python knows (a table, a model space's column, another named
fragment) says so with ``{name}``; :func:`compose` puts a :mod:`psycopg.sql` composable there.
Only the names given are filled: any other brace (an array literal such as ``'{a}'``) is kept.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import LiteralString

from psycopg import sql

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
