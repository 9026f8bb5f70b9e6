"""The polite crawler's one way to fetch a URL.

* names itself: ``User-Agent: shortlist/VERSION (+SHORTLIST_CRAWL_CONTACT_URL)``;
* obeys robots.txt for HTML sources (Disallow and Crawl-delay, parsed by ``protego``, the
  parser Scrapy uses; RFC 9309: a robots.txt that is missing (4xx) allows everything, one
  that cannot be read (5xx, network) disallows everything for now: a transient error);
* asks conditionally (``If-None-Match`` / ``If-Modified-Since`` from the last response's
  ``ETag`` / ``Last-Modified``), so an unchanged page costs a 304;
* keeps a pace per host shared by every process: the next moment a request to a host may go
  out is a row of ``crawl_hosts``, reserved atomically (queries.sql ``reserve_host_slot``);
* bounds what it reads (``SHORTLIST_CRAWL_MAX_BYTES``) and the redirects it follows
  (``SHORTLIST_CRAWL_MAX_REDIRECTS``), each hop checked again;
* refuses anything but http(s) to public addresses unless ``SHORTLIST_CRAWL_ALLOW_PRIVATE``
  (``shortlist.public_address``: every address a host name resolves to must be global), and
  connects to the address checked (``PinnedBackend``), never to a second answer of the name
  (DNS rebinding). The hosts of the API base settings are the operator's own and always
  allowed;
* gives each request a deadline in all (``SHORTLIST_CRAWL_FETCH_DEADLINE``), and parses
  robots.txt off the event loop, its first :data:`ROBOTS_MAX_BYTES` only.

Errors are typed for the crawl queue: network trouble, timeouts, 429 and 5xx are
``TransientError`` (the source backs off); 404/410 is :class:`PageGone`; other refusals are
:class:`FetchRefused` (permanent).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin, urlsplit

import httpx
from protego import Protego

from shortlist import __version__, public_address
from shortlist.config import Settings
from shortlist.db.pool import single_statement
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool
from shortlist.errors import PermanentError, TransientError
from shortlist.public_address import AddressRefused, PinnedBackend, check_public

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.listings.sources")
ROBOTS_AGENT = "shortlist"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
ROBOTS_MAX_BYTES = 512_000
"""robots.txt read and parsed at most (RFC 9309 2.5: a crawler must parse at least 500 KiB)."""


class FetchRefused(PermanentError):
    """A URL the crawler will not fetch (scheme, private address, too large, a 4xx)."""


class PageGone(FetchRefused):
    """404 or 410: the page (or the whole board) is not there."""


class RobotsDisallowed(FetchRefused):
    """robots.txt disallows the URL for shortlist."""


def user_agent(contact_url: str) -> str:
    contact = f"; +{contact_url}" if contact_url else ""
    return f"shortlist/{__version__} (job listings crawler{contact})"


def host_key(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{(parts.hostname or '').lower()}:{port}"


@dataclass(frozen=True)
class FetchPolicy:
    user_agent: str
    allow_private: bool = False
    trusted_hosts: frozenset[str] = frozenset()
    """``host:port`` of the operator's API bases: fetched whatever their address."""
    host_delay: float = 1.0
    timeout: float = 30.0
    fetch_deadline: float = 120.0
    max_bytes: int = 20_000_000
    max_redirects: int = 5

    @classmethod
    def from_settings(
        cls, settings: Settings, *, extra_trusted: Collection[str] = ()
    ) -> FetchPolicy:
        bases = (
            settings.greenhouse_api_url,
            settings.lever_api_url,
            settings.lever_eu_api_url,
            settings.ashby_api_url,
            *extra_trusted,
        )
        return cls(
            user_agent=user_agent(settings.crawl_contact_url),
            allow_private=settings.crawl_allow_private,
            trusted_hosts=frozenset(host_key(b) for b in bases),
            host_delay=settings.crawl_host_delay,
            timeout=settings.crawl_timeout,
            fetch_deadline=settings.crawl_fetch_deadline,
            max_bytes=settings.crawl_max_bytes,
            max_redirects=settings.crawl_max_redirects,
        )


