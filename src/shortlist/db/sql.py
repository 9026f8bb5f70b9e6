"""Named SQL: ``-- name: foo`` blocks in a ``.sql`` file, loaded into a dict (as procrastinate).

Queries stay plain SQL next to the code that runs them; Python refers to them by name.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import LiteralString, cast

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def like_pattern(text: str) -> str:
    """``%text%`` for (I)LIKE, with LIKE's own metacharacters (``%``, ``_``, ``\\``) taken
    literally. With ILIKE, a case-insensitive substring match that a trigram index can serve."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def load_queries(package: str, filename: str = "queries.sql") -> dict[str, LiteralString]:
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    parts = _NAME.split(text)
    queries: dict[str, LiteralString] = {}
    # parts = [preamble, name1, body1, name2, body2, ...]
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"duplicate query name {name!r} in {package}/{filename}")
        queries[name] = cast(LiteralString, body.strip().rstrip(";"))
    return queries
