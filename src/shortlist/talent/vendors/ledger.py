"""What provider calls a piece of work made, collected for the credit ledger.

The adapters know what a call cost (the vendor says so in its headers); only the caller knows
which search and recruiter it was for. A context variable joins the two without threading a
search id through every adapter: the caller opens :func:`collecting`, the adapters
:func:`record` into it, and the caller writes what was collected next to its own work.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from shortlist.talent.vendors.base import CallRecord

_CALLS: ContextVar[list[CallRecord] | None] = ContextVar("shortlist_provider_calls", default=None)


def record(call: CallRecord) -> None:
    """Add ``call`` to the collection open in this task, if any."""
    calls = _CALLS.get()
    if calls is not None:
        calls.append(call)


@contextmanager
def collecting() -> Iterator[list[CallRecord]]:
    """Collect the provider calls made inside the block (this task and what it awaits)."""
    calls: list[CallRecord] = []
    token = _CALLS.set(calls)
    try:
        yield calls
    finally:
        _CALLS.reset(token)
