"""Whom the intake may answer: the From address whose domain the trusted MTA authenticated
(issue 36 point 3)."""

from __future__ import annotations

import pytest

from shortlist.listings.mail.authentication import (
    MAX_FIELD_CHARS,
    aligned,
    authenticated_sender,
)

MTA = "mx.board.example"


def message(
    *verdicts: str, sender: str = "Jobs <jobs@northwind.example>", extra: str = ""
) -> bytes:
    head = "".join(f"Authentication-Results: {v}\r\n" for v in verdicts)
    return (
        f"{head}From: {sender}\r\n{extra}Subject: Engineer\r\n\r\nEngineer in Berlin.\r\n".encode()
    )


@pytest.mark.parametrize(
    "verdict",
    [
        f"{MTA}; dmarc=pass (p=reject) header.from=northwind.example",
        f"{MTA}; dmarc=pass header.from=Northwind.Example",
        f"{MTA}; dkim=pass header.d=northwind.example header.s=s1",
        f"{MTA}; spf=pass smtp.mailfrom=bounces@northwind.example",
        f"{MTA}; spf=pass smtp.mailfrom=northwind.example",
        f"{MTA.upper()};\r\n dkim=pass (good signature)\r\n header.d=northwind.example",
        f"{MTA} 1; dkim=fail header.d=northwind.example; dkim=pass header.d=northwind.example",
        f"{MTA}; dmarc=none header.from=northwind.example; dkim=pass header.d=northwind.example",
    ],
)
def test_a_domain_the_mta_authenticated_is_answered_at_its_from(verdict: str) -> None:
    raw = message(verdict, extra="Reply-To: <victim@victim.example>\r\n")
    assert authenticated_sender(raw, MTA) == "jobs@northwind.example"


def test_a_parent_domain_authenticates_its_subdomains() -> None:
    raw = message(
        f"{MTA}; dkim=pass header.d=northwind.example", sender="<hr@eu.northwind.example>"
    )
    assert authenticated_sender(raw, MTA) == "hr@eu.northwind.example"


@pytest.mark.parametrize(
    ("verdicts", "sender"),
    [
        ((), "<jobs@northwind.example>"),  # nobody vouched
        (("mx.elsewhere.example; dmarc=pass header.from=northwind.example",), None),
        ((f"{MTA}.evil.example; dkim=pass header.d=northwind.example",), None),
        ((f"{MTA}evil; dkim=pass header.d=northwind.example",), None),
        ((f"{MTA}; dkim=pass header.d=attacker.example",), None),
        ((f"{MTA}; dkim=pass header.d=evil.northwind.example",), None),  # a subdomain signed
        ((f"{MTA}; dkim=pass header.d=example",), None),  # a top-level name
        ((f"{MTA}; spf=pass smtp.mailfrom=a@attacker.example",), None),
        ((f"{MTA}; spf=softfail smtp.mailfrom=northwind.example",), None),
        ((f"{MTA}; dkim=neutral header.d=northwind.example",), None),
        ((f"{MTA}; dmarc=pass header.from=attacker.example",), None),  # read another From
        (
            (
                f"{MTA}; dmarc=fail header.from=northwind.example",
                f"{MTA}; dkim=pass header.d=northwind.example",  # unstripped, forged
            ),
            None,
        ),
        ((f"{MTA}; dkim=pass header.d=northwind.example",), "<a@northwind.example>, <b@x.example>"),
        ((f"{MTA}; dkim=pass header.d=northwind.example",), "undisclosed-recipients:;"),
        ((f"{MTA}; dkim=pass header.d=northwind.example",), "jobs"),
        ((f"{MTA}; dkim=pass header.d=northwind.example (",), None),  # unparseable
    ],
)
def test_anything_else_is_not_answered(verdicts: tuple[str, ...], sender: str | None) -> None:
    raw = message(*verdicts, sender=sender or "<jobs@northwind.example>")
    assert authenticated_sender(raw, MTA) is None


def test_nothing_is_answered_without_a_trusted_mta() -> None:
    raw = message(f"{MTA}; dmarc=pass header.from=northwind.example")
    assert authenticated_sender(raw, None) is None


def test_two_from_fields_are_not_answered() -> None:
    raw = message(
        f"{MTA}; dkim=pass header.d=northwind.example",
        extra="From: <victim@victim.example>\r\n",
    )
    assert authenticated_sender(raw, MTA) is None


def test_a_verdict_in_the_body_is_not_a_header() -> None:
    raw = (
        message()
        + f"Authentication-Results: {MTA}; dkim=pass header.d=northwind.example\r\n".encode()
    )
    assert authenticated_sender(raw, MTA) is None


def test_hostile_fields_authenticate_nothing() -> None:
    nested = f"{MTA}; dkim=pass header.d=northwind.example " + "(" * 900 + ")" * 900
    long_field = f"{MTA}; dkim=pass header.d=northwind.example; " + "x=y; " * MAX_FIELD_CHARS
    many = [f"{MTA}; dkim=pass header.d=northwind.example"] * 9
    assert authenticated_sender(message(nested), MTA) is None
    assert authenticated_sender(message(long_field), MTA) is None
    assert authenticated_sender(message(*many), MTA) is None
    assert authenticated_sender(b"From: <a@b.example>\r\n" + b"x" * 2_000_000, MTA) is None


def test_alignment_is_the_domain_or_a_parent_of_it() -> None:
    assert aligned("northwind.example", "northwind.example")
    assert aligned("@northwind.example", "hr.northwind.example")
    assert aligned("bounce@northwind.example.", "NORTHWIND.example")
    assert not aligned("hr.northwind.example", "northwind.example")
    assert not aligned("wind.example", "northwind.example")
    assert not aligned("example", "northwind.example")
    assert not aligned("", "northwind.example")
