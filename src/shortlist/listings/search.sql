-- Job search (shortlist.listings.search): two candidate lists, fused in Python.
-- Both apply the same filters, written so that NULL means "no filter":
--   location   case-insensitive substring of city_location (strpos, so % and _ are literal)
--   salary_min thousands; a listing qualifies by its top figure (max, or min when only a
--              minimum is advertised); listings without any salary never match this filter

-- name: tune_vector_scan
-- pgvector 0.8: with a filter, a plain HNSW scan returns ef_search neighbours and *then*
-- filters them, which can leave fewer than LIMIT rows. Iterative scan keeps walking the graph
-- until LIMIT filtered rows are found (relaxed_order: results may come slightly out of order,
-- the outer ORDER BY in vector_candidates puts them back). Both settings end with the
-- transaction (is_local = true).
SELECT set_config('hnsw.ef_search', %(ef_search)s, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true)

-- name: vector_candidates
WITH nearest AS MATERIALIZED (
    SELECT id, company_name, job_title, embedding <=> %(q)s::vector AS distance
      FROM job_listings
     WHERE embedding IS NOT NULL
       AND (%(location)s::text IS NULL
            OR strpos(lower(city_location), lower(%(location)s::text)) > 0)
       AND (%(salary_min)s::int IS NULL
            OR coalesce(salary_max_ks, salary_min_ks) >= %(salary_min)s::int)
     ORDER BY embedding <=> %(q)s::vector
     LIMIT %(k)s
)
SELECT id, company_name, job_title, distance FROM nearest ORDER BY distance, id

-- name: text_candidates
-- Also finds listings still pending their first embedding. ts_rank_cd with normalisation 32
-- (rank / (rank + 1)) keeps the value in [0, 1); only its order is used.
SELECT l.id, l.company_name, l.job_title, ts_rank_cd(l.search_tsv, query, 32) AS text_rank
  FROM job_listings AS l, websearch_to_tsquery('english', %(q)s) AS query
 WHERE l.search_tsv @@ query
   AND (%(location)s::text IS NULL
        OR strpos(lower(l.city_location), lower(%(location)s::text)) > 0)
   AND (%(salary_min)s::int IS NULL
        OR coalesce(l.salary_max_ks, l.salary_min_ks) >= %(salary_min)s::int)
 ORDER BY text_rank DESC, l.created_at DESC, l.id
 LIMIT %(k)s
