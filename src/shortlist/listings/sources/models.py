"""What a source is (:class:`SourceSpec`, parsed from ``greenhouse:TOKEN``, ``lever:SITE``, a
Lever job site's address, ``ashby:ORG`` or a careers URL) and what its adapters return
(:class:`Posting`, one job as the employer publishes it, already mapped to the listing's
fields)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import SplitResult, quote, unquote, urlsplit

from shortlist.errors import BadInput, PermanentError
from shortlist.listings.eligibility import VisaSponsorship
from shortlist.listings.models import WorkMode

SourceKind = Literal["greenhouse", "lever", "ashby", "careers"]
ATS_KINDS: tuple[SourceKind, ...] = ("greenhouse", "lever", "ashby")
# Board tokens, Lever sites and Ashby board names are URL path segments of this shape.
_BOARD_KEY = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
# Ashby job board names are the organisation's name as it wrote it, spaces included
# ("jobs.ashbyhq.com/Foo Bar", requested as ``Foo%20Bar``): written either way, one name. A name
# with a space is kept as its job board's address (job_sources.spec and job_listings.source
# admit ``ashby:NAME`` of URL-path characters, or an http(s) URL), as a Lever EU site is.
ASHBY_JOB_SITE = "https://jobs.ashbyhq.com"
_ASHBY_BOARD = re.compile(r"^[A-Za-z0-9._-](?:[A-Za-z0-9._ -]{0,198}[A-Za-z0-9._-])?$")
MAX_URL = 2000
LeverInstance = Literal["global", "eu"]
# Lever's two instances, "global (default) and EU", each with its own hosted job site
# (jobs.lever.co/SITE, jobs.eu.lever.co/SITE) and postings API host (github.com/lever/
# postings-api, README "Introduction" and "Sites"). A site of the EU instance is named by its
# job site's address: job_sources.spec and job_listings.source admit ``lever:SITE`` or an
# http(s) URL, nothing in between.
LEVER_JOB_SITES: dict[str, LeverInstance] = {"jobs.lever.co": "global", "jobs.eu.lever.co": "eu"}
LEVER_EU_JOB_SITE = "https://jobs.eu.lever.co"


@dataclass(frozen=True)
class SourceSpec:
    kind: SourceKind
    key: str
    """The board token / site / organisation, or the careers URL."""
    instance: LeverInstance = "global"
    """The Lever instance of a ``lever`` source's site (other kinds: ``global``)."""

    @property
    def spec(self) -> str:
        """The canonical text of the source (``job_sources.spec``, ``job_listings.source``)."""
        if self.kind == "careers":
            return self.key
        if self.instance == "eu":
            return f"{LEVER_EU_JOB_SITE}/{self.key}"
        if self.kind == "ashby" and not _BOARD_KEY.match(self.key):
            return f"{ASHBY_JOB_SITE}/{quote(self.key, safe='')}"
        return f"{self.kind}:{self.key}"

    @classmethod
    def parse(cls, text: str) -> SourceSpec:
        """``greenhouse:TOKEN``, ``lever:SITE``, ``ashby:ORG`` or an http(s) URL; else
        ``BadInput`` naming what is accepted. The address of a Lever job site
        (``https://jobs.lever.co/SITE``, ``https://jobs.eu.lever.co/SITE`` on Lever's EU
        instance) is that Lever site, read through the postings API; a query or fragment in it
        is not kept (the API lists every published posting)."""
        value = text.strip()
        prefix, sep, rest = value.partition(":")
        if sep and prefix.lower() in ATS_KINDS:
            if prefix.lower() == "ashby":
                rest = " ".join(unquote(rest).split())
                if _ASHBY_BOARD.match(rest):
                    return cls("ashby", rest)
            if not _BOARD_KEY.match(rest):
                raise BadInput(
                    f"{prefix.lower()}: needs a board name of letters, digits, '.', '_' or '-'"
                    f" after the colon, not {rest[:100]!r}",
                    field="spec",
                )
            kind: SourceKind = prefix.lower()  # type: ignore[assignment]
            return cls(kind, rest)
        parts = urlsplit(value)
        if parts.scheme.lower() in ("http", "https") and parts.hostname:
            if len(value) > MAX_URL:
                raise BadInput(f"a source URL is at most {MAX_URL} characters", field="spec")
            return _lever_job_site(parts) or _ashby_job_board(parts) or cls("careers", value)
        raise BadInput(
            "a source is greenhouse:TOKEN, lever:SITE (or the address of a Lever job site,"
            " https://jobs.eu.lever.co/SITE on Lever's EU instance), ashby:ORG, or the http(s)"
            f" URL of a careers page or sitemap, not {value[:100]!r}",
            field="spec",
        )


def _ashby_job_board(parts: SplitResult) -> SourceSpec | None:
    """The Ashby board whose job board ``parts`` is the address of (jobs.ashbyhq.com/NAME)."""
    segments = [s for s in parts.path.split("/") if s]
    if (parts.hostname or "").lower() != "jobs.ashbyhq.com" or len(segments) != 1:
        return None
    name = " ".join(unquote(segments[0]).split())
    return SourceSpec("ashby", name) if _ASHBY_BOARD.match(name) else None


def _lever_job_site(parts: SplitResult) -> SourceSpec | None:
    """The Lever site whose hosted job site ``parts`` is the address of (one path segment
    on jobs.lever.co or jobs.eu.lever.co), else None: a posting's page, or another site."""
    instance = LEVER_JOB_SITES.get((parts.hostname or "").lower())
    segments = [s for s in parts.path.split("/") if s]
    if instance is None or parts.port is not None or len(segments) != 1:
        return None
    if not _BOARD_KEY.match(segments[0]):
        return None
    return SourceSpec("lever", segments[0], instance)


@dataclass
class Posting:
    """One job on its source, in the listing's terms (salaries in thousands a year)."""

    external_id: str
    job_title: str
    description: str
    company_name: str | None = None
    """None: the source's company (the board's name, or ``--company``)."""
    city_location: str | None = None
    work_mode: WorkMode | None = None
    salary_min_ks: int | None = None
    salary_max_ks: int | None = None
    currency_code: str | None = None
    source_url: str | None = None
    valid_through: datetime | None = None
    posted_at: datetime | None = None
    apply_url: str | None = None
    """The source's application link (None: its ``source_url`` is where one applies)."""
    remote_countries: list[str] | None = None
    """From the source's fields; None: read from the text (shortlist.listings.eligibility)."""
    visa_sponsorship: VisaSponsorship | None = None


@dataclass
class Board:
    """What one crawl of a source found."""

    postings: list[Posting] = field(default_factory=list)
    company_name: str | None = None
    """The board's own name for the company, when it publishes one."""
    unchanged_ids: set[str] = field(default_factory=set)
    """Postings a 304 (Not Modified) vouches for: still there, exactly as last time."""
    kept_ids: set[str] = field(default_factory=set)
    """Postings of pages that could not be read this time: neither seen nor gone."""
    skipped: int = 0
    """Postings left out: disallowed by robots.txt, malformed, or without a title."""

    @classmethod
    def of(cls, items: list[Any], mapper: Callable[[dict[str, Any]], Posting | None]) -> Board:
        """The postings ``mapper`` makes of a board's JSON items (an item it cannot map, or
        one that is not an object, is counted as skipped)."""
        board = cls()
        for item in items:
            posting = mapper(item) if isinstance(item, dict) else None
            if posting is None:
                board.skipped += 1
            else:
                board.postings.append(posting)
        return board


class SourceGone(PermanentError):
    """The board does not exist (404/410) or the spec cannot be crawled: the source fails."""
