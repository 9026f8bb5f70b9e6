"""A person's LinkedIn identity, the identifier providers have in common: the talent vendors
name people by it (``talent.vendors.base.canonical_external_id``) and the privacy rules
recognise a forgotten person by it (``shortlist.privacy``)."""

from __future__ import annotations

import re
from urllib.parse import unquote

LINKEDIN_PREFIX = "linkedin:"
_LINKEDIN_SLUG = re.compile(r"linkedin\.com/in/([^/?#\s]+)", re.IGNORECASE)


def linkedin_slug(url_or_slug: str | None) -> str | None:
    """The normalised slug of a LinkedIn profile URL (``https://www.linkedin.com/in/Jane-Doe/``
    and ``linkedin.com/in/jane-doe`` are one person), or None if it is not one."""
    if not url_or_slug:
        return None
    match = _LINKEDIN_SLUG.search(url_or_slug)
    if match is None:
        return None
    slug = unquote(match.group(1)).strip().strip("/").lower()
    return slug or None
