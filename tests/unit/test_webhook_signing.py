"""Standard Webhooks signatures and the retry schedule, without a database."""

from __future__ import annotations

import base64
import hashlib
import hmac
import random

from shortlist.webhooks import schedule, signing

# The Standard Webhooks libraries' shared test vector (libraries/*/ tests: the same secret, id,
# timestamp and payload give this signature in every language).
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TIMESTAMP = 1614265330
BODY = '{"test": 2432232314}'
SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_signature_is_the_specs_hmac_of_id_timestamp_and_body() -> None:
    assert signing.signature_header([SECRET], MSG_ID, TIMESTAMP, BODY) == SIGNATURE
    # The same, by the spec's words: HMAC-SHA256 keyed by the secret's base64 after whsec_.
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    mac = hmac.new(key, f"{MSG_ID}.{TIMESTAMP}.{BODY}".encode(), hashlib.sha256).digest()
    assert "v1," + base64.b64encode(mac).decode() == SIGNATURE


def test_two_secrets_sign_space_delimited() -> None:
    other = signing.new_secret()
    header = signing.signature_header([SECRET, other], MSG_ID, TIMESTAMP, BODY)
    first, second = header.split(" ")
    assert first == SIGNATURE and second.startswith("v1,") and second != SIGNATURE


def test_secrets_and_ids_are_fresh_and_well_formed() -> None:
    secret = signing.new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    assert signing.new_secret() != secret
    msg = signing.new_msg_id()
    assert msg.startswith("msg_") and "." not in msg and signing.new_msg_id() != msg


def test_the_schedule_is_the_specs_and_spans_about_three_days() -> None:
    assert schedule.RETRY_SCHEDULE[:3] == (5, 300, 1800)
    assert schedule.ATTEMPTS == 10
    assert sum(schedule.RETRY_SCHEDULE) == 75 * 3600 + 35 * 60 + 5  # 75:35:05, as the spec


def test_waits_are_jittered_within_a_fifth_and_retry_after_lengthens_them() -> None:
    rng = random.Random(1)
    waits = [schedule.retry_delay(1, rng) for _ in range(200)]
    assert all(4.0 <= w <= 6.0 for w in waits) and len(set(waits)) == 200
    assert schedule.retry_delay(1, rng, retry_after=120) == 120
    assert 4 <= schedule.retry_delay(1, rng, retry_after=1) <= 6  # never shorter than the schedule
    assert schedule.retry_delay(1, rng, retry_after=10**9) == schedule.MAX_RETRY_AFTER


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    assert schedule.parse_retry_after("120") == 120
    assert schedule.parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 60) == 60
    assert schedule.parse_retry_after("soon") is None
    assert schedule.parse_retry_after(None) is None