@dataclass(frozen=True)
class Validators:
    """What the last response said about its version, sent back on the next request."""

    etag: str | None = None
    last_modified: str | None = None


@dataclass
class Fetched:
    url: str
    """The URL finally answered (after redirects)."""
    status: int
    body: bytes = b""
    content_type: str = ""
    validators: Validators = field(default_factory=Validators)
    location: str | None = None
    """Where a redirect points."""

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    def text(self) -> str:
        charset = "utf-8"
        for part in self.content_type.split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


async def check_address(url: str, policy: FetchPolicy) -> str | None:
    """Raise ``FetchRefused`` unless the crawler may fetch ``url`` (scheme and address,
    ``shortlist.public_address``); ``TransientError`` if its host cannot be resolved now. The
    address checked, to connect to (None: a host the policy trusts whatever its address)."""
    allowed = policy.allow_private
    with contextlib.suppress(ValueError):  # a bad port: check_public says so
        allowed = allowed or host_key(url) in policy.trusted_hosts
    try:
        return await check_public(
            url, allow_private=allowed, setting="SHORTLIST_CRAWL_ALLOW_PRIVATE"
        )
    except AddressRefused as exc:
        raise FetchRefused(str(exc)) from exc


def pinned_client(policy: FetchPolicy, backend: PinnedBackend) -> httpx.AsyncClient:
    """An httpx client whose connections go to the addresses checked (``backend``)."""
    return public_address.pinned_client(
        backend, timeout=policy.timeout, user_agent=policy.user_agent
    )


