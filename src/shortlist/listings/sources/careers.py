"""Careers pages and sitemaps carrying schema.org ``JobPosting`` structured data
(https://schema.org/JobPosting; what Google for Jobs reads:
https://developers.google.com/search/docs/appearance/structured-data/job-posting).

A source URL is either

* a page whose JSON-LD holds one or more ``JobPosting`` nodes, wherever schema.org nesting puts
  them: at the top, in an ``@graph`` or a list, or as the value of another node's property —
  the ``mainEntity`` of a ``WebPage`` / ``ItemPage`` ("the primary entity described in some
  page", https://schema.org/mainEntity), an ``ItemList``'s ``itemListElement``, and so on;
* a sitemap (``<urlset>``, or a ``<sitemapindex>`` one level deep: https://www.sitemaps.org/
  protocol.html) whose ``<loc>`` pages are read for their postings;
* a careers page without postings of its own: its links on the same site under the page's
  path (or whose path names a job, career, position, opening or vacancy) are read instead.

Every page goes through robots.txt (a disallowed posting page is never listed), at most
``SHORTLIST_CRAWL_MAX_PAGES`` posting pages a crawl, each conditionally. Fields mapped:
``title``, ``description`` (HTML, to plain text), ``identifier`` (the external id; else the
posting's ``url``, else the page), ``url``, ``datePosted``, ``validThrough``,
``hiringOrganization.name``, ``jobLocation.address.addressLocality``, ``jobLocationType:
TELECOMMUTE`` (remote), ``baseSalary`` (``MonetaryAmount``: ``currency``, ``value`` as a
``QuantitativeValue`` with ``value`` / ``minValue`` / ``maxValue`` and ``unitText`` HOUR, DAY,
WEEK, MONTH or YEAR).

Markup is parsed by extruct (JSON-LD) and lxml (sitemaps, links), off the event loop.
"""

from __future__ import annotations

import asyncio
import html
import re
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import lxml.etree
import lxml.html

from shortlist.errors import TransientError
from shortlist.listings import eligibility, jobpost
from shortlist.listings.sources import mapping
from shortlist.listings.sources.context import CrawlContext
from shortlist.listings.sources.fetch import FetchRefused, PageGone, RobotsDisallowed
from shortlist.listings.sources.models import Board, Posting, SourceGone

_JOBBY_PATH = re.compile(r"job|career|position|opening|vacanc", re.IGNORECASE)
# A page's JSON-LD is the site's, and may be hostile: the walk for JobPosting nodes goes at most
# this deep and looks at most at this many objects and arrays (a real page has a few dozen).
MAX_JSONLD_DEPTH = 16
MAX_JSONLD_NODES = 20_000
_XML_PARSER = lxml.etree.XMLParser(
    resolve_entities=False, no_network=True, huge_tree=False, remove_comments=True
)


def _unescaped(value: Any, limit: int) -> str | None:
    text = mapping.text_of(value, limit * 2)
    return mapping.text_of(html.unescape(text), limit) if text else None


def _types(node: dict[str, Any]) -> set[str]:
    """A node's type names without a vocabulary prefix (``https://schema.org/JobPosting``,
    ``schema:JobPosting`` → ``JobPosting``)."""
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {re.split(r"[/#:]", k)[-1] for k in kinds if isinstance(k, str) and k}


def job_posting_nodes(data: Any) -> list[dict[str, Any]]:
    """Every ``JobPosting`` node in extruct's JSON-LD items, in document order: at the top, in
    ``@graph`` and lists, or nested as any property's value (``mainEntity``, ``@reverse``,
    ``itemListElement`` / ``item``, …). A JobPosting is taken whole (nothing inside it is
    another posting); one that appears twice under one ``@id`` counts once. Bounded by
    ``MAX_JSONLD_DEPTH`` and ``MAX_JSONLD_NODES``: what lies beyond is not read."""
    found: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    stack: list[tuple[Any, int]] = [(data, 0)] if isinstance(data, list | dict) else []
    visited = 0
    while stack and visited < MAX_JSONLD_NODES:
        item, depth = stack.pop()
        visited += 1
        children: list[Any]
        if isinstance(item, list):
            children = item
        elif "JobPosting" in _types(item):
            node_id = item.get("@id")
            if not isinstance(node_id, str) or node_id not in seen_ids:
                found.append(item)
            if isinstance(node_id, str):
                seen_ids.add(node_id)
            continue
        else:
            children = list(item.values())
        if depth < MAX_JSONLD_DEPTH:
            stack.extend(
                (child, depth + 1) for child in reversed(children) if isinstance(child, list | dict)
            )
    return found


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def _city(node: dict[str, Any]) -> str | None:
    place = _first(node.get("jobLocation"))
    if isinstance(place, dict):
        address = place.get("address")
        if isinstance(address, dict):
            for key in ("addressLocality", "addressRegion", "addressCountry"):
                value = address.get(key)
                if isinstance(value, dict):
                    value = value.get("name")
                city = _unescaped(value, 200)
                if city:
                    return city
        return _unescaped(address, 200) or _unescaped(place.get("name"), 200)
    return _unescaped(place, 200)


