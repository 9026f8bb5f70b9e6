-- Reverse search (shortlist.alerts.reverse): which saved searches new job listings satisfy.
-- {embedding} is the active model space's vector column, of job_listings and of alert_queries
-- alike (shortlist.indexer.migration fills and switches both).

-- name: listing_vectors
-- The batch's listings' vectors and titles' trigrams (1-based positions in %(ids)s), for the
-- candidates found in the matcher's memory (shortlist.alerts.query_vectors).
SELECT b.ord, j.{embedding} AS vector, show_trgm(j.job_title) AS trigrams
  FROM unnest(%(ids)s::uuid[]) WITH ORDINALITY AS b (id, ord)
  JOIN job_listings AS j ON j.id = b.id
 WHERE j.{embedding} IS NOT NULL

-- name: insert_matches
-- Every saved search each listing of a batch satisfies, written once, in one statement.
-- Candidates, per listing: the pairs (%(near_ords)s: the listing's position in %(ids)s,
-- %(near_queries)s: the query) the matcher found in its memory (shortlist.alerts.query_vectors)
-- — the meaning path's, queries whose vectors lie within the radius, and the keyword path's,
-- queries whose title words' trigrams the title shares enough of —, and every query written
-- since the snapshot that memory was read by (%(seen)s: one saved between that read and this
-- statement). Each is scored exactly as job search scores (shortlist.relevance.JOB_SCORE over
-- the cosine of the float4 vectors and the similarity of the query's title words and the
-- title both ways, as search.sql's evidence computes them); only a query at or above
-- %(floor)s has its saved searches read (by query, through their index), each active one
-- held to its own threshold and filters (job search's: the place a substring of the listing's, the top salary figure at
-- least the floor — in the floor's currency when it names one, converted at exchange_rates as
-- filter_salary_converted converts it; a listing paid in a currency without a rate then passes
-- no floor —, the work mode, a remote job open to the country, visa sponsorship offered). (subscriber, job) is unique: a job already matched for that
-- subscriber, by another of their searches or as another listing of it (the first in the
-- batch's order), inserts nothing. Only an open listing that repeats no other is matched (a
-- near-duplicate or repost the indexer linked, duplicate_of, never alerts: its original did or
-- will). Answers the saved searches that got a match (in order) and the number of matches
-- written.
WITH l AS MATERIALIZED (
    SELECT j.id, b.ord, j.{embedding} AS vector, j.job_title,
           lower(j.city_location) AS place, j.work_mode,
           coalesce(j.salary_max_ks, j.salary_min_ks) AS top_ks,
           (SELECT r.per_eur FROM exchange_rates AS r WHERE r.currency_code = j.currency_code)
               AS per_eur,
           j.remote_countries, j.visa_sponsorship,
           shortlist_name_key(j.company_name) AS company_key,
           shortlist_name_key(j.company_name) || '|' || shortlist_name_key(j.job_title) || '|'
               || shortlist_name_key(j.city_location) AS job_key
      FROM unnest(%(ids)s::uuid[]) WITH ORDINALITY AS b (id, ord)
      JOIN job_listings AS j ON j.id = b.id
     WHERE j.status = 'open' AND j.duplicate_of IS NULL AND j.{embedding} IS NOT NULL
),
candidates AS (
    SELECT p.ord, p.query_id
      FROM unnest(%(near_ords)s::bigint[], %(near_queries)s::bigint[]) AS p (ord, query_id)
    UNION
    SELECT l.ord, q.id
      FROM l, alert_queries AS q
     WHERE q.written_by >= pg_snapshot_xmin(%(seen)s::pg_snapshot)
       AND NOT pg_visible_in_snapshot(q.written_by, %(seen)s::pg_snapshot)
),
scored AS MATERIALIZED (
    -- Each candidate's vector and words looked up by its key (a join hashed every saved
    -- query); scored once, here.
    SELECT c.ord, c.query_id,
           1.0 / (1.0 + exp(-(%(intercept)s::float8
                              + %(w_cosine)s::float8
                                * (1.0 - ((SELECT q.{embedding} FROM alert_queries AS q
                                            WHERE q.id = c.query_id) <=> l.vector))
                              + %(w_similarity)s::float8
                                * coalesce((SELECT word_similarity(w.title_words,
                                                                   l.job_title)::float8
                                                   * (1 + word_similarity(l.job_title,
                                                                          w.title_words)::float8)
                                                   / 2
                                              FROM alert_query_words AS w
                                             WHERE w.query_id = c.query_id
                                               AND w.title_words <> ''), 0)))) AS score
      FROM candidates AS c
      JOIN l ON l.ord = c.ord
),
inserted AS (
    INSERT INTO alert_matches (search_id, subscriber_id, listing_id, job_key, company_key,
                               score)
    SELECT s.id, s.subscriber_id, l.id, l.job_key, l.company_key, sc.score
      FROM scored AS sc
      JOIN l ON l.ord = sc.ord
      JOIN saved_searches AS s ON s.query_id = sc.query_id AND s.status = 'active'
     WHERE sc.score >= %(floor)s AND sc.score >= s.min_score
       AND (s.location IS NULL OR strpos(l.place, s.location) > 0)
       AND (s.salary_min IS NULL
            OR l.top_ks >= s.salary_min * CASE WHEN s.salary_currency IS NULL THEN 1
                                               ELSE l.per_eur / (SELECT r.per_eur
                                                                   FROM exchange_rates AS r
                                                                  WHERE r.currency_code
                                                                        = s.salary_currency)
                                          END)
       AND (s.work_mode IS NULL OR l.work_mode = s.work_mode)
       AND (s.remote_country IS NULL
            OR shortlist_remote_for(l.work_mode, l.remote_countries, s.remote_country))
       AND (s.visa IS NULL OR l.visa_sponsorship = s.visa)
     -- One order for every batch (the key's, then the batch's): two batches in flight that
     -- insert the same (subscriber, job) wait on each other in that order and cannot deadlock.
     ORDER BY s.subscriber_id, l.job_key, l.ord
    ON CONFLICT (subscriber_id, job_key) DO NOTHING
    RETURNING search_id
)
SELECT array(SELECT DISTINCT search_id FROM inserted ORDER BY search_id) AS searches,
       (SELECT count(*) FROM inserted) AS written

