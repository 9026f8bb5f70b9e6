"""Deterministic synthetic population for the talent-API simulator.

Everything here is a pure function of ``(seed, size)``: the same seed always yields the same
people in the same order, so tests and benchmarks can name people and expect them to exist.
The role taxonomy (:data:`ROLE_FAMILIES`) is public because the backfill's ``broad`` tier
expands a role into its family with :func:`expand_role_family`.
"""

from __future__ import annotations

import math
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

DEFAULT_SEED = 42
DEFAULT_POPULATION_SIZE = 3000
PROFILE_BASE_URL = "https://talent.example.com/in/"

# family -> titles. Titles marked in _NICHE_TITLES are rare on purpose, so that narrow searches
# exist which the strict tier answers with few or no people.
_ROLE_FAMILIES: dict[str, tuple[str, ...]] = {
    "backend": (
        "Backend Engineer",
        "Python Developer",
        "Java Developer",
        "Go Developer",
        "API Platform Engineer",
        "Distributed Systems Engineer",
    ),
    "frontend": (
        "Frontend Engineer",
        "React Developer",
        "UI Engineer",
        "Web Developer",
        "Design Systems Engineer",
    ),
    "fullstack": (
        "Full Stack Engineer",
        "Full Stack Developer",
        "Software Engineer",
        "Product Engineer",
    ),
    "data": (
        "Data Engineer",
        "Data Analyst",
        "Analytics Engineer",
        "Data Scientist",
        "BI Developer",
    ),
    "ml": (
        "Machine Learning Engineer",
        "ML Research Scientist",
        "MLOps Engineer",
        "Computer Vision Engineer",
        "NLP Engineer",
    ),
    "devops": (
        "DevOps Engineer",
        "Platform Engineer",
        "Cloud Infrastructure Engineer",
        "Build and Release Engineer",
    ),
    "sre": (
        "Site Reliability Engineer",
        "Production Engineer",
        "Observability Engineer",
    ),
    "mobile": (
        "iOS Developer",
        "Android Developer",
        "Mobile Engineer",
        "Flutter Developer",
    ),
    "security": (
        "Security Engineer",
        "Application Security Engineer",
        "Penetration Tester",
        "Security Analyst",
        "Cryptography Engineer",
    ),
    "qa": (
        "QA Engineer",
        "Test Automation Engineer",
        "Quality Assurance Analyst",
        "SDET",
    ),
    "embedded": (
        "Embedded Software Engineer",
        "Firmware Engineer",
        "Embedded Linux Engineer",
        "Rust Embedded Firmware Engineer",
        "Robotics Software Engineer",
    ),
    "hardware": (
        "Hardware Engineer",
        "FPGA Engineer",
        "FPGA Verification Engineer",
        "ASIC Design Engineer",
        "PCB Design Engineer",
    ),
    "product": (
        "Product Manager",
        "Technical Product Manager",
        "Product Owner",
        "Growth Product Manager",
    ),
    "design": (
        "Product Designer",
        "UX Designer",
        "UX Researcher",
        "Visual Designer",
    ),
    "finance": (
        "Financial Analyst",
        "Accountant",
        "Controller",
        "Quantitative Developer",
        "Quantitative Analyst",
        "Risk Analyst",
    ),
    "sales": (
        "Account Executive",
        "Sales Development Representative",
        "Sales Engineer",
        "Account Manager",
    ),
    "marketing": (
        "Marketing Manager",
        "Content Strategist",
        "SEO Specialist",
        "Growth Marketer",
        "Product Marketing Manager",
    ),
    "healthcare": (
        "Registered Nurse",
        "Clinical Research Associate",
        "Clinical Data Manager",
        "Medical Science Liaison",
        "Health Informatics Specialist",
    ),
    "legal": (
        "Corporate Lawyer",
        "Paralegal",
        "Compliance Officer",
        "Privacy Counsel",
    ),
    "ops": (
        "Operations Manager",
        "Supply Chain Analyst",
        "Logistics Coordinator",
        "Project Manager",
    ),
    "hr": (
        "Technical Recruiter",
        "HR Business Partner",
        "People Operations Specialist",
    ),
    "support": (
        "Customer Success Manager",
        "Technical Support Engineer",
        "Support Specialist",
    ),
}

