"""The job listing as producers write it (``ListingCreate``/``ListingPatch``) and as the API
returns it (``ListingOut``).

Limits mirror the CHECK constraints of ``job_listings`` (migration 0001), so input that passes
validation never trips a constraint: the database stays the last line of defence, not the
first place bad input is noticed.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from shortlist.errors import BadInput
from shortlist.listings.eligibility import VisaSponsorship
from shortlist.validation import blank_to_none, storable

MAX_COMPANY = 200
MAX_TITLE = 300
MAX_CITY = 200
MAX_DESCRIPTION = 50_000
MAX_SALARY_KS = 100_000

Source = Literal["api", "file", "email", "sample"]
"""The producers that write listings themselves; a crawled listing's source is the spec of the
job source it came from (``greenhouse:acme``, a careers URL: shortlist.listings.sources)."""
ListingStatus = Literal["open", "closed"]
EmbeddingStatus = Literal["pending", "embedded", "failed"]
WorkMode = Literal["remote", "hybrid", "onsite"]
WORK_MODES: tuple[WorkMode, ...] = ("remote", "hybrid", "onsite")


def _no_bool(value: object) -> object:
    # pydantic's lax mode reads true as 1; a salary of "true" thousand is a client bug.
    if isinstance(value, bool):
        raise ValueError("must be a whole number of thousands, not a boolean")
    return value


def _upper(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


CompanyName = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_COMPANY),
    AfterValidator(storable),
]
JobTitle = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE),
    AfterValidator(storable),
]
CityLocation = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_CITY),
    AfterValidator(storable),
]
Description = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_DESCRIPTION),
    AfterValidator(storable),
]
SalaryKs = Annotated[
    Annotated[int, Field(ge=0, le=MAX_SALARY_KS)] | None,
    BeforeValidator(_no_bool),
    BeforeValidator(blank_to_none),
    Field(description="thousands of currency_code"),
]
CurrencyCode = Annotated[
    str,
    BeforeValidator(_upper),
    Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code, e.g. USD (upper-cased on input)"),
]

MAX_URL = 2000
MAX_EMAIL = 320
_EMAIL = re.compile(
    r"^[^@\s<>()\[\],;:\"]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)


def _apply_url(value: str) -> str:
    """An employer's application page: http(s), a host, no user or password before it (a
    link that logs the reader in as someone is no apply link), no white space."""
    if len(value) > MAX_URL:
        raise ValueError(f"must be at most {MAX_URL} characters")
    try:
        parts = urlsplit(value)
    except ValueError:
        raise ValueError("must be an http(s) URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http(s) URL with a host")
    if "@" in parts.netloc:
        raise ValueError("must not carry a user name or password")
    if any(c.isspace() for c in value):
        raise ValueError("must not contain white space")
    return value


def valid_apply_url(value: object) -> str | None:
    """``value`` if it is an apply URL :class:`ListingCreate` accepts, else None (a source's
    odd link is left out, not the whole posting)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return _apply_url(value.strip())
    except ValueError:
        return None


def _apply_email(value: str) -> str:
    if len(value) > MAX_EMAIL or not _EMAIL.match(value):
        raise ValueError("must be an e-mail address (name@example.com)")
    return value


