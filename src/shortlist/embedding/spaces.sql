-- Embedding model spaces (shortlist.embedding.spaces, migration 0013).

-- name: spaces_in_use
-- The active model and the one being built, if any: what every process embeds with.
SELECT id, kind, model, url, dim, state, vector_column, hash_column
  FROM embedding_models
 WHERE state IN ('active', 'building')
 ORDER BY id

-- name: adopt_first
-- The model of the vectors stored before models were data: named by the settings of the first
-- process that starts (only while unnamed, so concurrent starts agree on one).
UPDATE embedding_models
   SET kind = %(kind)s, model = %(model)s
 WHERE state = 'active' AND kind IS NULL
RETURNING id

-- name: stored_vectors
-- Whether either corpus holds a vector in the active space (a fresh database holds none).
SELECT EXISTS (SELECT 1 FROM job_listings WHERE embedding IS NOT NULL)
       OR EXISTS (SELECT 1 FROM candidates WHERE embedding IS NOT NULL) AS any

-- name: retype_first
-- A fresh database whose configured model is not 384-dimensional: the first space takes the
-- model's dimension while no vector is stored (the tables are empty or all pending, so the
-- rewrite is instant). The HNSW indexes are built again by the migrator for the new dimension.
DROP INDEX IF EXISTS job_listings_embedding_halfvec_idx;
DROP INDEX IF EXISTS candidates_embedding_halfvec_idx;
ALTER TABLE job_listings ALTER COLUMN embedding TYPE vector({dim});
ALTER TABLE candidates ALTER COLUMN embedding TYPE vector({dim});
UPDATE embedding_models SET dim = {dim} WHERE state = 'active' AND vector_column = 'embedding'