def _salary(node: dict[str, Any]) -> tuple[int | None, int | None, str | None]:
    amount = node.get("baseSalary")
    if not isinstance(amount, dict):
        return None, None, None
    code = jobpost.currency_code(amount.get("currency"))
    value = amount.get("value")
    if isinstance(value, dict):
        period = jobpost.period_of(value.get("unitText"))
        if value.get("minValue") is not None or value.get("maxValue") is not None:
            low, high = jobpost.salary_pair(value.get("minValue"), value.get("maxValue"), period)
        else:
            low = high = jobpost.yearly_ks(value.get("value"), period)
    else:
        low = high = jobpost.yearly_ks(value, jobpost.period_of(amount.get("unitText")))
    return low, high, code


def _identifier(node: dict[str, Any]) -> str | None:
    ident = node.get("identifier")
    if isinstance(ident, dict):
        ident = ident.get("value") or ident.get("@id")
    return mapping.text_of(ident, 400)


def map_job_posting(node: dict[str, Any], page_url: str, index: int) -> Posting | None:
    """A ``JobPosting`` node found on ``page_url`` as a posting; None without a title."""
    title = _unescaped(node.get("title"), 300)
    if not title:
        return None
    url = mapping.text_of(node.get("url"), 2000)
    posting_url = urljoin(page_url, url) if url else page_url
    external = _identifier(node) or (posting_url if url else f"{page_url}#{index}")
    org = node.get("hiringOrganization")
    company = _unescaped(org.get("name") if isinstance(org, dict) else org, 200)
    description = node.get("description")
    text = description if isinstance(description, str) else ""
    plain = mapping.plain_text(text, escaped="&lt;" in text)
    mode = jobpost.named_work_mode(_first(node.get("jobLocationType")))
    low, high, code = _salary(node)
    return Posting(
        external_id=external[:500],
        job_title=title,
        description=plain or title,
        company_name=company,
        city_location=_city(node),
        work_mode=mode,
        salary_min_ks=low,
        salary_max_ks=high,
        currency_code=code,
        source_url=posting_url,
        valid_through=mapping.timestamp(node.get("validThrough"), end_of_day=True),
        posted_at=mapping.timestamp(node.get("datePosted")),
        # Google's JobPosting: ``url`` is the posting's page and ``directApply`` says one applies
        # there; either way it is where the reader goes to apply.
        apply_url=posting_url,
        remote_countries=_applicant_countries(node) if mode == "remote" else None,
    )


def _applicant_countries(node: dict[str, Any]) -> list[str] | None:
    """``applicantLocationRequirements`` (Google's JobPosting for remote jobs: "the
    geographic location(s) in which employees may be located", a ``Country`` or
    ``State`` with a ``name``, or a list of them)."""
    value = node.get("applicantLocationRequirements")
    items = value if isinstance(value, list) else [value]
    names = [item.get("name") if isinstance(item, dict) else item for item in items]
    return eligibility.codes_of(names) or None


def postings_of_page(body: str, url: str) -> list[Posting]:
    """The postings a page's JSON-LD holds (CPU: call off the event loop)."""
    # Imported here: extruct and what it imports weigh ~13 MB of memory, which an API process
    # (it imports this module to add sources) never needs; only a crawl reads pages.
    from extruct.jsonld import JsonLdExtractor

    try:
        items = JsonLdExtractor().extract(body, base_url=url)
    except (ValueError, RecursionError, lxml.etree.LxmlError):
        # Markup or JSON that does not parse, or JSON nested past the parser's recursion
        # limit (a hostile page): no postings on this page.
        return []
    postings = []
    for n, node in enumerate(job_posting_nodes(items)):
        posting = map_job_posting(node, url, n)
        if posting is not None:
            postings.append(posting)
    return postings


def sitemap_locations(body: bytes) -> tuple[str, list[str]] | None:
    """``("urlset" | "sitemapindex", [loc, …])`` if ``body`` is a sitemap, else None."""
    head = body[:2048].lstrip()
    if not (
        head.startswith(b"<?xml")
        or head.startswith(b"<urlset")
        or b"<urlset" in head
        or b"<sitemapindex" in head
    ):
        return None
    try:
        root = lxml.etree.fromstring(body, parser=_XML_PARSER)
    except lxml.etree.XMLSyntaxError:
        return None
    kind = lxml.etree.QName(root).localname
    if kind not in ("urlset", "sitemapindex"):
        return None
    locs = [str(t).strip() for t in root.xpath("//*[local-name()='loc']/text()")]
    return kind, [loc for loc in locs if loc]


