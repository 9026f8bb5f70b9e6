"""What a source is (:class:`SourceSpec`, parsed from ``greenhouse:TOKEN``, ``lever:SITE``,
``ashby:ORG`` or a careers URL) and what its adapters return (:class:`Posting`, one job as the
employer publishes it, already mapped to the listing's fields)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from shortlist.errors import BadInput, PermanentError
from shortlist.listings.models import WorkMode

SourceKind = Literal["greenhouse", "lever", "ashby", "careers"]
ATS_KINDS: tuple[SourceKind, ...] = ("greenhouse", "lever", "ashby")
# Board tokens, Lever sites and Ashby board names are URL path segments of this shape.
_BOARD_KEY = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
MAX_URL = 2000


@dataclass(frozen=True)
class SourceSpec:
    kind: SourceKind
    key: str
    """The board token / site / organisation, or the careers URL."""

    @property
    def spec(self) -> str:
        return self.key if self.kind == "careers" else f"{self.kind}:{self.key}"

    @classmethod
    def parse(cls, text: str) -> SourceSpec:
        """``greenhouse:TOKEN``, ``lever:SITE``, ``ashby:ORG`` or an http(s) URL; else
        ``BadInput`` naming what is accepted."""
        value = text.strip()
        prefix, sep, rest = value.partition(":")
        if sep and prefix.lower() in ATS_KINDS:
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
            return cls("careers", value)
        raise BadInput(
            "a source is greenhouse:TOKEN, lever:SITE, ashby:ORG, or the http(s) URL of a"
            f" careers page or sitemap, not {value[:100]!r}",
            field="spec",
        )


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
