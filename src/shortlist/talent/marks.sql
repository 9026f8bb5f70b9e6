-- A recruiter's shortlist (shortlist.talent.marks): marks on candidates, and the people a search
-- hid because their recruiter had already contacted or rejected them (migration 0011).
-- "Handled" = status contacted or rejected: such a person is skipped by later searches.

-- name: may_mark
-- A recruiter marks people one of their own searches found (admins: anyone in the corpus).
SELECT (EXISTS (SELECT 1
                  FROM search_results AS r JOIN searches AS s ON s.id = r.search_id
                 WHERE r.candidate_id = %(candidate_id)s AND s.owner_token_id = %(token_id)s)
        OR EXISTS (SELECT 1
                     FROM search_hidden AS h JOIN searches AS s ON s.id = h.search_id
                    WHERE h.candidate_id = %(candidate_id)s AND s.owner_token_id = %(token_id)s)
        OR (%(is_admin)s AND EXISTS (SELECT 1 FROM candidates WHERE id = %(candidate_id)s)))
       AS allowed

-- name: upsert_mark
INSERT INTO candidate_marks (recruiter_token_id, candidate_id, status, note)
VALUES (%(token_id)s, %(candidate_id)s, %(status)s, %(note)s)
ON CONFLICT (recruiter_token_id, candidate_id)
DO UPDATE SET status = excluded.status, note = excluded.note, updated_at = now()
RETURNING candidate_id, status, note, created_at, updated_at

-- name: list_marks
-- The caller's marks, newest first (every recruiter's for an admin asking for all).
SELECT m.candidate_id, m.status, m.note, m.created_at, m.updated_at, t.name AS recruiter,
       c.full_name, c.headline, c.role_title, c.location, c.profile_url
  FROM candidate_marks AS m
  JOIN candidates AS c ON c.id = m.candidate_id
  JOIN api_tokens AS t ON t.id = m.recruiter_token_id
 WHERE (%(everyone)s OR m.recruiter_token_id = %(token_id)s)
   AND (%(status)s::text IS NULL OR m.status = %(status)s::text)
 ORDER BY m.updated_at DESC, m.candidate_id
 LIMIT %(limit)s

-- name: marks_of
SELECT candidate_id, status, note, updated_at
  FROM candidate_marks
 WHERE recruiter_token_id = %(token_id)s AND candidate_id = ANY (%(ids)s::uuid[])

-- name: handled_among
SELECT candidate_id
  FROM candidate_marks
 WHERE recruiter_token_id = %(token_id)s AND candidate_id = ANY (%(ids)s::uuid[])
   AND status IN ('contacted', 'rejected')

-- name: record_hidden
INSERT INTO search_hidden (search_id, candidate_id, score)
SELECT %(search_id)s, h.candidate_id, h.score
  FROM unnest(%(ids)s::uuid[], %(scores)s::real[]) AS h (candidate_id, score)
ON CONFLICT DO NOTHING

-- name: record_hidden_discovered
-- People a discovery page returned whom the search's recruiter already handled: the backfill
-- skips them (known_external_ids), and the page counts them here, scored against the query.
INSERT INTO search_hidden (search_id, candidate_id, score)
SELECT s.id, c.id, (1 - (c.{embedding} <=> s.query_embedding) / 2)::real
  FROM searches AS s
  JOIN candidate_marks AS m ON m.recruiter_token_id = s.owner_token_id
  JOIN candidates AS c ON c.id = m.candidate_id
 WHERE s.id = %(search_id)s
   AND m.status IN ('contacted', 'rejected')
   AND c.external_id = ANY (%(external_ids)s::text[])
   AND c.{embedding} IS NOT NULL
   -- The query vector is of the active model ({embedding}'s) unless the model switched
   -- since the search started: then nobody is counted here.
   AND s.embedding_model_id = %(model_id)s
ON CONFLICT DO NOTHING

-- name: hidden_of_search
SELECT h.candidate_id, h.score, c.full_name, c.headline, c.role_title, c.location, c.skills,
       c.years_experience, c.email, c.profile_url, m.status AS mark_status, m.note AS mark_note,
       m.updated_at
  FROM search_hidden AS h
  JOIN searches AS s ON s.id = h.search_id
  JOIN candidates AS c ON c.id = h.candidate_id
  LEFT JOIN candidate_marks AS m
         ON m.candidate_id = h.candidate_id AND m.recruiter_token_id = s.owner_token_id
 WHERE h.search_id = %(search_id)s
 ORDER BY h.score DESC, h.candidate_id
 LIMIT %(limit)s

-- name: hidden_count
SELECT count(*) AS n FROM search_hidden WHERE search_id = %(search_id)s
