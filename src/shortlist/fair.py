"""Slots shared fairly between keys (companies): the parser processes of the e-mail intake
(``listings.mail.sandbox``) and the intake's share of the database pool (``db.pool.PoolShare``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from collections.abc import AsyncIterator


class FairSlots:
    """``slots`` things (parser processes, connections) shared fairly between keys
    (companies): each key's callers queue on their own, a freed slot goes to the next key in
    turn (round robin), and a key holds at most all slots but one (when there are several),
    so one company's slow work delays another's by one piece of work at most, never by its
    number. ``asyncio.Semaphore`` serves waiters in arrival order: ten slow posts of one
    company would go before anyone else's."""

    def __init__(self, slots: int) -> None:
        self.free = slots
        self.cap = max(1, slots - 1)
        self.held: dict[str, int] = {}
        self.waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    def _may(self, key: str) -> bool:
        return self.held.get(key, 0) < self.cap

    async def acquire(self, key: str) -> None:
        if self.free > 0 and key not in self.waiting and self._may(key):
            self.free -= 1
            self.held[key] = self.held.get(key, 0) + 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(key, deque()).append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(key)  # handed a process just as it was cancelled: pass it on
            else:
                queue = self.waiting.get(key)
                if queue is not None and waiter in queue:
                    queue.remove(waiter)
                    if not queue:
                        del self.waiting[key]
            raise

    def release(self, key: str) -> None:
        self.held[key] -= 1
        if not self.held[key]:
            del self.held[key]
        self.free += 1
        if key in self.waiting:  # it just had its turn: the others go first
            self.waiting.move_to_end(key)
        self._hand_on()

    def _hand_on(self) -> None:
        """Free processes to waiting companies, one each in turn, while any may take one."""
        progressed = True
        while progressed and self.free > 0:
            progressed = False
            for key in list(self.waiting):
                if self.free <= 0:
                    return
                if not self._may(key):
                    continue
                queue = self.waiting[key]
                waiter = queue.popleft()
                # This company's turn is taken: it goes to the back of the line.
                if queue:
                    self.waiting.move_to_end(key)
                else:
                    del self.waiting[key]
                progressed = True
                if waiter.cancelled():
                    continue
                self.free -= 1
                self.held[key] = self.held.get(key, 0) + 1
                waiter.set_result(None)

    @contextlib.asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        await self.acquire(key)
        try:
            yield
        finally:
            self.release(key)
