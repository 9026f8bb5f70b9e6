"""The one queue primitive every pipeline uses: domain rows are the queue.

* ``outcome``: what became of a claimed item (done, give back, retry, failed).
* ``lease``: the lease columns of a queue table, settled with an outcome and renewed (one
  heartbeat statement per process).
* ``notify``: one LISTEN connection per process, fanned out to idle workers.
* ``worker``: the run loop (claim → handle → throttle/idle wait), back-off, graceful stop.

A pipeline provides a :class:`Queue` (what it claims, how it handles it, which lease table);
where a row is claimed is always that queue's ``claim``, and where a lease ends is always
``LeaseTable.settle``.
"""

from shortlist.queue.lease import REQUEUE, LeaseKeeper, LeaseTable
from shortlist.queue.notify import Notifier
from shortlist.queue.outcome import DONE, GIVE_BACK, Done, Failed, GiveBack, Outcome, Retry
from shortlist.queue.worker import (
    Batch,
    Queue,
    QueueWorker,
    WorkerConfig,
    backoff_delay,
    each,
    run_batch,
    transaction_conflict,
    wait_any,
)

__all__ = [
    "DONE",
    "GIVE_BACK",
    "REQUEUE",
    "Batch",
    "Done",
    "Failed",
    "GiveBack",
    "LeaseKeeper",
    "LeaseTable",
    "Notifier",
    "Outcome",
    "Queue",
    "QueueWorker",
    "Retry",
    "WorkerConfig",
    "backoff_delay",
    "each",
    "run_batch",
    "transaction_conflict",
    "wait_any",
]
