-- The two alert queues (shortlist.alerts.matcher, shortlist.alerts.digests).

-- name: claim_listings
-- Claim listings to match (SKIP LOCKED + lease), oldest first; a lease that ran out (its matcher
-- died) is taken over.
WITH c AS (
    SELECT listing_id
      FROM alert_listing_queue
     WHERE locked_until IS NULL OR locked_until < now()
     ORDER BY queued_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE alert_listing_queue AS q
   SET locked_by = %(worker_id)s,
       locked_until = now() + make_interval(secs => %(lease)s),
       attempts = q.attempts + 1
  FROM c
 WHERE q.listing_id = c.listing_id
RETURNING q.listing_id, q.queued_at, q.attempts

-- name: listings_matched
-- Off the queue, unless its vector was written again meanwhile (queued_at moved: match again).
DELETE FROM alert_listing_queue AS q
 USING unnest(%(ids)s::uuid[], %(queued_at)s::timestamptz[]) AS m (id, queued_at)
 WHERE q.listing_id = m.id AND q.queued_at = m.queued_at

-- name: claim_due
-- Claim saved searches whose digest is due (SKIP LOCKED + lease); a lease that ran out (its
-- sender died, maybe mid-send: the digest goes again with its Message-ID) is taken over.
WITH c AS (
    SELECT id
      FROM saved_searches
     WHERE due_at <= now() AND status = 'active' AND email_confirmed
       AND (locked_until IS NULL OR locked_until < now())
     ORDER BY due_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE saved_searches AS s
   SET locked_by = %(worker_id)s, locked_until = now() + make_interval(secs => %(lease)s)
  FROM c
 WHERE s.id = c.id
RETURNING s.id, s.attempts

-- name: digest_outcome
-- The digest queue's outcome part (lease.sql, settle): a retry (the relay deferred) is due
-- again after its delay, counted; its reason kept.
due_at = CASE WHEN o.kind = 'retry' THEN now() + make_interval(secs => o.delay) ELSE t.due_at END,
attempts = CASE WHEN o.kind = 'retry' THEN t.attempts + 1 ELSE t.attempts END,
last_error = CASE WHEN o.kind = 'retry' THEN left(o.reason, 500) ELSE t.last_error END

-- name: search_to_send
-- The claimed search and its subscriber, locked while its digest is made or marked (the matcher
-- scheduling it waits: then it reads what this transaction left).
SELECT s.id, s.query, s.location, s.status, sub.id AS subscriber_id, sub.email,
       sub.status AS subscriber_status
  FROM saved_searches AS s
  JOIN alert_subscribers AS sub ON sub.id = s.subscriber_id
 WHERE s.id = %(id)s AND s.locked_by = %(worker_id)s
   FOR UPDATE OF s

-- name: pending_digest
SELECT id, message_id FROM alert_digests WHERE search_id = %(id)s AND status = 'pending'

-- name: drop_stale_matches
-- Queued matches whose listing closed, or was linked as another's duplicate, since they
-- matched: dropped, never sent.
UPDATE alert_matches AS m
   SET status = 'dropped'
  FROM job_listings AS l
 WHERE m.search_id = %(id)s AND m.status = 'queued' AND m.digest_id IS NULL
   AND l.id = m.listing_id AND (l.status <> 'open' OR l.duplicate_of IS NOT NULL)

-- name: pick_matches
-- The next digest's items: the best-scored queued matches, at most %(per_company)s of one
-- company and %(size)s in all (the rest wait for the next digest).
SELECT id
  FROM (SELECT m.id, m.score,
               row_number() OVER (PARTITION BY m.company_key ORDER BY m.score DESC, m.id) AS nth
          FROM alert_matches AS m
         WHERE m.search_id = %(id)s AND m.status = 'queued' AND m.digest_id IS NULL) AS r
 WHERE nth <= %(per_company)s
 ORDER BY score DESC, id
 LIMIT %(size)s

-- name: insert_digest
INSERT INTO alert_digests (search_id, message_id)
VALUES (%(id)s, %(message_id)s)
RETURNING id

-- name: assign_matches
UPDATE alert_matches SET digest_id = %(digest_id)s
 WHERE id = ANY (%(ids)s::bigint[]) AND status = 'queued'

-- name: digest_jobs
-- A digest's jobs, as fixed when it was made (a resend is the same message).
SELECT l.job_title, l.company_name, l.city_location, l.salary_min_ks, l.salary_max_ks,
       l.currency_code, l.detail_page_slug, m.score
  FROM alert_matches AS m
  JOIN job_listings AS l ON l.id = m.listing_id
 WHERE m.digest_id = %(digest_id)s AND m.status = 'queued'
 ORDER BY m.score DESC, m.id

-- name: nothing_due
-- A due search with nothing to send: not due any more (nothing is sent when empty).
UPDATE saved_searches SET due_at = NULL, attempts = 0 WHERE id = %(id)s

-- name: mark_sent
-- The relay took the digest: pending -> sent, its items with it; the search is due again at its
-- next slot when matches are still queued, else not.
WITH d AS (
    UPDATE alert_digests
       SET status = 'sent', sent_at = now(), attempts = attempts + 1
     WHERE id = %(digest_id)s AND status = 'pending'
    RETURNING id, search_id
), m AS (
    UPDATE alert_matches SET status = 'sent'
     WHERE digest_id IN (SELECT id FROM d) AND status = 'queued'
    RETURNING 1
)
UPDATE saved_searches AS s
   SET last_digest_at = now(), attempts = 0, last_error = NULL,
       due_at = CASE WHEN EXISTS (SELECT 1 FROM alert_matches AS q
                                   WHERE q.search_id = s.id AND q.status = 'queued'
                                     AND q.digest_id IS NULL)
                     THEN alert_next_slot(s.frequency, s.timezone, s.local_hour, now()) END
  FROM d
 WHERE s.id = d.search_id
RETURNING (SELECT count(*) FROM m) AS items

-- name: mark_failed
-- The relay refused the digest for good: pending -> failed, its items cancelled.
WITH d AS (
    UPDATE alert_digests SET status = 'failed', attempts = attempts + 1
     WHERE id = %(digest_id)s AND status = 'pending'
    RETURNING id
)
UPDATE alert_matches SET status = 'cancelled'
 WHERE digest_id IN (SELECT id FROM d) AND status = 'queued'

-- name: suppress_subscriber
-- A hard bounce (or a DSN saying so): the address gets nothing more; what it had queued is
-- cancelled and its searches are not due.
WITH sub AS (
    UPDATE alert_subscribers
       SET status = 'suppressed', suppressed_at = now(), suppressed_why = left(%(why)s, 500)
     WHERE id = %(subscriber_id)s AND status = 'active'
    RETURNING id
), s AS (
    UPDATE saved_searches SET due_at = NULL
     WHERE subscriber_id = %(subscriber_id)s
    RETURNING id
), d AS (
    UPDATE alert_digests SET status = 'failed'
     WHERE search_id IN (SELECT id FROM s) AND status = 'pending'
    RETURNING 1
)
UPDATE alert_matches SET status = 'cancelled'
 WHERE subscriber_id = %(subscriber_id)s AND status = 'queued'
