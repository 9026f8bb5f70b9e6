"""The web UI: server-rendered pages (Jinja2), a little vanilla JS, and the SSE result stream.

No build step and nothing loaded from other origins: templates and static files ship inside the
package and are served by the app itself (``shortlist.web.pages``).
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"[0-9]{1,9}")


def small_int(text: str | None) -> int | None:
    """A query/header value as a non-negative integer of at most nine ASCII digits, else None.

    Never raises: ``int()`` accepts "²"-like digits only to fail on them, and raises on a
    5000-digit string; a page must answer such input with its default, not a 500.
    """
    text = (text or "").strip()
    return int(text) if _DIGITS.fullmatch(text) else None
