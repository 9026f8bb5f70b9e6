"""E-mail addresses never leave the database through logs, stored errors or the status report.

Free text — a recruiter's query, a provider's error body quoting a profile — may hold one, and
logs and reports end up in terminals, log stores and screenshots.
"""

from __future__ import annotations

import re

_EMAIL = re.compile(r"[^\s@\"'<>(),;:]+@[^\s@\"'<>(),;:]+\.[^\s@\"'<>(),;:]+")


def redact_emails(text: str) -> str:
    """``text`` with anything shaped like an e-mail address replaced by ``[e-mail]``."""
    return _EMAIL.sub("[e-mail]", text)