ROLE_FAMILIES: Mapping[str, tuple[str, ...]] = MappingProxyType(_ROLE_FAMILIES)
"""Role family -> job titles in that family (read-only)."""

_NICHE_TITLES = frozenset(
    {
        "Rust Embedded Firmware Engineer",
        "FPGA Verification Engineer",
        "Quantitative Developer",
        "Clinical Data Manager",
        "Cryptography Engineer",
        "Medical Science Liaison",
        "ASIC Design Engineer",
        "Privacy Counsel",
    }
)

# Tech families are more common in a talent database aimed at recruiters.
_FAMILY_WEIGHTS: dict[str, float] = {
    "backend": 3.0,
    "frontend": 2.5,
    "fullstack": 2.5,
    "data": 2.0,
    "ml": 1.5,
    "devops": 1.5,
    "sre": 1.0,
    "mobile": 1.2,
    "security": 1.0,
    "qa": 1.0,
    "embedded": 0.8,
    "hardware": 0.6,
    "product": 1.2,
    "design": 1.0,
    "finance": 1.0,
    "sales": 1.0,
    "marketing": 1.0,
    "healthcare": 0.8,
    "legal": 0.6,
    "ops": 0.8,
    "hr": 0.6,
    "support": 0.8,
}

# fmt: off
_FAMILY_SKILLS: dict[str, tuple[str, ...]] = {
    "backend": (
        "Python", "Java", "Go", "PostgreSQL", "Redis", "Kafka", "gRPC", "REST APIs", "Docker",
        "Kubernetes", "Django", "FastAPI", "Spring Boot", "Microservices",
    ),
    "frontend": (
        "JavaScript", "TypeScript", "React", "Vue", "CSS", "HTML", "Next.js", "Accessibility",
        "Webpack", "GraphQL", "Storybook",
    ),
    "fullstack": (
        "JavaScript", "TypeScript", "React", "Node.js", "Python", "PostgreSQL", "GraphQL",
        "Docker", "AWS", "Ruby on Rails",
    ),
    "data": (
        "SQL", "Python", "Spark", "Airflow", "dbt", "Snowflake", "BigQuery", "Tableau", "Pandas",
        "Kafka", "Statistics",
    ),
    "ml": (
        "Python", "PyTorch", "TensorFlow", "scikit-learn", "MLflow", "Kubernetes", "NLP",
        "Computer Vision", "LLMs", "CUDA", "Statistics",
    ),
    "devops": (
        "Kubernetes", "Terraform", "AWS", "GCP", "Azure", "Docker", "Ansible", "CI/CD", "Linux",
        "Helm", "Bash",
    ),
    "sre": (
        "Kubernetes", "Prometheus", "Grafana", "Linux", "Go", "Incident Response", "Terraform",
        "AWS", "Observability", "Python",
    ),
    "mobile": (
        "Swift", "Kotlin", "iOS", "Android", "Flutter", "React Native", "Objective-C",
        "Jetpack Compose", "SwiftUI",
    ),
    "security": (
        "Threat Modeling", "Penetration Testing", "OWASP", "SIEM", "Cloud Security", "Python",
        "Incident Response", "Cryptography", "IAM",
    ),
    "qa": (
        "Selenium", "Cypress", "Playwright", "Python", "Java", "Test Automation",
        "Performance Testing", "API Testing",
    ),
    "embedded": (
        "C", "C++", "RTOS", "ARM Cortex-M", "Embedded Linux", "Yocto", "I2C", "SPI",
        "Device Drivers", "ROS",
    ),
    "hardware": (
        "Verilog", "VHDL", "SystemVerilog", "FPGA", "PCB Design", "Altium", "Signal Integrity",
        "Xilinx Vivado",
    ),
    "product": (
        "Roadmapping", "User Research", "A/B Testing", "SQL", "Agile", "Jira",
        "Stakeholder Management", "Product Analytics",
    ),
    "design": (
        "Figma", "Prototyping", "User Research", "Design Systems", "Interaction Design",
        "Usability Testing", "Sketch",
    ),
    "finance": (
        "Excel", "Financial Modeling", "Forecasting", "SQL", "Python", "IFRS", "GAAP",
        "Risk Management", "Budgeting",
    ),
    "sales": (
        "Salesforce", "Negotiation", "Pipeline Management", "B2B Sales", "SaaS", "Prospecting",
        "HubSpot",
    ),
    "marketing": (
        "SEO", "Content Marketing", "Google Analytics", "HubSpot", "Copywriting",
        "Paid Acquisition", "Brand Strategy", "Email Marketing",
    ),
    "healthcare": (
        "Patient Care", "EHR", "Clinical Trials", "GCP Compliance", "HIPAA", "Medical Terminology",
        "HL7 FHIR",
    ),
    "legal": (
        "Contract Law", "GDPR", "Compliance", "Corporate Governance", "Legal Research", "M&A",
        "Regulatory Affairs",
    ),
    "ops": (
        "Process Improvement", "Supply Chain", "Logistics", "Excel", "Lean", "Six Sigma",
        "Vendor Management", "Project Management",
    ),
    "hr": (
        "Recruiting", "Sourcing", "Employee Relations", "HRIS", "Onboarding", "Compensation",
        "Workday",
    ),
    "support": (
        "Customer Success", "Zendesk", "Troubleshooting", "SaaS", "Onboarding", "SQL",
        "Account Management",
    ),
}
# fmt: on

