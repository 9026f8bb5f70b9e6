"""People Data Labs' view of the simulated people: Person Schema records, fields, matching.

- Records follow the Person Schema page and the ``Person`` schema of PDL's OpenAPI spec
  (``pdl-specs.json``): lowercase text unless ``titlecase`` ("Data Formatting": PDL
  lowercases values; the ``titlecase`` parameter title-cases them), canonical locations
  (``location_name`` "munich, bavaria, germany", ``location_locality`` / ``_region`` /
  ``_country`` / ``_continent`` / ``_metro``), ``job_title_role`` / ``_sub_role`` from the
  "Job Title Roles" / "Job Title Subroles" pages (the taxonomy in PDL's data since v29.1; the
  spec still enumerates the legacy one), ``_levels`` from the spec's enum,
  ``linkedin_url`` as "linkedin.com/in/slug" and
  ``profiles[]`` with every LinkedIn address the person had.
- Free plans: "Free plans, by default, do not have access to contact fields like emails,
  phone numbers, and street addresses and will instead appear as true if the value exists or
  false if it does not" (Person Schema, Field Availability).
- Search fields: text vs keyword as in PDL's Elasticsearch mapping (Person Search, "Fields
  available for search"): titles, names, summary and headline are analysed text; roles,
  levels, locations, skills, usernames and company names are keywords.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Literal

from shortlist.simulator.es_query import FieldKind, Store
from shortlist.simulator.population import Person
from shortlist.text import fold

Plan = Literal["free", "pro"]

FIELDS: dict[str, FieldKind] = {
    "id": "keyword",
    "full_name": "text",
    "first_name": "text",
    "last_name": "text",
    "job_title": "text",
    "headline": "text",
    "summary": "text",
    "job_title_role": "keyword",
    "job_title_sub_role": "keyword",
    "job_title_levels": "keyword",
    "job_company_name": "keyword",
    "skills": "keyword",
    "inferred_years_experience": "integer",
    "location_name": "keyword",
    "location_locality": "keyword",
    "location_region": "keyword",
    "location_country": "keyword",
    "location_continent": "keyword",
    "location_metro": "keyword",
    "linkedin_username": "keyword",
    "linkedin_url": "keyword",
    "work_email": "keyword",
    "personal_emails": "keyword",
    "mobile_phone": "keyword",
    "phone_numbers": "keyword",
    "emails": "keyword",
}

CONTACT_FIELDS = (
    "work_email",
    "personal_emails",
    "recommended_personal_email",
    "mobile_phone",
    "phone_numbers",
    "emails",
)
LINKEDIN = "linkedin.com/in/"


def pdl_id(username: str) -> str:
    """A stable PDL-looking persistent id ("qEnOZ5Oh0poWnQ1luFBfVw_0000")."""
    return hashlib.sha256(f"pdl|{username}".encode()).hexdigest()[:22] + "_0000"


def _column(people: Sequence[Person], name: str) -> list[Any]:
    def get(p: Person) -> Any:
        city = p.city
        match name:
            case "id":
                return pdl_id(p.username)
            case "full_name":
                return p.full_name.lower()
            case "first_name":
                return p.first_name.lower()
            case "last_name":
                return p.last_name.lower()
            case "job_title":
                return p.job_title.lower()
            case "headline":
                return p.headline.lower()
            case "summary":
                return p.summary.lower()
            case "job_title_role":
                return p.job_title_role
            case "job_title_sub_role":
                return p.job_title_sub_role
            case "job_title_levels":
                return list(p.job_title_levels)
            case "job_company_name":
                return p.company.lower()
            case "skills":
                return [s.lower() for s in p.skills]
            case "inferred_years_experience":
                return p.years_experience
            case "location_name":
                return city.location_name if city else None
            case "location_locality":
                return city.locality if city else None
            case "location_region":
                return city.region if city else None
            case "location_country":
                return city.country if city else None
            case "location_continent":
                return city.continent if city else None
            case "location_metro":
                return city.metro if city else None
            case "linkedin_username":
                return p.username
            case "linkedin_url":
                return LINKEDIN + p.username
            case "work_email":
                return p.work_email
            case "personal_emails":
                return [p.personal_email] if p.personal_email else []
            case "mobile_phone" | "phone_numbers":
                return p.mobile_phone
            case "emails":
                return [e for e in (p.work_email, p.personal_email) if e]
        return None

    return [get(p) for p in people]


def person_store(people: Sequence[Person]) -> Store:
    return Store(
        len(people), FIELDS, lambda name: _column(people, name), [p.popularity for p in people]
    )


_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)


def titlecase(text: str) -> str:
    """PDL's ``titlecase=true``: each word capitalised ("o'brien" -> "O'brien" stays PDL's
    simple rule, first letter of each word only)."""
    return _WORD.sub(lambda m: m.group(0)[:1].upper() + m.group(0)[1:], text)


def record(person: Person, *, titlecased: bool, plan: Plan, no_email: bool) -> dict[str, Any]:
    """A Person Schema record: lowercase unless ``titlecased``; contact fields as booleans on
    the free plan; e-mail fields empty when ``no_email`` (the enrichment found none)."""

    def case(text: str | None) -> str | None:
        if text is None:
            return None
        return titlecase(text.lower()) if titlecased else text.lower()

    city = person.city
    work = None if no_email else person.work_email
    personal = [] if no_email or not person.personal_email else [person.personal_email]
    emails = [
        {"address": a, "type": t}
        for a, t in (
            (work, "current_professional"),
            (personal[0] if personal else None, "personal"),
        )
        if a
    ]
    phones = [person.mobile_phone] if person.mobile_phone else []
    contact: dict[str, Any] = {
        "work_email": work,
        "personal_emails": personal,
        "recommended_personal_email": personal[0] if personal else None,
        "mobile_phone": person.mobile_phone,
        "phone_numbers": phones,
        "emails": emails,
    }
    if plan == "free":
        contact = {k: bool(v) for k, v in contact.items()}
    profiles = [
        {
            "network": "linkedin",
            "id": None,
            "url": LINKEDIN + slug,
            "username": slug,
        }
        for slug in (person.username, *person.old_slugs)
    ]
    title = {
        "name": case(person.job_title),
        "role": person.job_title_role,
        "sub_role": person.job_title_sub_role,
        "levels": list(person.job_title_levels),
    }
    return {
        "id": pdl_id(person.username),
        "full_name": case(person.full_name),
        "first_name": case(person.first_name),
        "middle_initial": None,
        "middle_name": None,
        "last_initial": (person.last_name[:1] or "").lower() or None,
        "last_name": case(person.last_name),
        "sex": None,
        "birth_year": None,
        "linkedin_url": LINKEDIN + person.username,
        "linkedin_username": person.username,
        "linkedin_id": None,
        "facebook_url": None,
        "twitter_url": None,
        "github_url": None,
        **contact,
        "industry": None,
        "job_title": case(person.job_title),
        "job_title_role": person.job_title_role,
        "job_title_sub_role": person.job_title_sub_role,
        "job_title_levels": list(person.job_title_levels),
        "job_company_name": case(person.company),
        "location_name": case(city.location_name) if city else None,
        "location_locality": case(city.locality) if city else None,
        "location_metro": case(city.metro) if city else None,
        "location_region": case(city.region) if city else None,
        "location_country": case(city.country) if city else None,
        "location_continent": case(city.continent) if city else None,
        "location_geo": f"{city.lat},{city.lon}" if city else None,
        "headline": case(person.headline),
        "summary": case(person.summary),
        "skills": [case(s) for s in person.skills],
        "inferred_years_experience": person.years_experience,
        "profiles": profiles,
        "experience": [
            {
                "company": {"name": case(person.company)},
                "title": title,
                "is_primary": True,
                "start_date": None,
                "end_date": None,
            }
        ],
        "education": [],
    }


def slug_of(profile: str) -> str | None:
    """The LinkedIn slug of any form of profile URL ("https://de.linkedin.com/in/x/?trk=")."""
    text = profile.strip().lower()
    if LINKEDIN not in text:
        return text.strip("/") or None if "/" not in text and "." not in text else None
    slug = text.split(LINKEDIN, 1)[1].split("?")[0].split("#")[0].strip("/").split("/")[0]
    return slug or None


def has_field(data: dict[str, Any], name: str) -> bool:
    value = data.get(name)
    return value is not None and value is not False and value != [] and value != ""


def data_include(data: dict[str, Any], spec: str | None) -> dict[str, Any]:
    """PDL's ``data_include`` (Person Search / Enrichment input parameters): a comma-separated
    list of the fields to return ("full_name,emails.address"; a sub-field of an object or of
    a list of objects after a dot), or, beginning with "-", the fields to leave out; "" returns
    no data. None: the whole record."""
    if spec is None:
        return data
    text = spec.strip()
    exclude = text.startswith("-")
    names = [n.strip() for n in text.removeprefix("-").split(",") if n.strip()]
    if not names:
        return data if exclude else {}
    wanted: dict[str, set[str]] = {}
    for name in names:
        top, _, sub = name.partition(".")
        wanted.setdefault(top, set()).update({sub} if sub else set())

    def pick(value: Any, subs: set[str], keep: bool) -> Any:
        if isinstance(value, list):
            return [pick(v, subs, keep) for v in value]
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if (k in subs) == keep}
        return value

    out: dict[str, Any] = {}
    for key, value in data.items():
        subs = wanted.get(key)
        if exclude:
            if subs is None:
                out[key] = value
            elif subs:
                out[key] = pick(value, subs, keep=False)
        elif subs is not None:
            out[key] = pick(value, subs, keep=True) if subs else value
    return out


def meets_required(data: dict[str, Any], required: str) -> bool:
    """PDL's ``required``: field names joined by AND / OR (AND binds tighter), e.g.
    ``emails``, ``work_email AND job_title``, ``emails OR phone_numbers``."""
    alternatives = re.split(r"\s+or\s+", required.strip(), flags=re.IGNORECASE)
    return any(
        all(has_field(data, f.strip()) for f in re.split(r"\s+and\s+", alt, flags=re.IGNORECASE))
        for alt in alternatives
        if alt.strip()
    )


def same_name(person: Person, name: str) -> bool:
    return fold(" ".join(name.split())) == fold(person.full_name)
