-- Webhooks (shortlist.webhooks). Migration 0035 has the tables. %(ahead)s is how many seconds
-- the sender's clock runs ahead of the database's (0 but in tests, which drive it).

-- name: insert_endpoint
-- A new endpoint of the organisation this transaction acts for (its secret encrypted:
-- shortlist.webhooks.secrets).
INSERT INTO webhook_endpoints (org_id, url, events, secret, created_by)
VALUES (%(org_id)s, %(url)s, %(events)s, %(secret)s, %(user_id)s)
RETURNING id

-- name: count_endpoints
SELECT count(*) AS n FROM webhook_endpoints WHERE org_id = %(org_id)s

-- name: list_endpoints
-- The endpoints this transaction may see, with their deliveries by status.
SELECT e.id, e.org_id, e.url, e.events, e.status::text AS status, e.disabled_reason,
       e.disabled_at, e.failing_since, e.paused_until, e.created_at,
       e.previous_expires_at AS rotation_ends_at,
       count(d.id) FILTER (WHERE d.status = 'pending') AS pending,
       count(d.id) FILTER (WHERE d.status = 'delivered') AS delivered,
       count(d.id) FILTER (WHERE d.status = 'failed') AS failed,
       count(d.id) FILTER (WHERE d.status = 'cancelled') AS cancelled
  FROM webhook_endpoints AS e
  LEFT JOIN webhook_deliveries AS d ON d.endpoint_id = e.id
 GROUP BY e.id
 ORDER BY e.id

-- name: delete_endpoint
-- Its deliveries go with it (a delivery in flight finds no row to record its outcome on).
DELETE FROM webhook_endpoints WHERE id = %(id)s RETURNING id

-- name: rotate_secret
-- A new secret; the current one signs too until previous_expires_at (Standard Webhooks: both
-- signatures are sent during a rotation). A rotation during a rotation drops the oldest.
UPDATE webhook_endpoints
   SET previous_secret = secret,
       previous_expires_at = now() + make_interval(secs => %(overlap)s),
       secret = %(secret)s
 WHERE id = %(id)s
RETURNING id

-- name: enqueue
-- One message (once per subject, when one is named) and a pending delivery of it to each
-- enabled endpoint of the organisation subscribed to its type; nothing when none is. A saved
-- search's alert.matched names the search (its end cancels what is pending).
WITH endpoints AS (
    SELECT id FROM webhook_endpoints
     WHERE org_id = %(org_id)s AND status = 'enabled' AND %(event_type)s = ANY (events)
), message AS (
    INSERT INTO webhook_messages (msg_id, org_id, event_type, subject, body, saved_search_id)
    SELECT %(msg_id)s, %(org_id)s, %(event_type)s, %(subject)s, %(body)s, %(saved_search_id)s
     WHERE EXISTS (SELECT 1 FROM endpoints)
    ON CONFLICT (org_id, event_type, subject) WHERE subject IS NOT NULL DO NOTHING
    RETURNING id
)
INSERT INTO webhook_deliveries (message_id, endpoint_id, org_id)
SELECT m.id, e.id, %(org_id)s FROM message AS m CROSS JOIN endpoints AS e
RETURNING id

