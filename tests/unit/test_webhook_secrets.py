"""Webhook secrets at rest (shortlist.webhooks.secrets): encrypted with the first key, read with
any; one stored before encryption read as it is; a dropped key is an error of its own."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shortlist.config import Settings, describe_invalid
from shortlist.errors import ConfigError
from shortlist.webhooks.secrets import SecretBox, UnreadableSecret, configured_keys
from shortlist.webhooks.signing import new_secret

OLD = "o" * 32
NEW = "n" * 40


def test_a_secret_is_sealed_and_opened_and_never_stored_as_it_is() -> None:
    box = SecretBox(configured_keys(OLD))
    secret = new_secret()
    sealed = box.seal(secret)
    assert sealed.startswith("fernet:") and secret not in sealed
    assert box.open(sealed) == secret
    assert box.seal(secret) != sealed  # a fresh IV each time
    assert not box.needs_sealing(sealed)
    # Stored before encryption: read as it is, and to be sealed.
    assert box.open(secret) == secret and box.needs_sealing(secret)


def test_a_new_key_first_reads_the_old_and_marks_it_for_sealing_again() -> None:
    secret = new_secret()
    under_old = SecretBox(configured_keys(OLD)).seal(secret)
    rotated = SecretBox(configured_keys(f"{NEW}, {OLD}"))
    assert rotated.open(under_old) == secret
    assert rotated.needs_sealing(under_old)
    assert not rotated.needs_sealing(rotated.seal(secret))
    with pytest.raises(UnreadableSecret, match="SHORTLIST_WEBHOOK_SECRET_KEYS"):
        SecretBox(configured_keys(NEW)).open(under_old)


def test_short_keys_are_refused_without_being_quoted() -> None:
    with pytest.raises(ConfigError):
        configured_keys("short")
    with pytest.raises(ValidationError) as refused:
        Settings(webhook_secret_keys=f"{NEW},tooshort")
    line = describe_invalid(refused.value)  # what start-up prints
    assert "SHORTLIST_WEBHOOK_SECRET_KEYS" in line and "at least 32 characters" in line
    assert "tooshort" not in line and NEW not in line
    assert configured_keys("") == []
