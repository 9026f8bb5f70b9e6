-- The audit log of contact-detail views and erasures (shortlist.audit, migration 0022).

-- name: record
INSERT INTO audit_log (token_id, token_name, action, search_id, candidate_ids, attempt_ids)
VALUES (%(token_id)s, %(token_name)s, %(action)s, %(search_id)s, %(candidate_ids)s::uuid[],
        %(attempt_ids)s::bigint[])

-- name: entries
-- Newest first; filtered by a person (any row naming them) and by a token (its id or name).
SELECT id, at, token_id, token_name, action, search_id, candidate_ids, attempt_ids
  FROM audit_log
 WHERE (%(candidate_id)s::uuid IS NULL OR candidate_ids @> ARRAY[%(candidate_id)s::uuid])
   AND (%(token_id)s::bigint IS NULL OR token_id = %(token_id)s::bigint)
   AND (%(token_name)s::text IS NULL OR token_name = %(token_name)s::text)
   AND (%(before)s::bigint IS NULL OR id < %(before)s::bigint)
 ORDER BY id DESC
 LIMIT %(limit)s
