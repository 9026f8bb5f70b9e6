"""A lean HTTP/1.1 load client for the HTTP benchmarks: keep-alive connections over asyncio
transports, responses parsed by ``httptools`` (the C parser uvicorn itself uses).

Why not httpx here: client, server and PostgreSQL share this 2-core machine, and httpx spent
~4.5 ms of CPU per request (psutil, 400 searches, 8 clients) — at a few hundred searches a
second that is a core taken from the server being measured, as wrk or oha would not take it.
This client spends tens of microseconds a request. It speaks only what the benchmarks send:
GET with a query string, responses with ``Content-Length`` or chunked bodies, keep-alive.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

import httptools


@dataclass
class Answer:
    status: int
    body: bytes


@dataclass
class _Protocol(asyncio.Protocol):
    transport: asyncio.Transport | None = None
    parser: httptools.HttpResponseParser = field(init=False)
    waiter: asyncio.Future[Answer] | None = None
    chunks: list[bytes] = field(default_factory=list)
    closed: asyncio.Future[None] = field(init=False)
    keep_alive: bool = True

    def __post_init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.closed = asyncio.get_running_loop().create_future()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionError(f"bad HTTP response: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("the server closed the connection"))
        if not self.closed.done():
            self.closed.set_result(None)

    # httptools callbacks
    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(Answer(self.parser.get_status_code(), b"".join(self.chunks)))
        self.chunks = []

    def _fail(self, exc: BaseException) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)


class LeanClient:
    """``size`` keep-alive connections to one ``http://host:port``; each :meth:`get` takes a
    free one (one request in flight per connection, as a browser's HTTP/1.1 does)."""

    def __init__(self, base: str, size: int, timeout: float = 60) -> None:
        parts = urlsplit(base)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"need http://host:port, not {base!r}")
        self.host, self.port, self.size, self.timeout = parts.hostname, parts.port, size, timeout
        self._free: asyncio.Queue[_Protocol] = asyncio.Queue()
        self._all: list[_Protocol] = []

    async def _connect(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(_Protocol, self.host, self.port)
        self._all.append(protocol)
        return protocol

    async def __aenter__(self) -> LeanClient:
        for _ in range(self.size):
            self._free.put_nowait(await self._connect())
        return self

    async def __aexit__(self, *exc: object) -> None:
        for protocol in self._all:
            if protocol.transport is not None:
                protocol.transport.close()
        for protocol in self._all:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(protocol.closed, 5)

    async def get(self, path: str, params: Mapping[str, object] | None = None) -> Answer:
        target = f"{path}?{urlencode(params)}" if params else path
        request = (
            f"GET {target} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Accept: application/json\r\n\r\n"
        ).encode()
        protocol = await self._free.get()
        if protocol.transport is None or protocol.transport.is_closing():
            protocol = await self._connect()
        try:
            protocol.waiter = asyncio.get_running_loop().create_future()
            assert protocol.transport is not None
            protocol.transport.write(request)
            answer = await asyncio.wait_for(protocol.waiter, self.timeout)
        except BaseException:
            if protocol.transport is not None:
                protocol.transport.close()
            self._free.put_nowait(await self._connect())
            raise
        if protocol.keep_alive:
            self._free.put_nowait(protocol)
        else:
            assert protocol.transport is not None
            protocol.transport.close()
            self._free.put_nowait(await self._connect())
        return answer
