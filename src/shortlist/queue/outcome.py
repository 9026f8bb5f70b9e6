"""What became of a claimed item. A queue's handler returns (or raises) one per item; the worker
records it on the lease table in one guarded statement (:meth:`LeaseTable.settle`), which is
the only place a lease ends. A handler that writes the item's domain rows (vectors, a crawl's
diff, a listing) ends the lease in that same transaction (:meth:`Batch.finish`), so the rows and
the lease commit together or not at all.

* :class:`Done`: the item's new state is written (or it needs none); only the lease ends.
* :class:`GiveBack`: claimable again at once, untouched (a claim that moved it queued ->
  running moves it back). What the worker does with every item a handler did not account for.
* :class:`Retry`: claimable again after ``after`` seconds, with the reason (tables whose
  outcome part records it: ``LeaseTable.records``).
* :class:`Failed`: the item itself cannot be done; recorded with the reason (same).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Done:
    kind: Literal["done"] = "done"


@dataclass(frozen=True)
class GiveBack:
    kind: Literal["give_back"] = "give_back"


@dataclass(frozen=True)
class Retry:
    after: float
    """Seconds from now."""
    reason: str
    kind: Literal["retry"] = "retry"


@dataclass(frozen=True)
class Failed:
    reason: str
    kind: Literal["failed"] = "failed"


Outcome = Done | GiveBack | Retry | Failed
Outcomes = Mapping[Hashable, Outcome]
"""Outcome per item key (the lease table's key column)."""

DONE = Done()
GIVE_BACK = GiveBack()
