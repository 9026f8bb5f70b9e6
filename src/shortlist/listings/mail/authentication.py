"""Who may hear back: the sender whose From domain the receiving MTA authenticated.

A message's ``From`` and ``Reply-To`` are whatever its writer typed, and so is the envelope
sender on a direct SMTP connection: answering them lets anyone who knows an intake address make
the operator's relay write to any victim (backscatter). The only sender the intake answers is
the one a trusted MTA vouched for, in an ``Authentication-Results`` field (RFC 8601) it added
under its own authserv-id, ``SHORTLIST_MAIL_AUTHSERV_ID``:

* ``dmarc=pass`` whose ``header.from`` is the From address's domain (DMARC's pass already
  means SPF or DKIM passed aligned with it, RFC 7489 §3.1), or
* ``dkim=pass`` whose signing domain ``header.d`` is the From domain or a parent of it, or
* ``spf=pass`` whose ``smtp.mailfrom`` domain (the envelope sender the MTA checked) is the
  From domain or a parent of it.

"A parent of it" is DMARC's relaxed alignment (RFC 7489 §3.1.1) in the direction that needs no
Public Suffix List: whoever holds ``example.com`` holds ``mail.example.com``; a signer below
the From domain (``d=sub.example.com`` for ``@example.com``) is not taken, so a customer's
subdomain on a shared host never speaks for the host. A trusted ``dmarc=fail`` is final (the
domain's own policy refused the message), as is a ``dmarc=pass`` for another domain than the
From read here; ``dmarc=none`` (no policy published) leaves the decision to DKIM and SPF. The
answer goes to the From address, never to ``Reply-To``.

The MTA must remove ``Authentication-Results`` fields bearing its authserv-id from the mail it
receives (RFC 8601 §5; OpenDMARC, OpenDKIM and rspamd do): fields under any other id are
ignored, and without the setting no message is answered. Reading the fields runs on the
server's side, not in a parser process (whose answer is not trusted to pick a recipient), so
it is bounded: the header block's first 64 KB, at most :data:`MAX_FIELDS` trusted fields of at
most :data:`MAX_FIELD_CHARS` each (the ``authres`` parser is quadratic in a field's length:
~10 ms at that size).
"""

from __future__ import annotations

import re
from email.utils import getaddresses

import authres
import authres.dmarc

_HEADER_SCAN = 64 * 1024
MAX_FIELDS = 8
"""Trusted Authentication-Results fields read (an MTA with one milter per method adds 3)."""
MAX_FIELD_CHARS = 2048
_FROM_CHARS = 1000
_FIELD = re.compile(rb"(?m)^([!-9;-~]{1,76})[ \t]*:")
_PARSER = authres.FeatureContext(authres.dmarc)


def _fields(raw: bytes) -> list[tuple[str, str]]:
    """The header block's fields, unfolded: (lower-case name, value). Linear."""
    head = raw[:_HEADER_SCAN]
    ends = [i for i in (head.find(b"\r\n\r\n"), head.find(b"\n\n")) if i >= 0]
    head = head[: min(ends)] if ends else head
    fields: list[tuple[str, list[bytes]]] = []
    for line in head.replace(b"\r\n", b"\n").split(b"\n"):
        if line[:1] in (b" ", b"\t"):
            if fields:
                fields[-1][1].append(line)
            continue
        m = _FIELD.match(line)
        if m is None:
            fields.append(("", []))  # not a field: ends the previous one's folding
            continue
        fields.append((m.group(1).decode("ascii").lower(), [line[m.end() :]]))
    return [
        (name, b" ".join(part.strip() for part in parts).decode("utf-8", "replace"))
        for name, parts in fields
        if name
    ]


def _domain(value: str) -> str:
    """The domain of ``local@domain``, ``@domain`` or ``domain``, lower-case."""
    return value.rpartition("@")[2].strip().strip(".").lower()


def aligned(authenticated: str, from_domain: str) -> bool:
    """``authenticated`` is ``from_domain`` or a parent of it (not a bare top-level name)."""
    authenticated, from_domain = _domain(authenticated), _domain(from_domain)
    if not authenticated or not from_domain:
        return False
    if authenticated == from_domain:
        return True
    return "." in authenticated and from_domain.endswith("." + authenticated)


def from_address(fields: list[tuple[str, str]]) -> str | None:
    """The one address of the one From field, or None (none, several, or no domain)."""
    values = [value for name, value in fields if name == "from"]
    if len(values) != 1 or len(values[0]) > _FROM_CHARS:
        return None
    addresses = [a for _name, a in getaddresses(values) if a]
    if len(addresses) != 1:
        return None
    local, at, domain = addresses[0].rpartition("@")
    if not at or not local or not re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", domain.lower()):
        return None
    return addresses[0]


def _trusted_results(fields: list[tuple[str, str]], authserv_id: str) -> list[object]:
    wanted = authserv_id.lower()
    results: list[object] = []
    taken = 0
    for name, value in fields:
        if name != "authentication-results":
            continue
        head = value.lstrip()
        if not head.lower().startswith(wanted) or head[len(wanted) : len(wanted) + 1] not in (
            ";",
            " ",
            "\t",
            "(",
        ):
            continue  # another MTA's (or a sender's) field: never read
        taken += 1
        if taken > MAX_FIELDS or len(value) > MAX_FIELD_CHARS:
            return []  # more than an MTA writes: nothing in them is taken
        try:
            parsed = _PARSER.parse_value(value)
        except Exception:  # authres raises SyntaxError, RecursionError on nested comments, …
            continue
        if str(parsed.authserv_id).lower() == wanted:
            results.extend(parsed.results)
    return results


def _property(result: object, ptype: str, name: str) -> str:
    for prop in getattr(result, "properties", None) or ():
        if str(prop.type).lower() == ptype and str(prop.name).lower() == name:
            return str(prop.value or "")
    return ""


def authenticated_sender(raw: bytes, authserv_id: str | None) -> str | None:
    """The From address when the MTA ``authserv_id`` authenticated its domain, else None."""
    if not authserv_id:
        return None
    fields = _fields(raw)
    sender = from_address(fields)
    if sender is None:
        return None
    domain = _domain(sender)
    passed = False
    for result in _trusted_results(fields, authserv_id):
        method = str(getattr(result, "method", "")).lower()
        outcome = str(getattr(result, "result", "")).lower()
        if method == "dmarc" and outcome == "fail":
            return None  # the domain's own policy refused it: final
        if outcome != "pass":
            continue  # none (no policy published), neutral, softfail, temperror, …
        if method == "dmarc":
            if _domain(_property(result, "header", "from")) != domain:
                return None  # the MTA read another From than this one: nothing is taken
            passed = True
            continue
        elif method == "dkim":
            passed |= aligned(_property(result, "header", "d"), domain)
        elif method == "spf":
            passed |= aligned(_property(result, "smtp", "mailfrom"), domain)
    return sender if passed else None
