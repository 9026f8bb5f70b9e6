"""Webhooks: an organisation's events POSTed to its endpoints, signed as Standard Webhooks 1.0
has it (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``), retried on the spec's
schedule for ~3 days.

* ``store``: endpoints (added, listed, rotated, deleted by the API) and :func:`enqueue`, which
  writes an event for every subscribed endpoint in the caller's transaction;
* ``sender``: the deliveries' queue on the one primitive (``shortlist.queue``), registered by
  the composition root (``bootstrap.webhook_workers``, worker kind ``webhooks``);
* ``signing``, ``schedule``: the signature and the retry schedule, as the spec writes them.

Events: ``job.published`` (the indexer, when a listing of the organisation becomes searchable)
and ``alert.matched`` (the alerts' matcher).
"""

from shortlist.webhooks.store import (
    ALERT_MATCHED,
    EVENT_TYPES,
    JOB_PUBLISHED,
    enqueue,
    publish_listings,
)

__all__ = ["ALERT_MATCHED", "EVENT_TYPES", "JOB_PUBLISHED", "enqueue", "publish_listings"]
