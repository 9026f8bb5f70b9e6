"""A crawl applied as a diff, in the caller's transaction.

* new posting → inserted ``pending`` (the indexer's bulk lane, numbered in crawl order);
* changed posting → its fields rewritten: ``job_listings_touch`` bumps ``updated_at``, so
  ``updated_at > embedded_at`` re-embeds it;
* unchanged posting (or one a 304 vouches for) → only ``last_seen_at`` moves: no new
  ``embedded_at``;
* gone from its board, or past ``validThrough`` → ``closed``; a page that could not be read
  this time closes none of its postings;
* already listed through another source (the same canonical URL, or the same company, title
  and city recently) → not listed twice.

Identity: the listing of a posting is ``(source, external_id)`` (a unique index).
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import ValidationError

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, Row
from shortlist.listings import eligibility, jobpost
from shortlist.listings.models import (
    MAX_CITY,
    MAX_DESCRIPTION,
    MAX_TITLE,
    ListingCreate,
    valid_apply_url,
)
from shortlist.listings.slug import make_detail_page_slug
from shortlist.listings.sources.models import Board, Posting, SourceSpec

QUERIES = load_queries("shortlist.listings.sources")
DUPLICATE_WINDOW_DAYS = 30
"""How recent a listing of the same company, title and city must be to be the same job."""
NO_CITY = "Not stated"
_TRACKING = ("utm_", "gh_src")


@dataclass(frozen=True)
class SourceRow:
    id: int
    spec: str
    kind: str
    company_name: str | None
    attempts: int = 0

    @property
    def key(self) -> str:
        """The board token / site / organisation, or a careers site's host."""
        if self.kind == "careers":
            return urlsplit(self.spec).netloc
        return SourceSpec.parse(self.spec).key


@dataclass
class CrawlOutcome:
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    closed: int = 0
    expired: int = 0
    skipped: int = 0
    duplicates: int = 0

    def as_json(self) -> dict[str, int]:
        return asdict(self)


