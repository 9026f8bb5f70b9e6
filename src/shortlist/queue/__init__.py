"""The one queue primitive every pipeline uses: domain rows are the queue.

* ``lease``: the lease columns of a queue table, released and renewed (one heartbeat
  statement per process).
* ``notify``: one LISTEN connection per process, fanned out to idle workers.
* ``worker``: the run loop (claim → handle → throttle/idle wait), back-off, graceful stop.

A pipeline provides a :class:`Queue` (what it claims, how it handles it, which lease table);
where a row is claimed is always that queue's ``claim``.
"""

from shortlist.queue.lease import LeaseKeeper, LeaseTable
from shortlist.queue.notify import Notifier
from shortlist.queue.worker import Queue, QueueWorker, WorkerConfig, backoff_delay, wait_any

__all__ = [
    "LeaseKeeper",
    "LeaseTable",
    "Notifier",
    "Queue",
    "QueueWorker",
    "WorkerConfig",
    "backoff_delay",
    "wait_any",
]