# Skills that always come with a title: what makes a niche combination niche.
_TITLE_SKILLS: dict[str, tuple[str, ...]] = {
    "Rust Embedded Firmware Engineer": ("Rust", "Embedded Rust", "Firmware", "ARM Cortex-M"),
    "Firmware Engineer": ("Firmware", "C"),
    "FPGA Verification Engineer": ("SystemVerilog", "UVM", "FPGA", "Formal Verification"),
    "FPGA Engineer": ("FPGA", "VHDL"),
    "ASIC Design Engineer": ("Verilog", "ASIC", "Synthesis"),
    "Quantitative Developer": ("KDB+", "q", "C++", "Low Latency", "Trading Systems"),
    "Quantitative Analyst": ("Python", "Stochastic Calculus", "Derivatives Pricing"),
    "Clinical Data Manager": ("CDISC", "Medidata Rave", "EDC", "Clinical Trials", "SAS"),
    "Clinical Research Associate": ("Clinical Trials", "GCP Compliance", "Site Monitoring"),
    "Cryptography Engineer": ("Cryptography", "Rust", "C", "Zero-Knowledge Proofs"),
    "Medical Science Liaison": ("Oncology", "Medical Affairs", "KOL Engagement"),
    "Privacy Counsel": ("GDPR", "CCPA", "Data Protection"),
    "Python Developer": ("Python",),
    "Java Developer": ("Java",),
    "Go Developer": ("Go",),
    "React Developer": ("React",),
    "iOS Developer": ("Swift", "iOS"),
    "Android Developer": ("Kotlin", "Android"),
    "Flutter Developer": ("Flutter", "Dart"),
    "Computer Vision Engineer": ("Computer Vision", "OpenCV"),
    "NLP Engineer": ("NLP", "LLMs"),
    "Penetration Tester": ("Penetration Testing", "Burp Suite"),
    "Site Reliability Engineer": ("Incident Response",),
    "Registered Nurse": ("Patient Care", "BLS Certification"),
    "Data Scientist": ("Statistics", "Python"),
}

