-- `shortlist status`, the web /status page and /metrics (shortlist.status): read-only.

-- name: queue_depths
-- Rows per queue table and status, every status included (0 when no row has it), so the
-- report's and the metrics' shape never changes. claimed (a live indexer lease) and reembed_due
-- (embedded, but edited since) only apply to the embedded corpora.
SELECT 'job_listings' AS queue, s.status::text AS status,
       count(t.id) AS n,
       count(t.id) FILTER (WHERE t.locked_until > now()) AS claimed,
       count(t.id) FILTER (WHERE s.status = 'embedded' AND t.updated_at > t.embedded_at)
           AS reembed_due
  FROM unnest(enum_range(NULL::embedding_status)) AS s (status)
  LEFT JOIN job_listings AS t ON t.embedding_status = s.status
 GROUP BY s.status
UNION ALL
SELECT 'candidates', s.status::text,
       count(t.id),
       count(t.id) FILTER (WHERE t.locked_until > now()),
       count(t.id) FILTER (WHERE s.status = 'embedded' AND t.updated_at > t.embedded_at)
  FROM unnest(enum_range(NULL::embedding_status)) AS s (status)
  LEFT JOIN candidates AS t ON t.embedding_status = s.status
 GROUP BY s.status
UNION ALL
SELECT 'search_candidates', s.status::text, count(c.id), 0, 0
  FROM unnest(enum_range(NULL::candidate_status)) AS s (status)
  LEFT JOIN search_candidates AS c ON c.status = s.status
 GROUP BY s.status
UNION ALL
SELECT 'searches', s.status::text, count(x.id), 0, 0
  FROM unnest(enum_range(NULL::search_status)) AS s (status)
  LEFT JOIN searches AS x ON x.status = s.status
 GROUP BY s.status
UNION ALL
SELECT 'webhook_deliveries', s.status::text,
       count(d.id),
       count(d.id) FILTER (WHERE d.locked_until > now()),
       0
  FROM unnest(enum_range(NULL::webhook_delivery_status)) AS s (status)
  LEFT JOIN webhook_deliveries AS d ON d.status = s.status
 GROUP BY s.status
UNION ALL
-- Alerts (shortlist.alerts): listings waiting to be matched, matches and digests by status, and
-- saved searches whose digest is due.
SELECT 'alert_listings', 'pending', count(*), count(*) FILTER (WHERE locked_until > now()), 0
  FROM alert_listing_queue
UNION ALL
SELECT 'alert_matches', s.status, count(m.id), 0, 0
  FROM unnest(ARRAY['queued', 'sent', 'dropped', 'cancelled']) AS s (status)
  LEFT JOIN alert_matches AS m ON m.status = s.status
 GROUP BY s.status
UNION ALL
SELECT 'alert_digests', s.status, count(d.id), 0, 0
  FROM unnest(ARRAY['pending', 'sent', 'cancelled', 'failed']) AS s (status)
  LEFT JOIN alert_digests AS d ON d.status = s.status
 GROUP BY s.status
UNION ALL
SELECT 'alert_digests', 'due', count(*), count(*) FILTER (WHERE locked_until > now()), 0
  FROM saved_searches
 WHERE due_at <= now() AND status = 'active'
 ORDER BY queue, status

-- name: listing_failures
SELECT id::text AS id,
       job_title || ' at ' || company_name AS label,
       embedding_error AS error,
       embedding_attempts AS attempts,
       embedding_failed_at AS failed_at
  FROM job_listings
 WHERE embedding_status = 'failed'
 ORDER BY embedding_failed_at DESC NULLS LAST, id
 LIMIT %(limit)s

-- name: candidate_failures
-- Labelled by role, not by name or e-mail: the id is what an operator needs to act on it.
SELECT id::text AS id,
       coalesce(nullif(role_title, ''), nullif(headline, ''), '(no title)') AS label,
       embedding_error AS error,
       embedding_attempts AS attempts,
       embedding_failed_at AS failed_at
  FROM candidates
 WHERE embedding_status = 'failed'
 ORDER BY embedding_failed_at DESC NULLS LAST, id
 LIMIT %(limit)s

-- name: running_searches
-- Never the owner or any contact detail: the query text is all an operator sees.
SELECT id::text AS id,
       query,
       result_count,
       target_count,
       created_at,
       last_progress_at
  FROM searches
 WHERE status = 'running'
 ORDER BY created_at
 LIMIT %(limit)s

-- name: indexer_pauses
-- Corpora whose embedding queue the breaker paused (shortlist.indexer.breaker).
SELECT corpus, reason, paused_at FROM indexer_pauses ORDER BY corpus

-- name: job_sources
-- Every job source (shortlist.listings.sources): its last crawl, open listings and error.
SELECT s.id, s.spec, s.status, s.last_crawl_at, s.last_success_at, s.next_crawl_at,
       s.last_error, s.last_outcome,
       (SELECT count(*) FROM job_listings AS l
         WHERE l.source_id = s.id AND l.status = 'open') AS listings_open
  FROM job_sources AS s
 ORDER BY s.id

-- name: webhook_endpoints
-- Webhook endpoints by state (shortlist.webhooks): enabled, of which failing (every attempt
-- since its first failure failed), and disabled (a 410, or failing for 5 days).
SELECT count(*) FILTER (WHERE status = 'enabled') AS enabled,
       count(*) FILTER (WHERE status = 'enabled' AND failing_since IS NOT NULL) AS failing,
       count(*) FILTER (WHERE status = 'disabled') AS disabled
  FROM webhook_endpoints
