"""Role families: the product's own taxonomy, used by the ``broad`` discovery tier to widen a
role ("Rust Embedded Firmware Engineer") to its family ("embedded": every firmware, embedded
Linux, robotics... title).

It is ours, not the provider's: which titles a recruiter would accept in place of another is a
product decision, and it must not change when the talent API (or the simulator standing in for
it) does. A free-text role is matched to the family whose titles and aliases share the most
meaningful words with it; exact titles win outright.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class RoleFamily:
    name: str
    """Also what a discovery call sends as its role filter to ask for the whole family."""
    titles: tuple[str, ...]
    aliases: tuple[str, ...] = ()


_FAMILIES: tuple[RoleFamily, ...] = (
    RoleFamily(
        "backend",
        (
            "Backend Engineer",
            "Python Developer",
            "Java Developer",
            "Go Developer",
            "API Platform Engineer",
            "Distributed Systems Engineer",
            "Ruby Developer",
        ),
        ("back", "server", "api", "microservices"),
    ),
    RoleFamily(
        "frontend",
        (
            "Frontend Engineer",
            "React Developer",
            "UI Engineer",
            "Web Developer",
            "Design Systems Engineer",
            "Angular Developer",
        ),
        ("front", "web", "javascript", "typescript"),
    ),
    RoleFamily(
        "fullstack",
        ("Full Stack Engineer", "Full Stack Developer", "Software Engineer", "Product Engineer"),
        ("full", "stack", "fullstack"),
    ),
    RoleFamily(
        "data",
        ("Data Engineer", "Data Analyst", "Analytics Engineer", "Data Scientist", "BI Developer"),
        ("analytics", "bi", "etl", "warehouse"),
    ),
    RoleFamily(
        "ml",
        (
            "Machine Learning Engineer",
            "ML Research Scientist",
            "MLOps Engineer",
            "Computer Vision Engineer",
            "NLP Engineer",
            "AI Engineer",
        ),
        ("machine", "learning", "ai", "deep", "llm", "mlops"),
    ),
    RoleFamily(
        "devops",
        (
            "DevOps Engineer",
            "Platform Engineer",
            "Cloud Infrastructure Engineer",
            "Build and Release Engineer",
        ),
        ("cloud", "infrastructure", "platform", "kubernetes"),
    ),
    RoleFamily(
        "sre",
        ("Site Reliability Engineer", "Production Engineer", "Observability Engineer"),
        ("reliability", "site", "oncall"),
    ),
    RoleFamily(
        "mobile",
        ("iOS Developer", "Android Developer", "Mobile Engineer", "Flutter Developer"),
        ("ios", "android", "swift", "kotlin"),
    ),
    RoleFamily(
        "security",
        (
            "Security Engineer",
            "Application Security Engineer",
            "Penetration Tester",
            "Security Analyst",
            "Cryptography Engineer",
        ),
        ("infosec", "appsec", "cyber", "cybersecurity", "pentest"),
    ),
    RoleFamily(
        "qa",
        ("QA Engineer", "Test Automation Engineer", "Quality Assurance Analyst", "SDET"),
        ("test", "testing", "quality", "sdet"),
    ),
    RoleFamily(
        "embedded",
        (
            "Embedded Software Engineer",
            "Firmware Engineer",
            "Embedded Linux Engineer",
            "Rust Embedded Firmware Engineer",
            "Robotics Software Engineer",
        ),
        ("firmware", "iot", "rtos", "microcontroller"),
    ),
    RoleFamily(
        "hardware",
        (
            "Hardware Engineer",
            "FPGA Engineer",
            "FPGA Verification Engineer",
            "ASIC Design Engineer",
            "PCB Design Engineer",
        ),
        ("fpga", "asic", "silicon", "electronics", "verilog"),
    ),
    RoleFamily(
        "product",
        ("Product Manager", "Technical Product Manager", "Product Owner", "Growth Product Manager"),
        ("pm", "roadmap"),
    ),
    RoleFamily(
        "design",
        ("Product Designer", "UX Designer", "UX Researcher", "Visual Designer"),
        ("ux", "figma"),
    ),
    RoleFamily(
        "finance",
        (
            "Financial Analyst",
            "Accountant",
            "Controller",
            "Quantitative Developer",
            "Quantitative Analyst",
            "Risk Analyst",
        ),
        ("quant", "quantitative", "accounting", "trading", "fintech"),
    ),
    RoleFamily(
        "sales",
        (
            "Account Executive",
            "Sales Development Representative",
            "Sales Engineer",
            "Account Manager",
        ),
        ("account", "bdr", "sdr", "sales"),
    ),
    RoleFamily(
        "marketing",
        (
            "Marketing Manager",
            "Content Strategist",
            "SEO Specialist",
            "Growth Marketer",
            "Product Marketing Manager",
        ),
        ("seo", "growth", "content", "brand"),
    ),
    RoleFamily(
        "healthcare",
        (
            "Registered Nurse",
            "Clinical Research Associate",
            "Clinical Data Manager",
            "Medical Science Liaison",
            "Health Informatics Specialist",
        ),
        ("clinical", "medical", "health", "nurse", "pharma"),
    ),
    RoleFamily(
        "legal",
        ("Corporate Lawyer", "Paralegal", "Compliance Officer", "Privacy Counsel"),
        ("law", "lawyer", "counsel", "compliance", "attorney"),
    ),
    RoleFamily(
        "ops",
        ("Operations Manager", "Supply Chain Analyst", "Logistics Coordinator", "Project Manager"),
        ("operations", "logistics", "supply"),
    ),
    RoleFamily(
        "hr",
        ("Technical Recruiter", "HR Business Partner", "People Operations Specialist"),
        ("recruiter", "recruiting", "people", "talent"),
    ),
    RoleFamily(
        "support",
        ("Customer Success Manager", "Technical Support Engineer", "Support Specialist"),
        ("customer", "success", "helpdesk"),
    ),
)

ROLE_FAMILIES: Mapping[str, RoleFamily] = MappingProxyType({f.name: f for f in _FAMILIES})

# Words every other title has: they say nothing about which family a role belongs to.
_GENERIC = frozenset(
    {
        "engineer",
        "engineers",
        "engineering",
        "developer",
        "developers",
        "dev",
        "senior",
        "sr",
        "junior",
        "jr",
        "lead",
        "staff",
        "principal",
        "head",
        "mid",
        "level",
        "expert",
        "specialist",
        "and",
        "of",
        "the",
        "a",
        "an",
        "for",
        "in",
        "with",
        "remote",
        "software",
        "programmer",
        "professional",
        "experienced",
        "ii",
        "iii",
        "manager",
        "analyst",
    }
)
_WORD = re.compile(r"[a-z0-9+#]+")


def _words(text: str) -> set[str]:
    """Lower-cased, accent-free words; "front-end" is one word, as "frontend"."""
    folded = "".join(
        c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
    ).lower()
    return set(_WORD.findall(folded.replace("-", "")))


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