def valid_apply_email(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return _apply_email(value.strip())
    except ValueError:
        return None


def _country_list(value: object) -> object:
    # A bulk file's cell: "US, CA" or "US;CA".
    if isinstance(value, str):
        return [c for c in re.split(r"[\s,;|]+", value) if c]
    return value


ApplyUrl = Annotated[
    str | None,
    BeforeValidator(blank_to_none),
    AfterValidator(lambda v: None if v is None else _apply_url(v.strip())),
    Field(description="the employer's application page (http or https)"),
]
ApplyEmail = Annotated[
    str | None,
    BeforeValidator(blank_to_none),
    AfterValidator(lambda v: None if v is None else _apply_email(v.strip())),
    Field(description="where applications are e-mailed"),
]
CountryCode = Annotated[str, BeforeValidator(_upper), Field(pattern=r"^[A-Z]{2}$")]
RemoteCountries = Annotated[
    Annotated[list[CountryCode], Field(max_length=300)] | None,
    AfterValidator(lambda v: None if v is None else sorted(set(v))),
    BeforeValidator(_country_list),
    BeforeValidator(blank_to_none),
    Field(
        description="ISO 3166 alpha-2 codes of the countries a remote job accepts ([]: not"
        " said); absent: read from the listing's text"
    ),
]
VisaIn = Annotated[
    VisaSponsorship | None,
    BeforeValidator(lambda v: v.strip().lower() if isinstance(v, str) else v),
    BeforeValidator(blank_to_none),
    Field(description="offered, not_offered or unknown; absent: read from the listing's text"),
]


class SalaryConverted(BaseModel):
    """A listing's yearly salary in another currency, by the reference rate of ``rate_date``
    (approximate: one day's rate, rounded to thousands; shortlist.listings.rates)."""

    min_ks: int | None
    max_ks: int | None
    currency: str
    rate_date: date


WorkModeIn = Annotated[
    WorkMode | None,
    BeforeValidator(lambda v: v.strip().lower() if isinstance(v, str) else v),
    BeforeValidator(blank_to_none),
    Field(description="remote, hybrid or onsite; absent: inferred from the listing's text"),
]


def _check_salary_order(low: int | None, high: int | None) -> None:
    if low is not None and high is not None and low > high:
        raise ValueError(f"salary_min_ks ({low}) must not be greater than salary_max_ks ({high})")


class ListingCreate(BaseModel):
    """A new listing, from the API, a bulk import or an e-mail."""

    model_config = ConfigDict(extra="forbid")

    company_name: CompanyName
    job_title: JobTitle
    city_location: CityLocation
    description: Description
    salary_min_ks: SalaryKs = None
    salary_max_ks: SalaryKs = None
    currency_code: CurrencyCode = "USD"
    # Absent: the database infers it from the text (migration 0011, infer_work_mode).
    work_mode: WorkModeIn = None
    apply_url: ApplyUrl = None
    apply_email: ApplyEmail = None
    # Absent: read from the text (shortlist.listings.eligibility) when the listing is written.
    remote_countries: RemoteCountries = None
    visa_sponsorship: VisaIn = None

    @model_validator(mode="after")
    def _salary_order(self) -> Self:
        _check_salary_order(self.salary_min_ks, self.salary_max_ks)
        return self


_NOT_NULLABLE = ("company_name", "job_title", "city_location", "description", "currency_code")


class ListingPatch(BaseModel):
    """A partial update: only the fields present change. Salaries may be set to ``null``
    (no longer advertised); the other fields may not."""

    model_config = ConfigDict(extra="forbid")

    company_name: CompanyName | None = None
    job_title: JobTitle | None = None
    city_location: CityLocation | None = None
    description: Description | None = None
    salary_min_ks: SalaryKs = None
    salary_max_ks: SalaryKs = None
    currency_code: CurrencyCode | None = None
    # null: inferred again from the text.
    work_mode: WorkModeIn = None
    apply_url: ApplyUrl = None
    apply_email: ApplyEmail = None
    # null: read again from the text.
    remote_countries: RemoteCountries = None
    visa_sponsorship: VisaIn = None

    @model_validator(mode="after")
    def _meaningful(self) -> Self:
        if not self.model_fields_set:
            raise ValueError("give at least one field to change")
        for name in _NOT_NULLABLE:
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        # Only when both are in this patch; against the stored value it is checked on merge.
        _check_salary_order(self.salary_min_ks, self.salary_max_ks)
        return self

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


def format_salary_range(
    salary_min_ks: int | None, salary_max_ks: int | None, currency_code: str
) -> str | None:
    """The seed's ``salary_range``, character for character (it writes ``$`` whatever the
    currency and names the currency after the amounts)."""
    match (salary_min_ks, salary_max_ks):
        case (int() as low, int() as high):
            return f"${low}K - ${high}K {currency_code}"
        case (int() as low, None):
            return f"From ${low}K {currency_code}"
        case (None, int() as high):
            return f"Up to ${high}K {currency_code}"
        case _:
            return None


class ListingOut(BaseModel):
    """A listing in API responses."""

    id: UUID
    company_name: str
    job_title: str
    city_location: str
    description: str
    salary_min_ks: int | None
    salary_max_ks: int | None
    currency_code: str
    work_mode: WorkMode
    salary_range: str | None
    detail_page_slug: str
    created_at: datetime
    updated_at: datetime
    embedding_status: EmbeddingStatus
    embedded_at: datetime | None
    embedding_error: str | None
    source: str
    """api, file, email, sample, or the spec of the job source it was crawled from."""
    source_url: str | None
    """The posting (or apply) URL on the employer's board; None for listings posted here."""
    status: ListingStatus
    """closed: taken down by its company, gone from its board, or past ``valid_through``."""
    valid_through: datetime | None
    last_seen_at: datetime | None
    """When the crawler last saw the posting on its source (None: not crawled)."""
    apply_url: str | None
    """Where to apply: the employer's application page."""
    apply_email: str | None
    """Where to apply by e-mail (a listing may have both, or neither)."""
    remote_countries: list[str]
    """ISO 3166 alpha-2 codes of the countries a remote job accepts; empty: not said."""
    visa_sponsorship: VisaSponsorship
    salary_converted: SalaryConverted | None = None
    """In a job search with ``currency=``: the salary in that currency (else null)."""
    duplicate_of: UUID | None
    """The open listing this one repeats (same company and city, a near-identical text), which
    keeps it out of search and facets. Judged by the indexer each time either is embedded; when
    that listing closes, its oldest open duplicate is listed in its place (migration 0024)."""

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ListingOut:
        """From a row of the ``listing_columns`` select list (see queries.sql)."""
        return cls(
            id=row["id"],
            company_name=row["company_name"],
            job_title=row["job_title"],
            city_location=row["city_location"],
            description=row["description"],
            salary_min_ks=row["salary_min_ks"],
            salary_max_ks=row["salary_max_ks"],
            currency_code=row["currency_code"],
            work_mode=row["work_mode"],
            salary_range=format_salary_range(
                row["salary_min_ks"], row["salary_max_ks"], row["currency_code"]
            ),
            detail_page_slug=row["detail_page_slug"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            embedding_status=row["embedding_status"],
            embedded_at=row["embedded_at"],
            embedding_error=row["embedding_error"],
            source=row["source"],
            source_url=row["source_url"],
            status=row["status"],
            valid_through=row["valid_through"],
            last_seen_at=row["last_seen_at"],
            duplicate_of=row["duplicate_of"],
            apply_url=row["apply_url"],
            apply_email=row["apply_email"],
            remote_countries=row["remote_countries"],
            visa_sponsorship=row["visa_sponsorship"],
        )


def bad_input_from(exc: ValidationError, *, prefix: str = "") -> BadInput:
    """The first problem of a pydantic error as a ``BadInput`` naming the field."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ()))
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    text = f"{prefix}{field}: {message}" if field else f"{prefix}{message}"
    return BadInput(text, field=field or None)
