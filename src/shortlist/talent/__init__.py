"""Candidate search with streaming backfill.

* ``service``: start a search (internal corpus at once, backfill queued), read, retry.
* ``tiers``: the discovery queue (strict / broad / serp), one page per claim.
* ``candidates``: the per-candidate queue: enrich → ingest → score → append, one commit each.
* ``workers`` / ``reaper``: what ``shortlist worker`` runs.
* ``repository`` + ``queries.sql``: every database operation.
"""
