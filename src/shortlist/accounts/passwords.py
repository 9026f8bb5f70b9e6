"""Passwords (OWASP ASVS 5.0 V6.2): at least 8 characters and at most 128, any characters
(paste allowed, no composition rules), refused when on the bundled list of common passwords;
stored as Argon2id hashes (pwdlib, https://frankie567.github.io/pwdlib/guide/).

Hashing costs ~50 ms of CPU and 64 MB: it runs in a worker thread (argon2-cffi releases the
GIL), never on the event loop."""

from __future__ import annotations

import asyncio
from functools import lru_cache
from importlib.resources import files

from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher

from shortlist.errors import BadInput

MIN_LENGTH = 8
MAX_LENGTH = 128

ARGON2 = Argon2Hasher()
_HASHER = PasswordHash((ARGON2,))
DUMMY_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$JAEE46XFl0B0TIxtcnX+Dw"
    "$tWINftjTINhbIe+WG6e7/VRxL+4xARy3pNkbcisvILg"
)
"""Verified against when the address is unknown (or has no password), so an unknown address
costs the same time as a known one (ASVS 6.3.8: no user enumeration by timing): the hash of
"shortlist: no such account" with :data:`ARGON2`'s parameters, which are part of the string and
set the cost of verifying it (tests/unit/test_passwords.py holds the two together). A literal,
not hashed at import: that cost every process that imports this (each CLI command, worker and
server) ~0.3 s of CPU and 64 MB at start."""
_DUMMY_HASH = DUMMY_HASH


@lru_cache(maxsize=1)
def common_passwords() -> frozenset[str]:
    text = files("shortlist.accounts").joinpath("common-passwords.txt").read_text("utf-8")
    return frozenset(
        line.strip().lower() for line in text.splitlines() if line and not line.startswith("#")
    )


def check_new_password(password: str) -> None:
    """A new password's rules; a :class:`BadInput` naming the one broken."""
    if len(password) < MIN_LENGTH:
        raise BadInput(
            f"the password must have at least {MIN_LENGTH} characters (15 or more suggested)",
            field="password",
        )
    if len(password) > MAX_LENGTH:
        raise BadInput(f"the password may have at most {MAX_LENGTH} characters", field="password")
    if password.lower() in common_passwords():
        raise BadInput(
            "this password is one of the most common ones: choose another", field="password"
        )


async def hash_password(password: str) -> str:
    check_new_password(password)
    return await asyncio.to_thread(_HASHER.hash, password)


async def verify_password(password: str, stored: str | None) -> bool:
    """Whether ``password`` matches ``stored``; with nothing stored, the same work is done
    against a dummy hash and the answer is False."""
    # Compared exactly as received (ASVS 6.2.8); one longer than any password may be is
    # checked against the dummy (same work, no 1 MB Argon2 input) and never matches.
    if len(password) > MAX_LENGTH:
        stored = None
        password = ""
    if stored is None:
        await asyncio.to_thread(_HASHER.verify, password, _DUMMY_HASH)
        return False
    try:
        return await asyncio.to_thread(_HASHER.verify, password, stored)
    except Exception:  # an unreadable stored hash is no match
        return False
