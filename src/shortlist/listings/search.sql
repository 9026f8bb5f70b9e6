-- Job search (shortlist.listings.search): two candidate lists, fused in Python.
-- Both apply the same filters, written so that NULL means "no filter":
--   location   case-insensitive substring of city_location: an ILIKE pattern '%…%' built by
--              search.py with %, _ and \ escaped, so they match literally. ILIKE (not
--              strpos) so the trigram index of migration 0006 can serve it: with a selective
--              filter the planner scans the matching rows exactly instead of the HNSW graph.
--   salary_min thousands; a listing qualifies by its top figure (max, or min when only a
--              minimum is advertised); listings without any salary never match this filter

-- name: widen_vector_scan
-- For a candidate list longer than the session's hnsw.ef_search (shortlist.db.pool sets it, and
-- the iterative scan, on every connection): ends with the transaction (is_local = true).
SELECT set_config('hnsw.ef_search', %(ef_search)s, true)

-- name: candidates
-- Both candidate lists in one statement (one round trip), each numbered in its own order, and
-- for every row the evidence its score is computed from (shortlist.relevance):
--   vector  the k nearest embedded listings by cosine distance, through the HNSW index on the
--           half-precision vectors (shortlist.db.vector_index; its expression verbatim), then
--           numbered by the exact float4 distance (or, when
--           the location filter is selective, an exact scan of the rows the trigram index
--           finds: the planner's choice); skipped when the query has no vector (%(vector)s
--           NULL: the embedder failed, search degrades to full text)
--   text    the k best full-text matches of any of the query's words (%(terms)s), the title
--           weighted far above agency, place and description; also finds listings still
--           pending their first embedding. Only the order of ts_rank_cd is used.
--   distance          cosine distance to the query (NULL: no vector on either side)
--   title_match       share of the query's lexemes that are in the title (weight A)
--   title_similarity  pg_trgm word_similarity of the query words and the title (typos)
WITH query AS MATERIALIZED (
    SELECT replace(plainto_tsquery('english', %(terms)s)::text, '&', '|')::tsquery AS any_word,
           array(SELECT lexeme FROM unnest(to_tsvector('english', %(terms)s))) AS lexemes
),
nearest AS MATERIALIZED (
    SELECT id, embedding <=> %(vector)s::vector AS distance
      FROM job_listings
     WHERE %(vector)s::vector IS NOT NULL
       AND embedding IS NOT NULL
       AND (%(location)s::text IS NULL OR city_location ILIKE %(location)s::text)
       AND (%(salary_min)s::int IS NULL
            OR coalesce(salary_max_ks, salary_min_ks) >= %(salary_min)s::int)
     ORDER BY embedding::halfvec(384) <=> %(vector)s::vector::halfvec
     LIMIT %(k)s
),
matching AS MATERIALIZED (
    SELECT l.id, l.created_at,
           ts_rank_cd('{0.01, 0.05, 0.05, 1.0}', l.search_tsv, query.any_word, 32) AS text_rank
      FROM job_listings AS l, query
     WHERE l.search_tsv @@ query.any_word
       AND (%(location)s::text IS NULL OR l.city_location ILIKE %(location)s::text)
       AND (%(salary_min)s::int IS NULL
            OR coalesce(l.salary_max_ks, l.salary_min_ks) >= %(salary_min)s::int)
     ORDER BY text_rank DESC, l.created_at DESC, l.id
     LIMIT %(k)s
),
listed AS (
    SELECT 'vector' AS list, row_number() OVER (ORDER BY distance, id) AS rank, id FROM nearest
    UNION ALL
    SELECT 'text', row_number() OVER (ORDER BY text_rank DESC, created_at DESC, id), id
      FROM matching
)
SELECT p.list, p.rank, l.id, l.company_name, l.job_title,
       l.embedding <=> %(vector)s::vector AS distance,
       coalesce((SELECT count(*) FROM unnest(tsvector_to_array(ts_filter(l.search_tsv, '{a}')))
                    AS t (lexeme)
                  WHERE t.lexeme = ANY (query.lexemes))::float8
                / nullif(cardinality(query.lexemes), 0), 0) AS title_match,
       word_similarity(%(terms)s, l.job_title)::float8 AS title_similarity
  FROM listed AS p
  JOIN job_listings AS l ON l.id = p.id, query
ORDER BY p.list DESC, p.rank
