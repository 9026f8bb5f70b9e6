"""People Data Labs' job title taxonomy as its documentation pages list it, for the contract
tests of the simulator and of the adapter (written from the pages, never from our code).

- "Job Title Roles" (docs.peopledatalabs.com/docs/job-title-roles): launched in v28.0, "the
  officially supported set of canonical values used across all datasets"; the 24 rows below
  as the page lists them.
- "Legacy Job Title Roles (pre-v27.1)" (/docs/job-title-roles-legacy-v271): "as of v29.1 (Feb
  2025), the set of roles on this page are no longer supported in our datasets" — the 15 roles
  the OpenAPI spec (peopledatalabs/openAPI-specifications pdl-specs.json) still enumerates.
- "Job Title Subroles" (/docs/job-title-subroles): the current sub roles. The search tool this
  list was read with shows the page's first 15 rows only (academic … building_and_grounds);
  the rest are a public transcription of the same page (106 values, its first 15 equal to
  the page's), not checked row by row against it.
- "Mapping Job Title Class to Roles to Subroles" (/docs/title-subroles-to-roles): the rows
  read there (its first thirteen, sorted by class, role, sub role), as (role, sub role).
"""

from __future__ import annotations

ROLES = frozenset({
    "advisory", "analyst", "creative", "education", "engineering", "finance", "fulfillment",
    "health", "hospitality", "human_resources", "legal", "manufacturing", "marketing",
    "operations", "partnerships", "product", "professional_service", "public_service",
    "research", "sales", "sales_engineering", "support", "trade", "unemployed",
})  # fmt: skip

LEGACY_ROLES = frozenset({
    "customer_service", "design", "education", "engineering", "finance", "health",
    "human_resources", "legal", "marketing", "media", "operations", "public_relations",
    "real_estate", "sales", "trades",
})  # fmt: skip

SUB_ROLES = frozenset({
    # The page's rows as the search tool showed them.
    "academic", "account_executive", "account_management", "accounting", "accounting_services",
    "administrative", "advisor", "agriculture", "aides", "architecture", "artist",
    "board_member", "bookkeeping", "brand", "building_and_grounds",
    # The rest of the page, from the transcription (see above).
    "business_analyst", "business_development", "chemical", "compliance", "construction",
    "consulting", "content", "corporate_development", "curation", "customer_success",
    "customer_support", "data_analyst", "data_engineering", "data_science", "dental", "devops",
    "doctor", "electric", "electrical", "emergency_services", "entertainment", "executive",
    "fashion", "financial", "fitness", "fraud", "graphic_design", "growth", "hair_stylist",
    "hardware", "health_and_safety", "human_resources", "implementation", "industrial",
    "information_technology", "insurance", "investment_banking", "investor",
    "investor_relations", "journalism", "judicial", "legal", "legal_services", "logistics",
    "machinist", "marketing_design", "marketing_services", "mechanic", "mechanical", "military",
    "network", "nursing", "partnerships", "pharmacy", "planning_and_analysis", "plumbing",
    "political", "primary_and_secondary", "procurement", "product_design",
    "product_management", "professor", "project_management", "protective_service",
    "qa_engineering", "quality_assurance", "realtor", "recruiting", "restaurants", "retail",
    "revenue_operations", "risk", "sales_development", "scientific", "security",
    "social_service", "software", "solutions_engineer", "strategy", "student",
    "talent_analytics", "therapy", "tour_and_travel", "training", "translation", "transport",
    "unemployed", "veterinarian", "warehouse", "web", "wellness",
})  # fmt: skip

PAIRS = frozenset({
    ("creative", "artist"), ("creative", "entertainment"), ("creative", "fashion"),
    ("creative", "graphic_design"), ("creative", "hair_stylist"), ("creative", "journalism"),
    ("education", "curation"), ("education", "primary_and_secondary"),
    ("education", "professor"), ("education", "student"), ("education", "tour_and_travel"),
    ("fulfillment", "logistics"), ("fulfillment", "project_management"),
})  # fmt: skip
"""(role, sub role) rows of the mapping page that were read; a sub role has one role there."""

ROLE_OF = {sub_role: role for role, sub_role in PAIRS}
