"""A loopback webhook receiver, in a background thread, that checks every request as a
Standard Webhooks consumer does: with the spec's own library (``standardwebhooks.Webhook
.verify``: the signature over id, timestamp and body, the timestamp within five minutes).

A test scripts its answers (``answers``: ``(status, headers)`` popped per request; 200 when
empty), can hold an answer back (``delay`` seconds), and reads ``received``: every request's
headers, body and which of the receiver's secrets verified it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    verified_by: list[str]
    """The receiver's secrets that verify the request (empty: a forgery, to the receiver)."""
    status: int
    answered: bool = False
    """Whether the receiver has started to answer it (it waits ``delay`` before it does)."""

    @property
    def msg_id(self) -> str:
        return self.headers["webhook-id"]

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    secrets: list[str] = field(default_factory=list)
    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/hooks"

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                if len(body) < length:
                    return  # the sender went away mid-request: nothing was received
                headers = {k.lower(): v for k, v in self.headers.items()}
                verified = []
                for secret in receiver.secrets:
                    try:
                        Webhook(secret).verify(body, headers)
                    except WebhookVerificationError:
                        continue
                    verified.append(secret)
                with receiver._lock:
                    status, extra = receiver.answers.pop(0) if receiver.answers else (200, {})
                    record = Received(headers, body, verified, status)
                    receiver.received.append(record)
                if receiver.delay:
                    time.sleep(receiver.delay)
                record.answered = True
                try:
                    self.send_response(status)
                    for name, value in extra.items():
                        self.send_header(name, value)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender gave up waiting

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
