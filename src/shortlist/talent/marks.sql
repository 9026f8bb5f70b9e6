-- A recruiter's shortlist (shortlist.talent.marks): marks on candidates, and the people a search
-- hid because their recruiter had already contacted or rejected them (migration 0011).
-- "Handled" = status contacted or rejected: such a person is skipped by later searches.

-- name: may_mark
-- A recruiter marks people their team's searches found (admins: anyone in the corpus).
SELECT (EXISTS (SELECT 1
                  FROM search_results AS r JOIN searches AS s ON s.id = r.search_id
                 WHERE r.candidate_id = %(candidate_id)s AND s.org_id = %(org_id)s)
        OR EXISTS (SELECT 1
                     FROM search_hidden AS h JOIN searches AS s ON s.id = h.search_id
                    WHERE h.candidate_id = %(candidate_id)s AND s.org_id = %(org_id)s)
        OR (%(is_admin)s AND EXISTS (SELECT 1 FROM candidates WHERE id = %(candidate_id)s)))
       AS allowed

-- name: upsert_mark
-- One mark per person marking and candidate in their organisation; the key used is noted.
INSERT INTO candidate_marks (recruiter_token_id, user_id, org_id, candidate_id, status, note)
VALUES (%(token_id)s, %(user_id)s, %(org_id)s, %(candidate_id)s, %(status)s, %(note)s)
ON CONFLICT (org_id, user_id, candidate_id)
DO UPDATE SET status = excluded.status, note = excluded.note, updated_at = now(),
              recruiter_token_id = excluded.recruiter_token_id
RETURNING candidate_id, status, note, created_at, updated_at

-- name: list_marks
-- The team's marks, newest first, each naming who made it (every organisation's for an
-- admin asking for all).
SELECT m.candidate_id, m.status, m.note, m.created_at, m.updated_at,
       coalesce(u.email::text, u.name) AS recruiter,
       c.full_name, c.headline, c.role_title, c.location, c.profile_url
  FROM candidate_marks AS m
  JOIN candidates AS c ON c.id = m.candidate_id
  JOIN users AS u ON u.id = m.user_id
 WHERE (%(everyone)s OR m.org_id = %(org_id)s)
   AND (%(status)s::text IS NULL OR m.status = %(status)s::text)
 ORDER BY m.updated_at DESC, m.candidate_id
 LIMIT %(limit)s

-- name: marks_of
-- The team's latest mark of each person.
SELECT DISTINCT ON (m.candidate_id) m.candidate_id, m.status, m.note, m.updated_at,
       coalesce(u.email::text, u.name) AS by
  FROM candidate_marks AS m JOIN users AS u ON u.id = m.user_id
 WHERE m.org_id = %(org_id)s AND m.candidate_id = ANY (%(ids)s::uuid[])
 ORDER BY m.candidate_id, m.updated_at DESC

-- name: handled_among
-- People someone of the team contacted or rejected.
SELECT DISTINCT candidate_id
  FROM candidate_marks
 WHERE org_id = %(org_id)s AND candidate_id = ANY (%(ids)s::uuid[])
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
  JOIN candidate_marks AS m ON m.org_id = s.org_id
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
  LEFT JOIN LATERAL (SELECT status, note, updated_at FROM candidate_marks AS m
                      WHERE m.candidate_id = h.candidate_id AND m.org_id = s.org_id
                      ORDER BY m.updated_at DESC LIMIT 1) AS m ON true
 WHERE h.search_id = %(search_id)s
 ORDER BY h.score DESC, h.candidate_id
 LIMIT %(limit)s

-- name: hidden_count
SELECT count(*) AS n FROM search_hidden WHERE search_id = %(search_id)s
