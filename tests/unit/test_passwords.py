"""The dummy hash an unknown address is verified against costs what a stored one does."""

from __future__ import annotations

from pwdlib.hashers.argon2 import Argon2Hasher

from shortlist.accounts import passwords


def test_the_dummy_hash_has_the_product_hashers_parameters() -> None:
    # The parameters (memory, time, lanes) are in the string and set the cost of verifying it.
    assert not passwords.ARGON2.check_needs_rehash(passwords.DUMMY_HASH)
    assert passwords.DUMMY_HASH.startswith("$argon2id$")
    assert passwords.ARGON2.verify("shortlist: no such account", passwords.DUMMY_HASH)


def test_other_parameters_would_be_noticed() -> None:
    cheaper = Argon2Hasher(time_cost=1, memory_cost=8, parallelism=1)
    assert passwords.ARGON2.check_needs_rehash(cheaper.hash("shortlist: no such account"))
