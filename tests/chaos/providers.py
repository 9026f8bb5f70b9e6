"""Providers that misbehave on purpose, and remember every call.

* :class:`ChaosOpenAI` — the scriptable OpenAI-compatible server of ``tests.fake_openai``,
  answering a set fraction of requests with a 5xx, a 429 (with ``Retry-After``) or a hang past
  the client's timeout, chosen at random. Callers are told apart by their API key (each worker
  process gets its own), and every request is logged with its outcome.
* :class:`RecordingSimulator` — the bundled talent-API simulator (``create_simulator_app``) on a
  loopback port in a thread, behind a middleware that logs every request: when it arrived,
  what it asked for, how it was answered and the ``Retry-After`` it carried.
"""

from __future__ import annotations

import asyncio
import random
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shortlist.simulator import SimulatorConfig
from shortlist.simulator.app import create_simulator_app
from tests.fake_openai import FakeOpenAI, Received, Reply

# --- the embedding provider ----------------------------------------------------------------


@dataclass(frozen=True)
class EmbedCall:
    at: float
    """``time.monotonic()`` when the request arrived."""
    key: str
    """The caller's API key (one per worker process)."""
    outcome: str
    """ok | 5xx | 429 | timeout"""
    inputs: int
    retry_after: float | None = None


@dataclass
class ChaosMix:
    """Fractions of requests answered with each failure (the rest succeed)."""

    server_error: float = 0.0
    rate_limited: float = 0.0
    timeout: float = 0.0
    retry_after: float = 0.3
    """``Retry-After`` of a 429, seconds."""
    hang: float = 2.0
    """How long a "timeout" request is held (longer than the client's timeout)."""

    @property
    def total(self) -> float:
        return self.server_error + self.rate_limited + self.timeout


class ChaosOpenAI(FakeOpenAI):
    def __init__(self, mix: ChaosMix | None = None, *, seed: int = 7, delay: float = 0.0):
        super().__init__()
        self.mix = mix or ChaosMix()
        self.delay = delay
        """Latency of a successful answer (seconds)."""
        self.rng = random.Random(seed)
        self.calls: list[EmbedCall] = []
        self.embedded: Counter[str] = Counter()
        """Texts answered with a vector (a text is counted again if it is sent again)."""

    def _next(self, received: Received) -> Reply:
        key = str(received.headers.get("Authorization", "")).removeprefix("Bearer ")
        inputs = received.json.get("input") if isinstance(received.json, dict) else None
        n = len(inputs) if isinstance(inputs, list) else 1
        with self._lock:
            self.received.append(received)
            roll = self.rng.random()
            m = self.mix
            if roll < m.server_error:
                reply, outcome = Reply.error(self.rng.choice((500, 502, 503))), "5xx"
            elif roll < m.server_error + m.rate_limited:
                reply, outcome = Reply.error(429, retry_after=m.retry_after), "429"
            elif roll < m.total:
                reply, outcome = Reply.slow(m.hang), "timeout"
            else:
                reply, outcome = Reply.ok(delay=self.delay), "ok"
            retry_after = m.retry_after if outcome == "429" else None
            self.calls.append(EmbedCall(time.monotonic(), key, outcome, n, retry_after))
            return reply

    def _render(
        self, reply: Reply, payload: Any, headers: Any
    ) -> tuple[int, bytes, dict[str, str]]:
        status, body, out_headers = super()._render(reply, payload, headers)
        # A "timeout" reply is rendered after the client gave up: nobody received its vectors.
        if status == 200 and reply.body is None and reply.delay <= self.delay:
            inputs = payload.get("input") if isinstance(payload, dict) else None
            if isinstance(inputs, list):
                with self._lock:
                    self.embedded.update(str(t) for t in inputs)
        return status, body, out_headers

    def calls_by_key(self) -> dict[str, list[EmbedCall]]:
        with self._lock:
            calls = list(self.calls)
        out: dict[str, list[EmbedCall]] = {}
        for call in calls:
            out.setdefault(call.key, []).append(call)
        return out

    def outcomes(self) -> Counter[str]:
        with self._lock:
            return Counter(c.outcome for c in self.calls)


