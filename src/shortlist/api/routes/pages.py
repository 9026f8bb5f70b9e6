"""The web UI's routes: server-rendered pages and the static files they use.

* ``/`` — job search. Rendered on the server (a plain GET form), so it works without
  JavaScript, every result page has a URL, and pagination is a pair of links (``offset``).
* ``/jobs/{slug}`` — a listing's detail page with its own ``<title>``, meta description,
  canonical link and schema.org ``JobPosting`` data; an unknown slug gets a friendly 404 page.
* ``/recruit`` — the recruiter console: a page shell plus ``static/recruit.js``, which keeps the
  token in ``sessionStorage`` and follows a search over SSE, or by polling ``/api/results``.
* ``/status`` — queue depths, failures and running searches for operators (see
  :func:`status_page` for what is public and what needs an admin token).
* ``/static/{name}`` — files of ``shortlist/web/static`` read from the package.

Every page is sent with a strict Content-Security-Policy: scripts and styles only from this
origin, no inline script or style, nothing loaded from anywhere else.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from typing import Any
from urllib.parse import quote

import psycopg
import psycopg_pool
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from shortlist import __version__
from shortlist.api.deps import ClientIPDep, OptionalPrincipalDep, ServicesDep
from shortlist.api.probe_cache import ProbeCache
from shortlist.config import index_build_overrides
from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput, NotFound, RateLimited
from shortlist.listings.models import ListingOut
from shortlist.listings.money import format_salary
from shortlist.listings.rates import Rates
from shortlist.listings.search import MAX_OFFSET, SearchHit
from shortlist.listings.service import find_listing, find_similar, run_job_search
from shortlist.status import collect_status, public_view
from shortlist.validation import small_int
from shortlist.web import job_filters, seeker

log = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 10
DEFAULT_POLL_MS = 5000
MIN_POLL_MS = 100
MAX_POLL_MS = 60_000
TRANSPORTS = ("auto", "sse", "poll")
META_DESCRIPTION_LENGTH = 160

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    )
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

# Failures that mean "the database is not answering", shown as a message rather than a 500.
UNAVAILABLE = (psycopg.OperationalError, psycopg_pool.PoolTimeout)


# --- static files ------------------------------------------------------------------------


@dataclass(frozen=True)
class StaticFile:
    body: bytes
    media_type: str
    version: str

    @property
    def etag(self) -> str:
        return f'"{self.version}"'


STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "public, max-age=0, must-revalidate"


@lru_cache(maxsize=1)
def static_files() -> Mapping[str, StaticFile]:
    """Every servable file of ``static/``, by name, read once from the package.

    Requests are answered only from this table, so no path a client sends ever reaches the
    file system: ``..``, absolute paths and encoded separators simply are not keys.
    """
    folder = resources.files("shortlist.web").joinpath("static")
    files: dict[str, StaticFile] = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rpartition(".")[2] if "." in entry.name else ""
        if entry.is_file() and suffix in STATIC_TYPES and not entry.name.startswith("."):
            body = entry.read_bytes()
            version = hashlib.sha256(body).hexdigest()[:16]
            files[entry.name] = StaticFile(body, STATIC_TYPES[suffix], version)
    return files


def static_url(root: str, name: str) -> str:
    """URL of a static file carrying its content hash, so it can be cached forever."""
    file = static_files().get(name)
    if file is None:
        raise LookupError(f"no static file {name!r}")
    return f"{root}/static/{name}?v={file.version}"


@router.api_route("/static/{name}", methods=["GET", "HEAD"])
async def static(request: Request, name: str) -> Response:
    file = static_files().get(name)
    if file is None:
        return Response("not found\n", 404, media_type="text/plain; charset=utf-8")
    # Versioned URLs (what the pages link to) never change; anything else revalidates.
    cache = IMMUTABLE if request.query_params.get("v") == file.version else REVALIDATE
    headers = {"ETag": file.etag, "Cache-Control": cache, "X-Content-Type-Options": "nosniff"}
    if file.etag in _etags(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers=headers)
    body = b"" if request.method == "HEAD" else file.body
    headers["Content-Length"] = str(len(file.body))
    return Response(body, media_type=file.media_type, headers=headers)


def _etags(header: str) -> set[str]:
    return {t.strip().removeprefix("W/") for t in header.split(",") if t.strip()}


# --- templates ---------------------------------------------------------------------------

_env = Environment(
    loader=PackageLoader("shortlist.web", "templates"),
    autoescape=select_autoescape(("html",), default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def age(iso: str | None, now_iso: str) -> str:
    """``"3 min ago"`` for a timestamp of the status report, relative to when it was made."""
    if not iso:
        return "—"
    seconds = max(
        0.0, (datetime.fromisoformat(now_iso) - datetime.fromisoformat(iso)).total_seconds()
    )
    if seconds < 60:
        return f"{int(seconds)} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


_env.filters["age"] = age
_env.globals["work_modes"] = job_filters.WORK_MODE_LABELS
_env.globals["posted_choices"] = job_filters.POSTED_LABELS
templates = Jinja2Templates(env=_env)


def root_path(request: Request) -> str:
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/")


def render(
    request: Request,
    name: str,
    context: dict[str, Any],
    *,
    status_code: int = 200,
    nav: str = "",
) -> HTMLResponse:
    root = root_path(request)
    full = {
        "root": root,
        "nav": nav,
        "version": __version__,
        "static_url": lambda file: static_url(root, file),
        **context,
    }
    response: HTMLResponse = templates.TemplateResponse(
        request, name, full, status_code=status_code, headers=PAGE_HEADERS
    )
    return response


def not_found_page(request: Request, title: str, message: str) -> HTMLResponse:
    return render(
        request,
        "not_found.html",
        {"title": title, "message": message, "status_code": 404},
        status_code=404,
    )


@dataclass(frozen=True)
class Notice:
    code: str
    title: str
    detail: str = ""
    kind: str = "info"  # info | warn | error


# --- job search --------------------------------------------------------------------------


@dataclass(frozen=True)
class JobHit:
    title: str
    company: str
    city: str
    salary_range: str | None
    slug: str
    score: float
    snippet: Markup
    """ts_headline's highlighted text, escaped (shortlist.listings.why)."""
    matched_terms: list[str]
    via: str
    work_mode: str
    labels: list[str]
    """The match in words (shortlist.listings.why.match_labels)."""
    converted: str | None
    """"≈ €82K – €99K": the salary in the chosen currency, when it is another."""
    rate_date: str | None

    @property
    def score_pct(self) -> int:
        return round(max(0.0, min(1.0, self.score)) * 100)

    @classmethod
    def of(cls, hit: SearchHit) -> JobHit:
        listing = hit.listing
        converted = seeker.converted_text(listing.salary_converted, listing)
        return cls(
            title=listing.job_title,
            company=listing.company_name,
            city=listing.city_location,
            salary_range=salary_of(listing),
            slug=quote(listing.detail_page_slug),
            score=hit.score,
            snippet=Markup(hit.why.snippet),
            matched_terms=hit.why.matched_terms,
            via=hit.why.via,
            work_mode=job_filters.WORK_MODE_LABELS[listing.work_mode],
            labels=hit.why.labels,
            converted=converted,
            rate_date=(
                seeker.rate_day(listing.salary_converted.rate_date)
                if converted and listing.salary_converted
                else None
            ),
        )


