-- `shortlist reindex` (shortlist.reindex). {table} is an embedded corpus table (job_listings or
-- candidates), filled in with psycopg.sql.Identifier; {embedded_hash} the active model space's
-- hash column (shortlist.embedding.spaces). Bulk transitions counted by rowcount:
-- RETURNING would ship every id of a million-row `reindex --all` to the client for nothing.

-- name: reindex_failed
-- `reindex --failed`: give permanently failed rows another try.
UPDATE {table}
   SET embedding_status = 'pending',
       embedding_error = NULL,
       embedding_attempts = 0
 WHERE embedding_status = 'failed'

-- name: reindex_all
-- `reindex --all` (e.g. after changing what text is embedded; a new model is a migration,
-- `shortlist embeddings migrate`): every row, and the hash is cleared so
-- the indexer cannot take the "text unchanged" shortcut and really calls the model again.
UPDATE {table}
   SET embedding_status = 'pending',
       {embedded_hash} = NULL,
       embedding_error = NULL,
       embedding_attempts = 0
 WHERE NOT (embedding_status = 'pending' AND {embedded_hash} IS NULL)

-- name: reindex_stale
-- Plain `reindex`: embedded rows whose vector was not computed from their current text (rows
-- written with a vector by other means, or whose edit did not move updated_at).
UPDATE {table}
   SET embedding_status = 'pending'
 WHERE embedding_status = 'embedded'
   AND {embedded_hash} IS DISTINCT FROM content_hash
