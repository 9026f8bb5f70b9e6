-- Job search (shortlist.listings.search): two candidate lists, fused in Python.
-- Both apply the same filters (listing_filters, with each filter_* the request sets), and
-- only ever see open listings that repeat no other (a closed one, or a near-duplicate linked
-- to its original by the indexer, keeps its page, not its place in search):
--   location   case-insensitive substring of city_location: an ILIKE pattern '%…%' built by
--              search.py with %, _ and \ escaped, so they match literally. ILIKE (not
--              strpos) so the trigram index of migration 0006 can serve it: with a selective
--              filter the planner scans the matching rows exactly instead of the vector index.
--   salary_min thousands; a listing qualifies by its top figure (max, or min when only a
--              minimum is advertised); listings without any salary never match this filter
--   work_mode  remote | hybrid | onsite
--   posted_within_days  created in the last N days
--   salary_converted  salary_min in the request's currency: the same amount in each listing's
--              currency (%(salary_at)s: {"SEK": 1100.5, …}, shortlist.listings.rates), so a
--              listing of a currency without a rate never matches it
--   remote_country  remote jobs a person in that country may take: those that name it, and
--              those that name no country (not said; shortlist_remote_for, migration 0033)
--   visa       offered: listings that say they sponsor a visa

-- name: widen_vector_scan
-- For a candidate list longer than the session's hnsw.ef_search (shortlist.db.pool sets it, and
-- the iterative scan, on every connection): ends with the transaction (is_local = true).
SELECT set_config('hnsw.ef_search', %(ef_search)s, true)

-- name: force_generic_plan
-- For the statement that follows it in the same pipeline (one implicit transaction, up to the
-- Sync: is_local = true): its prepared generic plan, not a custom plan per execution (see
-- shortlist.listings.search.execute_generic).
SELECT set_config('plan_cache_mode', 'force_generic_plan', true)

