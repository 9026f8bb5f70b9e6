"""The bundled sample corpus of job listings: ~2,000 synthetic but realistic posts.

Generated, not shipped as a file: a fixed seed makes the corpus identical on every machine and
every run, and the generator is far smaller than its output. Every company is made up.

Variety is deliberate, because search quality is judged on it: 20 role families with their own
titles, skills and duties; descriptions of four to seven sentences from several templates; 44
cities on six continents with their own currency and pay level; salaries advertised as a range,
a minimum, a maximum or not at all.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn
from shortlist.listings.models import MAX_SALARY_KS, ListingCreate
from shortlist.listings.repository import copy_listings, listings_exist

QUERIES = load_queries("shortlist.listings")

SEED = 20_260_805
SAMPLE_SIZE = 2_000


@dataclass(frozen=True)
class ListingFamily:
    """Related job titles and what their sample listings are written from."""

    key: str
    titles: tuple[str, ...]
    skills: tuple[str, ...]
    duties: tuple[str, ...]
    teams: tuple[str, ...]
    band_usd_ks: tuple[int, int]
    """Mid-level pay in a high-cost US city, thousands of USD a year."""
    sectors: tuple[str, ...]


@dataclass(frozen=True)
class City:
    name: str
    currency: str
    pay_level: float
    """Local pay relative to the US baseline, in USD terms."""


FAMILIES: tuple[ListingFamily, ...] = (
    ListingFamily(
        "backend",
        (
            "Backend Engineer",
            "Senior Backend Engineer",
            "Staff Software Engineer, Platform",
            "Python Developer",
            "Go Engineer",
            "Java Software Engineer",
            "Junior Backend Developer",
            "Senior API Engineer",
        ),
        (
            "Python",
            "Go",
            "Java",
            "Kotlin",
            "PostgreSQL",
            "Redis",
            "Kafka",
            "gRPC",
            "REST APIs",
            "FastAPI",
            "Spring Boot",
            "Docker",
            "AWS",
            "distributed systems",
        ),
        (
            "design and build the services behind our public API",
            "own database schemas and the migrations that evolve them",
            "keep p99 latency low as traffic grows",
            "break a monolith into well-bounded services",
            "review code and mentor engineers earlier in their careers",
            "take part in a humane on-call rotation",
            "write clear design documents before writing code",
            "improve observability with metrics, traces and structured logs",
        ),
        ("platform", "payments", "core API", "integrations", "billing"),
        (140, 190),
        ("software", "fintech", "retail", "logistics", "media", "travel"),
    ),
    ListingFamily(
        "frontend",
        (
            "Frontend Engineer",
            "Senior Frontend Engineer",
            "React Developer",
            "UI Engineer",
            "Staff Frontend Engineer",
            "Junior Web Developer",
            "Vue.js Developer",
        ),
        (
            "TypeScript",
            "React",
            "Next.js",
            "Vue",
            "CSS",
            "Tailwind",
            "accessibility (WCAG)",
            "GraphQL",
            "Storybook",
            "Playwright",
            "web performance",
            "design systems",
        ),
        (
            "build fast, accessible interfaces used by millions of people",
            "work closely with designers to turn prototypes into production screens",
            "grow and document our component library",
            "measure and improve Core Web Vitals",
            "write end-to-end tests that catch regressions before users do",
            "shape our frontend architecture and state management",
            "pair with backend engineers on API design",
        ),
        ("web", "growth", "checkout", "design system", "dashboard"),
        (125, 175),
        ("software", "retail", "media", "travel", "fintech", "education"),
    ),
    ListingFamily(
        "data",
        (
            "Data Engineer",
            "Senior Data Engineer",
            "Analytics Engineer",
            "Data Analyst",
            "Senior Data Analyst",
            "Business Intelligence Developer",
            "Data Platform Engineer",
        ),
        (
            "SQL",
            "dbt",
            "Airflow",
            "Spark",
            "Snowflake",
            "BigQuery",
            "Python",
            "Looker",
            "Tableau",
            "data modelling",
            "Kafka",
            "Databricks",
        ),
        (
            "build reliable batch and streaming pipelines",
            "model data so that analysts can answer questions on their own",
            "own data quality checks and alerting",
            "build dashboards that leadership actually uses",
            "partner with finance and product on metric definitions",
            "run A/B test analyses and explain the results",
            "reduce warehouse costs without slowing anyone down",
        ),
        ("data", "analytics", "insights", "data platform"),
        (130, 180),
        ("software", "fintech", "retail", "health", "media", "logistics", "energy"),
    ),
    ListingFamily(
        "ml",
        (
            "Machine Learning Engineer",
            "Senior Machine Learning Engineer",
            "Applied Scientist",
            "Data Scientist",
            "MLOps Engineer",
            "NLP Engineer",
            "Computer Vision Engineer",
            "Research Engineer, LLMs",
        ),
        (
            "PyTorch",
            "TensorFlow",
            "scikit-learn",
            "Python",
            "transformers",
            "embeddings",
            "vector search",
            "MLflow",
            "Kubernetes",
            "feature stores",
            "statistics",
            "CUDA",
        ),
        (
            "train, evaluate and ship models that run in production",
            "build retrieval and ranking systems for search and recommendations",
            "design offline and online evaluation for model changes",
            "fine-tune language models on domain data",
            "own the training and serving infrastructure",
            "turn research prototypes into maintainable services",
            "monitor models for drift and data quality issues",
        ),
        ("machine learning", "search relevance", "recommendations", "AI platform", "research"),
        (160, 230),
        ("software", "fintech", "health", "biotech", "retail", "media"),
    ),
    ListingFamily(
        "devops",
        (
            "DevOps Engineer",
            "Site Reliability Engineer",
            "Senior SRE",
            "Platform Engineer",
            "Cloud Infrastructure Engineer",
            "Staff Site Reliability Engineer",
            "Kubernetes Administrator",
        ),
        (
            "Kubernetes",
            "Terraform",
            "AWS",
            "GCP",
            "Azure",
            "Prometheus",
            "Grafana",
            "Linux",
            "Helm",
            "ArgoCD",
            "CI/CD",
            "incident response",
            "Bash",
        ),
        (
            "run the Kubernetes clusters our services live on",
            "define infrastructure as code and keep it reviewable",
            "set SLOs with product teams and defend error budgets",
            "lead incident response and write blameless postmortems",
            "speed up CI pipelines and deployments",
            "harden our cloud accounts and networking",
            "plan capacity ahead of seasonal peaks",
        ),
        ("infrastructure", "reliability", "platform", "cloud"),
        (140, 195),
        ("software", "fintech", "media", "retail", "gaming", "travel"),
    ),
    ListingFamily(
        "mobile",
        (
            "iOS Engineer",
            "Android Engineer",
            "Senior iOS Developer",
            "Senior Android Developer",
            "Mobile Engineer (React Native)",
            "Flutter Developer",
        ),
        (
            "Swift",
            "SwiftUI",
            "Kotlin",
            "Jetpack Compose",
            "React Native",
            "Flutter",
            "Dart",
            "Xcode",
            "offline sync",
            "push notifications",
            "app store releases",
        ),
        (
            "build features across our iOS and Android apps",
            "keep the apps fast and crash-free on older devices",
            "own the release train and app store submissions",
            "design offline-first data sync",
            "work with designers on native-feeling interactions",
            "instrument the apps so we can learn from real usage",
        ),
        ("mobile", "consumer apps", "driver app", "member app"),
        (130, 180),
        ("software", "retail", "travel", "fintech", "health", "media"),
    ),
    ListingFamily(
        "security",
        (
            "Security Engineer",
            "Application Security Engineer",
            "Senior Security Engineer",
            "Penetration Tester",
            "SOC Analyst",
            "Cloud Security Architect",
            "Detection Engineer",
        ),
        (
            "threat modelling",
            "OWASP",
            "SIEM",
            "penetration testing",
            "AWS security",
            "IAM",
            "incident response",
            "Burp Suite",
            "SOC 2",
            "ISO 27001",
            "Python",
            "Zero Trust",
        ),
        (
            "review designs and code for security flaws",
            "run our vulnerability management programme",
            "build detections and respond to alerts",
            "lead penetration tests and track fixes to closure",
            "harden identity and access management across cloud accounts",
            "prepare evidence for SOC 2 and ISO 27001 audits",
            "teach engineers to ship secure code by default",
        ),
        ("security", "trust and safety", "detection and response"),
        (145, 200),
        ("security", "software", "fintech", "health", "energy"),
    ),
    ListingFamily(
        "product",
        (
            "Product Manager",
            "Senior Product Manager",
            "Group Product Manager",
            "Technical Product Manager",
            "Associate Product Manager",
            "Product Owner",
        ),
        (
            "product discovery",
            "roadmapping",
            "user research",
            "SQL",
            "A/B testing",
            "stakeholder management",
            "Jira",
            "OKRs",
            "pricing",
            "B2B SaaS",
        ),
        (
            "decide what we build next and explain why",
            "talk to customers every week",
            "write crisp problem statements and success metrics",
            "work with engineering and design as one team",
            "run experiments and act on what they show",
            "align sales, support and marketing around launches",
        ),
        ("product", "growth", "marketplace", "platform"),
        (140, 200),
        ("software", "fintech", "retail", "travel", "health", "education"),
    ),
    ListingFamily(
        "design",
        (
            "Product Designer",
            "Senior Product Designer",
            "UX Researcher",
            "UX/UI Designer",
            "Brand Designer",
            "Design Lead",
            "Content Designer",
        ),
        (
            "Figma",
            "prototyping",
            "user research",
            "interaction design",
            "visual design",
            "design systems",
            "usability testing",
            "accessibility",
            "illustration",
            "motion design",
        ),
        (
            "design end-to-end experiences from sketch to shipped",
            "run usability tests and share what we learn",
            "evolve our design system with engineering",
            "turn complex workflows into simple screens",
            "shape the voice and look of our brand",
            "facilitate workshops with product and engineering",
        ),
        ("design", "brand", "research", "product design"),
        (115, 165),
        ("software", "retail", "media", "travel", "education", "fintech"),
    ),
    ListingFamily(
        "qa",
        (
            "QA Engineer",
            "Software Engineer in Test",
            "Senior QA Automation Engineer",
            "Manual Tester",
            "Test Lead",
            "Quality Assurance Analyst",
        ),
        (
            "test automation",
            "Selenium",
            "Cypress",
            "Playwright",
            "pytest",
            "API testing",
            "Postman",
            "test plans",
            "regression testing",
            "performance testing",
            "JMeter",
        ),
        (
            "build automated test suites that run on every pull request",
            "write test plans for new features with product managers",
            "hunt down flaky tests and fix their causes",
            "run exploratory testing before each release",
            "load-test critical paths before peak season",
            "report bugs clearly enough that they get fixed quickly",
        ),
        ("quality", "release", "QA"),
        (95, 135),
        ("software", "gaming", "fintech", "retail", "manufacturing"),
    ),
    ListingFamily(
        "embedded",
        (
            "Embedded Software Engineer",
            "Firmware Engineer",
            "Senior Embedded C++ Engineer",
            "Embedded Linux Engineer",
            "Hardware Engineer",
            "Robotics Software Engineer",
        ),
        (
            "C",
            "C++",
            "Rust",
            "RTOS",
            "ARM Cortex-M",
            "embedded Linux",
            "Yocto",
            "CAN bus",
            "I2C and SPI",
            "oscilloscopes",
            "ROS 2",
            "PCB bring-up",
        ),
        (
            "write firmware for battery-powered devices",
            "bring up new boards with the hardware team",
            "optimise code for tight memory and power budgets",
            "build over-the-air update pipelines",
            "debug timing issues with logic analysers",
            "write drivers for sensors and actuators",
        ),
        ("firmware", "devices", "robotics", "hardware"),
        (130, 180),
        ("manufacturing", "energy", "health", "logistics"),
    ),
    ListingFamily(
        "healthcare",
        (
            "Registered Nurse",
            "ICU Nurse",
            "Nurse Practitioner",
            "Charge Nurse",
            "Pediatric Nurse",
            "Clinical Nurse Educator",
            "Physiotherapist",
            "Pharmacist",
        ),
        (
            "patient assessment",
            "medication administration",
            "electronic health records",
            "Epic",
            "BLS and ACLS",
            "wound care",
            "triage",
            "care planning",
            "infection control",
            "patient education",
        ),
        (
            "provide safe, compassionate care to patients and their families",
            "assess patients and coordinate care plans with physicians",
            "administer medication and monitor responses",
            "document care accurately in the electronic health record",
            "mentor newly qualified colleagues",
            "take part in quality and patient-safety initiatives",
        ),
        ("nursing", "intensive care", "outpatient", "paediatrics", "community care"),
        (75, 115),
        ("health",),
    ),
    ListingFamily(
        "finance",
        (
            "Accountant",
            "Senior Accountant",
            "Financial Analyst",
            "FP&A Manager",
            "Payroll Specialist",
            "Controller",
            "Accounts Payable Specialist",
        ),
        (
            "Excel",
            "NetSuite",
            "SAP",
            "IFRS",
            "US GAAP",
            "month-end close",
            "financial modelling",
            "budgeting",
            "reconciliations",
            "audit preparation",
            "tax compliance",
        ),
        (
            "own the month-end close and reconciliations",
            "build the annual budget and rolling forecasts",
            "prepare management reports and board packs",
            "work with auditors on the year-end audit",
            "improve and automate finance processes",
            "analyse unit economics with business leaders",
        ),
        ("finance", "accounting", "FP&A", "controlling"),
        (80, 125),
        ("fintech", "retail", "manufacturing", "logistics", "health", "energy", "legal"),
    ),
    ListingFamily(
        "sales",
        (
            "Account Executive",
            "Senior Account Executive",
            "Sales Development Representative",
            "Enterprise Account Executive",
            "Sales Manager",
            "Customer Success Manager",
        ),
        (
            "B2B sales",
            "Salesforce",
            "HubSpot",
            "prospecting",
            "negotiation",
            "pipeline management",
            "SaaS",
            "MEDDICC",
            "account planning",
            "cold outreach",
        ),
        (
            "own a territory and a quota",
            "run discovery calls and tailored demos",
            "build pipeline through outbound prospecting",
            "negotiate and close multi-year contracts",
            "keep the CRM accurate and forecasts honest",
            "turn customers into references",
        ),
        ("sales", "enterprise sales", "mid-market", "customer success"),
        (70, 140),
        ("software", "fintech", "logistics", "health", "energy", "media"),
    ),
    ListingFamily(
        "marketing",
        (
            "Marketing Manager",
            "Content Marketing Manager",
            "Growth Marketer",
            "SEO Specialist",
            "Product Marketing Manager",
            "Social Media Manager",
            "Performance Marketing Manager",
        ),
        (
            "SEO",
            "content strategy",
            "Google Ads",
            "Meta Ads",
            "marketing automation",
            "HubSpot",
            "copywriting",
            "Google Analytics",
            "email marketing",
            "positioning",
            "brand campaigns",
        ),
        (
            "plan and run campaigns from brief to results",
            "write content that ranks and converts",
            "manage paid budgets across search and social",
            "own positioning and messaging for launches",
            "build lifecycle email programmes",
            "report on pipeline and customer acquisition cost",
        ),
        ("marketing", "growth", "brand", "demand generation"),
        (85, 130),
        ("software", "retail", "travel", "media", "education", "fintech"),
    ),
    ListingFamily(
        "legal",
        (
            "Commercial Counsel",
            "Senior Legal Counsel",
            "Paralegal",
            "Privacy Counsel",
            "Compliance Officer",
            "Contracts Manager",
        ),
        (
            "contract negotiation",
            "commercial law",
            "GDPR",
            "data protection",
            "regulatory compliance",
            "employment law",
            "intellectual property",
            "legal research",
            "risk assessment",
        ),
        (
            "draft and negotiate commercial agreements",
            "advise product teams on privacy and data protection",
            "keep our policies in line with changing regulation",
            "manage outside counsel and legal spend",
            "train colleagues on compliance topics",
            "support fundraising and corporate transactions",
        ),
        ("legal", "compliance", "privacy"),
        (110, 190),
        ("legal", "fintech", "software", "health", "energy"),
    ),
    ListingFamily(
        "operations",
        (
            "Operations Manager",
            "Logistics Coordinator",
            "Supply Chain Analyst",
            "Warehouse Supervisor",
            "Fleet Manager",
            "Procurement Specialist",
            "Dispatcher",
        ),
        (
            "supply chain",
            "inventory management",
            "WMS",
            "SAP",
            "route planning",
            "Lean",
            "Six Sigma",
            "vendor management",
            "forecasting",
            "Excel",
            "health and safety",
        ),
        (
            "keep goods moving on time through our distribution centres",
            "plan routes and schedules for our delivery fleet",
            "negotiate with carriers and suppliers",
            "improve warehouse throughput and accuracy",
            "forecast demand with the commercial team",
            "lead a shift team and keep everyone safe",
        ),
        ("operations", "logistics", "supply chain", "fulfilment"),
        (60, 100),
        ("logistics", "retail", "manufacturing", "energy"),
    ),
    ListingFamily(
        "education",
        (
            "Mathematics Teacher",
            "Science Teacher",
            "Instructional Designer",
            "Curriculum Developer",
            "English Teacher",
            "Learning Experience Designer",
            "Early Years Educator",
        ),
        (
            "lesson planning",
            "curriculum design",
            "classroom management",
            "differentiated instruction",
            "assessment design",
            "e-learning",
            "Articulate Storyline",
            "LMS administration",
            "student support",
        ),
        (
            "plan and teach engaging lessons",
            "design courses that work online and in the classroom",
            "assess progress and give useful feedback",
            "work with parents and colleagues to support every learner",
            "build assessments aligned with learning outcomes",
            "keep curricula current with the latest standards",
        ),
        ("teaching", "curriculum", "learning design"),
        (50, 80),
        ("education",),
    ),
    ListingFamily(
        "support",
        (
            "Customer Support Specialist",
            "Technical Support Engineer",
            "Support Team Lead",
            "Customer Service Representative",
            "Customer Experience Manager",
            "Help Desk Analyst",
        ),
        (
            "Zendesk",
            "Intercom",
            "troubleshooting",
            "written communication",
            "SQL",
            "ticket triage",
            "knowledge base writing",
            "customer empathy",
            "SLA management",
        ),
        (
            "help customers by chat, e-mail and phone",
            "troubleshoot technical issues and reproduce bugs",
            "write help-centre articles that prevent tickets",
            "spot trends in feedback and share them with product",
            "meet response-time targets without cutting corners",
            "coach new team members",
        ),
        ("support", "customer experience", "help desk"),
        (45, 70),
        ("software", "retail", "travel", "fintech", "media", "logistics"),
    ),
    ListingFamily(
        "people",
        (
            "HR Business Partner",
            "Talent Acquisition Specialist",
            "Technical Recruiter",
            "People Operations Manager",
            "Learning and Development Manager",
        ),
        (
            "recruiting",
            "employee relations",
            "HRIS",
            "Workday",
            "onboarding",
            "compensation and benefits",
            "employment law",
            "performance management",
            "Greenhouse",
        ),
        (
            "hire great people for fast-growing teams",
            "advise managers on performance and employee relations",
            "run onboarding that sets new hires up to succeed",
            "own compensation reviews and benefits programmes",
            "improve how we measure and build engagement",
        ),
        ("people", "talent", "HR"),
        (75, 115),
        ("software", "retail", "health", "logistics", "fintech", "manufacturing"),
    ),
)

CITIES: tuple[City, ...] = (
    City("San Francisco, CA", "USD", 1.25),
    City("New York, NY", "USD", 1.2),
    City("Seattle, WA", "USD", 1.15),
    City("Austin, TX", "USD", 1.0),
    City("Boston, MA", "USD", 1.1),
    City("Chicago, IL", "USD", 1.0),
    City("Denver, CO", "USD", 0.95),
    City("Atlanta, GA", "USD", 0.9),
    City("Los Angeles, CA", "USD", 1.1),
    City("Raleigh, NC", "USD", 0.9),
    City("Remote (US)", "USD", 1.0),
    City("Toronto", "CAD", 0.75),
    City("Vancouver", "CAD", 0.75),
    City("Montréal", "CAD", 0.7),
    City("Mexico City", "MXN", 0.35),
    City("São Paulo", "BRL", 0.35),
    City("Buenos Aires", "USD", 0.3),
    City("London", "GBP", 0.8),
    City("Manchester", "GBP", 0.65),
    City("Edinburgh", "GBP", 0.65),
    City("Dublin", "EUR", 0.75),
    City("Paris", "EUR", 0.65),
    City("Berlin", "EUR", 0.65),
    City("Munich", "EUR", 0.7),
    City("Amsterdam", "EUR", 0.7),
    City("Barcelona", "EUR", 0.5),
    City("Lisbon", "EUR", 0.45),
    City("Milan", "EUR", 0.5),
    City("Vienna", "EUR", 0.6),
    City("Zürich", "CHF", 1.0),
    City("Stockholm", "SEK", 0.6),
    City("Copenhagen", "DKK", 0.7),
    City("Warsaw", "PLN", 0.4),
    City("Kraków", "PLN", 0.38),
    City("Prague", "CZK", 0.4),
    City("Tel Aviv", "ILS", 0.7),
    City("Dubai", "AED", 0.7),
    City("Cape Town", "ZAR", 0.3),
    City("Nairobi", "KES", 0.2),
    City("Bengaluru", "INR", 0.25),
    City("Singapore", "SGD", 0.8),
    City("Tokyo", "JPY", 0.6),
    City("Sydney", "AUD", 0.8),
    City("Auckland", "NZD", 0.7),
)

# Rough units of local currency per USD; only the shape of the numbers matters.
USD_RATE = {
    "USD": 1.0,
    "CAD": 1.36,
    "MXN": 17.0,
    "BRL": 5.0,
    "GBP": 0.79,
    "EUR": 0.92,
    "CHF": 0.88,
    "SEK": 10.5,
    "DKK": 6.9,
    "PLN": 4.0,
    "CZK": 23.0,
    "ILS": 3.7,
    "AED": 3.67,
    "ZAR": 18.5,
    "KES": 130.0,
    "INR": 83.0,
    "SGD": 1.35,
    "JPY": 150.0,
    "AUD": 1.52,
    "NZD": 1.65,
}

_SECTOR_BLURBS: dict[str, tuple[str, ...]] = {
    "software": (
        "builds workflow software for mid-sized companies",
        "makes developer tools used by thousands of engineering teams",
        "runs a collaboration platform for distributed teams",
        "builds an open-source database and the cloud service around it",
    ),
    "fintech": (
        "builds payment infrastructure for online businesses",
        "is a digital bank for freelancers and small businesses",
        "makes expense management and corporate cards simple",
        "builds lending software for community banks",
    ),
    "health": (
        "runs a network of community hospitals and clinics",
        "provides home-care services across the region",
        "operates a teaching hospital with a level-one trauma centre",
        "builds telehealth services for rural patients",
    ),
    "biotech": (
        "develops diagnostics for early cancer detection",
        "uses machine learning to speed up drug discovery",
    ),
    "retail": (
        "is an online marketplace for independent makers",
        "runs a chain of neighbourhood grocery stores with fast home delivery",
        "sells outdoor gear online and in twenty stores",
    ),
    "logistics": (
        "moves freight for manufacturers across three continents",
        "runs same-day delivery for local shops",
        "operates temperature-controlled warehouses for food and pharma",
    ),
    "education": (
        "runs a group of bilingual international schools",
        "builds an online learning platform for adult learners",
        "is an independent secondary school with a strong STEM programme",
    ),
    "media": (
        "publishes independent journalism to millions of readers",
        "runs a music streaming service for indie labels",
        "produces podcasts and video series",
    ),
    "energy": (
        "develops and operates solar and wind farms",
        "builds software for smart EV charging",
        "makes home batteries and the software that runs them",
    ),
    "manufacturing": (
        "makes precision components for the aerospace industry",
        "builds agricultural robots",
        "designs and manufactures e-bikes",
    ),
    "legal": (
        "is a commercial law firm advising technology companies",
        "builds contract-management software for legal teams",
    ),
    "gaming": (
        "is an independent studio making co-op games for PC and console",
        "builds multiplayer backend services for game studios",
    ),
    "security": (
        "builds endpoint security for small and mid-sized businesses",
        "runs a managed detection and response service",
    ),
    "travel": (
        "is a booking platform for boutique hotels",
        "builds travel-management software for companies",
    ),
}

_NAME_STEMS = (
    "North", "Blue", "Silver", "Bright", "Cedar", "Harbor", "Lumen", "Atlas", "Nimbus",
    "Copper", "Orchid", "Summit", "Pioneer", "Vertex", "Maple", "Granite", "Aurora", "Beacon",
    "Kite", "Juniper", "Saffron", "Tidal", "Meridian", "Ember", "Willow", "Falcon", "Oak",
    "Pine", "Coral", "Sable", "Quill", "Halcyon", "Lark", "Basalt", "Polar", "Indigo",
)  # fmt: skip
_NAME_TAILS = ("line", "stone", "field", "wave", "bridge", "point", "gate", "ridge", "works")
_SECTOR_SUFFIXES: dict[str, tuple[str, ...]] = {
    "software": ("Labs", "Software", "Systems", "Cloud", "Technologies"),
    "fintech": ("Pay", "Financial", "Bank", "Capital", "Ledger"),
    "health": ("Health", "Medical Center", "Hospital", "Care", "Clinics"),
    "biotech": ("Bio", "Therapeutics", "Diagnostics"),
    "retail": ("Market", "Goods", "Outfitters", "Grocers"),
    "logistics": ("Logistics", "Freight", "Couriers", "Supply Co."),
    "education": ("Academy", "School", "Learning", "College"),
    "media": ("Media", "Studios", "Press", "Audio"),
    "energy": ("Energy", "Power", "Renewables", "Grid"),
    "manufacturing": ("Robotics", "Industries", "Manufacturing", "Cycles"),
    "legal": ("Legal", "& Partners LLP", "Law"),
    "gaming": ("Games", "Interactive", "Studios"),
    "security": ("Security", "Defense", "Cyber"),
    "travel": ("Travel", "Trips", "Journeys"),
}

_INTRO = (
    "{company} {blurb}.",
    "At {company}, we {blurb_we}.",
    "{company} {blurb}, and we are growing.",
)
_ROLE = (
    "We are hiring a {title} to join our {team} team in {city}.",
    "As a {title} on the {team} team, you will be based in {city}.",
    "Our {team} team in {city} is looking for a {title}.",
)
_DUTIES = (
    "You will {d1}, {d2} and {d3}.",
    "Day to day you will {d1} and {d2}; over time you will also {d3}.",
    "In this role you will {d1}, {d2}, and {d3}.",
)
_SKILLS = (
    "You will work with {s1}, {s2}, {s3} and {s4}.",
    "Our toolkit includes {s1}, {s2} and {s3}; experience with {s4} is a plus.",
    "We are looking for solid experience with {s1} and {s2}, and familiarity with {s3} or {s4}.",
)
_EXPERIENCE = (
    "We are looking for {years}+ years of relevant experience and a habit of clear written "
    "communication.",
    "You have {years}+ years in a similar role and enjoy working with people across teams.",
    "Ideally you bring {years}+ years of experience and curiosity about how things work.",
)
_ARRANGEMENT = (
    "This is a hybrid role with three days a week in our {city} office.",
    "This role is fully on-site in {city}.",
    "We are remote-friendly, with teammates within a few hours of {city}.",
    "You can work from our {city} office or from home, as suits you.",
)
_PERKS = (
    "We offer generous parental leave and a yearly learning budget.",
    "Benefits include health insurance, a pension plan and 30 days of paid leave.",
    "We offer equity, flexible hours and a home-office allowance.",
    "Relocation support is available.",
)


def _seniority(title: str) -> float:
    lowered = title.lower()
    if any(w in lowered for w in ("junior", "associate", "early years")):
        return 0.7
    if any(w in lowered for w in ("staff", "principal", "group", "lead", "controller", "head")):
        return 1.45
    if any(w in lowered for w in ("senior", "architect", "manager", "counsel", "practitioner")):
        return 1.2
    return 1.0


def _round_local(value: float) -> int:
    step = 5 if value < 1_000 else 50 if value < 10_000 else 500
    return int(max(step, min(MAX_SALARY_KS, round(value / step) * step)))


def _companies(rng: random.Random) -> dict[str, list[str]]:
    """About eight made-up companies per sector, unique names."""
    taken: set[str] = set()
    by_sector: dict[str, list[str]] = {}
    for sector, suffixes in _SECTOR_SUFFIXES.items():
        names: list[str] = []
        while len(names) < 8:
            stem = rng.choice(_NAME_STEMS)
            if rng.random() < 0.5:
                stem += rng.choice(_NAME_TAILS)
            name = f"{stem} {rng.choice(suffixes)}"
            if name not in taken:
                taken.add(name)
                names.append(name)
        by_sector[sector] = names
    return by_sector


def _we(blurb: str) -> str:
    """ "builds X" → "build X", for the "At Company, we …" intro."""
    verb, _, rest = blurb.partition(" ")
    base = {"is": "are", "publishes": "publish"}.get(verb)
    if base is None:
        base = verb[:-1] if verb.endswith("s") else verb
    return f"{base} {rest}"


def _salary(
    rng: random.Random, family: ListingFamily, title: str, city: City
) -> tuple[int | None, int | None, str]:
    low_usd, high_usd = family.band_usd_ks
    factor = _seniority(title) * city.pay_level * rng.uniform(0.9, 1.1)
    currency = city.currency
    if currency != "USD" and rng.random() < 0.05:
        currency = "USD"  # international employers sometimes advertise in dollars
    rate = USD_RATE[currency]
    low = _round_local(low_usd * factor * rate)
    high = _round_local(high_usd * factor * rate)
    shape = rng.random()
    if shape < 0.55:
        return low, max(low, high), currency
    if shape < 0.70:
        return low, None, currency
    if shape < 0.80:
        return None, high, currency
    return None, None, currency


def iter_sample_listings(n: int = SAMPLE_SIZE, seed: int = SEED) -> Iterator[ListingCreate]:
    """``n`` listings, the same ones for the same ``seed`` on every machine."""
    rng = random.Random(seed)
    companies = _companies(rng)
    for _ in range(n):
        family = rng.choice(FAMILIES)
        sector = rng.choice(family.sectors)
        company = rng.choice(companies[sector])
        title = rng.choice(family.titles)
        city = rng.choice(CITIES)
        blurb = rng.choice(_SECTOR_BLURBS[sector])
        team = rng.choice(family.teams)
        d1, d2, d3 = rng.sample(family.duties, 3)
        s1, s2, s3, s4 = rng.sample(family.skills, 4)
        city_short = city.name.split(",")[0]
        sentences = [
            rng.choice(_INTRO).format(company=company, blurb=blurb, blurb_we=_we(blurb)),
            rng.choice(_ROLE).format(title=title, team=team, city=city_short),
            rng.choice(_DUTIES).format(d1=d1, d2=d2, d3=d3),
            rng.choice(_SKILLS).format(s1=s1, s2=s2, s3=s3, s4=s4),
        ]
        if rng.random() < 0.8:
            years = {0.7: 1, 1.0: 3, 1.2: 5, 1.45: 8}[_seniority(title)]
            sentences.append(rng.choice(_EXPERIENCE).format(years=years))
        if city.name != "Remote (US)":
            sentences.append(rng.choice(_ARRANGEMENT).format(city=city_short))
        if rng.random() < 0.6:
            sentences.append(rng.choice(_PERKS))
        low, high, currency = _salary(rng, family, title, city)
        yield ListingCreate(
            company_name=company,
            job_title=title,
            city_location=city.name,
            description=" ".join(sentences),
            salary_min_ks=low,
            salary_max_ks=high,
            currency_code=currency,
        )


async def load_sample_listings(conn: AsyncConn) -> int:
    """Insert the sample corpus (``source = 'sample'``) if ``job_listings`` is empty; returns
    how many listings were inserted (0 when there were listings already).

    All or nothing in one transaction, behind an advisory lock, so two processes starting at
    once on an empty database load the corpus exactly once.
    """
    async with conn.transaction():
        await conn.execute(QUERIES["lock_sample_load"])
        if await listings_exist(conn):
            return 0
        return await copy_listings(conn, iter_sample_listings(), source="sample")
