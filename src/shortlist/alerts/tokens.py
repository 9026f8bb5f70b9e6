"""The secrets in alert e-mails, derived rather than stored: ``HMAC(key, purpose:id)`` with the
suppression list's key (``shortlist.privacy.privacy_key``: ``SHORTLIST_PRIVACY_KEY`` or the
database's own secret). A confirmation or unsubscribe token names its saved search and proves
it was ours to send; a VERP bounce address names its digest the same way, so a bounce can
neither be forged for another message nor guessed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import uuid

CONFIRM = "c"
UNSUBSCRIBE = "u"

_TOKEN = re.compile(r"([cu])\.([0-9a-f]{32})\.([A-Za-z0-9_-]{22})")
_VERP = re.compile(r"bounce-([0-9]{1,18})-([0-9a-f]{16})")


def _mac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("ascii"), hashlib.sha256).digest()


def make(key: bytes, purpose: str, search_id: uuid.UUID) -> str:
    """The token of ``purpose`` (:data:`CONFIRM`, :data:`UNSUBSCRIBE`) for a saved search."""
    sig = base64.urlsafe_b64encode(_mac(key, f"{purpose}:{search_id.hex}")[:16]).rstrip(b"=")
    return f"{purpose}.{search_id.hex}.{sig.decode('ascii')}"


def read(key: bytes, purpose: str, token: str) -> uuid.UUID | None:
    """The saved search a genuine token of ``purpose`` names, else None."""
    m = _TOKEN.fullmatch(token.strip())
    if m is None or m.group(1) != purpose:
        return None
    search_id = uuid.UUID(hex=m.group(2))
    return search_id if hmac.compare_digest(make(key, purpose, search_id), token.strip()) else None


def verp_local_part(key: bytes, digest_id: int) -> str:
    """The envelope sender's local part of a digest: bounces to it name the digest."""
    return f"bounce-{digest_id}-{_mac(key, f'bounce:{digest_id}')[:8].hex()}"


def read_verp(key: bytes, local_part: str) -> int | None:
    """The digest a genuine VERP local part names (case aside: some MTAs fold it), else None."""
    m = _VERP.fullmatch(local_part.lower())
    if m is None:
        return None
    digest_id = int(m.group(1))
    ok = hmac.compare_digest(verp_local_part(key, digest_id), local_part.lower())
    return digest_id if ok else None