-- name: word_lexemes
-- Each word of %(words)s (a query's words, split at white space as the parser splits them) with
-- its lexemes, each quoted as tsquery input wants it (shortlist_quote_lexeme, migration 0016,
-- so no word of a query is read as an operator), and whether it is *broad*: by the statistics
-- ANALYZE keeps of search_tsv (the share of listings that have each of its most common
-- lexemes), more listings contain it than the least of %(broad_matches)s and the greater of
-- %(broad_min)s and the share %(broad_share)s of the table (shortlist.listings.search,
-- BROAD_SHARE). A lexeme not among those, or a table not yet analysed, is narrow. A word
-- without lexemes (a stop word) has no row.
SELECT w.word, shortlist_quote_lexeme(t.lexeme) AS quoted,
       coalesce(f.freq * greatest(c.reltuples, 0)
                > least(%(broad_matches)s::float8,
                        greatest(%(broad_min)s::float8,
                                 %(broad_share)s::float8 * greatest(c.reltuples, 0))),
                false) AS broad
  FROM unnest(%(words)s::text[]) AS w (word)
 CROSS JOIN LATERAL unnest(to_tsvector('english', w.word)) AS t
 CROSS JOIN (SELECT reltuples FROM pg_class WHERE oid = 'job_listings'::regclass) AS c
  LEFT JOIN LATERAL (
       SELECT e.freq
         FROM pg_stats AS st,
              unnest(st.most_common_elems::text::text[], st.most_common_elem_freqs)
                  AS e (lexeme, freq)
        WHERE st.schemaname = 'public'
          AND st.tablename = 'job_listings'
          AND st.attname = 'search_tsv'
          AND e.lexeme = t.lexeme
       ) AS f ON true

-- name: listing_filters
-- What listing l must be, spliced ({listing_filters}) into each scan of candidate_ctes, so both
-- lists and the facets obey the same conditions: open, repeating no other, and each filter
-- the request sets (filter_* below, joined by AND in shortlist.listings.search; a filter not
-- set is not in the statement at all, which keeps it under psycopg's cache limit,
-- tests/unit/test_search_statements.py). The conditions are written tight: each is in the
-- statement three times.
l.status='open' AND l.duplicate_of IS NULL

-- name: filter_location
l.city_location ILIKE %(location)s

-- name: filter_salary_min
coalesce(l.salary_max_ks,l.salary_min_ks)>=%(salary_min)s::int

-- name: filter_salary_converted
coalesce(l.salary_max_ks,l.salary_min_ks)>=(%(salary_at)s::jsonb->>l.currency_code)::float8

-- name: filter_work_mode
l.work_mode=%(work_mode)s

-- name: filter_remote_country
shortlist_remote_for(l.work_mode,l.remote_countries,%(remote_country)s)

-- name: filter_visa
l.visa_sponsorship=%(visa)s

-- name: filter_posted_within_days
l.created_at>=now()-make_interval(days=>%(posted_within_days)s::int)

-- name: candidate_ctes
-- {embedding} and {halfvec}: the active model space's column and index type
-- (shortlist.embedding.spaces); the query vector is of the same model. {k} and {broad_window}:
-- the lists' lengths, constants in first_page and %(k)s, %(broad_window)s in the others
-- (shortlist.listings.search._limits).
-- Both candidate lists in one statement (one round trip), each numbered in its own order, and
-- for every row the evidence its score is computed from (shortlist.relevance):
--   vector  the k nearest embedded listings by cosine distance, through the vector index on
--           the half-precision vectors (shortlist.db.vector_index; its expression verbatim),
--           then numbered by the exact float4 distance (or, when the location filter is
--           selective, an exact scan of the rows the trigram index finds: the planner's
--           choice); skipped when the query has no vector (%(vector)s NULL: the embedder
--           failed, search degrades to full text)
--   text    the k best full-text matches of any of the query's words (%(terms)s), the title
--           weighted far above agency, place and description; also finds listings still
--           pending their first embedding. Only the order of ts_rank is used. The words
--           matched are %(narrow)s and %(broad)s; a place the query names is ranked but not
--           matched (shortlist.listings.search.match_terms: "nurse in Toronto" ranks the
--           Toronto nurses first but is no match of every Toronto listing). Every match
--           of a *narrow* word (%(narrow)s, from word_lexemes) is ranked; of a *broad* word
--           (%(broad)s: one that, by the planner's statistics, more than BROAD_MATCHES listings,
--           or in a smaller table more than BROAD_SHARE of them,
--           contain: "engineer" on a tech board) only the {broad_window} newest matches are,
--           read through the created_at index. Ranking every listing of a million that says
--           "engineer" took seconds, and such a word barely tells one of them from another:
--           the vector list does.
--   facets  (candidates with facets only) one row whose jsonb holds the facet counts
--           (shortlist.listings.facets) over the query's matches: every full-text match (of a
--           broad word, its newest {broad_window}) plus the k nearest. They reuse the text
--           list's rows: all_matching is then read twice, so PostgreSQL materialises it; read
--           once (no facets), it is inlined into a top-k sort.
-- The statements that use it (first_page, candidates and their _with_facets forms) say where
-- ({candidate_ctes}); shortlist.listings.search fills each placeholder with its named block.
query AS MATERIALIZED (
    SELECT replace(plainto_tsquery('english', %(terms)s)::text, '&', '|')::tsquery AS any_word,
           array(SELECT lexeme FROM unnest(to_tsvector('english', %(terms)s))) AS lexemes,
           -- The words the title is compared with: the query's words but stop words ("and",
           -- "of", "for"), which made any title with "and" or "Development" in it resemble
           -- "teaching and curriculum development".
           (SELECT string_agg(w, ' ') FROM regexp_split_to_table(%(terms)s, '\s+') w
             WHERE to_tsvector('english', w) <> '') AS title_words
),
nearest AS MATERIALIZED (
    SELECT l.id, l.{embedding} <=> %(vector)s::vector AS distance,
           l.work_mode, l.city_location, l.currency_code, l.created_at,
           coalesce(l.salary_max_ks, l.salary_min_ks) AS top_ks
      FROM job_listings AS l
     WHERE %(vector)s::vector IS NOT NULL
       AND l.{embedding} IS NOT NULL
       AND {listing_filters}
     ORDER BY l.{embedding}::{halfvec} <=> %(vector)s::vector::halfvec
     LIMIT {k}
),
all_matching AS (
    -- Every match of a narrow word through the full-text index, and of the rest the newest
    -- matches of a broad word through the created_at index, each with the columns read here
    -- (not their ids looked up again: 2,000 primary-key probes were a quarter of such a
    -- search). The words are constants (query_words), not the query CTE's columns: the
    -- planner then knows how many listings a word matches.
    SELECT m.id, m.created_at,
           ts_rank('{0.01, 0.05, 0.05, 1.0}', m.search_tsv, query.any_word, 32) AS text_rank,
           m.work_mode, m.city_location, m.currency_code, m.top_ks
      FROM (SELECT l.id, l.created_at, l.search_tsv, l.work_mode, l.city_location,
                   l.currency_code, coalesce(l.salary_max_ks, l.salary_min_ks) AS top_ks
              FROM job_listings AS l
             WHERE l.search_tsv @@ %(narrow)s::tsquery AND {listing_filters}
            UNION ALL
            -- ts_match_vq is @@, written as a function so that the GIN index cannot serve
            -- it: every plan (a generic one, which does not know how many listings the word
            -- is in, too) walks the created_at index; a one-time filter skips it without one.
            (SELECT l.id, l.created_at, l.search_tsv, l.work_mode, l.city_location,
                    l.currency_code, coalesce(l.salary_max_ks, l.salary_min_ks)
               FROM job_listings AS l
              WHERE %(broad)s::tsquery IS NOT NULL
                AND ts_match_vq(l.search_tsv, %(broad)s::tsquery)
                AND NOT coalesce(l.search_tsv @@ %(narrow)s, false)
                AND {listing_filters}
              ORDER BY l.created_at DESC
              LIMIT {broad_window})) AS m
     CROSS JOIN query
),
matching AS (
    SELECT id, created_at, text_rank
      FROM all_matching
     ORDER BY text_rank DESC, created_at DESC, id
     LIMIT {k}
)

