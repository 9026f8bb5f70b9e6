"""Account e-mails: invitations, password resets, address verification. Sent through
``SHORTLIST_SMTP_RELAY_URL`` (shortlist.listings.mail.reply's relay); links point at
``SHORTLIST_PUBLIC_URL`` (unset: http://SHORTLIST_HOST:SHORTLIST_PORT)."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import urlencode

from shortlist.config import Settings
from shortlist.listings.mail.reply import Relay, send


def base_url(settings: Settings) -> str:
    return (settings.public_url or f"http://{settings.host}:{settings.port}").rstrip("/")


def link(settings: Settings, path: str, token: str) -> str:
    return f"{base_url(settings)}{path}?{urlencode({'token': token})}"


def invitation_link(settings: Settings, token: str) -> str:
    return link(settings, "/invitation", token)


def reset_link(settings: Settings, token: str) -> str:
    return link(settings, "/signin/reset", token)


def verify_link(settings: Settings, token: str) -> str:
    return link(settings, "/account/verify", token)


def setup_link(settings: Settings, token: str) -> str:
    return link(settings, "/setup", token)


def relay_of(settings: Settings) -> Relay | None:
    return Relay.from_url(settings.smtp_relay_url) if settings.smtp_relay_url else None


def compose(settings: Settings, *, to: str, subject: str, text: str) -> EmailMessage:
    sender = f"shortlist@{settings.mail_domain}"
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = make_msgid(domain=settings.mail_domain)
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content(text)
    return msg


async def send_link(
    settings: Settings, *, to: str, subject: str, intro: str, url: str, valid_for: str
) -> bool:
    """Send ``url`` to ``to``; False when no relay is configured (nothing sent)."""
    relay = relay_of(settings)
    if relay is None:
        return False
    text = (
        f"{intro}\n\n  {url}\n\nThe link works once, for {valid_for}. If you did not ask for"
        " it, ignore this message.\n"
    )
    await send(relay, compose(settings, to=to, subject=subject, text=text))
    return True