def job_links(body: str, url: str) -> list[str]:
    """Links of a careers page to the pages of its jobs: the same site, under the page's path
    or with a path that names a job; without fragments, each once, in page order."""
    try:
        doc = lxml.html.fromstring(body)
    except (lxml.etree.LxmlError, ValueError):
        return []
    base = urlsplit(url)
    prefix = base.path if base.path.endswith("/") else base.path + "/"
    seen: dict[str, None] = {}
    for href in doc.xpath("//a/@href"):
        target = urlsplit(urljoin(url, str(href)))
        if (target.scheme, target.netloc) != (base.scheme, base.netloc):
            continue
        if not (target.path.startswith(prefix) or _JOBBY_PATH.search(target.path)):
            continue
        clean = urlunsplit((target.scheme, target.netloc, target.path, target.query, ""))
        if clean.rstrip("/") != url.rstrip("/"):
            seen.setdefault(clean, None)
    return list(seen)


async def _read_page(ctx: CrawlContext, page_url: str, board: Board) -> None:
    """One posting page into ``board``: its postings, a 304's, or (unreadable for now) the
    last crawl's postings kept as they were."""
    try:
        page = await ctx.fetch(page_url, robots=True)
    except RobotsDisallowed:
        board.skipped += 1
        return
    except PageGone:
        return  # its postings are gone
    except (TransientError, FetchRefused):
        memo = ctx.previous.get(page_url)
        if memo is not None:
            board.kept_ids.update(memo.external_ids)
            ctx.memos[page_url] = memo
        return
    if page.not_modified:
        board.unchanged_ids.update(ctx.unchanged(page_url))
        return
    postings = await asyncio.to_thread(postings_of_page, page.text(), page.url)
    board.postings.extend(postings)
    ctx.remember(page_url, page, [p.external_id for p in postings])


async def crawl(ctx: CrawlContext, url: str) -> Board:
    board = Board()
    try:
        root = await ctx.fetch(url, robots=True)
    except RobotsDisallowed as exc:
        raise SourceGone(str(exc)) from exc
    except PageGone as exc:
        raise SourceGone(f"no careers page at {url[:200]} ({exc})") from exc
    if root.not_modified:
        # The index is as it was: so is its list of pages (every other URL the last crawl read).
        ctx.unchanged(url)
        children = [u for u in ctx.previous if u != url]
        own: list[Posting] = []
        board.unchanged_ids.update(ctx.previous[url].external_ids if url in ctx.previous else [])
    else:
        sitemap = await asyncio.to_thread(sitemap_locations, root.body)
        own = []
        if sitemap is not None:
            kind, locs = sitemap
            # sitemaps.org: every URL of a sitemap is on the sitemap's own host; one naming
            # another host is not this site's to list (nor the crawler's to fetch).
            locs = [loc for loc in locs if _same_host(loc, root.url)]
            children = await _expand_index(ctx, locs) if kind == "sitemapindex" else locs
        else:
            text = root.text()
            own = await asyncio.to_thread(postings_of_page, text, root.url)
            children = [] if own else await asyncio.to_thread(job_links, text, root.url)
        board.postings.extend(own)
        ctx.remember(url, root, [p.external_id for p in own])
    for child in children[: ctx.max_pages]:
        await _read_page(ctx, child, board)
    board.skipped += max(0, len(children) - ctx.max_pages)
    return board


def _same_host(url: str, of: str) -> bool:
    return (urlsplit(url).hostname or "").lower() == (urlsplit(of).hostname or "").lower()


async def _expand_index(ctx: CrawlContext, sitemaps: list[str]) -> list[str]:
    """The pages of a sitemap index's sitemaps (one level: an index of indexes is not read)."""
    pages: list[str] = []
    for sitemap_url in sitemaps[: ctx.max_pages]:
        try:
            fetched = await ctx.fetcher.get(sitemap_url, robots=True)
        except FetchRefused:
            continue  # disallowed or gone: its pages are not ours to read
        # A sitemap unreadable for now raises: a crawl missing part of the index would take
        # the pages it lists for gone.
        found = await asyncio.to_thread(sitemap_locations, fetched.body)
        if found is not None and found[0] == "urlset":
            pages.extend(loc for loc in found[1] if _same_host(loc, fetched.url))
        if len(pages) >= ctx.max_pages:
            break
    return pages