-- name: counts
-- The counts CTE when facets are counted (else no_counts): small groups of the query's matches
-- (every full-text match, and the nearest that are not one), counted in one pass (two grouping sets)
-- and summed up in Python: by city, and by work mode, currency, units (the top figure in steps
-- of %(band_unit)s thousand, scaled per currency into bands in Python) and fresh (1, 7 or 30
-- days, or NULL). A search in a chosen currency counts in finer steps (band_unit 10), which
-- shortlist.listings.facets converts (by the reference rates) into that currency's bands.
SELECT city_location, work_mode, currency_code, units, fresh,
       GROUPING(city_location) AS by_mode, count(*) AS n
  FROM (SELECT city_location, work_mode, currency_code, top_ks / %(band_unit)s AS units,
               CASE WHEN created_at >= now() - interval '1 day' THEN 1
                    WHEN created_at >= now() - interval '7 days' THEN 7
                    WHEN created_at >= now() - interval '30 days' THEN 30 END AS fresh
          FROM (SELECT work_mode, city_location, currency_code, top_ks, created_at
                  FROM all_matching
                UNION ALL
                SELECT work_mode, city_location, currency_code, top_ks, created_at
                  FROM nearest
                 WHERE id NOT IN (SELECT id FROM all_matching)) AS m) AS f
 GROUP BY GROUPING SETS ((city_location), (work_mode, currency_code, units, fresh))

-- name: no_counts
-- The counts CTE when facets are not counted: read by nothing, so never run, and all_matching
-- is read once (inlined into the text list's top-k sort).
SELECT WHERE false

-- name: candidate_lists
-- The two lists with each listing's evidence ({evidence}).
SELECT p.list, p.rank, l.id, l.company_name, l.job_title, e.distance, e.title_match,
       e.title_similarity, NULL::jsonb AS facets
  FROM (SELECT 'vector' AS list, row_number() OVER (ORDER BY distance, id) AS rank, id
          FROM nearest
        UNION ALL
        SELECT 'text', row_number() OVER (ORDER BY text_rank DESC, created_at DESC, id), id
          FROM matching) AS p
  JOIN job_listings AS l ON l.id = p.id
 CROSS JOIN query
 CROSS JOIN LATERAL ({evidence}) AS e

-- name: evidence
-- What listing l's score is computed from (shortlist.relevance): distance (cosine, NULL without
-- a vector on either side), title_match (share of the query's lexemes in the title, weight A),
-- title_similarity (both ways, shortlist.relevance: pg_trgm word_similarity of the query's
-- words but stop words and the title, typos and all, times the mean of 1 and the title's
-- word_similarity to those words, so that a title whose own words the query lacks,
-- "Intelligence Research Specialist" for "search engine optimization specialist", resembles
-- it less than "SEO Specialist"; never above the first, as the alert matcher needs).
SELECT l.{embedding} <=> %(vector)s::vector AS distance,
       coalesce((SELECT count(*) FROM unnest(tsvector_to_array(ts_filter(l.search_tsv, '{a}')))
                    AS t (lexeme)
                  WHERE t.lexeme = ANY (query.lexemes))::float8
                / nullif(cardinality(query.lexemes), 0), 0) AS title_match,
       coalesce(word_similarity(query.title_words, l.job_title)::float8
                * (1 + word_similarity(l.job_title, query.title_words)::float8) / 2,
                0) AS title_similarity

-- name: facets_row
SELECT 'facets', 0, NULL, NULL, NULL, NULL, NULL, NULL, {facets_value}

-- name: facets_value
-- The facet counts as one jsonb value: the groups by work mode, currency, units and freshness,
-- and the %(top_cities)s commonest cities.
jsonb_build_object(
    'groups', (SELECT jsonb_agg(g) FROM counts g WHERE by_mode = 1),
    'cities', (SELECT jsonb_agg(c)
                 FROM (SELECT city_location, n
                         FROM counts
                        WHERE by_mode = 0
                        ORDER BY n DESC, city_location
                        LIMIT %(top_cities)s) AS c))

-- name: no_facets
NULL::jsonb

-- name: candidates
-- Both candidate lists with their evidence, each in its order: a deep page's (its positions
-- past the first fusion window), fused in Python (shortlist.listings.search.fuse).
WITH {candidate_ctes}
{candidate_lists}
ORDER BY list DESC, rank