def salary_of(listing: ListingOut) -> str | None:
    return format_salary(listing.salary_min_ks, listing.salary_max_ks, listing.currency_code)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,.;:-") + "…"


def _whole_number(text: str | None) -> int | None:
    if not (text or "").strip():
        return None
    value = small_int(text)
    if value is None:
        raise BadInput("Minimum salary must be a whole number of thousands, e.g. 120.")
    return value


@router.get("/", response_class=HTMLResponse)
async def job_search_page(
    request: Request,
    services: ServicesDep,
    client_ip: ClientIPDep,
    q: str | None = None,
    location: str | None = None,
    salary_min: str | None = None,
    offset: str | None = None,
    work_mode: str | None = None,
    posted_within_days: str | None = None,
    currency: str | None = None,
    remote_country: str | None = None,
    visa: str | None = None,
) -> HTMLResponse:
    """Job search. Query parameters as ``GET /api/jobs/search``; bad ones become messages.
    Salaries are shown in ``currency``; without one, in the currency of the place the search
    names, else of the browser's language (shortlist.web.seeker)."""
    form = {"q": (q or "").strip(), "location": (location or "").strip(), "salary_min": ""}
    form["salary_min"] = (salary_min or "").strip()
    form["work_mode"] = (work_mode or "").strip().lower()
    form["posted_within_days"] = (posted_within_days or "").strip()
    form["remote_country"] = (remote_country or "").strip().upper()[:2]
    form["visa"] = (visa or "").strip().lower()[:20]
    try:
        known = set((await services.rates.get(services.reads.primary)).by_code)
    except UNAVAILABLE:
        known = {seeker.FALLBACK_CURRENCY}
    picked = (currency or "").strip().upper()
    # The page's links carry the person's pick only; without one, the default follows the
    # query's place (a new query, a new default).
    form["currency"] = picked if picked in known else ""
    shown_in = form["currency"] or seeker.default_currency(
        form["q"], form["location"], request.headers.get("accept-language", ""), known
    )
    context: dict[str, Any] = {
        "form": form,
        "shown_in": shown_in,
        "hits": [],
        "notice": None,
        "currencies": seeker.currency_choices(sorted(known)),
        "countries": seeker.country_choices(),
    }
    if q is None:
        return render(request, "jobs_search.html", context, nav="jobs")
    if not form["q"]:
        context["notice"] = Notice(
            "empty-query",
            "Type what you are looking for.",
            "A job title, a skill or a few words about the work, e.g. “python backend remote”.",
        )
        return render(request, "jobs_search.html", context, nav="jobs")

    start = small_int(offset) or 0
    start = start if start <= MAX_OFFSET else 0
    status = 200
    try:
        request.app.state.search_limiter.check(client_ip)
        floor = _whole_number(salary_min)
        # One more than a page, to know whether a next page exists.
        mode = job_filters.parse_work_mode(work_mode)
        within = job_filters.parse_posted_within(posted_within_days)
        result = await run_job_search(
            services,
            form["q"],
            size=PAGE_SIZE + 1,
            location=form["location"] or None,
            salary_min=floor,
            offset=start,
            work_mode=mode,
            posted_within_days=within,
            currency=shown_in,
            remote_country=form["remote_country"] or None,
            visa=form["visa"] or None,
        )
    except BadInput as exc:
        context["notice"] = Notice("bad-input", "That search could not be run.", str(exc), "error")
        status = 400
    except RateLimited as exc:
        wait = max(1, round(exc.retry_after))
        context["notice"] = Notice(
            "rate-limited",
            "Too many searches from your address.",
            f"Please wait about {wait} second{'s' if wait != 1 else ''} and search again.",
            "warn",
        )
        status = 429
    except UNAVAILABLE:
        log.exception("job search page: database unavailable")
        context["notice"] = Notice(
            "unavailable",
            "Search is unavailable right now.",
            "The service could not reach its database. Please try again in a moment.",
            "error",
        )
        status = 503
    else:
        page = result.hits[:PAGE_SIZE]
        root = root_path(request)
        hits = [JobHit.of(h) for h in page]
        show_scores, equal_note = seeker.score_note(
            [h.score for h in hits], [h.labels for h in hits]
        )
        context.update(
            hits=hits,
            show_scores=show_scores,
            equal_note=equal_note,
            facet_groups=job_filters.facet_groups(root, form, result.facets),
            took_ms=round(result.took_ms),
            first=start + 1,
            last=start + len(page),
            page=start // PAGE_SIZE + 1,
            prev_url=(
                job_filters.search_url(root, form, max(0, start - PAGE_SIZE)) if start > 0 else None
            ),
            next_url=(
                job_filters.search_url(root, form, start + PAGE_SIZE)
                if len(result.hits) > PAGE_SIZE and start + PAGE_SIZE <= MAX_OFFSET
                else None
            ),
        )
        if not page:
            filters = [f"in {form['location']}" if form["location"] else ""]
            filters.append(f"paying from {form['salary_min']}K" if form["salary_min"] else "")
            filters.append(
                "with the work mode, date, country or visa filter"
                if form["work_mode"]
                or form["posted_within_days"]
                or form["remote_country"]
                or form["visa"]
                else ""
            )
            where = " ".join(f for f in filters if f)
            if start:
                context["notice"] = Notice(
                    "no-more", "No more results.", "That was the last page for this search."
                )
            else:
                context["notice"] = Notice(
                    "no-hits",
                    f"No jobs matched “{form['q']}”{' ' + where if where else ''}.",
                    "Try fewer or broader words"
                    + (", or remove the location or salary filter." if where else "."),
                )
    return render(request, "jobs_search.html", context, status_code=status, nav="jobs")