# Extra words a family answers to in free-text roles ("machine learning", "infosec", ...).
_FAMILY_ALIASES: dict[str, tuple[str, ...]] = {
    "backend": ("back", "server", "api"),
    "frontend": ("front", "web", "ui"),
    "fullstack": ("full", "stack"),
    "data": ("analytics", "bi"),
    "ml": ("machine", "learning", "ai"),
    "devops": ("cloud", "infrastructure", "platform"),
    "sre": ("reliability", "site"),
    "mobile": ("ios", "android"),
    "security": ("infosec", "appsec", "cyber", "cybersecurity"),
    "qa": ("test", "testing", "quality", "sdet"),
    "embedded": ("firmware", "iot"),
    "hardware": ("fpga", "asic", "silicon", "electronics"),
    "product": ("pm",),
    "design": ("ux", "ui"),
    "finance": ("quant", "quantitative", "accounting", "trading"),
    "sales": ("account", "bdr", "sdr"),
    "marketing": ("seo", "growth", "content"),
    "healthcare": ("clinical", "medical", "health", "nurse"),
    "legal": ("law", "lawyer", "counsel", "compliance"),
    "ops": ("operations", "logistics", "supply"),
    "hr": ("recruiter", "recruiting", "people", "talent"),
    "support": ("customer", "success", "helpdesk"),
}

# Words too common in job titles to say anything about the role on their own.
# fmt: off
_GENERIC_ROLE_WORDS = frozenset({
    "a", "an", "and", "dev", "developer", "developers", "engineer", "engineering", "engineers",
    "experienced", "expert", "for", "head", "ii", "iii", "in", "jr", "junior", "lead", "level",
    "mid", "of", "principal", "professional", "programmer", "remote", "senior", "software",
    "specialist", "sr", "staff", "the", "with",
})
_STOP_WORDS = frozenset({
    "a", "an", "and", "as", "at", "based", "by", "currently", "day", "experience", "for", "from",
    "in", "is", "mostly", "new", "of", "on", "open", "or", "the", "their", "they", "to", "who",
    "with", "work", "works", "year", "years",
})