-- name: candidates_with_facets
-- As candidates, and one more row (list 'facets') holding the facet counts.
WITH {candidate_ctes},
counts AS ({counts})
{candidate_lists}
UNION ALL
{facets_row}
ORDER BY list DESC, rank

-- name: first_page
-- A page within the first fusion window (the search's first 40 positions: every first page),
-- in one statement: both lists, fused by the calibrated score, and only the page's listings
-- read in full with their why ({why_columns}: the snippet is made for the hits shown only).
-- The score is shortlist.relevance.ScoreModel.score, its weights %(w_*)s, in the same order of
-- operations on the same float8 values, so it is the number Python computes; the order is
-- shortlist.listings.search._order's (best score, better full-text rank, better vector rank,
-- id: uuids compare as their text does). One row per hit in page order; the first carries
-- the facet counts ({facets}: facets_value or no_facets), and a page without hits is one row
-- of NULLs but its facets.
WITH {candidate_ctes},
counts AS ({counts}),
fused AS MATERIALIZED (
    -- Each candidate once, with its ranks and evidence. Materialised: the score and the page
    -- both read title_match, whose subquery would otherwise run twice per candidate.
    SELECT f.id, f.vector_rank, f.text_rank, e.distance, e.title_match, e.title_similarity
      FROM (SELECT id, min(vector_rank) AS vector_rank, min(text_rank) AS text_rank
              FROM (SELECT id, row_number() OVER (ORDER BY distance, id) AS vector_rank,
                           NULL::bigint AS text_rank
                      FROM nearest
                    UNION ALL
                    SELECT id, NULL,
                           row_number() OVER (ORDER BY text_rank DESC, created_at DESC, id)
                      FROM matching) AS r
             GROUP BY id) AS f
      JOIN job_listings AS l ON l.id = f.id
     CROSS JOIN query
     CROSS JOIN LATERAL ({evidence}) AS e
),
page AS (
    SELECT id, vector_rank, text_rank, title_match, score,
           row_number() OVER (ORDER BY score DESC, text_rank NULLS LAST,
                                       vector_rank NULLS LAST, id) AS position
      FROM (SELECT id, vector_rank, text_rank, title_match,
                   1 / (1 + exp(-(%(w_intercept)s::float8
                                  + %(w_cosine)s::float8
                                    * coalesce(1 - distance, %(pending_cosine)s::float8)
                                  + %(w_title_match)s::float8 * title_match
                                  + %(w_title_similarity)s::float8 * title_similarity)))
                       AS score
              FROM fused) AS s
     ORDER BY position
     LIMIT %(size)s OFFSET %(offset)s
)
SELECT p.vector_rank, p.text_rank, p.title_match, p.score, {why_columns},
       CASE WHEN p.position IS NULL OR p.position = %(offset)s::int + 1 THEN {facets} END
           AS facets
  FROM (SELECT) AS one
  LEFT JOIN (page AS p JOIN job_listings AS l ON l.id = p.id) ON true
 ORDER BY p.position
