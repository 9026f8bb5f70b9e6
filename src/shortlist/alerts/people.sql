-- A recruiter's saved people searches (shortlist.alerts.people).

-- name: save_people_alert
-- The alert of a search, made once (a second save returns the same one, active again).
INSERT INTO people_alerts (search_id, org_id, user_id)
VALUES (%(search_id)s, %(org_id)s, %(user_id)s)
ON CONFLICT (search_id) DO UPDATE SET status = 'active'
RETURNING id, status, (xmax = 0) AS created

-- name: due_people_alerts
-- Active alerts with people embedded since they last looked, with their search's brief.
SELECT a.id, a.search_id, a.org_id, a.user_id, a.checked_at, a.created_at, s.query, s.role, s.skills,
       s.brief, s.query_embedding, s.embedding_model_id,
       (SELECT u.email::text FROM users AS u WHERE u.id = a.user_id) AS email
  FROM people_alerts AS a
  JOIN searches AS s ON s.id = a.search_id
 WHERE a.status = 'active'
   AND EXISTS (SELECT 1 FROM candidates AS c
                WHERE c.embedding_status = 'embedded' AND c.embedded_at > a.checked_at)
 ORDER BY a.checked_at
 LIMIT %(limit)s

-- name: new_people
-- The people an alert judges on a pass: in the corpus since it was saved (whoever was there,
-- the search itself saw), embedded since it last looked — less a margin, for an indexer's
-- transaction that began before that look and committed after it —, neither listed by its
-- search nor reported yet. All of them, wherever they would rank in the whole corpus.
SELECT c.id
  FROM candidates AS c
 WHERE c.created_at > %(since)s
   AND c.embedding_status = 'embedded'
   AND c.embedded_at > %(checked_at)s::timestamptz - make_interval(secs => %(margin)s)
   AND NOT EXISTS (SELECT 1 FROM search_results AS r
                    WHERE r.search_id = %(search_id)s AND r.candidate_id = c.id)
   AND NOT EXISTS (SELECT 1 FROM people_alert_matches AS m
                    WHERE m.alert_id = %(alert_id)s AND m.candidate_id = c.id)

-- name: record_people_matches
-- New people who fit, each once per alert; those the search itself listed are not new.
INSERT INTO people_alert_matches (alert_id, candidate_id, score)
SELECT %(alert_id)s, h.candidate_id, h.score
  FROM unnest(%(candidates)s::uuid[], %(scores)s::real[]) AS h (candidate_id, score)
 WHERE NOT EXISTS (SELECT 1 FROM search_results AS r
                    WHERE r.search_id = %(search_id)s AND r.candidate_id = h.candidate_id)
   -- new to the corpus since the alert was saved (whoever was there, the search itself saw)
   AND EXISTS (SELECT 1 FROM candidates AS c
                WHERE c.id = h.candidate_id AND c.created_at > %(since)s)
ON CONFLICT DO NOTHING
RETURNING candidate_id, score

-- name: checked
UPDATE people_alerts SET checked_at = %(checked_at)s WHERE id = %(id)s

-- name: database_now
SELECT now() AS now

-- name: people_of
-- How the recruiter is told of them: role and place, never contact details.
SELECT c.id, coalesce(nullif(c.role_title, ''), nullif(c.headline, ''), '(no title)') AS title,
       c.location
  FROM candidates AS c
 WHERE c.id = ANY (%(ids)s::uuid[])

-- name: mark_notified
-- The digest went: its people are notified, and the alert's tries start again from none.
WITH told AS (
    UPDATE people_alert_matches SET notified_at = now()
     WHERE alert_id = %(alert_id)s AND candidate_id = ANY (%(ids)s::uuid[])
)
UPDATE people_alerts SET notify_attempts = 0, notify_after = NULL WHERE id = %(alert_id)s

-- name: people_alerts_to_tell
-- Active alerts of a person with an address that have people not yet told of, unless a
-- deferral's back-off (or a refusal, until new people come) holds them.
SELECT a.id, a.search_id, a.notify_attempts, s.query, u.email::text AS email
  FROM people_alerts AS a
  JOIN searches AS s ON s.id = a.search_id
  JOIN users AS u ON u.id = a.user_id
 WHERE a.status = 'active'
   AND (a.notify_after IS NULL OR a.notify_after <= now())
   AND EXISTS (SELECT 1 FROM people_alert_matches AS m
                WHERE m.alert_id = a.id AND m.notified_at IS NULL)
 ORDER BY a.id
 LIMIT %(limit)s

