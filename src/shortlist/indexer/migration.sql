-- Embedding model migration (shortlist.indexer.migration): register a space, watch it fill,
-- switch to it in one transaction, drop what is no longer read. {table} is a corpus table;
-- {embedding} / {embedded_hash} the space's columns (shortlist.db.sql.compose).

-- name: register
-- The new space, its column names taken from its id. A second build while one runs is refused
-- by embedding_models_one_building.
WITH n AS (SELECT nextval(pg_get_serial_sequence('embedding_models', 'id')) AS id)
INSERT INTO embedding_models (id, kind, model, url, dim, state, vector_column, hash_column)
OVERRIDING SYSTEM VALUE
SELECT n.id, %(kind)s, %(model)s, %(url)s, %(dim)s, 'building',
       'embedding_m' || n.id, 'embedded_hash_m' || n.id
  FROM n
RETURNING id, kind, model, url, dim, state, vector_column, hash_column

-- name: set_lock_timeout
-- DDL on a corpus table waits for an ACCESS EXCLUSIVE lock, and every query behind it waits
-- too: give up quickly instead (and retry) rather than stall searches behind a long query.
SELECT set_config('lock_timeout', %(timeout)s, true)

-- name: add_columns
ALTER TABLE {table} ADD COLUMN {embedding} vector({dim}), ADD COLUMN {embedded_hash} bytea

-- name: create_todo_index
-- What the indexer's build claim reads (indexer/queries.sql missing_from_build): rows not yet in
-- the space. It shrinks as the build goes on. In the claim's order (claim_lane, claim_seq,
-- created_at, as {table}_claimable_idx), so a claim reads its batch off the front of the index
-- instead of sorting the whole to-do list: 17 ms instead of 370 ms a claim with 200,000 rows to
-- do (on created_at alone; a build started before this change keeps that index to its end).
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} (claim_lane, claim_seq, created_at)
 WHERE {embedded_hash} IS DISTINCT FROM content_hash

-- name: drop_todo_index
DROP INDEX CONCURRENTLY IF EXISTS {index}

-- name: drop_columns
ALTER TABLE {table} DROP COLUMN IF EXISTS {embedding}, DROP COLUMN IF EXISTS {embedded_hash}

-- name: space_by_state
SELECT id, kind, model, url, dim, state, vector_column, hash_column
  FROM embedding_models
 WHERE state = %(state)s
 ORDER BY id

-- name: same_as_active
SELECT EXISTS (SELECT 1 FROM embedding_models
                WHERE state = 'active' AND kind = %(kind)s AND model = %(model)s
                  AND dim = %(dim)s AND url IS NOT DISTINCT FROM %(url)s) AS same

-- name: coverage
-- The share of a corpus's rows the space holds a vector for, of their current text (or knows
-- the model rejects). Rows whose embedding failed for the active model are not waited for.
SELECT count(*) AS total,
       count(*) FILTER (WHERE {embedded_hash} IS NOT DISTINCT FROM content_hash
                           OR embedding_status = 'failed') AS covered
  FROM {table}

-- name: uncovered_exists
SELECT EXISTS (SELECT 1 FROM {table}
                WHERE {embedded_hash} IS DISTINCT FROM content_hash
                  AND embedding_status <> 'failed') AS any

-- name: lock_building
SELECT id FROM embedding_models WHERE id = %(id)s AND state = 'building' FOR UPDATE

-- name: fail_rejected
-- At the switch: rows the new model rejected (their hash recorded, no vector) have no vector in
-- the space that is now searched: failed, as the indexer would have marked them.
UPDATE {table}
   SET embedding_status = 'failed',
       embedding_error = %(error)s,
       embedding_failed_at = clock_timestamp()
 WHERE embedding_status = 'embedded'
   AND {embedding} IS NULL

-- name: retire_active
UPDATE embedding_models
   SET state = 'retired', retired_at = now()
 WHERE state = 'active'
RETURNING id

-- name: activate
UPDATE embedding_models
   SET state = 'active', activated_at = now()
 WHERE id = %(id)s AND state = 'building'
RETURNING id

-- name: add_vector_check
-- The corpus's rule "embedded means it has a vector", for the space now searched (the
-- original constraint is on the first space's column and goes with it). NOT VALID: checked for
-- new writes at once, for existing rows by validate_vector_check without blocking writes.
ALTER TABLE {table} ADD CONSTRAINT {constraint}
    CHECK (embedding_status <> 'embedded' OR ({embedding} IS NOT NULL AND embedded_at IS NOT NULL))
    NOT VALID

-- name: validate_vector_check
ALTER TABLE {table} VALIDATE CONSTRAINT {constraint}

-- name: cancel_building
UPDATE embedding_models
   SET state = 'cancelled', retired_at = now()
 WHERE state = 'building'
RETURNING id, kind, model, url, dim, state, vector_column, hash_column

-- name: droppable
-- Spaces nobody reads any more: cancelled ones, and retired ones once every process has had
-- time to reload (grace, seconds).
SELECT id, kind, model, url, dim, state, vector_column, hash_column
  FROM embedding_models
 WHERE dropped_at IS NULL
   AND (state = 'cancelled'
        OR (state = 'retired' AND retired_at < now() - make_interval(secs => %(grace)s)))
 ORDER BY id

-- name: mark_dropped
UPDATE embedding_models SET dropped_at = now() WHERE id = %(id)s AND dropped_at IS NULL

-- name: try_coordinator_lock
SELECT pg_try_advisory_lock(%(key)s) AS locked

-- name: coordinator_unlock
SELECT pg_advisory_unlock(%(key)s)

-- name: drop_vector_check
ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {constraint}

-- The saved queries of the alerts (alert_queries, migration 0047): each space has its query
-- vectors there too, filled by the coordinator with the space's model and switched with the
-- corpora, so that a saved search is matched in the space the listings' vectors are in.

-- name: add_query_column
ALTER TABLE alert_queries ADD COLUMN {embedding} vector({dim})

-- name: create_query_todo_index
-- The saved queries not yet in the space (what fill_saved_queries claims); empty once filled.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON alert_queries (id) WHERE {embedding} IS NULL

-- name: drop_query_column
ALTER TABLE alert_queries DROP COLUMN IF EXISTS {embedding}

-- name: queries_to_embed
-- A batch of saved queries without a vector in the space, their text as it was embedded.
SELECT id, normalised FROM alert_queries WHERE {embedding} IS NULL ORDER BY id LIMIT %(limit)s

-- name: set_query_vectors
-- Their vectors in the space (a query filled meanwhile, by a save, keeps its own).
UPDATE alert_queries AS q
   SET {embedding} = v.vector::vector
  FROM unnest(%(ids)s::bigint[], %(vectors)s::text[]) AS v (id, vector)
 WHERE q.id = v.id AND q.{embedding} IS NULL

-- name: queries_uncovered
SELECT EXISTS (SELECT 1 FROM alert_queries WHERE {embedding} IS NULL) AS any

-- name: query_coverage
SELECT count(*) AS total, count({embedding}) AS covered FROM alert_queries

-- name: lock_queries
-- At the switch: no saved query is added until it commits (one added meanwhile carries the
-- vectors its process knew of; a process that knows of the new space writes both).
LOCK TABLE alert_queries IN SHARE MODE

-- name: queries_nullable
-- At the switch: the retired space's column of the saved queries takes no more vectors (the
-- first space's was NOT NULL, migration 0034); it is dropped with the space's others.
ALTER TABLE alert_queries ALTER COLUMN {embedding} DROP NOT NULL
