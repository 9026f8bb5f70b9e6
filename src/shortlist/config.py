"""Settings from ``SHORTLIST_*`` environment variables (pydantic-settings).

Every field here is documented in the README with its default; keep the two in step.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal, Self

import platformdirs
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from shortlist import derived
from shortlist.db.vector_index import BuildOverrides
from shortlist.errors import ConfigError

ENV_PREFIX = "SHORTLIST_"
DEFAULT_DUPLICATE_DISTANCE = 0.02
"""``Settings.duplicate_distance``'s default (the indexer's too, when it is built without one)."""
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("shortlist", appauthor=False))


def default_model_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("shortlist", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The arguments, then the environment: no ``.env`` file is read (none is configured,
        and pydantic-settings' dotenv source still went through every field: a ``Settings()``
        cost 6.2 ms of CPU with it, 4.1 without), nor a secrets directory."""
        return (init_settings, env_settings)

    # --- database -------------------------------------------------------------------------
    database_url: str | None = None
    """External PostgreSQL (pgvector required). Unset: an embedded server in ``data_dir``."""
    data_dir: Path = Field(default_factory=default_data_dir)
    embedded_shared_buffers: str | None = Field(None, pattern=r"^[1-9][0-9]*(kB|MB|GB|TB)$")
    """The embedded server's ``shared_buffers`` (``1GB``), kept in its data dir; unset:
    PostgreSQL's 128 MB. Alerts at a million saved searches want ~1 GB (bench/README)."""
    db_pool_min: int = Field(2, ge=1)
    db_pool_max: int = Field(10, ge=1)
    db_worker_pool_max: int = Field(6, ge=1)
    """Connections of the in-process workers' own pool in ``serve`` (requests never take the
    workers' connections, nor the workers the requests'); a ``shortlist worker`` process uses
    ``db_pool_max``."""
    database_read_url: str | None = None
    """Comma-separated read replicas for job and candidate-corpus search (shortlist.db.replicas).
    Unset: every read goes to the primary."""
    read_max_lag: float = Field(5.0, gt=0)
    """Seconds a replica may be behind the primary before searches fall back to the primary."""

    # --- vector index builds (shortlist.db.vector_index); unset: sized from the table ---------
    hnsw_build_memory_mb: int | None = Field(None, ge=64)
    hnsw_build_workers: int | None = Field(None, ge=0, le=64)
    hnsw_ef_construction: int | None = Field(None, ge=16, le=1000)
    vector_index: Literal["auto", "hnsw", "ivfflat"] = "auto"
    """The index method: auto (HNSW up to 500k rows, IVFFlat above), or one for every size."""
    ivfflat_lists: int | None = Field(None, ge=1, le=32768)
    index_retune_interval: float = Field(600.0, ge=0)
    """Seconds between an indexer's checks that each vector index still fits its table (a
    misfit is rebuilt CONCURRENTLY); 0: only ``shortlist migrate --retune``."""

    # --- HTTP ------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    trusted_proxies: str = ""
    """Comma-separated IPs/CIDRs whose X-Forwarded-For / X-Real-IP headers are believed."""
    search_rate_limit: int = Field(120, ge=0)
    """Public job searches per client IP per minute (0 disables)."""
    max_body_bytes: int = Field(1_000_000, ge=1)
    forwarded_header: Literal["x-forwarded-for", "x-real-ip"] = "x-forwarded-for"
    """The one header a trusted proxy sets with the client's address (the other is ignored)."""
    statement_timeout: float = Field(30.0, ge=0)
    """Seconds any one SQL statement of the API's connections may run (0: no limit)."""
    status_cache_seconds: float = Field(5.0, ge=0)
    """/status and /metrics are computed at most once per this many seconds per process."""
    probe_rate_limit: int = Field(60, ge=0)
    """/status and /metrics requests per client IP per minute (0 disables)."""
    sse_per_token: int = Field(4, ge=1)
    """Open event streams per token (per API process); beyond: 429."""
    sse_max_streams: int = Field(500, ge=1)
    """Open event streams in total (per API process); beyond: 429."""

    # --- trust (shortlist.privacy, shortlist.audit) -------------------------------------------
    recruiter_daily_searches: int = Field(200, ge=0)
    """Searches one recruiter token may start in any 24 hours (0: no cap; admins exempt)."""
    recruiter_daily_credits: int = Field(2000, ge=0)
    """Provider credits one recruiter token's searches may spend in any 24 hours (0: no cap;
    admins exempt); a new search's budget is cut to what is left."""
    profile_retention_days: float = Field(180.0, ge=0)
    """Days a bought profile nobody marked is kept after its last refresh (0: forever)."""
    mail_retention_days: float = Field(30.0, ge=0)
    """Days an inbound e-mail message keeps its personal data (the raw message, the envelope
    sender, the Message-ID) after it arrived, once it was handled and answered (0: forever)."""
    attempt_retention_days: float = Field(30.0, ge=0)
    """Days after a search finished that its backfill attempts and tiers' held people keep who
    they were (names, ids, the profiles a discovery left); then they are scrubbed (0: forever)."""
    privacy_key: str = ""
    """Key of the suppression list's hashes. Unset: a secret the database generated."""
    load_sample_data: bool = True
    """Load the bundled sample corpora on the first start of an empty database."""
    demo_accounts: bool = False
    """With the sample data, while no person has an account: make the demo organisations and
    people (shortlist.accounts.demo), their random passwords shown once in the log. ``make
    serve`` (the local demo) turns it on."""
    cache_dir: Path | None = Field(default_factory=derived.user_dir)
    """Where indexes a process builds from packaged data (the gazetteer, the bundled simulator's
    population) are kept for the next process to load (shortlist.derived). Unset: the user's
    cache directory. Empty (None): every process builds its own at start-up (~4 s of CPU; the
    simulator ~14 s more)."""

    # --- embedding --------------------------------------------------------------------------
    embedder: Literal["local", "openai"] = "local"
    embedder_url: str = "https://api.openai.com/v1"
    embedder_api_key: str = ""
    """Sent only to the origin of ``embedder_url`` (shortlist.embedding.factory.api_key_for)."""
    embedder_api_keys: dict[str, str] = Field(default_factory=dict)
    """JSON object of other embedder origins and their keys, for model spaces of other vendors
    (``embeddings migrate --url``)."""
    embedder_model: str = "text-embedding-3-small"
    embedder_timeout: float = Field(30.0, gt=0)
    embedding_dim: int = Field(384, ge=1, le=16000)
    model_cache_dir: Path = Field(default_factory=default_model_cache_dir)
    """Where the local model's ONNX graph is exported to, once (shortlist.embedding.onnx_model)."""
    query_int8: bool = False
    """Search queries run on the local model's int8 copy (its MatMuls' weights quantized at
    install; shortlist.embedding.local.LocalEmbedder.embed_query): ~2× cheaper a query alone,
    ~30 MB less RSS in an API process, ranking a little different (off by default: the relevance
    guard's nDCG@10 fell 0.008). Stored vectors are the float32 model's either way."""
    query_cache_size: int = Field(4096, ge=0)
    """Query embeddings kept per process, most recently used (shortlist.embedding.query_cache);
    0 disables the cache."""
    search_cache_mb: float = Field(16.0, ge=0, le=65536)
    """Megabytes of job search answers (their JSON) kept per process until a listing changes
    (shortlist.listings.result_cache); 0 disables the cache."""
    search_cache_seconds: float = Field(300.0, gt=0)
    """The longest a kept job search answer is served (it also depends on the clock)."""

    # --- embedding indexer --------------------------------------------------------------------
    indexer_poll_interval: float = Field(30.0, gt=0)
    indexer_batch_size: int = Field(128, ge=1)
    indexer_backoff_base: float = Field(30.0, gt=0)
    indexer_backoff_max: float = Field(120.0, gt=0)
    duplicate_distance: float = Field(DEFAULT_DUPLICATE_DISTANCE, ge=0, le=2)
    """Cosine distance within which a job listing is a near-duplicate of an earlier open one of
    the same company and city: linked to it, out of search (0: only identical texts).

    Measured by ``python -m bench.duplicate_distance`` (local model, the text the indexer
    embeds). USAJOBS development set (title + agency, no description; one employer = department
    + agency): 13,836 reposts with the same title are identical texts (0); of 327 whose title
    differs only in case, punctuation or spacing, 90.8 % are within 0.02 (94.2 % within 0.03);
    of 875,672 pairs of differently titled postings of one employer, 0.05 % are within 0.02 and
    0.09 % within 0.03 — below 0.01 nearly all one job reworded ("&" for "and"), from 0.02 to
    0.03 mostly other jobs ("Project Manager" / "Senior Project Manager" 0.026). Sample corpus
    (descriptions of four to seven sentences): no two listings of one company within 0.07; a
    posting with its last sentence rewritten is within 0.02 of itself 70 % of the time (0.03:
    88 %), moved to another city 63 % (which is why the city must match too), retitled
    "Senior …" over the same description 83 %. Another model's distances differ: measure again
    for it."""

    # --- leases (every queue) ----------------------------------------------------------------
    lease_seconds: float = Field(30.0, gt=0)
    """How long a claim stays valid without a heartbeat: a killed worker's work is taken over
    this long after its last heartbeat."""
    heartbeat_interval: float = Field(10.0, gt=0)
    """Seconds between a process's lease renewals (one statement for everything it holds)."""

    # --- candidate backfill --------------------------------------------------------------------
    backfill_min_results: int = Field(15, ge=1, le=1000)
    internal_min_score: float = Field(0.5, ge=0)
    """Least score of any result — an internal hit, or a backfilled person (below it:
    ``below_threshold``): the probability that the person fits the whole brief, the role's
    (shortlist.relevance) times the brief's constraint factors (shortlist.talent.constraints).
    A result below it would take a place of the target."""
    unmet_brief: Literal["exclude"] = "exclude"
    """What becomes of a hit failing the brief's place (another country) or minimum years:
    ``exclude`` — not a result, and not counted toward the target (shortlist.talent.constraints).
    """
    backfill_concurrency: int = Field(8, ge=1)
    """Candidates processed at once per worker process."""
    provider_concurrency: int = Field(4, ge=1)
    """Concurrent calls per external provider per worker process."""
    discovery_timeout: float = Field(60.0, gt=0)
    enrichment_timeout: float = Field(45.0, gt=0)
    retry_delay: float = Field(5.0, ge=0)
    stale_after: float = Field(600.0, gt=0)
    reaper_interval: float = Field(15.0, gt=0)
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
    # Rate limits, one gate per vendor endpoint, shared by every process (0 = no limit). The
    # defaults are the documented plan defaults (PDL "Usage Limits" / "Fix 429 rate limit
    # errors": per key, per endpoint, fixed 60 s windows; Person Search 10/min, Enrichment
    # 100/min on free plans. SerpApi pricing: the smallest paid plan's hourly throughput).
    pdl_search_rate_limit: int = Field(10, ge=0)
    """Person Search requests per PDL window (``pdl:search``)."""
    pdl_enrich_rate_limit: int = Field(100, ge=0)
    """Person Enrichment requests per PDL window (``pdl:enrich``)."""
    pdl_window_seconds: float = Field(60.0, gt=0)
    """Length of PDL's fixed rate-limit window (60 s; tests shorten it)."""
    serpapi_rate_limit: int = Field(1000, ge=0)
    """SerpApi searches per window (``serpapi``; the Account API's
    ``account_rate_limit_per_hour`` tightens it)."""
    serpapi_window_seconds: float = Field(3600.0, gt=0)
    """Length of SerpApi's throughput window (an hour; tests shorten it)."""
    pdl_min_likelihood: int = Field(6, ge=0, le=10)
    """PDL enrichment's ``min_likelihood``: weaker matches answer 404 and are not billed."""
    talent_rate_limit: int | None = None
    """Removed (one limit for both PDL endpoints): refused when set, see ``_consistent``."""
    serp_rate_limit: int | None = None
    """Removed (SerpApi limits per hour): refused when set, see ``_consistent``."""
    search_credit_budget: int = Field(100, ge=0)
    """Provider credits one search may spend before its backfill stops (0 = no budget)."""
    simulator_api_key: str = "simulator-key"
    """The key the bundled simulator accepts (and the adapters send when pointed at it)."""
    simulator_time_scale: float = Field(1.0, gt=0)
    simulator_port: int | None = Field(None, ge=1, le=65535)
    """Port of the bundled simulator. Unset: ``serve`` takes a free port for its in-process
    one (so two instances can run side by side); ``shortlist simulator`` uses 8001."""
    simulator_population: int = Field(50_000, ge=1)
    """People in the bundled simulator's synthetic population, built when it starts (~10 s of
    CPU at 50,000): fewer start sooner and hold fewer people of each niche occupation."""

    # --- e-mail intake (shortlist.listings.mail) -----------------------------------------------
    smtp_host: str = "127.0.0.1"
    smtp_port: int | None = Field(None, ge=0, le=65535)
    """Where ``serve`` and ``shortlist mail`` receive job posts by SMTP; 0: no listener. Unset:
    2525 (``shortlist.listings.mail.smtp.DEFAULT_PORT``); ``serve`` then goes on without the
    intake when 2525 is taken (two instances side by side), a port that is set must be free."""
    mail_domain: str = Field("localhost", min_length=1, max_length=200, pattern=r"^[^@\s]+$")
    """The domain of the intake addresses (``post-…@SHORTLIST_MAIL_DOMAIN``); the MX of this
    domain must lead to the listener."""
    mail_max_bytes: int = Field(10_000_000, ge=10_000, le=100_000_000)
    """Largest message the intake accepts (announced as ESMTP SIZE, refused with 552 above)."""
    mail_smtp_max_sessions: int = Field(50, ge=1)
    """SMTP sessions the intake serves at once; one more is answered 421 and closed."""
    mail_max_stored_bytes: int = Field(200_000_000, ge=10_000)
    """Bytes of messages one intake (company) may have stored and not yet erased from the last
    24 hours; past it a message is refused for now (452)."""
    mail_db_connections: int = Field(3, ge=1)
    """Connections of the process's pool the e-mail intake (SMTP sessions and ``POST
    /api/jobs/email``) may hold at once (at most all of the pool's but one), shared fairly
    between companies: a flood of one company's posts waits its own turns."""
    mail_body_timeout: float = Field(30.0, gt=0)
    """Seconds a client may take to send a message to ``POST /api/jobs/email`` (then 408)."""
    mail_parse_timeout: float = Field(10.0, gt=0)
    """Seconds the parser process may spend on one message before it is killed and replaced."""
    mail_parse_processes: int = Field(1, ge=1, le=64)
    """Parser processes per server process (hostile mail is parsed off the event loop)."""
    mail_parse_memory_mb: int = Field(512, ge=128, le=65536)
    """Address space a parser process may have (a message needing more fails, permanently);
    an idle one has ~75 MB."""
    smtp_relay_url: str | None = Field(None, pattern=r"^smtps?://")
    """``smtp://[user:password@]host[:port]`` (``smtps://`` for TLS): where replies to senders
    go. Unset: no reply is sent."""
    mail_authserv_id: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
    """The authserv-id of the MTA that receives the intake's mail and writes its SPF / DKIM /
    DMARC verdicts in ``Authentication-Results`` (RFC 8601; e.g. its host name): a reply goes
    only to a From address whose domain that MTA authenticated
    (``shortlist.listings.mail.authentication``). Unset: no message is answered."""
    public_url: str | None = Field(None, pattern=r"^https?://")
    """The board's address in links sent out (replies). Unset: http://SHORTLIST_HOST:PORT."""
    # --- alerts (shortlist.alerts) -----------------------------------------------------------
    alert_min_score: float = Field(0.8, gt=0.05, lt=1.0)
    """The least score (job search's calibrated ``score``) a new listing needs to be alerted to
    a saved search; the floor of every saved search's own threshold."""
    alert_confirm_hours: float = Field(72.0, gt=0)
    """How long a saved search's confirmation link works; unconfirmed searches are removed."""
    alert_retry_base: float = Field(60.0, gt=0)
    """A digest the relay deferred (4xx) waits ``base × 2^attempt`` (at most a day)."""
    # --- job sources (shortlist.listings.sources) ---------------------------------------------
    greenhouse_api_url: str = "https://boards-api.greenhouse.io"
    """Greenhouse Job Board API base. Left at its default while ``serve``/``worker`` run the
    bundled simulator (no talent API URL set): the simulator's demo board."""
    lever_api_url: str = "https://api.lever.co"
    """Lever Postings API base of Lever's global instance (``lever:SITE`` sources)."""
    lever_eu_api_url: str = "https://api.eu.lever.co"
    """Lever Postings API base of Lever's EU instance, for sources added as the address of an
    EU job site (``https://jobs.eu.lever.co/SITE``): "the instances we support: global
    (default) and EU" (github.com/lever/postings-api, README)."""
    ashby_api_url: str = "https://api.ashbyhq.com"
    crawl_interval: float = Field(3600.0, gt=0)
    """Seconds between two crawls of a source."""
    crawl_allow_private: bool = False
    """Allow source URLs on private and loopback addresses (the API bases are always allowed)."""
    crawl_contact_url: str = ""
    """Named in the crawler's User-Agent so a site's operator can reach you."""
    crawl_host_delay: float = Field(1.0, ge=0)
    """Least seconds between two requests to one host, from every process (robots.txt's
    Crawl-delay lengthens it)."""
    crawl_timeout: float = Field(30.0, gt=0)
    crawl_fetch_deadline: float = Field(120.0, gt=0)
    """Seconds one crawler request may take in all (a server sending a byte now and then never
    times out a read)."""
    crawl_deadline: float = Field(900.0, gt=0)
    """Seconds one crawl of a source may take in all; past it the crawl fails transiently."""
    crawl_max_bytes: int = Field(20_000_000, ge=1000)
    """Largest response read; a larger page is refused."""
    crawl_max_redirects: int = Field(5, ge=0, le=20)
    crawl_max_pages: int = Field(500, ge=1)
    """Posting pages one crawl of a sitemap reads at most."""
    crawl_concurrency: int = Field(2, ge=1)
    """Sources crawled at once per worker process."""
    crawl_backoff_base: float = Field(60.0, gt=0)
    """A source that failed transiently is tried again after base x 2^attempt, capped by the
    crawl interval."""
    # --- webhooks (shortlist.webhooks) --------------------------------------------------------
    webhook_timeout: float = Field(15.0, gt=0, le=120)
    """Seconds one webhook delivery attempt may take in all (Standard Webhooks: 15 to 30)."""
    webhook_allow_private: bool = False
    """Allow webhook URLs on private, loopback and link-local addresses (refused otherwise, when
    an endpoint is added and before every attempt)."""
    webhook_concurrency: int = Field(8, ge=1, le=256)
    """Webhook deliveries sent at once per worker process."""
    webhook_secret_keys: str = ""
    """Keys that encrypt webhook secrets at rest, comma-separated, each at least 32 characters:
    the first encrypts, every one decrypts (shortlist.webhooks.secrets). Unset: a key the
    database generated."""
    webhook_retention_days: float = Field(30.0, ge=0)
    """Delivered, failed and cancelled webhook deliveries are purged this many days after they
    were made (0: kept forever)."""

    # --- accounts (shortlist.accounts) ----------------------------------------------------
    oidc_issuer: str | None = Field(None, pattern=r"^https?://")
    """OpenID Connect issuer (discovery at ISSUER/.well-known/openid-configuration): the
    "Sign in with SSO" button. Set together with the client id and secret, or none of them."""
    oidc_client_id: str | None = Field(None, min_length=1, max_length=500)
    oidc_client_secret: str | None = Field(None, min_length=1, max_length=2000)
    session_idle_minutes: int = Field(30, ge=1, le=60 * 24 * 30)
    """A session unused this long ends (OWASP ASVS 5.0 7.3.1: idle timeout)."""
    session_absolute_hours: int = Field(12, ge=1, le=24 * 90)
    """A session ends this long after sign-in however used (ASVS 7.3.2: absolute timeout)."""
    invitation_hours: int = Field(72, ge=1, le=24 * 30)
    """How long an invitation link stays valid."""
    account_link_minutes: int = Field(30, ge=5, le=60 * 24)
    """How long a password-reset or address-verification link stays valid."""
    signin_failures_per_account: int = Field(5, ge=1, le=1000)
    """Failed sign-ins to one account from one client in 15 minutes before that client is
    refused for that account (other clients, the owner's own among them, are not)."""
    signin_failures_per_client: int = Field(50, ge=1, le=100_000)
    """Failed sign-ins from one client (any accounts) in 15 minutes before it is refused."""
    org_daily_searches: int = Field(0, ge=0)
    """Searches per organisation per UTC day, pooled across its members (0: no pooled cap;
    SHORTLIST_RECRUITER_DAILY_SEARCHES caps each member)."""
    org_daily_credits: int = Field(0, ge=0)
    """Provider credits per organisation per UTC day, pooled (0: no pooled cap)."""

    # --- shutdown ---------------------------------------------------------------------------
    shutdown_grace: float = Field(60.0, ge=0)

    log_level: str = "INFO"

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        """``SHORTLIST_CACHE_DIR=`` turns the cache off (as shortlist.derived reads it), not
        into the working directory."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return level

    @field_validator("webhook_secret_keys")
    @classmethod
    def _long_keys(cls, value: str) -> str:
        # The message never quotes a key.
        if any(0 < len(k.strip()) < 32 for k in value.split(",")):
            raise ValueError("each key needs at least 32 characters (openssl rand -hex 32)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        """Timings that contradict each other, named by their variables."""

        def env(field: str) -> str:
            return f"{ENV_PREFIX}{field.upper()}={getattr(self, field):g}"

        rules = (
            (
                self.heartbeat_interval * 2 <= self.lease_seconds,
                "heartbeat_interval",
                "lease_seconds",
                "the heartbeat must be at most half the lease, so one lost beat loses no claim",
            ),
            (
                self.stale_after > self.lease_seconds,
                "stale_after",
                "lease_seconds",
                "a search must not go stale while a lost worker's lease is still running",
            ),
            (
                self.reaper_interval < self.stale_after,
                "reaper_interval",
                "stale_after",
                "the reaper must run more often than a search may stay silent",
            ),
            (
                self.indexer_backoff_max >= self.indexer_backoff_base,
                "indexer_backoff_max",
                "indexer_backoff_base",
                "the back-off cap must not be below its base",
            ),
            (
                self.db_pool_max >= self.db_pool_min,
                "db_pool_max",
                "db_pool_min",
                "the pool's maximum must not be below its minimum",
            ),
        )
        removed = (
            (
                "talent_rate_limit",
                "SHORTLIST_PDL_SEARCH_RATE_LIMIT and SHORTLIST_PDL_ENRICH_RATE_LIMIT",
            ),
            ("serp_rate_limit", "SHORTLIST_SERPAPI_RATE_LIMIT (per hour)"),
        )
        for field, instead in removed:
            if getattr(self, field) is not None:
                raise ValueError(
                    f"{ENV_PREFIX}{field.upper()} is no longer read (vendors limit each endpoint "
                    f"on its own window): set {instead} instead"
                )
        for ok, first, second, why in rules:
            if not ok:
                raise ValueError(f"{env(first)} contradicts {env(second)}: {why}")
        oidc = ("oidc_issuer", "oidc_client_id", "oidc_client_secret")
        given = [f for f in oidc if getattr(self, f)]
        if given and len(given) != len(oidc):
            missing = ", ".join(f"{ENV_PREFIX}{f.upper()}" for f in oidc if f not in given)
            raise ValueError(f"OpenID Connect needs issuer, client id and secret: {missing} unset")
        return self


def index_build_overrides(settings: Settings) -> BuildOverrides:
    """The operator's overrides of the size-based vector index build settings."""
    return BuildOverrides(
        memory_mb=settings.hnsw_build_memory_mb,
        workers=settings.hnsw_build_workers,
        ef_construction=settings.hnsw_ef_construction,
        method=None if settings.vector_index == "auto" else settings.vector_index,
        ivfflat_lists=settings.ivfflat_lists,
    )


def load_settings(**overrides: object) -> Settings:
    """The settings from the environment (plus ``overrides``); a value out of range or
    contradicting another raises :class:`ConfigError` with one line naming the variables."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ConfigError(describe_invalid(exc)) from None


def describe_invalid(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        name = f"{ENV_PREFIX}{field.upper()}" if field else "configuration"
        message = error["msg"].removeprefix("Value error, ")
        problems.append(message if not field else f"{name}: {message}")
    return "invalid configuration: " + "; ".join(problems)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()
