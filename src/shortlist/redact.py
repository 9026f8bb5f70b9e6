"""E-mail addresses never leave the database through logs, error bodies, stored errors or the
status report; LinkedIn ids appear in logs at DEBUG only.

Free text — a recruiter's query, a provider's error body quoting a profile — may hold one, and
logs and reports end up in terminals, log stores and screenshots.
"""

from __future__ import annotations

import logging
import re

_PART = r"[^\s@\"'<>(),;:]"
# An address starts only where a run of address characters starts (the lookbehind): tried at
# every position instead, each attempt would scan the rest of a long run (40 KB without a space:
# 2.6 s); tried only at a run's start, every character is scanned a bounded number of times.
_EMAIL = re.compile(rf"(?<!{_PART}){_PART}+@{_PART}+\.{_PART}+")
MAX_ADDRESS = 320
"""The longest address (RFC 3696 errata 1690: 64 + 1 + 255): the margin kept past a limit, so an
address cut by the limit is still seen whole and redacted."""


def redact_emails(text: str, limit: int | None = None) -> str:
    """``text`` with anything shaped like an e-mail address replaced by ``[e-mail]``; with a
    ``limit``, at most that many characters, cut before redacting (the work is bounded by the
    limit, not by the text) but never through an address left unredacted."""
    if limit is None:
        return _EMAIL.sub("[e-mail]", text)
    return _EMAIL.sub("[e-mail]", text[: limit + MAX_ADDRESS])[:limit]


# A telephone number: digits with spaces, dots, dashes or brackets between them. Told from a
# year range or a salary ("2024-2026", "80000-100000") by its shape: an international "+", or
# a leading "0" or "(", or several groups, and at least seven digits.
_PHONE = re.compile(r"(?<![\w+])(\+|\(|\b)\d[\d ().-]{5,22}\d(?![\w])")


def _phone(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(c.isdigit() for c in text)
    groups = len(re.findall(r"\d+", text))
    shaped = text[0] in "+(0" or groups >= 3
    return "[phone]" if digits >= 7 and shaped else text


def redact_phones(text: str) -> str:
    """``text`` with anything shaped like a telephone number replaced by ``[phone]``."""
    return _PHONE.sub(_phone, text)


# A LinkedIn slug is usually the person's name ("jane-doe-4b2a"): our external ids
# ("linkedin:<slug>") and profile URLs.
_LINKEDIN_ID = re.compile(r"(linkedin:|linkedin\.com/in/)[^\s/?#\"'<>(),;]+", re.IGNORECASE)


def redact_person_ids(text: str) -> str:
    """``text`` with LinkedIn ids and profile URLs' slugs replaced by ``[id]``."""
    return _LINKEDIN_ID.sub(r"\1[id]", text)


class RedactingFormatter(logging.Formatter):
    """A formatter whose every line — message, arguments, traceback, a provider's error body
    quoted in an exception — has its e-mail addresses redacted, and above DEBUG its LinkedIn
    ids: nothing a log line can carry escapes it, whoever wrote the line (our code, a
    library, the server)."""

    def format(self, record: logging.LogRecord) -> str:
        line = redact_emails(super().format(record))
        # Personal ids are for debugging only: above DEBUG they are masked too.
        return line if record.levelno <= logging.DEBUG else redact_person_ids(line)


def redact_logs(root: logging.Logger | None = None) -> None:
    """Put :class:`RedactingFormatter` on every handler of ``root`` (default: the root
    logger), keeping each handler's format."""
    for handler in (root or logging.getLogger()).handlers:
        current = handler.formatter
        if isinstance(current, RedactingFormatter):
            continue
        fmt = current._fmt if current is not None else None
        datefmt = current.datefmt if current is not None else None
        handler.setFormatter(RedactingFormatter(fmt, datefmt))
