"""The simulator's production-like misbehaviour: latencies, hangs, 5xx, 429, and their stats.

Every random decision is drawn from ``random.Random(f"{seed}|{what}|{request key}|{attempt}")``
so a run is reproducible: the same sequence of requests gets the same outcomes. The "request
key" is the endpoint plus its normalised parameters; the attempt number is how many times that
key has been requested since the last reset (the "attempt memory").
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import random
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Endpoint = Literal["search", "enrich", "serp"]
ENDPOINTS: tuple[Endpoint, ...] = ("search", "enrich", "serp")
Outcome = Literal["ok", "hang", "5xx", "429", "404"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "hang", "5xx", "429", "404")
DiscoveryMode = Literal["ok", "hang", "5xx", "429"]
EnrichMode = Literal["ok", "hang", "5xx", "429", "no_email"]

# Fields that shape the population; they cannot be changed on a running simulator.
_STRUCTURAL_FIELDS = frozenset({"seed", "population_size", "no_email_rate"})


@dataclass(frozen=True)
class SimulatorConfig:
    """Every behaviour number of the simulator. Durations are real-world seconds at
    ``time_scale`` 1.0; every sleep and every ``Retry-After`` is multiplied by ``time_scale``."""

    time_scale: float = 1.0
    seed: int = 42
    population_size: int = 50_000
    no_email_rate: float = 0.12
    # Enrichment: lognormal around the mean, plus a long tail of 3-6x the mean, capped.
    enrich_mean_s: float = 8.0
    enrich_sigma: float = 0.25
    enrich_tail_rate: float = 0.05
    enrich_tail_min_factor: float = 3.0
    enrich_tail_max_factor: float = 6.0
    enrich_max_s: float = 40.0
    # Discovery (/v1/people/search): a first attempt hangs past the client's 60 s timeout.
    discovery_latency_s: float = 1.5
    discovery_hang_rate: float = 0.41
    hang_s: float = 90.0
    # SERP: faster, fewer errors, never hangs.
    serp_latency_s: float = 2.0
    serp_page_size: int = 10
    serp_max_results: int = 50
    # Errors, drawn independently per attempt.
    error_5xx_rate: float = 0.03
    serp_error_5xx_rate: float = 0.01
    rate_limit_rate: float = 0.02
    serp_rate_limit_rate: float = 0.01
    retry_after_s: float = 2.0
    # Latencies of discovery/SERP vary uniformly by +/- this fraction.
    latency_jitter: float = 0.3
    # The vendor dialects (simulator/vendors.py). The key they accept; the PDL plan ("free":
    # contact fields come back as true/false, Person Schema "Field Availability"); requests
    # per fixed window per endpoint (PDL "Usage Limits": per key, per endpoint, fixed 60 s
    # windows; Person Search 10/min, Enrichment 100/min on free plans and 1,000/min paid;
    # None = that plan default, 0 = no limit); SerpApi's hourly throughput (Account API
    # example: account_rate_limit_per_hour 6000) and its one-hour cache of identical searches.
    # ``vendor_rate_limit`` (> 0) replaces every endpoint's per-window limit (tests).
    # Account quotas (0 = unlimited): PDL credits (then 402), SerpApi searches (then 429
    # "Your account has run out of searches.").
    api_key: str = "simulator-key"
    pdl_plan: Literal["free", "pro"] = "pro"
    pdl_search_rate_limit: int | None = None
    pdl_enrich_rate_limit: int | None = None
    rate_window_s: float = 60.0
    serpapi_rate_limit_per_hour: int = 6000
    serpapi_window_s: float = 3600.0
    serpapi_cache_s: float = 3600.0
    vendor_rate_limit: int = 0
    pdl_credit_limit: int = 0
    serpapi_search_limit: int = 0

    def pdl_limit(self, endpoint: Literal["search", "enrich"]) -> int:
        """Requests per window for one PDL endpoint (0 = unlimited)."""
        if self.vendor_rate_limit:
            return self.vendor_rate_limit
        configured = (
            self.pdl_search_rate_limit if endpoint == "search" else self.pdl_enrich_rate_limit
        )
        if configured is not None:
            return configured
        if endpoint == "search":
            return 10
        return 100 if self.pdl_plan == "free" else 1000

    def serpapi_limit(self) -> int:
        return self.vendor_rate_limit or self.serpapi_rate_limit_per_hour

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float | int) and (math.isnan(value) or value < 0):
                raise ValueError(f"{f.name} must be >= 0, got {value!r}")
            if f.name.endswith("_rate") and value > 1:
                raise ValueError(f"{f.name} must be within [0, 1], got {value!r}")
        if self.enrich_tail_max_factor < self.enrich_tail_min_factor:
            raise ValueError("enrich_tail_max_factor must be >= enrich_tail_min_factor")
        if self.pdl_plan not in ("free", "pro"):
            raise ValueError(f"pdl_plan must be 'free' or 'pro', got {self.pdl_plan!r}")
        if self.rate_window_s <= 0 or self.serpapi_window_s <= 0:
            raise ValueError("rate windows must be > 0 seconds")
        if self.serp_page_size < 1:
            raise ValueError("serp_page_size must be >= 1")

    def scaled(self, seconds: float) -> float:
        """Real seconds -> simulated seconds."""
        return seconds * self.time_scale

    def with_overrides(self, overrides: Mapping[str, Any]) -> SimulatorConfig:
        """A copy with run-time overrides applied (validated by ``__post_init__``)."""
        names = {f.name for f in dataclasses.fields(self)}
        for key in overrides:
            if key not in names:
                raise ValueError(f"unknown behaviour field {key!r}")
            if key in _STRUCTURAL_FIELDS:
                raise ValueError(f"{key!r} shapes the population and cannot change at run time")
        return dataclasses.replace(self, **overrides)


def format_seconds(seconds: float) -> str:
    """A ``Retry-After`` value: integral seconds as "2", fractional ones as "0.002" (never
    scientific notation, which HTTP clients do not parse)."""
    if seconds == int(seconds):
        return str(int(seconds))
    text = f"{seconds:.6f}".rstrip("0").rstrip(".")
    return text if text != "0" else "0.000001"


@dataclass(frozen=True)
class Decision:
    """What to do with one request: answer with ``outcome`` after ``delay_s`` simulated seconds.

    ``delay_s`` is ``math.inf`` for a forced hang that only ends when the client disconnects or
    an admin call releases it. ``status`` is the HTTP status for a 5xx outcome.
    """

    outcome: Outcome
    delay_s: float
    attempt: int
    status: int = 200
    no_email: bool = False


def _jittered(rng: random.Random, base: float, jitter: float) -> float:
    return max(0.0, base * (1.0 + rng.uniform(-jitter, jitter)))


class SimulatorState:
    """Mutable state of one simulator app: run-time overrides, attempt memory and stats.

    Touched only from the event loop serving the app, except :meth:`release_hangs`, which is
    thread-safe so a :class:`~shortlist.simulator.app.SimulatorServer` can free hung requests
    before stopping.
    """

    def __init__(self, config: SimulatorConfig) -> None:
        self.base_config = config
        self.config = config
        self.overrides: dict[str, Any] = {}
        self.force_search: DiscoveryMode | None = None
        self.force_serp: DiscoveryMode | None = None
        self.force_enrich: dict[str, EnrichMode] = {}
        self._attempts: Counter[str] = Counter()
        self._hang_waiters: set[asyncio.Future[None]] = set()
        # release_hangs() may run on another thread than the loop that adds/removes waiters.
        self._hang_lock = threading.Lock()
        self.reset_stats()

    # --- admin ---------------------------------------------------------------------------

    def reset_stats(self) -> None:
        self.calls: dict[Endpoint, Counter[str]] = {e: Counter() for e in ENDPOINTS}
        self.in_flight: Counter[Endpoint] = Counter()
        self.max_in_flight: Counter[Endpoint] = Counter()
        self.enrich_by_username: Counter[str] = Counter()

    def reset(self, *, keep_behaviour: bool = False) -> None:
        """Forget attempts and stats (and overrides unless ``keep_behaviour``); free hangs."""
        self._attempts.clear()
        self.reset_stats()
        if not keep_behaviour:
            self.set_overrides({})
            self.force_search = self.force_serp = None
            self.force_enrich.clear()
        self.release_hangs()

    def set_overrides(self, overrides: Mapping[str, Any]) -> None:
        """Replace the numeric overrides; raises ValueError (nothing changed) if invalid."""
        config = self.base_config.with_overrides(overrides)
        self.overrides = dict(overrides)
        self.config = config

    def behaviour(self) -> dict[str, Any]:
        return {
            "config": dataclasses.asdict(self.config),
            "overrides": dict(self.overrides),
            "force_search": self.force_search,
            "force_serp": self.force_serp,
            "force_enrich": dict(self.force_enrich),
        }

    def stats(self) -> dict[str, Any]:
        return {
            "calls": {
                e: {
                    "total": sum(c[o] for o in OUTCOMES),
                    **{o: c[o] for o in OUTCOMES},
                    "disconnected": c["disconnected"],
                }
                for e, c in self.calls.items()
            },
            "in_flight": {e: self.in_flight[e] for e in ENDPOINTS},
            "max_in_flight": {e: self.max_in_flight[e] for e in ENDPOINTS},
            "distinct_requests": {
                e: sum(1 for k in self._attempts if k.startswith(f"{e}?")) for e in ENDPOINTS
            },
            "enrich_by_username": dict(self.enrich_by_username),
        }

    # --- bookkeeping ---------------------------------------------------------------------

    def enter(self, endpoint: Endpoint) -> None:
        self.in_flight[endpoint] += 1
        self.max_in_flight[endpoint] = max(self.max_in_flight[endpoint], self.in_flight[endpoint])

    def leave(self, endpoint: Endpoint) -> None:
        self.in_flight[endpoint] -= 1

    def record(self, endpoint: Endpoint, outcome: Outcome | Literal["disconnected"]) -> None:
        self.calls[endpoint][outcome] += 1

    def _next_attempt(self, key: str) -> int:
        attempt = self._attempts[key]
        self._attempts[key] += 1
        return attempt

    def _rng(self, what: str, key: str, attempt: int | None = None) -> random.Random:
        suffix = "" if attempt is None else f"|{attempt}"
        return random.Random(f"{self.config.seed}|{what}|{key}{suffix}")

    # --- decisions -----------------------------------------------------------------------

    def decide_discovery(
        self, endpoint: Literal["search", "serp"], key: str, *, hangs: bool = True
    ) -> Decision:
        """Outcome of one discovery/SERP request; ``key`` = ``"{endpoint}?{normalised params}"``.

        Discovery: the FIRST attempt of a key hangs with ``discovery_hang_rate`` (drawn from the
        key alone, so it is independent of attempt order and of the other draws), then answers
        normally; later attempts never hang. SERP never hangs, nor does a dialect whose vendor
        documents no such hang (``hangs=False``: PDL's Person Search); a forced hang still does.
        """
        cfg = self.config
        attempt = self._next_attempt(key)
        forced = self.force_search if endpoint == "search" else self.force_serp
        rng = self._rng(endpoint, key, attempt)
        base = cfg.discovery_latency_s if endpoint == "search" else cfg.serp_latency_s
        latency = cfg.scaled(_jittered(rng, base, cfg.latency_jitter))
        if forced == "hang":
            return Decision("hang", math.inf, attempt)
        first_search = forced is None and endpoint == "search" and attempt == 0 and hangs
        if first_search and self._rng("hang", key).random() < cfg.discovery_hang_rate:
            return Decision("hang", cfg.scaled(cfg.hang_s), attempt)
        rate_limit = cfg.rate_limit_rate if endpoint == "search" else cfg.serp_rate_limit_rate
        error = cfg.error_5xx_rate if endpoint == "search" else cfg.serp_error_5xx_rate
        return self._error_or_ok(rng, forced, rate_limit, error, latency, attempt)

    def decide_enrich(self, username: str) -> Decision:
        """Outcome of one enrichment: 429 / 5xx per attempt, else a long-tailed latency."""
        cfg = self.config
        key = f"enrich?{username}"
        attempt = self._next_attempt(key)
        forced = self.force_enrich.get(username)
        rng = self._rng("enrich", key, attempt)
        if rng.random() < cfg.enrich_tail_rate:
            real = cfg.enrich_mean_s * rng.uniform(
                cfg.enrich_tail_min_factor, cfg.enrich_tail_max_factor
            )
        else:
            # mu = -sigma^2/2 makes the lognormal's mean exactly enrich_mean_s.
            real = cfg.enrich_mean_s * rng.lognormvariate(
                -(cfg.enrich_sigma**2) / 2, cfg.enrich_sigma
            )
        latency = cfg.scaled(min(real, cfg.enrich_max_s))
        if forced == "hang":
            return Decision("hang", math.inf, attempt)
        if forced == "no_email":
            return Decision("ok", latency, attempt, no_email=True)
        return self._error_or_ok(
            rng, forced, cfg.rate_limit_rate, cfg.error_5xx_rate, latency, attempt
        )

    def _error_or_ok(
        self,
        rng: random.Random,
        forced: str | None,
        rate_limit_rate: float,
        error_rate: float,
        latency: float,
        attempt: int,
    ) -> Decision:
        roll = rng.random()
        status = rng.choice((500, 502, 503))
        if forced == "429" or (forced is None and roll < rate_limit_rate):
            return Decision("429", 0.0, attempt, status=429)  # gateways answer 429 at once
        if forced == "5xx" or (forced is None and roll < rate_limit_rate + error_rate):
            # A failing backend still takes a while before it gives up.
            return Decision("5xx", latency * rng.uniform(0.2, 1.0), attempt, status=status)
        return Decision("ok", latency, attempt)

    def retry_after(self) -> float:
        return self.config.scaled(self.config.retry_after_s)

    # --- hangs ---------------------------------------------------------------------------

    def hang_waiter(self) -> asyncio.Future[None]:
        """A future resolved by :meth:`release_hangs` (admin reset/behaviour, server stop)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._hang_lock:
            self._hang_waiters.add(fut)
        fut.add_done_callback(self._forget_waiter)
        return fut

    def _forget_waiter(self, fut: asyncio.Future[None]) -> None:
        with self._hang_lock:
            self._hang_waiters.discard(fut)

    def release_hangs(self) -> None:
        """Resolve every forced hang; safe to call from any thread."""
        with self._hang_lock:
            waiters = list(self._hang_waiters)
        for fut in waiters:
            # RuntimeError: its loop is already closed, so nobody is waiting any more.
            with contextlib.suppress(RuntimeError):
                fut.get_loop().call_soon_threadsafe(_resolve, fut)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
