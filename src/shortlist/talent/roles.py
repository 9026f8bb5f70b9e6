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

from shortlist.text import fold


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


# --- the provider's own taxonomy (People Data Labs) -------------------------------------------
#
# PDL derives three fields from every job title (Person Schema, "job_title_role",
# "job_title_sub_role", "job_title_levels"; their canonical values: the OpenAPI spec
# peopledatalabs/openAPI-specifications pdl-specs.json, and the docs pages "Job Title Roles",
# "Job Title Subroles" and "Job Title Levels"). The spec still lists the legacy taxonomy (15
# roles: customer_service, design, ... trades) while the docs list the one in force since v28
# (24 roles: advisory, analyst, creative, ...); a keyword below names the values of BOTH, so
# a `terms` filter matches whichever taxonomy the account's records carry. These are PDL's
# values, never our family names above.

# Spec: job_title_levels enum.
PDL_LEVELS = frozenset(
    {"unpaid", "training", "entry", "manager", "senior"}
    | {"partner", "director", "vp", "owner", "cxo"}
)
# Seniority words that open a title ("Senior FPGA Engineer") -> the PDL level they mean.
_LEADING_LEVELS = {
    "senior": "senior",
    "sr": "senior",
    "lead": "senior",
    "principal": "senior",
    "staff": "senior",
    "junior": "entry",
    "jr": "entry",
    "graduate": "entry",
    "entry": "entry",
    "trainee": "training",
    "intern": "training",
    "apprentice": "training",
}


@dataclass(frozen=True)
class _Taxon:
    roles: tuple[str, ...]
    sub_roles: tuple[str, ...]


def _t(roles: str, sub_roles: str = "") -> _Taxon:
    return _Taxon(tuple(roles.split()), tuple(sub_roles.split()))


