"""Settings from ``SHORTLIST_*`` environment variables (pydantic-settings).

Every field here is documented in the README with its default; keep the two in step.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("shortlist", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SHORTLIST_", extra="ignore")

    # --- database -------------------------------------------------------------------------
    database_url: str | None = None
    """External PostgreSQL (pgvector required). Unset: an embedded server in ``data_dir``."""
    data_dir: Path = Field(default_factory=default_data_dir)
    db_pool_min: int = 2
    db_pool_max: int = 10

    # --- HTTP ------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = 8000
    trusted_proxies: str = ""
    """Comma-separated IPs/CIDRs whose X-Forwarded-For / X-Real-IP headers are believed."""
    search_rate_limit: int = 120
    """Public job searches per client IP per minute (0 disables)."""
    max_body_bytes: int = 1_000_000
    load_sample_data: bool = True
    """Load the bundled sample corpora on the first start of an empty database."""

    # --- embedding --------------------------------------------------------------------------
    embedder: Literal["local", "openai"] = "local"
    embedder_url: str = "https://api.openai.com/v1"
    embedder_api_key: str = ""
    embedder_model: str = "text-embedding-3-small"
    embedder_timeout: float = 30.0
    embedding_dim: int = 384

    # --- embedding indexer --------------------------------------------------------------------
    indexer_poll_interval: float = 30.0
    indexer_batch_size: int = 128
    indexer_backoff_base: float = 30.0
    indexer_backoff_max: float = 120.0
    lease_seconds: float = 300.0
    """How long a claimed row stays claimed without a heartbeat before others may take it."""

    # --- candidate backfill --------------------------------------------------------------------
    backfill_min_results: int = 15
    internal_min_score: float = 0.72
    """Least relevance (cosine score in [0, 1]) for an internal hit; tuned for the local model."""
    backfill_concurrency: int = 8
    """Candidates processed at once per worker process."""
    provider_concurrency: int = 4
    """Concurrent calls per external provider per worker process."""
    discovery_timeout: float = 60.0
    enrichment_timeout: float = 45.0
    retry_delay: float = 5.0
    stale_after: float = 600.0
    reaper_interval: float = 15.0
    talent_api: Literal["pdl", "generic"] = "pdl"
    """Which dialect the talent provider speaks: People Data Labs, or the generic HTTP API."""
    serp_api: Literal["serpapi", "generic"] = "serpapi"
    talent_api_url: str | None = None
    """Unset: the bundled simulator (served in-process by ``serve`` and ``worker``)."""
    serp_api_url: str | None = None
    talent_api_key: str = ""
    """Sent as PDL's ``X-Api-Key``; unset with the simulator: the simulator's key."""
    serp_api_key: str = ""
    """Sent as SerpApi's ``api_key``; unset with the simulator: the simulator's key."""
    talent_rate_limit: int = 600
    """Requests per minute to the talent provider, shared by every process (0 = no limit)."""
    serp_rate_limit: int = 300
    """Requests per minute to the SERP provider, shared by every process (0 = no limit)."""
    backfill_min_score: float = 0.6
    """Least relevance for a backfilled person to become a result (below: ``below_threshold``)."""
    search_credit_budget: int = 100
    """Provider credits one search may spend before its backfill stops (0 = no budget)."""
    simulator_api_key: str = "simulator-key"
    """The key the bundled simulator accepts (and the adapters send when pointed at it)."""
    simulator_time_scale: float = 1.0
    simulator_port: int = 8001

    # --- shutdown ---------------------------------------------------------------------------
    shutdown_grace: float = 60.0

    log_level: str = "INFO"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
