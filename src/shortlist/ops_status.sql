-- `shortlist status` / `shortlist reindex` (shortlist.ops_status). {table} is an embedded
-- corpus table (job_listings or candidates), filled in with psycopg.sql.Identifier.
-- The reindex statements are bulk transitions counted by rowcount; RETURNING would ship every
-- id of a million-row `reindex --all` to the client for nothing.

-- name: embedding_counts
-- Every status appears, with 0 when no row has it, so the report's shape never changes.
SELECT s.status::text AS status,
       count(t.id) AS n,
       count(t.id) FILTER (WHERE t.locked_until > now()) AS claimed,
       count(t.id) FILTER (WHERE s.status = 'embedded' AND t.updated_at > t.embedded_at)
           AS reembed_due
  FROM unnest(enum_range(NULL::embedding_status)) AS s (status)
  LEFT JOIN {table} AS t ON t.embedding_status = s.status
 GROUP BY s.status
 ORDER BY s.status

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

-- name: search_candidate_counts
SELECT s.status::text AS status, count(c.id) AS n
  FROM unnest(enum_range(NULL::candidate_status)) AS s (status)
  LEFT JOIN search_candidates AS c ON c.status = s.status
 GROUP BY s.status
 ORDER BY s.status

-- name: search_counts
SELECT s.status::text AS status, count(x.id) AS n
  FROM unnest(enum_range(NULL::search_status)) AS s (status)
  LEFT JOIN searches AS x ON x.status = s.status
 GROUP BY s.status
 ORDER BY s.status

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

-- name: reindex_failed
-- `reindex --failed`: give permanently failed rows another try.
UPDATE {table}
   SET embedding_status = 'pending',
       embedding_error = NULL,
       embedding_attempts = 0
 WHERE embedding_status = 'failed'

-- name: reindex_all
-- `reindex --all` (e.g. after changing the model): every row, and embedded_hash is cleared so
-- the indexer cannot take the "text unchanged" shortcut and really calls the model again.
UPDATE {table}
   SET embedding_status = 'pending',
       embedded_hash = NULL,
       embedding_error = NULL,
       embedding_attempts = 0
 WHERE NOT (embedding_status = 'pending' AND embedded_hash IS NULL)

-- name: reindex_stale
-- Plain `reindex`: embedded rows whose vector was not computed from their current text (rows
-- written with a vector by other means, or whose edit did not move updated_at).
UPDATE {table}
   SET embedding_status = 'pending'
 WHERE embedding_status = 'embedded'
   AND embedded_hash IS DISTINCT FROM content_hash
