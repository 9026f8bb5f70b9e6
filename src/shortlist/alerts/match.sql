-- Reverse search (shortlist.alerts.reverse): which saved searches one job listing satisfies.
-- {embedding} is the active model space's vector column, of job_listings and of alert_queries
-- alike (shortlist.indexer.migration fills and switches both).

-- name: widen_scan
-- The HNSW scan of the meaning path, for the rest of the transaction: its first candidate list
-- (hnsw.ef_search: the recall of the range it reads, bench_alerts) and an iterative scan in
-- distance order, so that alert_queries_within stops at the first query past the radius. Below
-- %(custom_plans_below)s saved queries, plans made for each listing's values: after five runs
-- in a session PL/pgSQL's cached plan of the scan's cursor went generic, which (its vector
-- unknown) sorted every saved query by distance instead of reading the index (reverse.py,
-- CUSTOM_PLANS_BELOW).
SELECT set_config('hnsw.ef_search', %(ef_search)s, true),
       set_config('hnsw.iterative_scan', 'strict_order', true),
       set_config('plan_cache_mode',
                  CASE WHEN (SELECT c.reltuples FROM pg_class AS c
                              WHERE c.oid = 'alert_queries'::regclass) < %(custom_plans_below)s
                       THEN 'force_custom_plan' ELSE 'auto' END, true)

-- name: insert_matches
-- Every saved search the listing satisfies, written once, in one statement. Candidates: the
-- meaning path's, the queries within %(radius)s (cosine distance) of the listing's vector, read
-- nearest first from the HNSW index on their embeddings until the radius
-- (alert_queries_within); the keyword path's, those one of whose anchor keys the title holds
-- (through the GIN index) and whose title similarity is above %(keyword_similarity)s (at or
-- below it, the meaning path answers for them, queries without title words too). Each is
-- scored exactly as job search scores (shortlist.relevance.JOB_SCORE over the cosine and
-- pg_trgm's word_similarity of the query's title words and the title, as search.sql computes
-- them); only then are its saved searches read (by query, through their index), each active one
-- held to its own threshold and filters (job search's: the place a substring of the listing's,
-- the top salary figure at least the floor, the work mode). (subscriber, job) is unique: a job
-- already matched for that subscriber, by another of their searches or as another listing of
-- it, inserts nothing. Only an open listing that repeats no other is matched (a near-duplicate
-- or repost the indexer linked, duplicate_of, never alerts: its original did or will).
-- Answers the saved searches that got a match.
WITH l AS MATERIALIZED (
    SELECT id, {embedding} AS vector, job_title, alert_title_keys(job_title) AS keys,
           lower(city_location) AS place, work_mode,
           coalesce(salary_max_ks, salary_min_ks) AS top_ks,
           shortlist_name_key(company_name) AS company_key,
           shortlist_name_key(company_name) || '|' || shortlist_name_key(job_title) || '|'
               || shortlist_name_key(city_location) AS job_key
      FROM job_listings
     WHERE id = %(id)s AND status = 'open' AND duplicate_of IS NULL AND {embedding} IS NOT NULL
),
candidates AS (
    SELECT n.query_id FROM l, alert_queries_within(l.vector, %(radius)s, %(column)s, %(dim)s) AS n
    UNION
    SELECT w.query_id
      FROM alert_query_words AS w, l
     WHERE w.anchor_keys && l.keys
       AND word_similarity(nullif(w.title_words, ''), l.job_title) > %(keyword_similarity)s
),
scored AS MATERIALIZED (
    -- Each candidate's vector and words looked up by its key (a join let the planner read
    -- every query's words to hash them); held to the floor here, so that only a query that can
    -- match has its saved searches read.
    SELECT x.query_id, x.score
      FROM (SELECT c.query_id,
                   1.0 / (1.0 + exp(-(%(intercept)s::float8
                                      + %(w_cosine)s::float8 * (1.0 - (q.{embedding} <=> l.vector))
                                      + %(w_similarity)s::float8
                                        * coalesce(word_similarity(
                                              nullif((SELECT w.title_words
                                                        FROM alert_query_words AS w
                                                       WHERE w.query_id = c.query_id), ''),
                                              l.job_title), 0)))) AS score
              FROM candidates AS c
             CROSS JOIN l
              JOIN alert_queries AS q ON q.id = c.query_id) AS x
     WHERE x.score >= %(floor)s
),
inserted AS (
    INSERT INTO alert_matches (search_id, subscriber_id, listing_id, job_key, company_key,
                               score)
    SELECT s.id, s.subscriber_id, l.id, l.job_key, l.company_key, sc.score
      FROM scored AS sc
      JOIN saved_searches AS s ON s.query_id = sc.query_id AND s.status = 'active'
     CROSS JOIN l
     WHERE sc.score >= s.min_score
       AND (s.location IS NULL OR strpos(l.place, s.location) > 0)
       AND (s.salary_min IS NULL OR l.top_ks >= s.salary_min)
       AND (s.work_mode IS NULL OR l.work_mode = s.work_mode)
    ON CONFLICT (subscriber_id, job_key) DO NOTHING
    RETURNING search_id
)
SELECT array(SELECT DISTINCT search_id FROM inserted) AS searches

-- name: schedule_digests
-- Saved searches that got matches are due: at once (instant), else at their next slot
-- (alert_next_slot); one already due keeps its time and is not written again (a new row version
-- and an entry in each of its indexes, for a search that most listings match again). A search
-- whose address has not confirmed its e-mail yet (one active for webhooks) gets no digest.
UPDATE saved_searches
   SET due_at = alert_next_slot(frequency, timezone, local_hour, last_digest_at)
 WHERE id = ANY (%(ids)s::uuid[]) AND status = 'active' AND due_at IS NULL AND email_confirmed

-- name: exhaustive_matches
-- The check the presearch must agree with (tests and the bench): every active saved search
-- scored against the listing without any index, the same rules as insert_matches.
SELECT s.id AS search_id, sc.score
  FROM (SELECT q.id,
               1.0 / (1.0 + exp(-(%(intercept)s::float8
                                  + %(w_cosine)s::float8 * (1.0 - (q.{embedding} <=> l.{embedding}))
                                  + %(w_similarity)s::float8
                                    * coalesce(word_similarity(nullif(w.title_words, ''),
                                                               l.job_title), 0)))) AS score
          FROM alert_queries AS q
          JOIN alert_query_words AS w ON w.query_id = q.id, job_listings AS l
         WHERE l.id = %(id)s) AS sc
  JOIN saved_searches AS s ON s.query_id = sc.id AND s.status = 'active'
  JOIN job_listings AS l ON l.id = %(id)s
 WHERE sc.score >= %(floor)s AND sc.score >= s.min_score
   AND (s.location IS NULL OR strpos(lower(l.city_location), s.location) > 0)
   AND (s.salary_min IS NULL OR coalesce(l.salary_max_ks, l.salary_min_ks) >= s.salary_min)
   AND (s.work_mode IS NULL OR l.work_mode = s.work_mode)
