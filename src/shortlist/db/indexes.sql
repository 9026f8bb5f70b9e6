-- Plain indexes built CONCURRENTLY by shortlist migrate after the numbered migrations (which
-- run in transactions, where CONCURRENTLY cannot): on a large table a plain CREATE INDEX would
-- block every write for the whole build. Each query's name is its index's name; shortlist.db.
-- migrate builds it when missing and rebuilds it when an interrupted build left it invalid.

-- name: job_listings_created_at_idx
-- The newest listings first: job search ranks only the newest matches of a broad query word
-- (search.sql, all_matching), read through this index instead of every match.
CREATE INDEX CONCURRENTLY job_listings_created_at_idx ON job_listings (created_at DESC)

-- name: job_listings_originals_idx
-- The listings a just-embedded one may repeat: open and nobody's duplicate, by company and city
-- as shortlist_name_key has them, oldest first (indexer/queries.sql, link_near_duplicates).
CREATE INDEX CONCURRENTLY job_listings_originals_idx ON job_listings
    (shortlist_name_key(company_name), shortlist_name_key(city_location), created_at, id)
    WHERE status = 'open' AND duplicate_of IS NULL

-- name: job_listings_duplicate_of_idx
-- A listing's duplicates: judged again when it is re-embedded, promoted when it closes
-- (migration 0024), unlinked when it is deleted (the foreign key).
CREATE INDEX CONCURRENTLY job_listings_duplicate_of_idx ON job_listings (duplicate_of)
    WHERE duplicate_of IS NOT NULL

-- name: inbound_mail_unerased_idx
-- Handled messages whose personal data is still kept, by arrival: the mail retention's scan
-- (privacy.sql, expired_mail).
CREATE INDEX CONCURRENTLY inbound_mail_unerased_idx ON inbound_mail (received_at)
    WHERE erased_at IS NULL AND status IN ('posted', 'rejected', 'failed')

-- name: saved_searches_webhook_idx
-- The saved job searches sent to an organisation's webhooks, few among many: the matcher's look
-- for them among a batch's matched searches (webhooks/queries.sql, job_alert_matches) reads
-- this small index, not the primary key once per matched search.
CREATE INDEX CONCURRENTLY saved_searches_webhook_idx ON saved_searches (id)
    WHERE webhook_org_id IS NOT NULL
