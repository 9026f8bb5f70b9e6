"""One LISTEN connection per process, fanned out to every idle worker that waits on a channel.

Workers never busy-poll: they sleep until the poll interval passes *or* a NOTIFY arrives.
The listener reconnects on its own (bounded backoff) when the database goes away; while it is
down, workers still wake on their poll interval, so nothing depends on notifications arriving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Iterable

import psycopg
from psycopg import sql

from shortlist.db import channels as product_channels
from shortlist.db.sql import compose

log = logging.getLogger(__name__)


class Notifier:
    def __init__(self, url: str, channels: Iterable[str] = product_channels.ALL) -> None:
        self._url = url
        self._events: dict[str, list[asyncio.Event]] = defaultdict(list)
        self._payload_listeners: dict[str, list[asyncio.Queue[str]]] = defaultdict(list)
        # Channels LISTENed to from the first connection on, so a subscriber of one of them
        # never waits for the listener to notice it (a new channel takes up to a second).
        self._static = frozenset(channels)
        self._task: asyncio.Task[None] | None = None
        self._restart = asyncio.Event()
        self.connected = asyncio.Event()
        self.disconnected = asyncio.Event()
        """Set while the listener is down (notifications sent meanwhile are lost)."""
        self.disconnected.set()

    def subscribe(self, channel: str) -> asyncio.Event:
        """An event set whenever ``channel`` is notified; the waiter clears it."""
        event = asyncio.Event()
        self._events[channel].append(event)
        if channel not in self._static:
            self._restart.set()
        return event

    def unsubscribe(self, channel: str, event: asyncio.Event) -> None:
        with contextlib.suppress(ValueError):
            self._events[channel].remove(event)

    def payloads(self, channel: str) -> asyncio.Queue[str]:
        """A queue receiving every payload sent on ``channel`` (for event streams)."""
        q: asyncio.Queue[str] = asyncio.Queue(maxsize=10_000)
        self._payload_listeners[channel].append(q)
        if channel not in self._static:
            self._restart.set()
        return q

    def drop_payloads(self, channel: str, q: asyncio.Queue[str]) -> None:
        with contextlib.suppress(ValueError):
            self._payload_listeners[channel].remove(q)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="shortlist-notifier")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _channels(self) -> set[str]:
        return set(self._static) | set(self._events) | set(self._payload_listeners)

    def _dispatch(self, channel: str, payload: str) -> None:
        for event in self._events.get(channel, ()):
            event.set()
        for q in self._payload_listeners.get(channel, ()):
            with contextlib.suppress(asyncio.QueueFull):
                q.put_nowait(payload)

    async def _run(self) -> None:
        delay = 0.5
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._url, autocommit=True
                ) as conn:
                    listening: set[str] = set()
                    delay = 0.5
                    while True:
                        for channel in self._channels() - listening:
                            await conn.execute(
                                compose("LISTEN {channel}", channel=sql.Identifier(channel))
                            )
                            listening.add(channel)
                        if not self.connected.is_set():
                            self.disconnected.clear()
                            self.connected.set()
                            # Anything may have happened while we were not listening.
                            for channel in self._channels():
                                self._dispatch(channel, "")
                        self._restart.clear()
                        # aclosing: leaving the loop early (a new channel to LISTEN on) must
                        # close the generator, which holds the connection's lock until closed.
                        async with contextlib.aclosing(conn.notifies(timeout=1.0)) as gen:
                            async for note in gen:
                                self._dispatch(note.channel, note.payload)
                                if self._restart.is_set():
                                    break
                        # a cheap liveness probe so a dead server is noticed within seconds
                        await conn.execute("SELECT 1")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconnect on any connection trouble
                self.connected.clear()
                self.disconnected.set()
                log.warning("notification listener lost its connection (%s); retrying", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