-- name: schedule_digests
-- Saved searches that got matches are due: at once (instant), else at their next slot
-- (alert_next_slot); one already due keeps its time and is not written again (a new row version
-- and an entry in each of its indexes, for a search that most listings match again). A search
-- whose address has not confirmed its e-mail yet (one active for webhooks) gets no digest.
-- Rows locked in id order whatever the plan (due), then written by id (the ids as one array:
-- a join planned a scan of every saved search): two batches in flight that schedule the same
-- searches wait on each other in that order and cannot deadlock (the later finds them due).
WITH due AS (
    SELECT id
      FROM saved_searches
     WHERE id = ANY (%(ids)s::uuid[]) AND status = 'active' AND due_at IS NULL
       AND email_confirmed
     ORDER BY id
       FOR NO KEY UPDATE
)
UPDATE saved_searches
   SET due_at = alert_next_slot(frequency, timezone, local_hour, last_digest_at)
 WHERE id = ANY (ARRAY(SELECT id FROM due))

-- name: exhaustive_matches
-- The check the presearch must agree with (tests and the bench): every active saved search
-- scored against one listing without any index, the same rules as insert_matches.
SELECT s.id AS search_id, sc.score
  FROM (SELECT q.id,
               1.0 / (1.0 + exp(-(%(intercept)s::float8
                                  + %(w_cosine)s::float8 * (1.0 - (q.{embedding} <=> l.{embedding}))
                                  + %(w_similarity)s::float8
                                    * coalesce(word_similarity(nullif(w.title_words, ''),
                                                               l.job_title)::float8
                                               * (1 + word_similarity(l.job_title,
                                                                      w.title_words)::float8)
                                               / 2, 0)))) AS score
          FROM alert_queries AS q
          JOIN alert_query_words AS w ON w.query_id = q.id, job_listings AS l
         WHERE l.id = %(id)s) AS sc
  JOIN saved_searches AS s ON s.query_id = sc.id AND s.status = 'active'
  JOIN job_listings AS l ON l.id = %(id)s
 WHERE sc.score >= %(floor)s AND sc.score >= s.min_score
   AND (s.location IS NULL OR strpos(lower(l.city_location), s.location) > 0)
   AND (s.salary_min IS NULL
        OR coalesce(l.salary_max_ks, l.salary_min_ks)
           >= s.salary_min * CASE WHEN s.salary_currency IS NULL THEN 1
                                  ELSE (SELECT r.per_eur FROM exchange_rates AS r
                                         WHERE r.currency_code = l.currency_code)
                                       / (SELECT r.per_eur FROM exchange_rates AS r
                                           WHERE r.currency_code = s.salary_currency)
                             END)
   AND (s.work_mode IS NULL OR l.work_mode = s.work_mode)
   AND (s.remote_country IS NULL
        OR shortlist_remote_for(l.work_mode, l.remote_countries, s.remote_country))
   AND (s.visa IS NULL OR l.visa_sponsorship = s.visa)
