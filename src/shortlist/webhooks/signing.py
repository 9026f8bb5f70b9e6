"""Standard Webhooks 1.0 signatures (spec/standard-webhooks.md, "Signature scheme" and "Webhook
headers"): HMAC-SHA256 over ``{webhook-id}.{webhook-timestamp}.{body}`` with an endpoint's
``whsec_`` secret (base64 of 32 random bytes: the spec asks for 24 to 64), sent as ``v1,<base64>``;
during a secret's rotation the ``webhook-signature`` header carries one signature per secret,
space-delimited, and a receiver accepts the message when any of them verifies.

The HMAC is the spec's library's (``standardwebhooks.Webhook.sign``), so the signature is the one
its verifier computes."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def new_msg_id() -> str:
    """A message's ``webhook-id``: ``msg_`` and 128 random bits (no ``.``, which the signed
    content uses as its delimiter)."""
    return "msg_" + secrets.token_urlsafe(16)


def signature_header(secrets_: Iterable[str], msg_id: str, timestamp: int, body: str) -> str:
    """``webhook-signature``: a ``v1,`` signature per secret, space-delimited."""
    at = datetime.fromtimestamp(timestamp, tz=UTC)
    return " ".join(Webhook(secret).sign(msg_id, at, body) for secret in secrets_)


def headers(secrets_: Iterable[str], msg_id: str, timestamp: int, body: str) -> dict[str, str]:
    """The headers of one attempt: the id (the same on every retry), the attempt's time, and the
    signatures of all three with the body."""
    return {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(secrets_, msg_id, timestamp, body),
    }
