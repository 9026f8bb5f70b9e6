"""What the backfill pipeline needs from external sources: the data shapes, the error types
(transient vs permanent, as the worker loop understands them) and the two ports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from shortlist.errors import PermanentError, ShortlistError, TransientError
from shortlist.identity import LINKEDIN_PREFIX, linkedin_slug
from shortlist.places import Place

# Every person a provider returns is named by a provider-qualified handle. The SERP returns
# handles on the talent platform, so the same person found by any tier has one external id.
TALENT_PREFIX = "talent:"


def talent_external_id(username: str) -> str:
    return TALENT_PREFIX + username


# One identity per person across providers: a LinkedIn slug is what a SERP hit and a PDL
# record of the same person have in common, so it names the person whenever either knows it;
# otherwise the provider's own id does ("pdl:<id>").
def canonical_external_id(
    *, linkedin: str | None, provider: str, provider_id: str | None
) -> str | None:
    """``linkedin:<slug>`` when the LinkedIn profile is known, else ``<provider>:<id>``."""
    slug = linkedin_slug(linkedin)
    if slug:
        return LINKEDIN_PREFIX + slug
    if provider_id:
        return f"{provider}:{provider_id}"
    return None


@dataclass(frozen=True)
class DiscoveryQuery:
    """Filters for a discovery call (a tier maps the recruiter's search onto these).

    ``role``, ``location``, ``min_years`` and ``skills`` are the brief's; ``place`` is where to
    look, resolved by the gazetteer (``shortlist.places``) and already widened by the tier (a
    region or country for the broad tier; None: anywhere, or a place the gazetteer does not
    know, then ``location`` is matched as text). ``widen`` asks for the role's neighbours
    (its words in any order) as well as its exact title, and no longer requires ``min_years``
    (a profile stating no years is wanted, one stating fewer is not); ``exclude`` is a query
    whose people are not wanted again (the strict tier's, which already paid for them).
    """

    role: str | None = None
    location: str | None = None
    min_years: int | None = None
    skills: tuple[str, ...] = ()
    place: Place | None = None
    widen: bool = False
    exclude: DiscoveryQuery | None = None


@dataclass(frozen=True)
class ProfileStub:
    """A discovered person, before enrichment. ``profile`` is set when the discovery answer
    already carried the full record (a PDL search hit): nobody pays to enrich it again."""

    external_id: str
    username: str
    display_name: str
    profile: Profile | None = None
    aliases: tuple[str, ...] = ()
    """Other external ids of the same person (a PDL record's older LinkedIn slugs, from its
    ``profiles``): a person already known by one of them is not taken again."""
    headline: str = ""
    """What the discovery answer says for sure the person does (a search result's title:
    "Backend Engineer"), before anyone pays to enrich them; empty when it does not say."""
    page_text: str = ""
    """The rest of what a web result shows of them (a title segment that may be their title or
    their company, the rich snippet, the snippet): evidence for their role, never against."""
    location: str = ""
    """Where the web result shows them ("Berlin, Berlin, Germany"); empty when it does not."""


@dataclass(frozen=True)
class DiscoveryPage:
    stubs: list[ProfileStub]
    has_more: bool
    cursor: str | None = None
    """The provider's token for the next page (PDL's ``scroll_token``), when it pages by token."""


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
    email_on_file: bool = False
    """The vendor says an address exists but did not show it (PDL Free and trial plans answer
    ``true`` for a contact field): a person one can still reach through the vendor."""
    aliases: tuple[str, ...] = ()
    """The person's other ids as the vendor knows them (a PDL record's older LinkedIn slugs
    from ``profiles[]``, its PDL id): one person is one candidate under any of them."""


# --- errors ---------------------------------------------------------------------------------


class ProviderError(ShortlistError):
    """Base of every error an external provider call raises."""

    provider: str = ""
    sent_unanswered: bool = False
    """The request may have reached the provider, and no answer came back (a read timeout, a
    connection lost mid-answer): a billed call may have been billed."""


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


class ProviderNoEmail(ProviderNotFound):
    """An enrichment that required an e-mail address was answered 404, unbilled: the provider
    holds no record of this person with one (its 404 does not say whether it knows them at
    all). The candidate ends ``failed_no_email``, as one enriched without an address does."""


class ProviderQuotaExhausted(ProviderError, PermanentError):
    """The account has no credits / searches left (PDL 402, SerpApi "run out of searches"):
    no retry helps until someone buys more, so the tier ends ``quota_exhausted``."""


# --- what a call cost --------------------------------------------------------------------------


@dataclass(frozen=True)
class CallRecord:
    """One provider call as the credit ledger records it."""

    provider: str
    kind: str
    credits: int
    outcome: str


# --- ports ----------------------------------------------------------------------------------


class TalentAPI(Protocol):
    async def discover(
        self, query: DiscoveryQuery, page: int, per_page: int, cursor: str | None = None
    ) -> DiscoveryPage:
        """One page of filtered discovery (``cursor``: the previous page's, for providers that
        page by token). Raises ``ProviderError`` subclasses."""
        ...

    async def enrich(self, external_id: str) -> Profile:
        """The full profile of one person, by the external id discovery gave them. Raises
        ``ProviderError`` subclasses (``ProviderRejected`` for an id it cannot look up)."""
        ...

    async def aclose(self) -> None: ...


class SerpAPI(Protocol):
    async def search(self, text: str, page: int, place: Place | None = None) -> DiscoveryPage:
        """Free-text people search returning profile handles (external ids); ``place`` is
        where the search originates (a hint the provider may use), when the brief names one."""
        ...

    async def aclose(self) -> None: ...
