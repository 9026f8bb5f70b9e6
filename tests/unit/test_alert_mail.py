"""The alert digest's headers (shortlist.alerts.mail.digest_message)."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from shortlist.alerts import mail


def digest(base: str) -> EmailMessage:
    return mail.digest_message(
        sender="shortlist alerts <alerts@board.test>",
        to="ada@example.com",
        message_id="<1@board.test>",
        query="python developer",
        location=None,
        jobs=[],
        base=base,
        unsubscribe_token="t0k3n",
    )


def test_one_click_unsubscribe_is_offered_with_an_https_link() -> None:
    msg = digest("https://board.test")
    assert msg["List-Unsubscribe"] == "<https://board.test/api/alerts/unsubscribe?token=t0k3n>"
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


@pytest.mark.parametrize("base", ["http://127.0.0.1:8000", "http://board.test"])
def test_an_http_board_gets_the_plain_link_and_no_one_click(base: str) -> None:
    """RFC 8058 §3.1: one-click needs an HTTPS URI; RFC 2369's link is still given."""
    msg = digest(base)
    assert msg["List-Unsubscribe"] == f"<{base}/api/alerts/unsubscribe?token=t0k3n>"
    assert msg["List-Unsubscribe-Post"] is None