# --- the talent API --------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderCall:
    at: float
    """``time.monotonic()`` when the request arrived."""
    endpoint: str
    """search | enrich | serp | other"""
    status: int
    retry_after: float | None


def _endpoint(path: str) -> str:
    # The vendors' own paths, as the simulator serves them (simulator/vendors.py: PDL
    # POST /v5/person/search, GET /v5/person/enrich; SerpApi GET /search.json), and the
    # generic talent API's (simulator/app.py).
    if path == "/v5/person/search" or path.startswith("/v1/people/search"):
        return "search"
    if path == "/v5/person/enrich" or (path.startswith("/v1/people/") and path.endswith("/enrich")):
        return "enrich"
    if path == "/search.json" or path.startswith("/v1/serp/"):
        return "serp"
    return "other"


class _Recorder:
    def __init__(self, app: ASGIApp, calls: list[ProviderCall], lock: threading.Lock):
        self.app = app
        self.calls = calls
        self.lock = lock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = time.monotonic()
        endpoint = _endpoint(scope["path"])
        status = 0
        retry_after: float | None = None

        async def recording_send(message: Message) -> None:
            nonlocal status, retry_after
            if message["type"] == "http.response.start":
                status = int(message["status"])
                for name, value in message.get("headers", ()):
                    if name.lower() == b"retry-after":
                        retry_after = float(value.decode())
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            with self.lock:
                self.calls.append(ProviderCall(arrived, endpoint, status, retry_after))


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


@dataclass
class RecordingSimulator:
    """The simulator app on ``127.0.0.1:<free port>`` in a thread, logging every request."""

    config: SimulatorConfig
    calls: list[ProviderCall] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.app = create_simulator_app(self.config)
        self._server = _Server(
            uvicorn.Config(
                _Recorder(self.app, self.calls, self._lock),
                log_config=None,
                log_level="warning",
                access_log=False,
                lifespan="off",
                loop="asyncio",
                timeout_graceful_shutdown=1,
            )
        )
        self._thread: threading.Thread | None = None

    def start(self) -> RecordingSimulator:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)
        port = sock.getsockname()[1]

        def run() -> None:
            try:
                asyncio.run(self._server.serve(sockets=[sock]))
            finally:
                sock.close()
                self._server.ready.set()

        self._thread = threading.Thread(target=run, name=f"chaos-sim-{port}", daemon=True)
        self._thread.start()
        if not self._server.ready.wait(30) or not self._server.started:
            raise RuntimeError("simulator did not start")
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self.app.state.simulator.release_hangs()
        self._server.should_exit = True
        self._thread.join(10)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(10)
        self._thread = None

    def __enter__(self) -> RecordingSimulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def snapshot(self) -> list[ProviderCall]:
        with self._lock:
            return list(self.calls)

    def counts(self) -> Counter[tuple[str, int]]:
        return Counter((c.endpoint, c.status) for c in self.snapshot())


def retry_after_violations(
    calls: list[Any], *, endpoints: set[str] | None = None, slack: float = 0.05
) -> list[tuple[float, float]]:
    """Requests that arrived while the caller should still have been paused by a 429.

    ``calls`` are one caller's requests (``EmbedCall`` or ``ProviderCall``) of one provider.
    After a 429 answered at ``t`` with ``Retry-After r``, a request arriving in
    ``(t + slack, t + r)`` is a violation (``slack`` covers requests already on their way when
    the 429 was sent). Returns (429 time, violating request time) pairs.
    """

    def relevant(c: Any) -> bool:
        return endpoints is None or getattr(c, "endpoint", None) in endpoints

    ordered = sorted((c for c in calls if relevant(c)), key=lambda c: c.at)
    violations: list[tuple[float, float]] = []
    for i, call in enumerate(ordered):
        is_429 = getattr(call, "outcome", None) == "429" or getattr(call, "status", 0) == 429
        if not is_429 or not call.retry_after:
            continue
        until = call.at + call.retry_after
        for later in ordered[i + 1 :]:
            if later.at >= until:
                break
            if later.at > call.at + slack:
                violations.append((call.at, later.at))
    return violations