# --- job detail --------------------------------------------------------------------------


@dataclass(frozen=True)
class JobView:
    title: str
    company: str
    city: str
    salary_range: str | None
    paragraphs: list[str]
    posted: str
    posted_iso: str


def meta_description(listing: ListingOut) -> str:
    lead = f"{listing.company_name} is hiring a {listing.job_title} in {listing.city_location}."
    if listing.salary_range:
        lead += f" {listing.salary_range}."
    return shorten(f"{lead} {listing.description}", META_DESCRIPTION_LENGTH)


def job_posting_json_ld(listing: ListingOut, url: str) -> Markup:
    """schema.org ``JobPosting``, safe to put inside a ``<script>`` element."""
    data: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "JobPosting",
        "title": listing.job_title,
        "description": listing.description,
        "datePosted": listing.created_at.date().isoformat(),
        "url": url,
        # Google's JobPosting: the application is completed on the employer's site (the
        # page's "Apply" leaves this one), so this page is no direct application.
        "directApply": False,
        "hiringOrganization": {"@type": "Organization", "name": listing.company_name},
        "jobLocation": {
            "@type": "Place",
            "address": {"@type": "PostalAddress", "addressLocality": listing.city_location},
        },
    }
    if listing.status == "open" and listing.valid_through is not None:
        data["validThrough"] = listing.valid_through.isoformat()
    if listing.work_mode == "remote":
        data["jobLocationType"] = "TELECOMMUTE"
        if listing.remote_countries:
            data["applicantLocationRequirements"] = [
                {"@type": "Country", "name": seeker.country_name(code)}
                for code in listing.remote_countries
            ]
    if listing.salary_min_ks is not None or listing.salary_max_ks is not None:
        value: dict[str, Any] = {"@type": "QuantitativeValue", "unitText": "YEAR"}
        if listing.salary_min_ks is not None:
            value["minValue"] = listing.salary_min_ks * 1000
        if listing.salary_max_ks is not None:
            value["maxValue"] = listing.salary_max_ks * 1000
        data["baseSalary"] = {
            "@type": "MonetaryAmount",
            "currency": listing.currency_code,
            "value": value,
        }
    text = json.dumps(data, ensure_ascii=False)
    # "</script>" or "<!--" inside a string must not end the element early.
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


