"""Build the configured external sources (``SHORTLIST_TALENT_API_URL`` /
``SHORTLIST_SERP_API_URL``)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from shortlist.config import Settings
from shortlist.errors import ConfigError
from shortlist.talent.vendors.base import SerpAPI, TalentAPI
from shortlist.talent.vendors.limits import GateLimit, RateGate
from shortlist.talent.vendors.pdl import ENRICH_GATE, SEARCH_GATE, PdlTalentAPI
from shortlist.talent.vendors.serp import HttpSerpAPI
from shortlist.talent.vendors.serpapi import GATE as SERPAPI_GATE
from shortlist.talent.vendors.serpapi import SerpApiSearch
from shortlist.talent.vendors.talent_api import HttpTalentAPI


class SourcesNotConfigured(ConfigError):
    """A source URL or key is unset or unusable (``serve`` and ``worker`` point unset URLs at
    the bundled simulator, see ``shortlist.bootstrap.bundled_simulator``)."""


@dataclass
class Sources:
    """The external sources one process uses; each owns its provider gate and connections."""

    talent: TalentAPI
    serp: SerpAPI
    records_from_search: bool = False
    """The talent API's search answers with whole records, each billed (PDL's Person Search):
    a page of them is preferred to a web hit's paid enrichment (``records_first`` of the
    claims in talent/queries.sql)."""

    async def aclose(self) -> None:
        try:
            await self.talent.aclose()
        finally:
            await self.serp.aclose()


def _checked_url(value: str | None, env: str) -> str:
    if not value:
        raise SourcesNotConfigured(
            f"{env} is not set: point it at the provider (or run `shortlist serve`, which "
            "starts the bundled simulator and sets it)"
        )
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL as exc:
        raise SourcesNotConfigured(f"{env}={value!r} is not a URL: {exc}") from exc
    # Checked here, once, so that a typo fails at start-up, not as a transient error per call.
    if url.scheme not in ("http", "https") or not url.host:
        raise SourcesNotConfigured(f"{env}={value!r} must be an http(s) URL with a host")
    return value


def make_sources(settings: Settings, *, limiter: RateGate | None = None) -> Sources:
    """The adapters for ``settings.talent_api_url`` (``settings.talent_api``: PDL or the
    generic HTTP API) and ``settings.serp_api_url`` (SerpApi or the generic one). ``limiter``
    shares the vendors' per-endpoint rate limits and balances between processes (PDL and
    SerpApi only).

    Raises ``SourcesNotConfigured`` if either URL is unset or not an http(s) URL, or a vendor's
    key is missing.
    """
    talent_url = _checked_url(settings.talent_api_url, "SHORTLIST_TALENT_API_URL")
    serp_url = _checked_url(settings.serp_api_url, "SHORTLIST_SERP_API_URL")
    talent: TalentAPI
    serp: SerpAPI
    if settings.talent_api == "pdl":
        _require_key(settings.talent_api_key, "SHORTLIST_TALENT_API_KEY", "People Data Labs")
        talent = PdlTalentAPI(talent_url, settings, limiter=limiter)
    else:
        talent = HttpTalentAPI(talent_url, settings)
    if settings.serp_api == "serpapi":
        _require_key(settings.serp_api_key, "SHORTLIST_SERP_API_KEY", "SerpApi")
        serp = SerpApiSearch(serp_url, settings, limiter=limiter)
    else:
        serp = HttpSerpAPI(serp_url, settings)
    return Sources(talent=talent, serp=serp, records_from_search=settings.talent_api == "pdl")


def check_half_configured(settings: Settings) -> None:
    """Both talent vendors real, or both simulated: with only one URL set, the other would
    point at the bundled simulator, and a real PDL would be asked to enrich the simulator's
    made-up LinkedIn slugs (or a real SerpApi's people looked up in a made-up population)."""
    talent, serp = settings.talent_api_url, settings.serp_api_url
    if (talent is None) != (serp is None):
        given, missing = (
            ("SHORTLIST_TALENT_API_URL", "SHORTLIST_SERP_API_URL")
            if serp is None
            else ("SHORTLIST_SERP_API_URL", "SHORTLIST_TALENT_API_URL")
        )
        raise SourcesNotConfigured(
            f"{given} is set but {missing} is not: set both (the real vendors) or neither "
            "(the bundled simulator for both)"
        )


def _require_key(value: str, env: str, vendor: str) -> None:
    if not value.strip():
        raise SourcesNotConfigured(f"{env} is not set: {vendor} refuses requests without a key")


def rate_limits(settings: Settings) -> dict[str, GateLimit]:
    """The configured limit of each vendor endpoint's gate, shared by every process (PDL:
    per endpoint, fixed 60 s windows; SerpApi: searches per hour). The search endpoints defer
    their callers (tier pages) past a full window; enrichment waits for it."""
    pdl_window = settings.pdl_window_seconds
    return {
        SEARCH_GATE: GateLimit(settings.pdl_search_rate_limit, pdl_window, defer=True),
        ENRICH_GATE: GateLimit(settings.pdl_enrich_rate_limit, pdl_window),
        SERPAPI_GATE: GateLimit(
            settings.serpapi_rate_limit, settings.serpapi_window_seconds, defer=True
        ),
    }
