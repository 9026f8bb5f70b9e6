"""The sender hears back: the listing's link, or why nothing was posted.

Sent through ``SHORTLIST_SMTP_RELAY_URL`` (``smtp://[user:password@]host[:port]``, ``smtps://``
for implicit TLS) with aiosmtplib (https://aiosmtplib.readthedocs.io/en/latest/usage.html).
Answers carry ``Auto-Submitted: auto-replied`` and go only to human mail (RFC 3834: never to
auto-replies, bounces or lists), so two robots never answer each other forever.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import unquote, urlsplit

from shortlist.errors import ConfigError, TransientError

log = logging.getLogger(__name__)

SEND_TIMEOUT = 30.0


@dataclass(frozen=True)
class Relay:
    host: str
    port: int
    tls: bool
    username: str | None = None
    password: str | None = None

    @classmethod
    def from_url(cls, url: str) -> Relay:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ConfigError(
                "SHORTLIST_SMTP_RELAY_URL must look like smtp://[user:password@]host[:port]"
            )
        tls = parts.scheme == "smtps"
        return cls(
            host=parts.hostname,
            port=parts.port or (465 if tls else 25),
            tls=tls,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )


def build_reply(
    *,
    to: str,
    sender: str,
    subject: str,
    in_reply_to: str | None,
    text: str,
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = ("Re: " + subject if subject else "Your job post")[:300]
    msg["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    msg["Auto-Submitted"] = "auto-replied"
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
        msg["References"] = in_reply_to
    msg.set_content(text)
    return msg


def posted_text(title: str, company: str, city: str, link: str) -> str:
    return (
        f"Thank you: your job post is live.\n\n  {title} at {company} ({city})\n  {link}\n\n"
        "To change or remove it, use the API with your company token.\n"
    )


def rejected_text(reason: str) -> str:
    return (
        f"Nothing was posted from your message:\n\n  {reason}\n\n"
        "Please correct it and send it again.\n"
    )


async def send(relay: Relay, msg: EmailMessage) -> None:
    """Hand the answer to the relay; a relay that is down is a TransientError."""
    import aiosmtplib

    try:
        await aiosmtplib.send(
            msg,
            hostname=relay.host,
            port=relay.port,
            use_tls=relay.tls,
            username=relay.username,
            password=relay.password,
            timeout=SEND_TIMEOUT,
        )
    except (aiosmtplib.SMTPException, OSError) as exc:
        raise TransientError(
            f"the SMTP relay did not take the reply: {type(exc).__name__}"
        ) from exc
