"""Input checks every pipeline's models share."""

from __future__ import annotations


def is_storable_text(value: str) -> bool:
    """Whether PostgreSQL can store ``value`` as text. NUL cannot be stored, and a lone
    surrogate (legal in a JSON escape) cannot be encoded as UTF-8; either would surface as a
    database error (a 500) instead of the caller's mistake (a 4xx)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


def storable(value: str) -> str:
    """A pydantic validator body: refuse text PostgreSQL cannot store."""
    if not is_storable_text(value):
        raise ValueError("must be text without NUL characters or lone surrogates")
    return value
