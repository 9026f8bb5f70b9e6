"""Saved searches that alert (issue 42): a job seeker's saved job search, e-mailed as digests
of the new listings that match it.

* ``store``: saved searches and their subscribers — double opt-in (the consent time kept), the
  one-click unsubscribe, an operator's disable; ``tokens``: the links' HMAC tokens and the VERP
  bounce address.
* ``reverse``: reverse search — which saved searches one listing satisfies (keyword anchors in
  a GIN index, the queries' vectors in an HNSW index, the filters as columns, every candidate
  re-checked exactly on job search's own score).
* ``matcher``: the match queue (a queue on :mod:`shortlist.queue`): each embedded listing
  matched once, the matches written in the transaction that takes it off the queue.
* ``digests``: the digest queue: due saved searches' matches sent as one e-mail (at most 10
  jobs, 2 per company), crash-safe (a digest's items and Message-ID are fixed before it goes);
  ``mail``: the message and its delivery through the relay; ``bounces``: DSNs that come back to
  the VERP address on the e-mail intake.
"""
