"""The one queue primitive both pipelines use: domain rows are the queue.

* ``lease``: claim with ``FOR UPDATE SKIP LOCKED`` + lease columns, heartbeat, release.
* ``notify``: one LISTEN connection per process, fanned out to idle workers.
* ``worker``: the run loop (claim → handle → throttle/idle wait), graceful stop, backoff.
"""

from shortlist.queue.lease import LeaseTable
from shortlist.queue.notify import Notifier
from shortlist.queue.worker import GRACE_OVER, Queue, QueueWorker, WorkerConfig, backoff_delay

__all__ = [
    "GRACE_OVER",
    "LeaseTable",
    "Notifier",
    "Queue",
    "QueueWorker",
    "WorkerConfig",
    "backoff_delay",
]