async def _original_of(conn: AsyncConn, listing: ListingOut) -> ListingOut | None:
    """The listing this one repeats (its page says "also listed as"), if it still exists."""
    if listing.duplicate_of is None:
        return None
    try:
        return await find_listing(conn, str(listing.duplicate_of))
    except NotFound:
        return None  # deleted since: the foreign key has unlinked this one by now


VISA_WORDS = {
    "offered": "Visa sponsorship offered",
    "not_offered": "No visa sponsorship",
    "unknown": None,
}


def _salary_context(
    request: Request, listing: ListingOut, rates: Rates, currency: str | None
) -> dict[str, Any]:
    """The job page's currency picker and the salary in the picked currency (else the one
    of the browser's language), approximate, with the date of its rate."""
    known = set(rates.by_code)
    picked = (currency or "").strip().upper()
    chosen = (
        picked
        if picked in known
        else seeker.default_currency("", "", request.headers.get("accept-language", ""), known)
    )
    converted = rates.convert(
        listing.salary_min_ks, listing.salary_max_ks, listing.currency_code, chosen
    )
    text = seeker.converted_text(converted, listing)
    return {
        "currency": chosen,
        "currencies": seeker.currency_choices(sorted(known)),
        "converted": text,
        "rate_date": seeker.rate_day(converted.rate_date) if text and converted else None,
        "rate_date_iso": converted.rate_date.isoformat() if text and converted else None,
    }


def _posted(created_at: datetime) -> tuple[str, str]:
    return f"{created_at:%B} {created_at.day}, {created_at:%Y}", created_at.date().isoformat()


