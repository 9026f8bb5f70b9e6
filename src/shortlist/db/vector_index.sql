-- Vector indexes on embedding columns (shortlist.db.vector_index). {table}, {index} and {expr}
-- are composed with psycopg.sql (identifiers; the expression is the module's own constant).

-- name: index_state
-- Whether the index exists and is usable: a CREATE INDEX CONCURRENTLY that was interrupted
-- leaves an invalid index behind, which writes still maintain but no query uses.
SELECT i.indisvalid AS valid
  FROM pg_index AS i
  JOIN pg_class AS c ON c.oid = i.indexrelid
 WHERE c.relname = %(index)s
   AND c.relnamespace = 'public'::regnamespace

-- name: physical_indexes
-- The indexes of these names: their access method (hnsw or ivfflat), validity and IVFFlat lists.
SELECT c.relname AS name,
       am.amname AS method,
       i.indisvalid AS valid,
       (SELECT o.option_value FROM pg_options_to_table(c.reloptions) AS o
         WHERE o.option_name = 'lists')::int AS lists
  FROM pg_index AS i
  JOIN pg_class AS c ON c.oid = i.indexrelid
  JOIN pg_am AS am ON am.oid = c.relam
 WHERE c.relname = ANY(%(names)s)
   AND c.relnamespace = 'public'::regnamespace
 ORDER BY c.relname

-- name: estimated_vectors
-- The planner's estimate of the rows with a vector in the column: rows × (1 − null_frac); no
-- row before the first ANALYZE of the table.
SELECT (c.reltuples * (1 - s.null_frac))::bigint AS n
  FROM pg_class AS c
  JOIN pg_stats AS s
    ON s.schemaname = 'public' AND s.tablename = c.relname AND s.attname = %(column)s
 WHERE c.oid = to_regclass(%(table)s)
   AND c.reltuples >= 0

-- name: count_vectors
SELECT count({column}) AS n FROM {table}

-- name: index_bytes
SELECT pg_relation_size(to_regclass(%(index)s)) AS n

-- name: set_build_memory
-- Session settings of the build; is_local = false, so they outlive the autocommit statements.
SELECT set_config('maintenance_work_mem', %(memory)s, false),
       set_config('max_parallel_maintenance_workers', %(workers)s, false)

-- name: reset_build_settings
RESET maintenance_work_mem;
RESET max_parallel_maintenance_workers

-- name: create_hnsw
CREATE INDEX CONCURRENTLY {index} ON {table}
    USING hnsw (({expr}) {opclass}) WITH (m = {m}, ef_construction = {ef_construction})

-- name: create_ivfflat
CREATE INDEX CONCURRENTLY {index} ON {table}
    USING ivfflat (({expr}) {opclass}) WITH (lists = {lists})

-- name: rename_index
-- A finished rebuild takes its final name (ShareUpdateExclusiveLock: reads and writes go on).
ALTER INDEX {index} RENAME TO {name}

-- name: drop_index
DROP INDEX CONCURRENTLY IF EXISTS {index}

-- name: active_space
-- The column and dimension of the active embedding model space (shortlist.embedding.spaces).
SELECT vector_column, dim FROM embedding_models WHERE state = 'active'
