"""The records of the candidate-search pipeline: the recruiter's request, the status machines of
searches, tiers and candidate stubs, and the rows the workers claim."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from shortlist.redact import redact_emails
from shortlist.talent.vendors.base import Profile
from shortlist.validation import storable


class SearchStatus(StrEnum):
    running = "running"
    complete = "complete"
    stale = "stale"


class Tier(StrEnum):
    """Where a result came from: the internal corpus, or one of the three discovery tiers."""

    internal = "internal"
    strict = "strict"
    broad = "broad"
    serp = "serp"


DISCOVERY_TIERS: tuple[Tier, ...] = (Tier.strict, Tier.broad, Tier.serp)


class TierStatus(StrEnum):
    queued = "queued"
    running = "running"
    exhausted = "exhausted"
    failed = "failed"
    quota_exhausted = "quota_exhausted"


class CandidateStatus(StrEnum):
    """``queued → running → succeeded | failed_*``; ``failed_* → queued`` on a retry."""

    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed_no_email = "failed_no_email"
    failed_transient = "failed_transient"
    failed_permanent = "failed_permanent"
    skipped = "skipped"
    """Not enriched: the search reached its target (or budget) first."""
    below_threshold = "below_threshold"
    """Enriched and scored, but below the relevance floor: not a result."""


MAX_ERROR_LENGTH = 1000


def error_text(error: BaseException | str) -> str:
    """An error as stored in ``last_error`` and logged: bounded, and with any e-mail address
    masked (:func:`shortlist.redact.redact_emails`)."""
    return redact_emails(str(error), MAX_ERROR_LENGTH)


_Short = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]
_Skill = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50)]


class SearchCreate(BaseModel):
    """``POST /api/searches``: a free-text brief plus optional structured filters.

    Blank optional strings count as absent; everything else out of range is refused (422),
    before anything is written.
    """

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)]
    role: _Short | None = None
    location: _Short | None = None
    min_years_experience: Annotated[int, Field(ge=0, le=80)] | None = None
    skills: Annotated[list[_Skill], Field(max_length=20)] = Field(default_factory=list)

    @field_validator("query", "role", "location")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        return storable(value) if value is not None else None

    @field_validator("skills")
    @classmethod
    def _storable_skills(cls, value: list[str]) -> list[str]:
        return [storable(s) for s in value]

    @field_validator("role", "location")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("skills")
    @classmethod
    def _dedupe_skills(cls, value: list[str]) -> list[str]:
        # "Rust" and "rust" are one filter; keep the first spelling.
        seen: dict[str, str] = {}
        for skill in value:
            seen.setdefault(skill.casefold(), skill)
        return list(seen.values())


@dataclass(frozen=True)
class SearchStarted:
    search_id: uuid.UUID
    status: SearchStatus
    result_count: int
    backfill_started: bool

    @property
    def results_url(self) -> str:
        return f"/api/results?searchId={self.search_id}"


@dataclass(frozen=True)
class SearchBrief:
    """What the discovery tiers need to know about a search."""

    search_id: uuid.UUID
    query: str
    role: str | None
    location: str | None
    min_years_experience: int | None
    skills: tuple[str, ...]


@dataclass(frozen=True)
class ClaimedTier:
    id: int
    tier: Tier
    next_page: int
    attempts: int
    search: SearchBrief
    cursor: str | None = None
    """The provider's token for ``next_page`` (PDL's scroll_token)."""
    held: tuple[NewStub, ...] = ()
    """People an earlier page brought beyond the shortfall (migration 0014): taken first."""
    provider_done: bool = False
    """The provider said the last page fetched was its last."""


class NewStub(NamedTuple):
    """A discovered person about to become a stub: the row ``insert_stubs`` writes."""

    external_id: str
    display_name: str
    profile: Profile | None
    aliases: tuple[str, ...] = ()
    """The person's other ids the discovery answer gave (a PDL record's older LinkedIn slugs,
    its PDL id): nobody the search knows by any of them is attempted again."""


@dataclass(frozen=True)
class ClaimedStub:
    id: int
    search_id: uuid.UUID
    external_id: str
    tier: Tier
    attempts: int
    enriched: Profile | None = None
    """The profile an earlier claim enriched but could not ingest (migration 0007)."""