_FIRST_NAMES = (
    "Ada", "Alan", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Dennis", "Frances", "Edsger",
    "Radia", "Tim", "Hedy", "Donald", "Katherine", "John", "Sophie", "Yukihiro", "Anita", "Guido",
    "Amara", "Chen", "Priya", "Mateo", "Fatima", "Lars", "Ingrid", "Kwame", "Aiko", "Diego",
    "Leila", "Oluwaseun", "Hana", "Rafael", "Zara", "Mikhail", "Nadia", "Tomas", "Mei", "Arjun",
    "Elena", "Jonas", "Chiara", "Kenji", "Lucia", "Omar", "Ines", "Pavel", "Sara", "Thabo",
    "Valentina", "Wei", "Yara", "Zoltan", "Noor", "Emeka", "Freya", "Hugo", "Isabel", "José",
    "Zoë", "Björn", "Amélie", "Dário", "Renée", "Siobhan", "Tariq", "Ngozi", "Ravi", "Camila",
)
_LAST_NAMES = (
    "Lovelace", "Turing", "Hopper", "Torvalds", "Hamilton", "Thompson", "Liskov", "Ritchie",
    "Allen", "Dijkstra", "Perlman", "Berners-Lee", "Lamarr", "Knuth", "Johnson", "McCarthy",
    "Wilson", "Matsumoto", "Borg", "van Rossum", "Okafor", "Wang", "Sharma", "García", "Haddad",
    "Nilsson", "Johansen", "Mensah", "Tanaka", "Fernández", "Rahimi", "Adeyemi", "Kim", "Oliveira",
    "Khan", "Petrov", "Nowak", "Novák", "Li", "Patel", "Rossi", "Schmidt", "Bianchi", "Suzuki",
    "Moreno", "Farouk", "Silva", "Ivanov", "Cohen", "Dlamini", "Romero", "Zhang", "Mansour",
    "Kovács", "Hussain", "Eze", "Larsen", "Dubois", "Martins", "Müller", "O'Brien", "Nguyen",
    "Kowalski", "Abebe", "Singh", "Lindqvist", "Moyo", "Reyes", "Park",
)
LOCATIONS: tuple[str, ...] = (
    "San Francisco, USA", "New York, USA", "Austin, USA", "Seattle, USA", "Toronto, Canada",
    "Vancouver, Canada", "Mexico City, Mexico", "São Paulo, Brazil", "Buenos Aires, Argentina",
    "London, UK", "Dublin, Ireland", "Paris, France", "Berlin, Germany", "Munich, Germany",
    "Amsterdam, Netherlands", "Stockholm, Sweden", "Zurich, Switzerland", "Madrid, Spain",
    "Lisbon, Portugal", "Warsaw, Poland", "Tel Aviv, Israel", "Dubai, UAE", "Lagos, Nigeria",
    "Nairobi, Kenya", "Cape Town, South Africa", "Bangalore, India", "Singapore, Singapore",
    "Tokyo, Japan", "Seoul, South Korea", "Sydney, Australia",
)
_COMPANIES = (
    "Northwind Labs", "Bluefin Analytics", "Kestrel Systems", "Ironbark Health", "Lumen Robotics",
    "Cobalt Bank", "Fernhill Retail", "Quasar Games", "Tidewater Logistics", "Helix Biotech",
    "Orbital Mobility", "Granite Insurance", "Sable Security", "Pinecone Media", "Vertex Energy",
    "Meridian Capital", "Brightpath Education", "Copperleaf Foods", "Nimbus Cloud", "Atlas Legal",
    "Harbor Telecom", "Juniper Travel", "Redwood Pharma", "Saffron Fintech", "Zephyr Aerospace",
)
# fmt: on
_EMAIL_DOMAINS = ("example.com", "example.org", "example.net", "mail.example.com")
_CLOSERS = (
    "Open to new opportunities.",
    "Interested in remote-friendly teams.",
    "Happy to relocate for the right role.",
    "Mentors junior colleagues and enjoys code review.",
    "Cares about shipping reliable, well-tested work.",
    "Looking for a team with a strong engineering culture.",
    "Enjoys working closely with customers.",
)

_TOKEN_RE = re.compile(r"[a-z0-9+#]+")


