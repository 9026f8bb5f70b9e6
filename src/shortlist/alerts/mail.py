"""Alert e-mails and their delivery through ``SHORTLIST_SMTP_RELAY_URL`` (aiosmtplib,
https://aiosmtplib.readthedocs.io/en/latest/usage.html).

Every digest carries RFC 8058's one-click unsubscribe: ``List-Unsubscribe`` with the HTTPS URL
of the search's token and ``List-Unsubscribe-Post: List-Unsubscribe=One-Click`` (a mailbox
provider POSTs ``List-Unsubscribe=One-Click`` to that URL; a GET of it only shows a page) —
the latter only when the URL is HTTPS, as RFC 8058 requires (``SHORTLIST_PUBLIC_URL``; the
worker says so at start when digests would go out without it). The
envelope sender is the digest's VERP address on the e-mail intake (``bounce-<id>-<mac>@``
``SHORTLIST_MAIL_DOMAIN``), so a bounce names the message it is about (:mod:`.bounces`).

What the relay answers decides what comes next (RFC 5321 §4.2.1, RFC 3463): a 5xx refusal of
the recipient is a hard bounce (:class:`HardBounce`: the address gets nothing more), a 4xx
(421, 450, 451, 452 …) or a relay that cannot be reached is a deferral (:class:`Deferred`:
tried again later, backing off), any other 5xx refuses this message only (:class:`Refused`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from urllib.parse import urlencode

from shortlist.errors import PermanentError, TransientError
from shortlist.listings.mail.reply import SEND_TIMEOUT, Relay

ONE_CLICK = "List-Unsubscribe=One-Click"


class Deferred(TransientError):
    """The relay said try later (4xx), or could not be reached."""


class HardBounce(PermanentError):
    """The relay refused the recipient for good (5xx at RCPT)."""


class Refused(PermanentError):
    """The relay refused this message for good (5xx other than the recipient's)."""


@dataclass(frozen=True)
class DigestJob:
    title: str
    company: str
    city: str
    salary: str | None
    slug: str
    score: float


def new_message_id(domain: str) -> str:
    return make_msgid(idstring="alert", domain=domain)


def job_link(base: str, slug: str, query: str) -> str:
    return f"{base}/jobs/{slug}?{urlencode({'q': query})}"


def search_link(base: str, query: str, location: str | None) -> str:
    params = {"q": query} | ({"location": location} if location else {})
    return f"{base}/?{urlencode(params)}"


def unsubscribe_link(base: str, token: str) -> str:
    return f"{base}/api/alerts/unsubscribe?{urlencode({'token': token})}"


def digest_message(
    *,
    sender: str,
    to: str,
    message_id: str,
    query: str,
    location: str | None,
    jobs: Sequence[DigestJob],
    base: str,
    unsubscribe_token: str,
) -> EmailMessage:
    n = len(jobs)
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = f"{n} new job{'s' if n != 1 else ''} for “{query}”"[:300]
    msg["Message-ID"] = message_id
    msg["Date"] = format_datetime(datetime.now(UTC))
    msg["Auto-Submitted"] = "auto-generated"
    unsubscribe = unsubscribe_link(base, unsubscribe_token)
    msg["List-Unsubscribe"] = f"<{unsubscribe}>"
    if unsubscribe.startswith("https://"):
        # RFC 8058 §3.1: one-click is offered only with an HTTPS URI (a POST over plain HTTP
        # could be replayed or altered on its way); an http:// board (SHORTLIST_PUBLIC_URL
        # unset or local) still gets the plain List-Unsubscribe link (RFC 2369).
        msg["List-Unsubscribe-Post"] = ONE_CLICK
    lines = [f"New jobs matching your saved search “{query}”"]
    if location:
        lines[0] += f" in {location}"
    lines.append("")
    for job in jobs:
        pay = f" · {job.salary}" if job.salary else ""
        lines.append(
            f"• {job.title} — {job.company}, {job.city}{pay} ({round(job.score * 100)}% match)"
        )
        lines.append(f"  {job_link(base, job.slug, query)}")
    lines += [
        "",
        f"All results: {search_link(base, query, location)}",
        "",
        "You get this because you saved this search and confirmed your address.",
        f"Stop these e-mails: {unsubscribe}",
    ]
    msg.set_content("\n".join(lines) + "\n")
    return msg


def confirmation_message(
    *, sender: str, to: str, query: str, frequency: str, confirm_url: str, valid_hours: float
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = f"Confirm your job alert for “{query}”"[:300]
    msg["Message-ID"] = make_msgid(idstring="confirm", domain=sender.rpartition("@")[2] or None)
    msg["Date"] = format_datetime(datetime.now(UTC))
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content(
        f"Someone (we hope you) asked to be e-mailed new jobs matching “{query}”"
        f" ({frequency}).\n\nTo start them, confirm your address:\n\n  {confirm_url}\n\n"
        f"The link works for {round(valid_hours)} hours. If you did not ask for this, ignore this"
        " message: nothing will be sent to you.\n"
    )
    return msg


async def deliver(relay: Relay, msg: EmailMessage, *, envelope_from: str, to: str) -> None:
    """Hand ``msg`` to the relay with ``envelope_from`` as its return path; raises
    :class:`Deferred`, :class:`HardBounce` or :class:`Refused` by what the relay said."""
    import aiosmtplib

    try:
        await aiosmtplib.send(
            msg,
            sender=envelope_from,
            recipients=[to],
            hostname=relay.host,
            port=relay.port,
            use_tls=relay.tls,
            username=relay.username,
            password=relay.password,
            timeout=SEND_TIMEOUT,
        )
    except aiosmtplib.SMTPRecipientsRefused as exc:
        codes = [r.code for r in exc.recipients]
        if codes and all(500 <= c < 600 for c in codes):
            raise HardBounce(f"the relay refused the recipient ({codes[0]})") from exc
        raise Deferred(f"the relay deferred the recipient ({codes[0] if codes else '?'})") from exc
    except aiosmtplib.SMTPResponseException as exc:
        if 500 <= exc.code < 600:
            raise Refused(f"the relay refused the message ({exc.code})") from exc
        raise Deferred(f"the relay deferred the message ({exc.code})") from exc
    except (aiosmtplib.SMTPException, OSError) as exc:
        raise Deferred(f"the SMTP relay could not be reached: {type(exc).__name__}") from exc
