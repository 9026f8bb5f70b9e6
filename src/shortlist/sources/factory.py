"""Build the configured external sources (``SHORTLIST_TALENT_API_URL`` /
``SHORTLIST_SERP_API_URL``)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from shortlist.config import Settings
from shortlist.errors import ConfigError
from shortlist.sources.base import SerpAPI, TalentAPI
from shortlist.sources.serp import HttpSerpAPI
from shortlist.sources.talent_api import HttpTalentAPI


class SourcesNotConfigured(ConfigError):
    """A source URL is unset or unusable. ``shortlist serve`` sets both to its in-process
    simulator; any other process (a standalone worker) must be told where the providers are."""


@dataclass
class Sources:
    """The external sources one process uses; each owns its provider gate and connections."""

    talent: TalentAPI
    serp: SerpAPI

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


def make_sources(settings: Settings) -> Sources:
    """The HTTP adapters for ``settings.talent_api_url`` and ``settings.serp_api_url``.

    Raises ``SourcesNotConfigured`` if either is unset or not an http(s) URL.
    """
    talent_url = _checked_url(settings.talent_api_url, "SHORTLIST_TALENT_API_URL")
    serp_url = _checked_url(settings.serp_api_url, "SHORTLIST_SERP_API_URL")
    return Sources(
        talent=HttpTalentAPI(talent_url, settings),
        serp=HttpSerpAPI(serp_url, settings),
    )
