"""Role families: the product's own taxonomy, used by the ``broad`` discovery tier to widen a
role ("Rust Embedded Firmware Engineer") to its family ("embedded": every firmware, embedded
Linux, robotics... title).

It is ours, not the provider's: which titles a recruiter would accept in place of another is a
product decision, and it must not change when the talent API (or the simulator standing in for
it) does. A free-text role is matched to the family whose titles and aliases share the most
meaningful words with it; exact titles win outright.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

from shortlist.text import fold


@dataclass(frozen=True)
class RoleFamily:
    name: str
    """Also what a discovery call sends as its role filter to ask for the whole family."""
    titles: tuple[str, ...]
    aliases: tuple[str, ...] = ()


def _load_tables() -> dict[str, Any]:
    text = resources.files("shortlist.talent").joinpath("data/roles.json").read_text("utf-8")
    tables: dict[str, Any] = json.loads(text)
    return tables


# The families, generic words, noun synonyms and PDL's taxonomy below are data/roles.json's.
_TABLES = _load_tables()
_FAMILIES: tuple[RoleFamily, ...] = tuple(
    RoleFamily(f["name"], tuple(f["titles"]), tuple(f.get("aliases", ())))
    for f in _TABLES["families"]
)

ROLE_FAMILIES: Mapping[str, RoleFamily] = MappingProxyType({f.name: f for f in _FAMILIES})

# Words every other title has: they say nothing about which family a role belongs to.
_GENERIC: frozenset[str] = frozenset(_TABLES["generic_words"])
_WORD = re.compile(r"[a-z0-9+#]+")


def _words(text: str) -> set[str]:
    """Lower-cased, accent-free words; "front-end" is one word, as "frontend"."""
    return set(_WORD.findall(fold(text).replace("-", "")))


def _vocabulary(family: RoleFamily) -> frozenset[str]:
    words = {family.name, *family.aliases}
    for title in family.titles:
        words |= _words(title)
    return frozenset(words - _GENERIC)


_VOCABULARY = {f.name: _vocabulary(f) for f in _FAMILIES}
_BY_TITLE = {title.lower(): f for f in _FAMILIES for title in f.titles}


def role_family(role: str) -> RoleFamily | None:
    """The family a free-text role belongs to, or None when nothing in it points anywhere.

    An exact title (or family name) wins; otherwise the family sharing the most meaningful
    words, with its own name counting double. Ties go to the earlier family, so the answer is
    stable.
    """
    key = " ".join(role.lower().split())
    if key in _BY_TITLE:
        return _BY_TITLE[key]
    if key in ROLE_FAMILIES:
        return ROLE_FAMILIES[key]
    words = _words(role) - _GENERIC
    best: tuple[int, RoleFamily] | None = None
    for family in _FAMILIES:
        score = len(words & _VOCABULARY[family.name]) + (1 if family.name in words else 0)
        if score > 0 and (best is None or score > best[0]):
            best = (score, family)
    return best[1] if best else None


ROLE_TITLES: tuple[str, ...] = tuple(title for f in _FAMILIES for title in f.titles)
"""Every title of every family, as the brief parser recognises them in free text."""


# --- the provider's own taxonomy (People Data Labs) -------------------------------------------
#
# PDL derives three fields from every job title (Person Schema, "job_title_role",
# "job_title_sub_role", "job_title_levels"). Their values are those of the docs pages "Job
# Title Roles" and "Job Title Subroles" (docs.peopledatalabs.com/docs/job-title-roles,
# /job-title-subroles: 24 roles, advisory … unemployed, launched in v28.0), each sub role with
# the role "Mapping Job Title Class to Roles to Subroles" files it under where that page was
# read; the legacy taxonomy that pdl-specs.json still enumerates (customer_service, design,
# media, trades …; sub roles such as lawyer, teacher, researcher) is "no longer supported in
# our datasets" since v29.1 (February 2025 release notes), so no keyword sends it. These are
# PDL's values, never our family names above.

# Spec: job_title_levels enum.
PDL_LEVELS: frozenset[str] = frozenset(_TABLES["pdl"]["levels"])
# Seniority words that open a title ("Senior FPGA Engineer") -> the PDL level they mean.
_LEADING_LEVELS: dict[str, str] = dict(_TABLES["pdl"]["leading_levels"])


@dataclass(frozen=True)
class _Taxon:
    roles: tuple[str, ...]
    sub_roles: tuple[str, ...]


# Keyword of a title (a word, or two adjacent words) -> PDL role / sub_role values. Two-word
# keywords are tried first, then single words from the title's end (its head noun) backwards.
_PDL_TAXONOMY: Mapping[str, _Taxon] = MappingProxyType(
    {
        keyword: _Taxon(tuple(taxon["roles"]), tuple(taxon["sub_roles"]))
        for keyword, taxon in _TABLES["pdl"]["taxonomy"].items()
    }
)
_TITLE_WORD = re.compile(r"[a-z0-9+#]+(?:[-'][a-z0-9]+)*")


@dataclass(frozen=True)
class PdlTitle:
    """A role as PDL's fields see it."""

    text: str
    """The title as PDL stores titles: lowercase ("senior fpga verification engineer")."""
    core: str
    """Without its opening seniority words ("fpga verification engineer")."""
    head: str | None
    """The core without its first qualifier ("verification engineer"), or None for one word."""
    levels: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    sub_roles: tuple[str, ...] = ()


def pdl_title(role: str) -> PdlTitle:
    """``role`` in PDL's terms: its lowercase title, the levels its seniority words mean, and
    the job_title_role / job_title_sub_role values its keywords point at (empty: none)."""
    folded = fold(role)
    words = _TITLE_WORD.findall(folded)
    levels: list[str] = []
    while len(words) > 1 and words[0] in _LEADING_LEVELS:
        level = _LEADING_LEVELS[words.pop(0)]
        if level not in levels:
            levels.append(level)
    taxon: _Taxon | None = None
    for first, second in zip(words[::-1][1:], words[::-1], strict=False):
        taxon = _PDL_TAXONOMY.get(f"{first} {second}")
        if taxon:
            break
    if taxon is None:
        for word in reversed(words):
            taxon = _PDL_TAXONOMY.get(word)
            if taxon:
                break
    core = " ".join(words)
    return PdlTitle(
        text=" ".join(" ".join(_TITLE_WORD.findall(folded)).split()),
        core=core,
        head=" ".join(words[1:]) if len(words) > 1 else None,
        levels=tuple(levels),
        roles=taxon.roles if taxon else (),
        sub_roles=taxon.sub_roles if taxon else (),
    )


# The last word of a title that names the kind of work rather than the field, with the words
# PDL's titles use for the same work: "iOS Engineer" holds the role "iOS Developer".
NOUN_SYNONYMS: dict[str, tuple[str, ...]] = {
    noun: tuple(names) for noun, names in _TABLES["noun_synonyms"].items()
}


def title_holds_role(role: str, title: str) -> bool:
    """Whether a job title (as a search result shows it) holds ``role``: every word of the
    role's title, its last word also by the names titles give the same work. Seniority words
    do not count ("Lead iOS Engineer" holds "Senior iOS Developer")."""
    wanted = pdl_title(role).core.split()
    if not wanted:
        return True
    held = set(_TITLE_WORD.findall(fold(title)))
    *qualifiers, noun = wanted
    names = NOUN_SYNONYMS.get(noun, (noun,))
    return all(w in held for w in qualifiers) and any(n in held for n in names)