-- name: unnotified_people
-- The people of an alert's next digest: not yet told of, best first.
SELECT m.candidate_id, m.score
  FROM people_alert_matches AS m
 WHERE m.alert_id = %(alert_id)s AND m.notified_at IS NULL
 ORDER BY m.score DESC, m.candidate_id
 LIMIT %(limit)s

-- name: tell_later
-- The relay deferred the digest (%(delay)s seconds of back-off), or refused it for good
-- (%(delay)s NULL: no try until new people come: tell_again).
UPDATE people_alerts
   SET notify_attempts = notify_attempts + 1,
       notify_after = CASE WHEN %(delay)s::float8 IS NULL THEN 'infinity'::timestamptz
                           ELSE now() + make_interval(secs => %(delay)s::float8) END
 WHERE id = %(alert_id)s

-- name: people_alert_of_search
-- A search's alert (the console's; under the organisation's row-level security).
SELECT a.id, a.status, a.created_at, a.checked_at,
       (SELECT count(*) FROM people_alert_matches AS m WHERE m.alert_id = a.id) AS matches
  FROM people_alerts AS a
 WHERE a.search_id = %(search_id)s

-- name: people_alert_matches_of
-- The people an alert reported, newest first: who they are and where, never contact details.
SELECT m.candidate_id, m.score, m.matched_at, m.notified_at, c.full_name,
       coalesce(nullif(c.role_title, ''), nullif(c.headline, '')) AS title, c.location
  FROM people_alert_matches AS m
  JOIN candidates AS c ON c.id = m.candidate_id
 WHERE m.alert_id = %(alert_id)s
 ORDER BY m.matched_at DESC, m.score DESC, m.candidate_id
 LIMIT %(limit)s

-- name: tell_again
-- New people came for an alert whose last digest was refused for good: try again.
UPDATE people_alerts SET notify_after = NULL
 WHERE id = %(alert_id)s AND notify_after = 'infinity'::timestamptz

-- name: all_people_alerts
-- Every saved people search, for `shortlist alerts list` (the operator's: addresses shown),
-- by its search's id (the id `POST /api/searches/{id}/alert` names): the recruiter told, the
-- people found and not yet told of (queued), and told of (sent).
SELECT a.search_id AS id, s.query, a.status, a.created_at, a.checked_at, a.notify_after,
       (SELECT u.email::text FROM users AS u WHERE u.id = a.user_id) AS email,
       (SELECT count(*) FROM people_alert_matches AS m
         WHERE m.alert_id = a.id AND m.notified_at IS NULL) AS queued,
       (SELECT count(*) FROM people_alert_matches AS m
         WHERE m.alert_id = a.id AND m.notified_at IS NOT NULL) AS sent
  FROM people_alerts AS a
  JOIN searches AS s ON s.id = a.search_id
 ORDER BY a.created_at, a.id
 LIMIT %(limit)s

-- name: people_alert_to_tell_now
-- `shortlist alerts test`: an active alert's digest now, whatever back-off holds it, if its
-- recruiter has an address (the shape of people_alerts_to_tell).
SELECT a.id, a.search_id, a.notify_attempts, s.query, u.email::text AS email
  FROM people_alerts AS a
  JOIN searches AS s ON s.id = a.search_id
  JOIN users AS u ON u.id = a.user_id
 WHERE a.search_id = %(search_id)s AND a.status = 'active'

-- name: disable_people_alert
-- `shortlist alerts disable`: the alert stops (its people not yet told of are never told:
-- only an active alert's digests go); answers how many were waiting. Saved again from the
-- console (save_people_alert), it is active again.
UPDATE people_alerts AS a SET status = 'disabled'
 WHERE a.search_id = %(search_id)s
RETURNING (SELECT count(*) FROM people_alert_matches AS m
            WHERE m.alert_id = a.id AND m.notified_at IS NULL) AS waiting
