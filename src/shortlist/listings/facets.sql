-- Facet counts of a job search (shortlist.listings.facets).

-- name: facets
-- Counts over the query's matches: every full-text match plus the vector candidates the search
-- ranked (%(vector_ids)s), under the same filters as search.sql's candidates (keep them equal).
-- One row per facet value: work mode; posted within 1/7/30 days; salary bands per currency
-- (a listing counts in every band its top figure reaches: "€100K+" includes "€150K+");
-- and the %(top_cities)s most frequent cities.
WITH matches AS MATERIALIZED (
    SELECT l.id
      FROM job_listings AS l, websearch_to_tsquery('english', %(q)s) AS query
     WHERE l.search_tsv @@ query
       AND (%(location)s::text IS NULL OR l.city_location ILIKE %(location)s::text)
       AND (%(salary_min)s::int IS NULL
            OR coalesce(l.salary_max_ks, l.salary_min_ks) >= %(salary_min)s::int)
       AND (%(work_mode)s::text IS NULL OR l.work_mode = %(work_mode)s::text)
       AND (%(posted_within_days)s::int IS NULL
            OR l.created_at >= now() - make_interval(days => %(posted_within_days)s::int))
    UNION
    SELECT v.id FROM unnest(%(vector_ids)s::uuid[]) AS v (id)
),
facts AS MATERIALIZED (
    SELECT l.work_mode, l.city_location, l.currency_code,
           coalesce(l.salary_max_ks, l.salary_min_ks) AS top_ks, now() - l.created_at AS age
      FROM job_listings AS l JOIN matches USING (id)
)
SELECT 'work_mode' AS facet, work_mode AS value, NULL::int AS low_ks, count(*) AS n
  FROM facts
 GROUP BY work_mode
UNION ALL
SELECT 'posted_within_days', d::text, NULL, count(*) FILTER (WHERE age <= make_interval(days => d))
  FROM facts, unnest(ARRAY[1, 7, 30]) AS d
 GROUP BY d
UNION ALL
SELECT 'salary', f.currency_code, step * coalesce(s.factor, 1), count(*)
  FROM facts AS f
  LEFT JOIN unnest(%(scale_codes)s::text[], %(scale_factors)s::int[]) AS s (code, factor)
         ON s.code = f.currency_code
 CROSS JOIN unnest(%(band_steps)s::int[]) AS step
 WHERE f.top_ks >= step * coalesce(s.factor, 1)
 GROUP BY f.currency_code, step * coalesce(s.factor, 1)
UNION ALL
(SELECT 'city', city_location, NULL, count(*)
   FROM facts
  GROUP BY city_location
  ORDER BY count(*) DESC, city_location
  LIMIT %(top_cities)s)