def fold(text: str) -> str:
    """Lower-case and strip accents, so "São Paulo" matches "sao paulo"."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def tokenize(text: str) -> list[str]:
    """Words of ``text``; hyphenated words are joined ("front-end" -> "frontend")."""
    return _TOKEN_RE.findall(fold(text).replace("-", ""))


def _significant(words: Iterable[str]) -> set[str]:
    """Role words minus the generic ones; falls back to all words when only generic remain."""
    words = set(words)
    kept = words - _GENERIC_ROLE_WORDS
    return kept or words


@dataclass(frozen=True, slots=True)
class Person:
    """One synthetic profile as the talent API knows it."""

    username: str
    full_name: str
    headline: str
    role_title: str
    role_family: str
    skills: tuple[str, ...]
    years_experience: int
    location: str
    email: str | None
    summary: str
    profile_url: str

    def to_dict(self) -> dict[str, Any]:
        """The enrichment payload: every field, ``skills`` as a list, ``email`` possibly None."""
        return {
            "username": self.username,
            "full_name": self.full_name,
            "headline": self.headline,
            "role_title": self.role_title,
            "role_family": self.role_family,
            "skills": list(self.skills),
            "years_experience": self.years_experience,
            "location": self.location,
            "email": self.email,
            "summary": self.summary,
            "profile_url": self.profile_url,
        }


_TITLE_TO_FAMILY: dict[str, str] = {
    title.lower(): family for family, titles in _ROLE_FAMILIES.items() for title in titles
}


def _family_vocabulary(family: str) -> tuple[set[str], set[str]]:
    """(strong words, weak words) a family answers to: names/titles/aliases vs. its skills."""
    strong = set(tokenize(family)) | set(_FAMILY_ALIASES.get(family, ()))
    for title in _ROLE_FAMILIES[family]:
        strong |= set(tokenize(title))
    weak: set[str] = set()
    for skill in _FAMILY_SKILLS.get(family, ()):
        weak |= set(tokenize(skill))
    for title in _ROLE_FAMILIES[family]:
        for skill in _TITLE_SKILLS.get(title, ()):
            weak |= set(tokenize(skill))
    return strong - _GENERIC_ROLE_WORDS, weak - _GENERIC_ROLE_WORDS - strong


_FAMILY_VOCAB = {family: _family_vocabulary(family) for family in _ROLE_FAMILIES}


def best_family(role: str) -> str | None:
    """The role family whose vocabulary overlaps the free-text ``role`` most, or None."""
    exact = _TITLE_TO_FAMILY.get(role.strip().lower())
    if exact is not None:
        return exact
    if role.strip().lower() in _ROLE_FAMILIES:
        return role.strip().lower()
    words = _significant(tokenize(role))
    best: tuple[float, str] | None = None
    for family in _ROLE_FAMILIES:  # dict order makes ties deterministic
        strong, weak = _FAMILY_VOCAB[family]
        score = len(words & strong) + 0.5 * len(words & weak)
        if family in words:
            score += 1.0  # the family's own name ("data", "ml") is the strongest hint
        if score > 0 and (best is None or score > best[0]):
            best = (score, family)
    return best[1] if best else None


def role_family_of(title: str) -> str | None:
    """Family of a job title: exact (case-insensitive) title match first, else by word overlap."""
    return best_family(title)


def expand_role_family(role: str) -> list[str]:
    """All titles of the family that best matches the free-text ``role`` ([] if none does).

    Used by the backfill's ``broad`` tier: "rust embedded firmware engineer" expands to every
    ``embedded`` title.
    """
    family = best_family(role)
    return list(_ROLE_FAMILIES[family]) if family else []


def role_words(person: Person) -> frozenset[str]:
    """Words a person's role answers to: its title and its family's name."""
    return frozenset(tokenize(person.role_title)) | frozenset(tokenize(person.role_family))


def skill_words(person: Person) -> frozenset[str]:
    return frozenset(w for skill in person.skills for w in tokenize(skill))


def role_query_words(role: str) -> frozenset[str]:
    """The significant words of a free-text role ("senior backend engineer" -> {"backend"})."""
    return frozenset(_significant(tokenize(role)))


def role_match_score(
    wanted: frozenset[str], roles: frozenset[str], skills: frozenset[str]
) -> float:
    """Fraction of the significant role words a person answers to; a match needs >= 0.75.

    Skill words count too ("quantitative developer kdb+"), but only once the title or family
    matched at least one word: otherwise "rust engineer" would match every Rust user.
    """
    if not wanted:
        return 1.0
    in_role = wanted & roles
    if not in_role:
        return 0.0
    return (len(in_role) + len((wanted - in_role) & skills)) / len(wanted)


ROLE_MATCH_THRESHOLD = 0.75


def _ascii_handle(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", fold(text))


def _seniority(years: int) -> str:
    if years < 2:
        return "Junior "
    if years < 5:
        return ""
    if years < 10:
        return "Senior "
    return "Lead "


def _years_phrase(years: int) -> str:
    if years == 0:
        return "less than a year of experience"
    if years == 1:
        return "1 year of experience"
    return f"{years} years of experience"


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _pick_title(
    rng: random.Random, index: int, all_titles: Sequence[tuple[str, str]]
) -> tuple[str, str]:
    # The first people cover every title twice, so each (even niche) title exists at any seed.
    if index < 2 * len(all_titles):
        return all_titles[index % len(all_titles)]
    families = list(_ROLE_FAMILIES)
    family = rng.choices(families, weights=[_FAMILY_WEIGHTS[f] for f in families])[0]
    titles = _ROLE_FAMILIES[family]
    weights = [0.25 if t in _NICHE_TITLES else 1.0 for t in titles]
    return family, rng.choices(titles, weights=weights)[0]


def _make_person(
    rng: random.Random,
    index: int,
    taken: set[str],
    no_email_rate: float,
    all_titles: Sequence[tuple[str, str]],
) -> Person:
    first = rng.choice(_FIRST_NAMES)
    last = rng.choice(_LAST_NAMES)
    base = f"{_ascii_handle(first)}.{_ascii_handle(last)}"
    username = f"{base}{rng.randint(1, 99)}"
    while username in taken:  # a handful of collisions at 3000 people; extend the number
        username = f"{base}{rng.randint(100, 9999)}"
    taken.add(username)

    family, title = _pick_title(rng, index, all_titles)
    core = list(_TITLE_SKILLS.get(title, ()))
    pool = [s for s in _FAMILY_SKILLS[family] if s not in core]
    extra = rng.sample(pool, k=min(len(pool), rng.randint(2, 5)))
    skills = tuple(dict.fromkeys(core + extra))

    # Triangular: most people have 3-10 years, a few have none, a few are veterans.
    years = min(35, max(0, round(rng.triangular(0, 35, 5))))
    location = rng.choice(LOCATIONS)
    company = rng.choice(_COMPANIES)
    email = None if rng.random() < no_email_rate else f"{username}@{rng.choice(_EMAIL_DOMAINS)}"
    headline = f"{_seniority(years)}{title} at {company}"
    city = location.split(",")[0]
    top = list(skills[:3])
    summary = (
        f"{first} is a {title} based in {city} with {_years_phrase(years)}. "
        f"Works mostly with {_join(top)}. {rng.choice(_CLOSERS)}"
    )
    return Person(
        username=username,
        full_name=f"{first} {last}",
        headline=headline,
        role_title=title,
        role_family=family,
        skills=skills,
        years_experience=years,
        location=location,
        email=email,
        summary=summary,
        profile_url=f"{PROFILE_BASE_URL}{username}",
    )


@lru_cache(maxsize=8)
def build_population(
    seed: int = DEFAULT_SEED, size: int = DEFAULT_POPULATION_SIZE, no_email_rate: float = 0.12
) -> tuple[Person, ...]:
    """The synthetic population: a pure function of its arguments (cached)."""
    if size < 0:
        raise ValueError("size must be >= 0")
    rng = random.Random(f"shortlist-simulator-population|{seed}")
    all_titles = [(f, t) for f, titles in _ROLE_FAMILIES.items() for t in titles]
    taken: set[str] = set()
    return tuple(_make_person(rng, i, taken, no_email_rate, all_titles) for i in range(size))


@dataclass(frozen=True)
class _Entry:
    person: Person
    role_words: frozenset[str]
    skill_words: frozenset[str]
    skills: frozenset[str]
    location: str
    weighted_words: Mapping[str, float]
    popularity: float


@dataclass
class PopulationIndex:
    """Search structures over a population: role words, folded skills, IDF-weighted text."""

    people: tuple[Person, ...]
    seed: int = DEFAULT_SEED
    by_username: dict[str, Person] = field(init=False)
    _entries: list[_Entry] = field(init=False)
    _idf: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.by_username = {p.username: p for p in self.people}
        docs: list[dict[str, float]] = []
        df: Counter[str] = Counter()
        for p in self.people:
            weights: dict[str, float] = {}
            # Title and skills say more about a person than the prose summary does.
            for text, weight in (
                (p.summary, 1.0),
                (p.headline, 1.5),
                (" ".join(p.skills), 2.0),
                (f"{p.role_title} {p.role_family}", 2.0),
            ):
                for word in tokenize(text):
                    if word not in _STOP_WORDS:
                        weights[word] = max(weights.get(word, 0.0), weight)
            docs.append(weights)
            df.update(weights.keys())
        n = max(1, len(self.people))
        self._idf = {w: math.log(1 + n / c) for w, c in df.items()}
        self._entries = [
            _Entry(
                person=p,
                role_words=role_words(p),
                skill_words=skill_words(p),
                skills=frozenset(fold(s) for s in p.skills),
                location=fold(p.location),
                weighted_words=docs[i],
                popularity=random.Random(f"{self.seed}|popularity|{p.username}").random(),
            )
            for i, p in enumerate(self.people)
        ]

    def search(
        self,
        *,
        role: str | None = None,
        location: str | None = None,
        min_years: int | None = None,
        skills: Sequence[str] = (),
    ) -> list[Person]:
        """Filtered discovery, best role match first, then a stable popularity order."""
        wanted_skills = {fold(s.strip()) for s in skills if s.strip()}
        loc = fold(location.strip()) if location and location.strip() else None
        role = role.strip() if role and role.strip() else None
        wanted = role_query_words(role) if role else frozenset()
        hits: list[tuple[float, float, str, Person]] = []
        for e in self._entries:
            p = e.person
            if min_years is not None and p.years_experience < min_years:
                continue
            if loc is not None and loc not in e.location:
                continue
            if not wanted_skills <= e.skills:
                continue
            score = 1.0
            if role is not None:
                score = role_match_score(wanted, e.role_words, e.skill_words)
                if score < ROLE_MATCH_THRESHOLD:
                    continue
                # Title words beat skill words; the exact title beats both.
                score += 0.5 * len(wanted & e.role_words) / max(1, len(wanted))
                if p.role_title.lower() == role.lower():
                    score += 1.0
            hits.append((-score, -e.popularity, p.username, p))
        hits.sort(key=lambda h: h[:3])
        return [h[3] for h in hits]

    def serp(self, query: str, limit: int) -> list[Person]:
        """Free-text ranking by IDF-weighted word overlap; popular profiles if nothing matches."""
        words = {w for w in tokenize(query) if w not in _STOP_WORDS}
        scored: list[tuple[float, float, str, Person]] = []
        for e in self._entries:
            score = sum(e.weighted_words[w] * self._idf[w] for w in words if w in e.weighted_words)
            if score > 0:
                scored.append((-score, -e.popularity, e.person.username, e.person))
        if not scored:
            # Like a real search engine, never an empty page: fall back to popular profiles.
            scored = [(0.0, -e.popularity, e.person.username, e.person) for e in self._entries]
        scored.sort(key=lambda h: h[:3])
        return [h[3] for h in scored[:limit]]

    def relevant(self, query: str, limit: int, min_coverage: float = 0.5) -> list[Person]:
        """Free-text ranking as a search engine answers: only people whose profile covers at
        least ``min_coverage`` of the query's weight (IDF; a word nobody uses weighs the most),
        so a query nobody matches gets nothing rather than popular strangers."""
        words = {w for w in tokenize(query) if w not in _STOP_WORDS}
        if not words:
            return []
        top_idf = max(self._idf.values(), default=1.0)
        total = sum(self._idf.get(w, top_idf) for w in words)
        scored: list[tuple[float, float, str, Person]] = []
        for e in self._entries:
            covered = sum(self._idf[w] for w in words if w in e.weighted_words)
            if covered < min_coverage * total:
                continue
            score = sum(e.weighted_words[w] * self._idf[w] for w in words if w in e.weighted_words)
            scored.append((-score, -e.popularity, e.person.username, e.person))
        scored.sort(key=lambda h: h[:3])
        return [h[3] for h in scored[:limit]]
