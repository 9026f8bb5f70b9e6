"""The NOTIFY channels the product's triggers and statements send on, each named once.

The migrations' trigger functions spell the same names (a migration is history and is not
rewritten); ``tests/test_db.py`` holds them to this list.
"""

from __future__ import annotations

EMBED = "shortlist_embed"
"""A corpus row became pending: wakes the embedding indexer."""
BACKFILL = "shortlist_backfill"
"""Tiers or candidate stubs were added or changed status, or a search resumed: wakes the
backfill workers."""
SEARCH_EVENTS = "shortlist_search_events"
"""A searches row or one of its candidate stubs changed; the payload is the search's id: wakes
that search's event streams only."""

MODELS = "shortlist_embedding_models"
"""The embedding_models table changed (a build registered, switched, cancelled): every
process reloads its embedding models (shortlist.embedding.spaces)."""

MAIL = "shortlist_mail"
"""An inbound e-mail was committed: wakes the mail parse queue (shortlist.listings.mail)."""

SOURCES = "shortlist_sources"
"""A job source was added or asked to crawl now: wakes the crawl workers."""

LISTINGS = "shortlist_listings"
"""A statement changed job listings as a search reads or shows them (migration 0025): every
process empties its cache of job search answers (shortlist.listings.result_cache)."""

WEBHOOKS = "shortlist_webhooks"
"""A webhook delivery was written (migration 0035): wakes the webhook sender."""

ALERTS = "shortlist_alerts"
"""A job listing's vector was written (migration 0034): wakes the alert matcher
(shortlist.alerts.matcher)."""

DIGESTS = "shortlist_alert_digests"
"""A saved search got matches (shortlist.alerts.reverse): wakes the digest sender."""

ALL = (
    EMBED,
    BACKFILL,
    SEARCH_EVENTS,
    MODELS,
    MAIL,
    SOURCES,
    LISTINGS,
    WEBHOOKS,
    ALERTS,
    DIGESTS,
)