# Keyword of a title (a word, or two adjacent words) -> PDL role / sub_role values. Two-word
# keywords are tried first, then single words from the title's end (its head noun) backwards.
_PDL_TAXONOMY: Mapping[str, _Taxon] = MappingProxyType(
    {
        # two words
        "data engineer": _t("engineering", "data_engineering data"),
        "data scientist": _t("research engineering analyst", "data_science data"),
        "data analyst": _t("analyst", "data_analyst data"),
        "machine learning": _t("engineering research", "data_science software data"),
        "business analyst": _t("analyst", "business_analyst"),
        "financial analyst": _t("finance analyst", "financial planning_and_analysis investment"),
        "product manager": _t("product", "product_management product"),
        "project manager": _t("operations", "project_management"),
        "product designer": _t("creative design product", "product_design"),
        "graphic designer": _t("creative design", "graphic_design"),
        "ux designer": _t("creative design product", "product_design web_design"),
        "customer success": _t("support customer_service", "customer_success"),
        "account executive": _t("sales", "account_executive accounts"),
        "account manager": _t("sales", "account_management accounts"),
        "supply chain": _t("operations fulfillment", "logistics procurement"),
        "site reliability": _t("engineering", "devops"),
        "sales engineer": _t("sales_engineering sales", "solutions_engineer"),
        "test engineer": _t("engineering", "qa_engineering quality_assurance"),
        # one word
        "software": _t("engineering", "software"),
        "developer": _t("engineering", "software web"),
        "programmer": _t("engineering", "software"),
        "backend": _t("engineering", "software"),
        "frontend": _t("engineering", "software web"),
        "fullstack": _t("engineering", "software web"),
        "web": _t("engineering", "web software"),
        "mobile": _t("engineering", "software"),
        "ios": _t("engineering", "software"),
        "android": _t("engineering", "software"),
        "kotlin": _t("engineering", "software"),
        "devops": _t("engineering", "devops"),
        "sre": _t("engineering", "devops"),
        "platform": _t("engineering", "devops software"),
        "cloud": _t("engineering", "devops information_technology"),
        "infrastructure": _t("engineering", "devops information_technology"),
        "security": _t("engineering", "security"),
        "cybersecurity": _t("engineering", "security"),
        "qa": _t("engineering", "qa_engineering quality_assurance"),
        "quality": _t("engineering", "qa_engineering quality_assurance"),
        "fpga": _t("engineering", "hardware electrical"),
        "asic": _t("engineering", "hardware electrical"),
        "hardware": _t("engineering", "hardware electrical"),
        "electronics": _t("engineering", "hardware electrical"),
        "firmware": _t("engineering", "hardware software"),
        "embedded": _t("engineering", "hardware software"),
        "avionics": _t("engineering", "hardware electrical mechanical"),
        "electrical": _t("engineering", "electrical"),
        "mechanical": _t("engineering", "mechanical"),
        "network": _t("engineering", "network"),
        "nurse": _t("health", "nursing"),
        "nursing": _t("health", "nursing"),
        "physician": _t("health", "doctor"),
        "doctor": _t("health", "doctor"),
        "surgeon": _t("health", "doctor"),
        "pharmacist": _t("health", "pharmacy"),
        "therapist": _t("health", "therapy"),
        "physiotherapist": _t("health", "therapy"),
        "dentist": _t("health", "dental"),
        "veterinarian": _t("health", "veterinarian"),
        "teacher": _t("education", "primary_and_secondary teacher"),
        "professor": _t("education", "academic professor"),
        "lecturer": _t("education", "academic professor"),
        "researcher": _t("research", "scientific researcher"),
        "scientist": _t("research", "scientific researcher"),
        "geophysicist": _t("research engineering", "scientific researcher"),
        "geologist": _t("research engineering", "scientific researcher"),
        "hydrogeologist": _t("research engineering", "scientific researcher"),
        "chemist": _t("research", "scientific chemical researcher"),
        "physicist": _t("research", "scientific researcher"),
        "biologist": _t("research", "scientific researcher"),
        "statistician": _t("analyst research", "data_analyst scientific data"),
        "economist": _t("analyst research", "scientific researcher"),
        "actuary": _t("finance analyst", "insurance risk"),
        "accountant": _t("finance", "accounting"),
        "bookkeeper": _t("finance", "bookkeeping accounting"),
        "auditor": _t("finance", "accounting"),
        "lawyer": _t("legal", "legal lawyer"),
        "attorney": _t("legal", "legal lawyer"),
        "solicitor": _t("legal", "legal lawyer"),
        "counsel": _t("legal", "legal lawyer"),
        "paralegal": _t("legal", "legal_services paralegal"),
        "compliance": _t("legal", "compliance"),
        "recruiter": _t("human_resources", "recruiting"),
        "designer": _t("creative design", "graphic_design product_design"),
        "marketer": _t("marketing", "marketing_services growth"),
        "marketing": _t("marketing", "marketing_services brand_marketing content_marketing"),
        "seo": _t("marketing", "marketing_services content_marketing"),
        "writer": _t("creative media", "content writing journalism"),
        "editor": _t("creative media", "content editorial journalism"),
        "journalist": _t("creative media", "journalism"),
        "electrician": _t("trade trades", "electric electrical"),
        "plumber": _t("trade trades", "plumbing"),
        "mechanic": _t("trade trades", "mechanic"),
        "machinist": _t("manufacturing trades", "machinist"),
        "chef": _t("hospitality", "restaurants"),
        "cook": _t("hospitality", "restaurants"),
        "pilot": _t("operations", "transport"),
        "logistics": _t("operations fulfillment", "logistics"),
        "translator": _t("professional_service", "translation"),
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
    folded = "".join(
        c for c in unicodedata.normalize("NFKD", role) if not unicodedata.combining(c)
    ).lower()
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
    "engineer": ("engineer", "developer"),
    "developer": ("developer", "engineer", "programmer"),
    "programmer": ("programmer", "developer"),
    "lawyer": ("lawyer", "attorney", "counsel", "solicitor"),
    "attorney": ("attorney", "lawyer", "counsel"),
    "nurse": ("nurse",),
    "designer": ("designer",),
    "scientist": ("scientist", "researcher"),
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
