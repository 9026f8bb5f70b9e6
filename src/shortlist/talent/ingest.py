"""Bulk import of candidate profiles into the internal corpus (``shortlist ingest candidates``).

Reading, validation and batching are shared with every corpus (``shortlist.ingest_files``).
A row that names an ``external_id`` already in the corpus updates that profile (the update
trigger re-queues it for embedding when its text changed); other rows are new profiles. The
indexer embeds them; until then they are found by full text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn
from shortlist.ingest_files import (
    DEFAULT_BATCH_SIZE,
    BadRow,
    IngestReport,
    RecordFileReader,
    ingest_records,
)
from shortlist.privacy import hold_ingest_lock, person_keys, suppressed_among
from shortlist.validation import storable

log = logging.getLogger(__name__)

_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,255}\.[^@\s]{1,63}$")
_Text = Annotated[str, StringConstraints(strip_whitespace=True)]

QUERIES = load_queries("shortlist.talent")


class CandidateCreate(BaseModel):
    """One profile of the internal corpus; limits match the CHECKs of ``candidates``."""

    model_config = ConfigDict(extra="forbid")

    full_name: Annotated[_Text, StringConstraints(min_length=1, max_length=200)]
    headline: Annotated[_Text, StringConstraints(max_length=500)] = ""
    role_title: Annotated[_Text, StringConstraints(max_length=200)] = ""
    role_family: Annotated[_Text, StringConstraints(max_length=100)] = ""
    skills: Annotated[
        list[Annotated[_Text, StringConstraints(max_length=50)]], Field(max_length=50)
    ] = Field(default_factory=list)
    years_experience: Annotated[int, Field(ge=0, le=80)] | None = None
    location: Annotated[_Text, StringConstraints(max_length=200)] = ""
    email: Annotated[_Text, StringConstraints(max_length=320)] | None = None
    summary: Annotated[str, StringConstraints(max_length=20000)] = ""
    profile_url: Annotated[_Text, StringConstraints(max_length=2000)] | None = None
    external_id: Annotated[_Text, StringConstraints(min_length=1, max_length=200)] | None = None

    @field_validator("skills", mode="before")
    @classmethod
    def _split_skills(cls, value: Any) -> Any:
        # CSV cells carry lists as "python; sql" or "python, sql".
        if isinstance(value, str):
            parts = re.split(r"[;,|]", value)
            return [p.strip() for p in parts if p.strip()]
        return value

    @field_validator("skills")
    @classmethod
    def _no_blank_skills(cls, value: list[str]) -> list[str]:
        return [s for s in value if s]

    @field_validator("email")
    @classmethod
    def _email_shape(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not _EMAIL.match(value):
            raise ValueError("not an e-mail address")
        return value

    @field_validator("profile_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value

    @field_validator(
        "full_name", "headline", "role_title", "role_family", "summary", "location", "email"
    )
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        return storable(value) if value is not None else None

    @field_validator("skills")
    @classmethod
    def _storable_skills(cls, value: list[str]) -> list[str]:
        return [storable(s) for s in value]


class CandidateFileReader(RecordFileReader[CandidateCreate]):
    model = CandidateCreate
    aliases = MappingProxyType(
        {
            "name": "full_name",
            "title": "role_title",
            "role": "role_title",
            "family": "role_family",
            "years": "years_experience",
            "experience": "years_experience",
            "city": "location",
            "url": "profile_url",
            "id": "external_id",
        }
    )
    blank_is_absent = frozenset(
        {"years_experience", "email", "profile_url", "external_id", "skills"}
    )


async def insert_candidates(
    conn: AsyncConn, batch: list[CandidateCreate], *, privacy_key: str = ""
) -> int:
    """Insert (or update by external id) one batch inside the caller's transaction; a person
    on the suppression list (shortlist.privacy: forgotten on request) is never stored."""
    keys = {
        id(c): person_keys(email=c.email, profile_url=c.profile_url, external_id=c.external_id)
        for c in batch
    }
    await hold_ingest_lock(conn)  # an erasure finishes before, or finds these after
    suppressed = await suppressed_among(
        conn, set().union(*keys.values()) if keys else set(), privacy_key
    )
    kept = [c for c in batch if not (keys[id(c)] & suppressed)]
    if len(kept) < len(batch):
        log.info("ingest: %d forgotten profile(s) not stored", len(batch) - len(kept))
    if kept:
        async with conn.cursor() as cur:
            await cur.executemany(QUERIES["import_candidate"], [c.model_dump() for c in kept])
    return len(kept)


async def ingest_candidates(
    conn: AsyncConn,
    reader: CandidateFileReader,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_bad_row: Callable[[BadRow], None] | None = None,
    on_progress: Callable[[RecordFileReader[CandidateCreate], int], None] | None = None,
    privacy_key: str = "",
) -> IngestReport:
    """Read every row of an opened ``reader``; insert the good profiles in batches (never a
    forgotten person's)."""

    async def insert(conn: AsyncConn, batch: list[CandidateCreate]) -> int:
        return await insert_candidates(conn, batch, privacy_key=privacy_key)

    return await ingest_records(
        conn,
        reader,
        insert,
        batch_size=batch_size,
        on_bad_row=on_bad_row,
        on_progress=on_progress,
    )