-- name: publishable_listings
-- Of the listings just embedded, those that are now open, listed (nobody's duplicate) and of an
-- organisation with an endpoint subscribed to job.published: what job.published says of each.
SELECT l.id, l.org_id, l.job_title, l.company_name, l.city_location, l.work_mode,
       l.salary_min_ks, l.salary_max_ks, l.currency_code, l.detail_page_slug, l.source_url,
       l.created_at
  FROM job_listings AS l
 WHERE l.id = ANY (%(ids)s::uuid[])
   AND l.status = 'open'
   AND l.duplicate_of IS NULL
   AND l.org_id IS NOT NULL
   AND EXISTS (SELECT 1 FROM webhook_endpoints AS e
                WHERE e.org_id = l.org_id AND e.status = 'enabled'
                  AND 'job.published' = ANY (e.events))

-- name: job_alert_matches
-- Of the saved job searches that just got matches, those saved for an organisation's webhooks
-- (saved_searches.webhook_org_id) whose organisation has an endpoint subscribed to
-- alert.matched: their queued matches of these listings, with what alert.matched says of each
-- (enqueue's subject makes each once ever). A repost or near-duplicate wrote no match.
SELECT s.id AS search_id, s.webhook_org_id AS org_id, m.score, l.id, l.detail_page_slug,
       l.job_title, l.company_name, l.city_location, l.work_mode
  FROM saved_searches AS s
  JOIN alert_matches AS m ON m.search_id = s.id AND m.status = 'queued'
  JOIN job_listings AS l ON l.id = m.listing_id
 WHERE s.id = ANY (%(searches)s::uuid[])
   AND s.webhook_org_id IS NOT NULL
   AND m.listing_id = ANY (%(listings)s::uuid[])
   AND EXISTS (SELECT 1 FROM webhook_endpoints AS e
                WHERE e.org_id = s.webhook_org_id AND e.status = 'enabled'
                  AND 'alert.matched' = ANY (e.events))
 ORDER BY s.id, m.id

-- name: claim_due_deliveries
-- Pending deliveries due by the sender's clock, to enabled endpoints no Retry-After holds back,
-- minus those under a live lease: leased to this worker, with what sending one takes. This
-- claim owns expired leases: a killed sender's delivery is claimable once locked_until passes,
-- and is sent again as it was (the same webhook-id and body).
WITH due AS (
    SELECT d.id
      FROM webhook_deliveries AS d
      JOIN webhook_endpoints AS e ON e.id = d.endpoint_id
     WHERE d.status = 'pending'
       AND d.next_attempt_at <= now() + make_interval(secs => %(ahead)s)
       AND (d.locked_until IS NULL OR d.locked_until < now())
       AND e.status = 'enabled'
       AND (e.paused_until IS NULL
            OR e.paused_until <= now() + make_interval(secs => %(ahead)s))
     ORDER BY d.next_attempt_at, d.id
     LIMIT %(limit)s
       FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_deliveries AS d
   SET locked_by = %(worker_id)s,
       locked_until = now() + make_interval(secs => %(lease)s)
  FROM due, webhook_messages AS m, webhook_endpoints AS e
 WHERE d.id = due.id AND m.id = d.message_id AND e.id = d.endpoint_id
RETURNING d.id, d.attempts, d.endpoint_id, m.msg_id, m.body, e.url, e.secret,
          CASE WHEN e.previous_expires_at > now() + make_interval(secs => %(ahead)s)
               THEN e.previous_secret END AS previous_secret

-- name: delivered
-- A 2xx: pending -> delivered (after the sender's lease on it ended, in that transaction).
UPDATE webhook_deliveries
   SET status = 'delivered',
       attempts = attempts + 1,
       last_attempt_at = now() + make_interval(secs => %(ahead)s),
       delivered_at = now() + make_interval(secs => %(ahead)s),
       last_status = %(status)s,
       last_error = NULL
 WHERE id = %(id)s AND status = 'pending'
RETURNING endpoint_id

-- name: attempt_failed
-- Any other answer, or none: pending stays pending, due again after %(delay)s seconds; or
-- pending -> failed when %(give_up)s (the schedule ran out, or the endpoint is gone).
UPDATE webhook_deliveries
   SET status = CASE WHEN %(give_up)s THEN 'failed'::webhook_delivery_status
                     ELSE status END,
       attempts = attempts + 1,
       last_attempt_at = now() + make_interval(secs => %(ahead)s),
       next_attempt_at = now() + make_interval(secs => %(ahead)s + %(delay)s),
       last_status = %(status)s,
       last_error = %(error)s
 WHERE id = %(id)s AND status = 'pending'
RETURNING endpoint_id

-- name: endpoint_answered
-- The endpoint took a delivery: it is not failing any more.
UPDATE webhook_endpoints SET failing_since = NULL
 WHERE id = %(id)s AND failing_since IS NOT NULL

-- name: endpoint_failed
-- A failed attempt: the endpoint fails since its first failure after its last success; a
-- Retry-After holds every delivery to it back until then. Returns since when it fails.
UPDATE webhook_endpoints
   SET failing_since = coalesce(failing_since, now() + make_interval(secs => %(ahead)s)),
       paused_until = CASE WHEN %(pause)s::float8 IS NULL THEN paused_until
                           ELSE now() + make_interval(secs => %(ahead)s + %(pause)s::float8)
                      END
 WHERE id = %(id)s
RETURNING failing_since <= now() + make_interval(secs => %(ahead)s - %(disable_after)s)
          AS failing_too_long

-- name: disable_endpoint
-- enabled -> disabled, with the reason (a 410, or failing for too long); its pending deliveries
-- are cancelled in the same statement.
WITH endpoint AS (
    UPDATE webhook_endpoints
       SET status = 'disabled', disabled_at = now() + make_interval(secs => %(ahead)s),
           disabled_reason = %(reason)s, paused_until = NULL
     WHERE id = %(id)s AND status = 'enabled'
    RETURNING id
)
UPDATE webhook_deliveries AS d
   SET status = 'cancelled', last_error = %(reason)s
  FROM endpoint
 WHERE d.endpoint_id = endpoint.id AND d.status = 'pending'
RETURNING d.id

-- name: enable_endpoint
-- disabled -> enabled (an operator or the organisation took it back), or an enabled one's
-- failures forgotten: either way its failure window starts afresh (failing_since, and any
-- Retry-After pause, cleared). Deliveries cancelled by the disable stay cancelled.
UPDATE webhook_endpoints
   SET status = 'enabled', disabled_at = NULL, disabled_reason = NULL,
       failing_since = NULL, paused_until = NULL
 WHERE id = %(id)s
RETURNING id

-- name: endpoint_exists
SELECT status::text AS status FROM webhook_endpoints WHERE id = %(id)s

-- name: delivery_counts
-- Deliveries by status (status, metrics): every status, zeros included.
SELECT s.status::text AS status, count(d.id) AS n
  FROM unnest(enum_range(NULL::webhook_delivery_status)) AS s (status)
  LEFT JOIN webhook_deliveries AS d ON d.status = s.status
 GROUP BY s.status
 ORDER BY s.status

-- name: purge_settled_deliveries
-- Settled deliveries (delivered, failed, cancelled) made before the retention, oldest first,
-- a batch: deleted; answers how many, and their messages.
WITH old AS (
    SELECT id FROM webhook_deliveries
     WHERE status <> 'pending'
       AND created_at < now() - make_interval(secs => %(older_than)s)
     ORDER BY created_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM webhook_deliveries AS d USING old WHERE d.id = old.id
    RETURNING d.message_id
)
SELECT count(*) AS deleted, coalesce(array_agg(DISTINCT message_id), '{}') AS messages
  FROM gone

-- name: purge_spent_messages
-- Of these messages, those left with no delivery: deleted, unless they name a subject — then
-- the row stays with its body emptied, the record that the event was made (enqueue writes an
-- event of a subject once ever).
WITH spent AS (
    SELECT m.id, m.subject IS NOT NULL AS keep
      FROM webhook_messages AS m
     WHERE m.id = ANY (%(ids)s::bigint[])
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries AS d WHERE d.message_id = m.id)
), deleted AS (
    DELETE FROM webhook_messages AS m USING spent WHERE m.id = spent.id AND NOT spent.keep
    RETURNING m.id
)
UPDATE webhook_messages AS m SET body = ''
  FROM spent
 WHERE m.id = spent.id AND spent.keep AND m.body <> ''

-- name: webhook_secret_key
-- The key secrets are encrypted with when SHORTLIST_WEBHOOK_SECRET_KEYS is unset (0044).
SELECT key FROM webhook_secret_key

-- name: endpoint_secrets
-- Every endpoint's stored secrets, for the upkeep that encrypts them with the first key.
SELECT id, secret, previous_secret FROM webhook_endpoints ORDER BY id

-- name: seal_endpoint_secrets
-- The endpoint's secrets encrypted again, unless a rotation changed them meanwhile.
UPDATE webhook_endpoints
   SET secret = %(secret)s, previous_secret = %(previous_secret)s
 WHERE id = %(id)s AND secret = %(was)s
