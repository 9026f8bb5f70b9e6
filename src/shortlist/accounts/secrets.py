"""Random single-use secrets (sessions, invitations, links): 256 bits, stored as sha256.

A fast hash is right for them as for API tokens (shortlist.auth): nothing smaller than the
secret itself can be guessed."""

from __future__ import annotations

import hashlib
import secrets


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def same(a: str, b: str) -> bool:
    return secrets.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
