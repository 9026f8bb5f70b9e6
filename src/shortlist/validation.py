"""Input checks every pipeline's models share."""

from __future__ import annotations

import re
from typing import Any

_DIGITS = re.compile(r"[0-9]{1,9}")


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


def small_int(text: str | None) -> int | None:
    """A query/header value as a non-negative integer of at most nine ASCII digits, else None.

    Never raises: ``int()`` accepts "²"-like digits only to fail on them, and raises on a
    5000-digit string; a page must answer such input with its default, not a 500.
    """
    text = (text or "").strip()
    return int(text) if _DIGITS.fullmatch(text) else None


def blank_to_none(value: object) -> object:
    """A pydantic ``BeforeValidator``: a blank string is an absent value. CSV cells and HTML
    forms (an untouched ``salary_min=``) say "no value" with an empty string."""
    return None if isinstance(value, str) and not value.strip() else value


BLANK = {"type": "string", "pattern": r"^\s*$"}
"""The JSON schema of a blank string (what :func:`blank_to_none` takes for no value)."""


def blank_allowed(schema: dict[str, Any]) -> dict[str, Any]:
    """``json_schema_extra`` of a query parameter read through :func:`blank_to_none`: its
    published schema (OpenAPI) says what it accepts, ``schema``, a blank string or nothing."""
    return {"anyOf": [schema, BLANK, {"type": "null"}]}