class Fetcher:
    """One crawl's fetcher: its robots.txt cache lives as long as it does."""

    def __init__(
        self, pool: AsyncPool, policy: FetchPolicy, client: httpx.AsyncClient | None = None
    ) -> None:
        self.pool = pool
        self.policy = policy
        self._own_client = client is None
        self.backend = PinnedBackend()
        self.client = client or pinned_client(policy, self.backend)
        self._robots: dict[str, Protego | None] = {}
        self.requests = 0
        """Requests sent (robots.txt included), for the crawl's outcome and tests."""

    async def aclose(self) -> None:
        if self._own_client:
            await self.client.aclose()

    # -- guards ------------------------------------------------------------------------------

    async def check_url(self, url: str) -> None:
        """Check ``url``'s address, and pin its host to it for the connection."""
        self.backend.pin(url, await check_address(url, self.policy))

    async def _pace(self, url: str, delay: float) -> None:
        """Wait for this host's next slot, reserved for us in PostgreSQL."""
        if delay <= 0:
            return
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(
                QUERIES["reserve_host_slot"], {"host": host_key(url), "delay": delay}
            )
            row = await cur.fetchone()
        wait = float(row["wait"]) if row else 0.0
        if wait > 0:
            await asyncio.sleep(wait)

    # -- robots.txt ----------------------------------------------------------------------------

    async def robots(self, url: str) -> Protego | None:
        """The parsed robots.txt of ``url``'s site (None: none, everything allowed)."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin in self._robots:
            return self._robots[origin]
        robots_url = origin + "/robots.txt"
        try:
            fetched = await self._get(
                robots_url, None, self.policy.host_delay, robots=False, cap=ROBOTS_MAX_BYTES
            )
        except (PageGone, FetchRefused):
            parsed = None  # RFC 9309 2.3.1.3: unavailable (4xx) = no restriction
        else:
            # Parsing is CPU work (a 20 MB file took 2.2 s): off the event loop, and bounded.
            parsed = await asyncio.to_thread(Protego.parse, fetched.text())
        self._robots[origin] = parsed
        return parsed

    async def _delay_for(self, url: str, robots: bool) -> float:
        delay = self.policy.host_delay
        if robots:
            parsed = await self.robots(url)
            if parsed is not None:
                if not parsed.can_fetch(url, ROBOTS_AGENT):
                    raise RobotsDisallowed(f"robots.txt disallows {url[:200]}")
                crawl_delay = parsed.crawl_delay(ROBOTS_AGENT)
                if crawl_delay:
                    delay = max(delay, float(crawl_delay))
        return delay

    # -- fetching ------------------------------------------------------------------------------

    async def get(
        self, url: str, validators: Validators | None = None, *, robots: bool = False
    ) -> Fetched:
        """GET ``url`` (conditionally, given the last response's ``validators``), following
        redirects within bounds; ``robots``: obey robots.txt for it (HTML sources)."""
        delay = await self._delay_for(url, robots)
        return await self._get(url, validators, delay, robots=robots)

    async def _get(
        self,
        url: str,
        validators: Validators | None,
        delay: float,
        *,
        robots: bool,
        cap: int | None = None,
    ) -> Fetched:
        current = url
        for _hop in range(self.policy.max_redirects + 1):
            await self.check_url(current)
            await self._pace(current, delay)
            headers: dict[str, str] = {}
            if validators is not None and current == url:
                if validators.etag:
                    headers["If-None-Match"] = validators.etag
                if validators.last_modified:
                    headers["If-Modified-Since"] = validators.last_modified
            try:
                async with asyncio.timeout(self.policy.fetch_deadline):
                    fetched = await self._one(current, headers, cap)
            except TimeoutError as exc:
                raise TransientError(
                    f"{current[:200]} took more than {self.policy.fetch_deadline:g} s"
                ) from exc
            if fetched.status in REDIRECTS:
                current = urljoin(current, fetched.location or "")
                if robots:
                    delay = await self._delay_for(current, robots)
                continue
            return fetched
        raise FetchRefused(f"more than {self.policy.max_redirects} redirects from {url[:200]}")

    async def _one(self, url: str, headers: dict[str, str], cap: int | None = None) -> Fetched:
        """One request; ``cap``: read that many bytes at most and keep them (robots.txt), where
        a larger body is otherwise refused."""
        self.requests += 1
        try:
            async with self.client.stream("GET", url, headers=headers) as response:
                status = response.status_code
                if status in REDIRECTS:
                    location = response.headers.get("location")
                    if not location:
                        raise FetchRefused(f"{url[:200]} redirects nowhere ({status})")
                    return Fetched(url, status, location=location)
                if status == 304:
                    return Fetched(url, 304, validators=_validators(response))
                if status == 429 or status >= 500:
                    raise TransientError(
                        f"{url[:200]} answered {status}",
                        retry_after=_retry_after(response.headers.get("retry-after")),
                    )
                if status in (404, 410):
                    raise PageGone(f"{url[:200]} answered {status}")
                if status >= 400:
                    raise FetchRefused(f"{url[:200]} answered {status}")
                length = response.headers.get("content-length")
                if (
                    cap is None
                    and length
                    and length.isdigit()
                    and int(length) > self.policy.max_bytes
                ):
                    raise FetchRefused(f"{url[:200]} is larger than {self.policy.max_bytes} bytes")
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if cap is not None and size >= cap:
                        chunks.append(chunk[: len(chunk) - (size - cap)])
                        break
                    if size > self.policy.max_bytes:
                        raise FetchRefused(
                            f"{url[:200]} is larger than {self.policy.max_bytes} bytes"
                        )
                    chunks.append(chunk)
                return Fetched(
                    str(response.url),
                    status,
                    b"".join(chunks),
                    response.headers.get("content-type", ""),
                    _validators(response),
                )
        except httpx.TimeoutException as exc:
            raise TransientError(f"{url[:200]} timed out") from exc
        except httpx.TransportError as exc:
            raise TransientError(f"{url[:200]}: {exc}") from exc


def _validators(response: httpx.Response) -> Validators:
    return Validators(response.headers.get("etag"), response.headers.get("last-modified"))