def canonical_url(url: str | None) -> str | None:
    """The posting URL as one job has it whichever board links it: scheme and host in lower
    case, no fragment, no tracking parameters, no trailing slash."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith(_TRACKING)
    ]
    path = parts.path.rstrip("/") or "/"
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, urlencode(query), ""))[
        :2000
    ]


def _listing(posting: Posting, source: SourceRow, board: Board) -> ListingCreate | None:
    """The posting as a valid listing (fields trimmed to the schema's bounds); None if even
    that is not one (a title of control characters, say)."""
    # The company is the source's, as the operator configured it, else as its board names
    # itself, else its host: never the page's own claim (a careers site's
    # ``hiringOrganization.name`` could publish in any company's name).
    company = source.company_name or board.company_name or source.key
    # The description's own statements where the source has no field for them (the shared
    # reader of shortlist.listings.jobpost, as the e-mail intake reads a message).
    mode = posting.work_mode or jobpost.stated_work_mode(posting.description)
    city = _city(posting.city_location) or ("Remote" if mode == "remote" else NO_CITY)
    low, high = posting.salary_min_ks, posting.salary_max_ks
    code = posting.currency_code
    if low is None and high is None:
        stated = jobpost.salary_in_text(posting.description)
        if stated is not None:
            low, high, code = stated.min_ks, stated.max_ks, stated.currency or code
    text = f"{posting.job_title}\n{city}\n{posting.description}"
    try:
        return ListingCreate(
            company_name=company[:200],
            job_title=posting.job_title[:MAX_TITLE],
            city_location=city[:MAX_CITY],
            description=posting.description[:MAX_DESCRIPTION],
            salary_min_ks=low,
            salary_max_ks=high,
            currency_code=code or "USD",
            work_mode=mode,
            apply_url=valid_apply_url(posting.apply_url or posting.source_url),
            remote_countries=posting.remote_countries or eligibility.remote_countries_in(text),
            visa_sponsorship=posting.visa_sponsorship or eligibility.visa_in(text),
        )
    except ValidationError:
        return None


def _city(field: str | None) -> str | None:
    """A posting's location field; one that names several places ("London, UK; Ontario, CAN;
    San Francisco, CA") is one listing in each of them: its places by their own names, joined
    with "; " ("London; Ontario; San Francisco"), which the location filter and the words
    search both read."""
    if not field:
        return None
    named = jobpost.places_of_field(field)
    return "; ".join(named) if len(named) > 1 else field


_COMPARED = (
    "company_name",
    "job_title",
    "city_location",
    "description",
    "salary_min_ks",
    "salary_max_ks",
    "currency_code",
    "apply_url",
    "remote_countries",
    "visa_sponsorship",
)


def _differs(row: Row, data: ListingCreate, url: str | None, valid: datetime | None) -> bool:
    if any(row[f] != getattr(data, f) for f in _COMPARED):
        return True
    if data.work_mode is not None and row["work_mode"] != data.work_mode:
        return True
    return bool(row["source_url"] != url or row["valid_through"] != valid)


@dataclass
class _New:
    id: uuid.UUID
    data: ListingCreate
    url: str | None
    posting: Posting


async def apply_board(
    conn: AsyncConn, source: SourceRow, board: Board, *, now: datetime
) -> CrawlOutcome:
    """Write one crawl's findings; the caller commits."""
    outcome = CrawlOutcome(skipped=board.skipped)
    cur = await conn.execute(QUERIES["source_listings"], {"source": source.spec})
    existing: dict[str, Row] = {r["external_id"]: r for r in await cur.fetchall()}
    present: set[str] = set(board.unchanged_ids) | set(board.kept_ids)
    gone: list[uuid.UUID] = []
    touched: list[uuid.UUID] = [existing[x]["id"] for x in board.unchanged_ids if x in existing]
    outcome.unchanged = len(touched)
    changed: list[tuple[Row, ListingCreate, str | None, Posting]] = []
    new: list[_New] = []
    for posting in board.postings:
        if posting.external_id in present:
            continue  # the same posting twice on one board (a page listed twice in a sitemap)
        present.add(posting.external_id)
        known = existing.get(posting.external_id)
        if posting.valid_through is not None and posting.valid_through < now:
            outcome.expired += 1
            if known is not None and known["status"] == "open":
                gone.append(known["id"])
            continue
        data = _listing(posting, source, board)
        if data is None:
            outcome.skipped += 1
            continue
        url = canonical_url(posting.source_url)
        if known is None:
            new.append(_New(uuid.uuid4(), data, url, posting))
        elif _differs(known, data, url, posting.valid_through):
            changed.append((known, data, url, posting))
        else:
            touched.append(known["id"])
            outcome.unchanged += 1
    gone.extend(
        row["id"]
        for external_id, row in existing.items()
        if external_id not in present and row["status"] == "open"
    )
    new = await _drop_listed_elsewhere(conn, source, new, outcome)
    seq = 0
    if new:
        async with conn.cursor().copy(QUERIES["copy_crawled"]) as copy:
            for item in new:
                seq += 1
                d = item.data
                await copy.write_row(
                    (
                        item.id,
                        d.company_name,
                        d.job_title,
                        d.city_location,
                        d.description,
                        d.salary_min_ks,
                        d.salary_max_ks,
                        d.currency_code,
                        d.work_mode,
                        make_detail_page_slug(
                            d.company_name, d.job_title, d.city_location, item.id
                        ),
                        source.spec,
                        source.id,
                        item.url,
                        item.posting.external_id,
                        item.posting.valid_through,
                        now,
                        seq,
                        d.apply_url,
                        d.remote_countries,
                        d.visa_sponsorship,
                    )
                )
        outcome.new = len(new)
    if changed:
        await conn.execute(QUERIES["update_crawled"], _changed_params(source, changed, seq))
        outcome.changed = len(changed)
    if touched:
        await conn.execute(QUERIES["touch_seen"], {"ids": touched, "source_id": source.id})
    cur = await conn.execute(QUERIES["close_gone"], {"ids": gone, "source": source.spec})
    outcome.closed = len(await cur.fetchall())
    return outcome


def _changed_params(
    source: SourceRow, changed: list[tuple[Row, ListingCreate, str | None, Posting]], after: int
) -> dict[str, Any]:
    columns: dict[str, list[Any]] = {
        k: []
        for k in (
            "ids",
            "company_names",
            "job_titles",
            "cities",
            "descriptions",
            "mins",
            "maxs",
            "currencies",
            "work_modes",
            "slugs",
            "urls",
            "valid_throughs",
            "seqs",
            "apply_urls",
            "remote_countries",
            "visas",
        )
    }
    for n, (row, d, url, posting) in enumerate(changed, start=after + 1):
        for key, value in (
            ("ids", row["id"]),
            ("company_names", d.company_name),
            ("job_titles", d.job_title),
            ("cities", d.city_location),
            ("descriptions", d.description),
            ("mins", d.salary_min_ks),
            ("maxs", d.salary_max_ks),
            ("currencies", d.currency_code),
            ("work_modes", d.work_mode),
            (
                "slugs",
                make_detail_page_slug(d.company_name, d.job_title, d.city_location, row["id"]),
            ),
            ("urls", url),
            ("valid_throughs", posting.valid_through),
            ("seqs", n),
            ("apply_urls", d.apply_url),
            # one text per row (unnest does not take an array of arrays): "US,CA"
            ("remote_countries", ",".join(d.remote_countries or ())),
            ("visas", d.visa_sponsorship),
        ):
            columns[key].append(value)
    return {**columns, "source_id": source.id}


async def _drop_listed_elsewhere(
    conn: AsyncConn, source: SourceRow, new: list[_New], outcome: CrawlOutcome
) -> list[_New]:
    """One job, one listing: new postings another source already lists are left out."""
    if not new:
        return new
    cur = await conn.execute(
        QUERIES["same_job_elsewhere"],
        {
            "urls": [n.url for n in new],
            "companies": [n.data.company_name for n in new],
            "titles": [n.data.job_title for n in new],
            "cities": [n.data.city_location for n in new],
            "source": source.spec,
            "window_days": DUPLICATE_WINDOW_DAYS,
        },
    )
    listed = {int(r["n"]) for r in await cur.fetchall()}
    outcome.duplicates = len(listed)
    return [n for i, n in enumerate(new, start=1) if i not in listed]
