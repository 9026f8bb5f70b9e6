"""A scriptable OpenAI-compatible embeddings server on 127.0.0.1, in a background thread.

    with FakeOpenAI() as server:              # or the ``fake_openai`` pytest fixture
        server.script([Reply.error(429, retry_after=7), Reply.ok()])
        embedder = server.embedder(timeout=1.0)
        ...
        assert server.requests == 2

Each ``POST /v1/embeddings`` takes the next scripted ``Reply`` (``script`` appends; an ``int``
is shorthand for ``Reply.error(status)``), then the default (``set_default``; initially
``Reply.ok()``). ``Reply.ok`` answers with the bag-of-words vectors of ``tests.fakes.hash_embed``
scaled to length ``scale`` (not normalised, so clients must normalise), so a search over
vectors from this server ranks by shared words as the ``FakeEmbedder`` does.

To get the ``fake_openai`` fixture in a test module, either list the plugin once in
``tests/conftest.py`` (``pytest_plugins = ["tests.fake_openai"]``) or import it with an explicit
re-export, which keeps ruff quiet: ``from tests.fake_openai import fake_openai as fake_openai``.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from shortlist.embedding.openai import OpenAIEmbedder
from tests.fakes import hash_embed


@dataclass(frozen=True)
class Reply:
    """What the server does for one request."""

    status: int = 200
    body: bytes | None = None
    """Raw response body; ``None``: embeddings for a 2xx, an OpenAI-style error otherwise."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (longer than the client timeout → client times out)."""
    dim: int | None = None
    """Dimension of generated vectors; ``None``: the server's."""
    reverse: bool = False
    """List ``data`` items in reverse order (their ``index`` stays right)."""
    reject: Callable[[str], bool] | None = None
    """Answer 400 naming the first input (``input[i]``) for which this is true."""
    message: str = "fake error"

    @classmethod
    def ok(
        cls,
        *,
        dim: int | None = None,
        reverse: bool = False,
        reject: Callable[[str], bool] | None = None,
        delay: float = 0.0,
    ) -> Reply:
        return cls(dim=dim, reverse=reverse, reject=reject, delay=delay)

    @classmethod
    def error(
        cls, status: int, message: str = "fake error", *, retry_after: str | float | None = None
    ) -> Reply:
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return cls(status=status, message=message, headers=headers)

    @classmethod
    def slow(cls, seconds: float) -> Reply:
        return cls(delay=seconds)

    @classmethod
    def empty(cls) -> Reply:
        return cls(body=b"")

    @classmethod
    def empty_data(cls) -> Reply:
        return cls(body=b'{"object": "list", "data": []}')

    @classmethod
    def malformed(cls) -> Reply:
        return cls(body=b'{"object": "list", "data": [')

    @classmethod
    def wrong_dim(cls, dim: int = 16) -> Reply:
        return cls(dim=dim)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    json: Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler still sleeping out a delay never blocks shutdown
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The client gave up (timeout) and closed the socket: expected, not worth a traceback.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if self.path.rstrip("/") != "/v1/embeddings":
            self._send(404, json.dumps({"error": {"message": "not found"}}).encode())
            return
        reply = fake._next(Received(self.path, dict(self.headers.items()), payload))
        with fake._track():
            if reply.delay and fake._stopping.wait(reply.delay):
                return  # server shutting down: drop the connection
            status, body, headers = fake._render(reply, payload, self.headers)
        self._send(status, body, headers)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class FakeOpenAI:
    def __init__(self, *, dim: int = 384, api_key: str | None = None, scale: float = 3.0) -> None:
        self.dim = dim
        self.api_key = api_key
        """When set, requests without ``Authorization: Bearer <api_key>`` get a 401."""
        self.scale = scale
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._default = Reply.ok()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> int:
        with self._lock:
            return len(self.received)

    def script(self, replies: Iterable[Reply | int]) -> None:
        """Queue replies for the next requests, in order (after any still queued)."""
        with self._lock:
            for reply in replies:
                self._queue.append(Reply.error(reply) if isinstance(reply, int) else reply)

    def set_default(self, reply: Reply | int) -> None:
        """The reply once the script is used up."""
        with self._lock:
            self._default = Reply.error(reply) if isinstance(reply, int) else reply

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._default = Reply.ok()
            self.received.clear()
            self.max_in_flight = 0

    def embedder(
        self, *, model: str = "fake-embed", timeout: float = 5.0, api_key: str | None = None
    ) -> OpenAIEmbedder:
        key = api_key if api_key is not None else (self.api_key or "test-key")
        return OpenAIEmbedder(self.url, key, model, self.dim, timeout)

    # --- server side ------------------------------------------------------------------------------

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.received.append(received)
            return self._queue.popleft() if self._queue else self._default

    def _track(self) -> _InFlight:
        return _InFlight(self)

    def _render(
        self, reply: Reply, payload: Any, headers: Any
    ) -> tuple[int, bytes, dict[str, str]]:
        if self.api_key is not None and headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, _error_body("invalid api key", "invalid_request_error"), {}
        if reply.body is not None:
            return reply.status, reply.body, reply.headers
        if reply.status >= 400:
            return reply.status, _error_body(reply.message), reply.headers
        inputs = payload.get("input") if isinstance(payload, dict) else None
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return 400, _error_body("'input' must be a string or a list of strings"), {}
        if reply.reject is not None:
            for i, text in enumerate(inputs):
                if reply.reject(text):
                    body = _error_body(f"Invalid 'input[{i}]': rejected", param=f"input[{i}]")
                    return 400, body, {}
        dim = reply.dim or self.dim
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [x * self.scale for x in hash_embed(text, dim)],
            }
            for i, text in enumerate(inputs)
        ]
        if reply.reverse:
            data.reverse()
        response: dict[str, Any] = {
            "object": "list",
            "data": data,
            "model": payload.get("model"),
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }
        return reply.status, json.dumps(response).encode(), reply.headers


class _InFlight:
    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake

    def __enter__(self) -> None:
        with self.fake._lock:
            self.fake.in_flight += 1
            self.fake.max_in_flight = max(self.fake.max_in_flight, self.fake.in_flight)

    def __exit__(self, *exc: object) -> None:
        with self.fake._lock:
            self.fake.in_flight -= 1


def _error_body(
    message: str, kind: str = "invalid_request_error", param: str | None = None
) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": param}}).encode()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started ``FakeOpenAI`` (384-d), stopped after the test."""
    with FakeOpenAI() as server:
        yield server
