"""``detail_page_slug``: company, title and city in URL form, then the listing's uuid.

The seed's ``slugify_parts`` keeps alphanumeric characters lower-cased and turns every run of
anything else into one hyphen. Which characters count as alphanumeric is our choice, made so
that no one's listing gets an empty or misleading slug:

* Latin letters with accents are folded to ASCII (NFKD, then the combining marks dropped):
  "Zürich" → "zurich", "São Paulo" → "sao-paulo"; ligatures and full-width forms too.
* Letters of other scripts are kept as they are (lower-cased): "東京" stays "東京" rather than
  vanishing, which a strict ASCII transliteration would do. Browsers show them in the address
  bar and percent-encode them on the wire.

The uuid at the end makes the slug unique, and lookups go by that uuid alone
(:func:`listing_id_from_slug`), so a listing renamed after someone bookmarked it still
resolves from its old slug.
"""

from __future__ import annotations

import re
import unicodedata
from uuid import UUID

# A cap on the readable part keeps URLs (and the UNIQUE index entry) short; titles can be 300
# characters, and nobody reads a slug that long.
MAX_TEXT_LENGTH = 120

_UUID_TAIL = re.compile(
    r"(?:^|-)([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE
)


def slugify_part(text: str) -> str:
    """Lower-case alphanumerics; every other run of characters becomes one hyphen; no hyphen
    at either end. May return "" (for punctuation-only input)."""
    # Decompose, lower-case, decompose again: compatibility forms can decompose to capitals
    # ("℠" → "SM"), and some capitals lower to a letter plus a combining mark ("İ" → "i̇"),
    # which is then dropped like any other accent.
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).lower())
    out: list[str] = []
    pending_hyphen = False
    for ch in decomposed:
        if unicodedata.combining(ch):
            continue  # the accent of a letter already written (or of nothing: dropped)
        if ch.isalnum():
            if pending_hyphen and out:
                out.append("-")
            pending_hyphen = False
            out.append(ch)
        else:
            pending_hyphen = True
    # NFC puts back together what NFKD split apart in scripts we keep (e.g. Hangul syllables).
    return unicodedata.normalize("NFC", "".join(out))


def make_detail_page_slug(company: str, title: str, city: str, listing_id: UUID) -> str:
    """``{company}-{title}-{city}-{uuid}``, skipping parts that slugify to nothing."""
    text = "-".join(
        p for p in (slugify_part(company), slugify_part(title), slugify_part(city)) if p
    )
    if len(text) > MAX_TEXT_LENGTH:
        text = text[:MAX_TEXT_LENGTH].rstrip("-")
    return f"{text}-{listing_id}" if text else str(listing_id)


def listing_id_from_slug(id_or_slug: str) -> UUID | None:
    """The listing id a path segment names: a bare uuid, or any slug ending in one."""
    m = _UUID_TAIL.search(id_or_slug.strip())
    if m is None:
        return None
    return UUID(m.group(1))
