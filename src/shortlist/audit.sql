-- The audit log of contact-detail views and erasures (shortlist.audit, migration 0022).

-- name: record
-- The user and organisation acted for (a key's are filled in from it by migration 0029's
-- trigger when not given).
INSERT INTO audit_log (token_id, token_name, action, search_id, candidate_ids, attempt_ids,
                       user_id, org_id)
VALUES (%(token_id)s, %(token_name)s, %(action)s, %(search_id)s, %(candidate_ids)s::uuid[],
        %(attempt_ids)s::bigint[], %(user_id)s, %(org_id)s)

-- name: entries
-- Newest first, each naming its user and organisation; filtered by a person (any row naming
-- them) and by a token (its id or name).
SELECT a.id, a.at, a.token_id, a.token_name, a.action, a.search_id, a.candidate_ids,
       a.attempt_ids, a.user_id, a.org_id, coalesce(u.email::text, u.name) AS user_name,
       o.name AS org_name
  FROM audit_log AS a
  LEFT JOIN users AS u ON u.id = a.user_id
  LEFT JOIN organisations AS o ON o.id = a.org_id
 WHERE (%(candidate_id)s::uuid IS NULL OR a.candidate_ids @> ARRAY[%(candidate_id)s::uuid])
   AND (%(token_id)s::bigint IS NULL OR a.token_id = %(token_id)s::bigint)
   AND (%(token_name)s::text IS NULL OR a.token_name = %(token_name)s::text)
   AND (%(before)s::bigint IS NULL OR a.id < %(before)s::bigint)
 ORDER BY a.id DESC
 LIMIT %(limit)s