@router.get("/jobs/{slug}", response_class=HTMLResponse)
async def job_detail_page(
    request: Request, services: ServicesDep, slug: str, currency: str | None = None
) -> Response:
    try:
        async with services.pool.connection() as conn:
            listing = await find_listing(conn, slug)
            original = await _original_of(conn, listing)
        rates = await services.rates.get(services.reads.primary)
        similar = [] if listing.status == "closed" else await find_similar(services, slug)
    except NotFound:
        return not_found_page(
            request,
            "We couldn't find that job",
            "The listing may have been filled or removed, or the link is mistyped. "
            "Search for similar jobs instead.",
        )
    except UNAVAILABLE:
        log.exception("job detail page: database unavailable")
        return render(
            request,
            "not_found.html",
            {
                "title": "This page is unavailable right now",
                "message": "The service could not reach its database. Try again in a moment.",
                "status_code": 503,
            },
            status_code=503,
        )
    root = root_path(request)
    path = f"{root}/jobs/{quote(listing.detail_page_slug)}"
    if slug != listing.detail_page_slug:
        # An id or an old slug (the listing was renamed): one canonical URL per listing.
        return RedirectResponse(path, status_code=301)
    canonical = str(request.base_url).rstrip("/") + path.removeprefix(root)
    posted, posted_iso = _posted(listing.created_at)
    job = JobView(
        title=listing.job_title,
        company=listing.company_name,
        city=listing.city_location,
        salary_range=salary_of(listing),
        paragraphs=[p.strip() for p in re.split(r"\n\s*\n", listing.description) if p.strip()],
        posted=posted,
        posted_iso=posted_iso,
    )
    context = {
        "job": job,
        "meta_description": meta_description(listing),
        "canonical_url": canonical,
        "json_ld": job_posting_json_ld(listing, canonical),
        "back_url": f"{root}/",
        "closed": listing.status == "closed",
        "original": (
            None
            if original is None
            else {
                "url": f"{root}/jobs/{quote(original.detail_page_slug)}",
                "title": original.job_title,
                "company": original.company_name,
                "city": original.city_location,
            }
        ),
        "source_url": listing.source_url,
        "apply": seeker.apply_action(listing),
        "remote_countries": [seeker.country_name(c) for c in listing.remote_countries],
        "visa": VISA_WORDS[listing.visa_sponsorship],
        "similar": [
            {
                "url": f"{root}/jobs/{quote(j.listing.detail_page_slug)}",
                "title": j.listing.job_title,
                "company": j.listing.company_name,
                "city": j.listing.city_location,
                "reason": j.reason,
            }
            for j in similar
        ],
        **_salary_context(request, listing, rates, currency),
        "seen": (
            None
            if listing.last_seen_at is None
            else (
                listing.last_seen_at.isoformat(),
                age(listing.last_seen_at.isoformat(), datetime.now(UTC).isoformat()),
            )
        ),
    }
    return render(request, "job_detail.html", context, nav="jobs")


# --- recruiter console -------------------------------------------------------------------


@router.get("/recruit", response_class=HTMLResponse)
async def recruit_page(
    request: Request,
    search: str | None = None,
    poll: str | None = None,
    transport: str | None = None,
) -> HTMLResponse:
    """The console shell. ``?search=<id>`` reopens a search; ``?poll=<ms>`` sets the polling
    interval (default 5 s) and ``?transport=sse|poll`` forces one transport."""
    search_id = ""
    link_error = ""
    if search:
        try:
            search_id = str(uuid.UUID(search.strip()))
        except ValueError:
            link_error = "That search link is not valid: check that it was copied completely."
    requested = small_int(poll)
    poll_ms = (
        DEFAULT_POLL_MS if requested is None else min(MAX_POLL_MS, max(MIN_POLL_MS, requested))
    )
    context = {
        "search_id": search_id,
        "link_error": link_error,
        "poll_ms": poll_ms,
        "transport": transport if transport in TRANSPORTS else "auto",
    }
    return render(request, "recruit.html", context, nav="recruit")


# --- operator status ---------------------------------------------------------------------


@router.get("/status", response_class=HTMLResponse)
async def status_page(
    request: Request,
    services: ServicesDep,
    principal: OptionalPrincipalDep,
    fragment: str | None = None,
) -> HTMLResponse:
    """Queue depths, recent failures and running searches (what ``shortlist status`` prints).

    Public, because none of it identifies a person: the report never holds e-mail addresses,
    owners or tokens, and candidate failures are labelled by role. Withheld without an admin
    token (:func:`shortlist.status.public_view`): the running searches' query text and ids —
    recruiters' briefs are their business —, row ids, raw error texts of providers and the
    embedder, and the embedder's URL. Computed at most once per few seconds per process, and
    rate limited per client IP (admins exempt). ``static/status.js`` sends the admin token
    kept in ``sessionStorage`` as ``Authorization: Bearer`` when it refreshes the report
    (``?fragment=1``).
    """
    admin = principal is not None and principal.is_admin
    if not admin:
        request.app.state.probe_limiter.check(request.state.client_ip)
    status_code = 200
    cache: ProbeCache = request.app.state.probe_cache

    async def compute() -> dict[str, Any]:
        async with services.pool.connection() as conn:
            return await collect_status(conn, index_build_overrides(services.settings))

    try:
        # At most once per SHORTLIST_STATUS_CACHE_SECONDS per process, whoever asks; the
        # public view is cut from it (shortlist.status.public_view).
        full = await cache.get("status", compute)
        report: dict[str, Any] | None = full if admin else public_view(full)
    except UNAVAILABLE:
        log.exception("status page: database unavailable")
        report, status_code = None, 503
    context = {
        "report": report,
        "admin": admin,
        "signed_in_role": principal.role.value if principal else "",
        "generated": _utc_clock_time(report["generated_at"]) if report else "",
    }
    name = "_status_body.html" if fragment else "status.html"
    return render(request, name, context, status_code=status_code, nav="status")


def _utc_clock_time(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%H:%M:%S UTC")
