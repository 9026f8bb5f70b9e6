"""What the backfill pipeline needs from external sources: the data shapes, the error types
(transient vs permanent, as the worker loop understands them) and the two ports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from shortlist.errors import PermanentError, ShortlistError, TransientError

# Every person a provider returns is named by a provider-qualified handle. The SERP returns
# handles on the talent platform, so the same person found by any tier has one external id.
TALENT_PREFIX = "talent:"


def talent_external_id(username: str) -> str:
    return TALENT_PREFIX + username


@dataclass(frozen=True)
class DiscoveryQuery:
    """Filters for a discovery call (a tier maps the recruiter's search onto these)."""

    role: str | None = None
    location: str | None = None
    min_years: int | None = None
    skills: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProfileStub:
    """A discovered person, before enrichment."""

    external_id: str
    username: str
    display_name: str


@dataclass(frozen=True)
class DiscoveryPage:
    stubs: list[ProfileStub]
    has_more: bool


@dataclass(frozen=True)
class Profile:
    """An enriched person: what gets ingested into the candidate corpus."""

    external_id: str
    username: str
    full_name: str
    headline: str
    role_title: str
    role_family: str
    skills: list[str] = field(default_factory=list)
    years_experience: int | None = None
    location: str = ""
    email: str | None = None
    summary: str = ""
    profile_url: str | None = None


# --- errors ---------------------------------------------------------------------------------


class ProviderError(ShortlistError):
    """Base of every error an external provider call raises."""

    provider: str = ""


class ProviderTimeout(ProviderError, TransientError):
    """The call did not answer within its timeout (retried once)."""


class ProviderUnavailable(ProviderError, TransientError):
    """5xx or a connection failure (retried once)."""


class ProviderRateLimited(ProviderError, TransientError):
    """429: never retried blindly; the provider is paused for ``retry_after`` seconds."""


class ProviderPaused(ProviderError, TransientError):
    """Refused locally because the provider is paused after a 429 (no call was made)."""


class ProviderRejected(ProviderError, PermanentError):
    """4xx other than 429, or a malformed response: retrying will not help."""


class ProviderNotFound(ProviderRejected):
    """404: the profile does not exist (any more)."""


# --- ports ----------------------------------------------------------------------------------


class TalentAPI(Protocol):
    async def discover(self, query: DiscoveryQuery, page: int, per_page: int) -> DiscoveryPage:
        """One page of filtered discovery. Raises ``ProviderError`` subclasses."""
        ...

    async def enrich(self, username: str) -> Profile:
        """The full profile of one person. Raises ``ProviderError`` subclasses."""
        ...

    async def aclose(self) -> None: ...


class SerpAPI(Protocol):
    async def search(self, text: str, page: int) -> DiscoveryPage:
        """Free-text people search returning talent-platform handles."""
        ...

    async def aclose(self) -> None: ...
