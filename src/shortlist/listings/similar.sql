-- Similar jobs (shortlist.listings.similar).

-- name: similar_listings
-- The open listings nearest in meaning to listing %(id)s by the active space's vectors ({embedding},
-- through the vector index's expression: {halfvec}), %(k)s of them read, then those of
-- another company (the same company's other posts of one job are no suggestion) that repeat no
-- other listing and are not the one this one repeats; the columns ListingOut.from_row reads
-- (as queries.sql selects them) and the cosine distance.
WITH me AS (
    SELECT id, company_name, duplicate_of, {embedding} AS v
      FROM job_listings
     WHERE id = %(id)s AND {embedding} IS NOT NULL
),
near AS (
    SELECT l.id, l.{embedding} <=> me.v AS distance
      FROM me, LATERAL (
           SELECT c.id, c.{embedding}
             FROM job_listings AS c
            WHERE c.status = 'open' AND c.duplicate_of IS NULL AND c.{embedding} IS NOT NULL
            ORDER BY c.{embedding}::{halfvec} <=> me.v::{halfvec}
            LIMIT %(k)s) AS l
     WHERE l.id <> me.id AND l.id IS DISTINCT FROM me.duplicate_of
)
SELECT l.id, l.company_name, l.job_title, l.city_location, l.description,
       l.salary_min_ks, l.salary_max_ks, l.currency_code, l.work_mode, l.detail_page_slug,
       l.created_at, l.updated_at, l.embedding_status::text AS embedding_status,
       l.embedded_at, l.embedding_error, l.source, l.source_url, l.status, l.valid_through,
       l.last_seen_at, l.duplicate_of, l.apply_url, l.apply_email, l.remote_countries,
       l.visa_sponsorship, near.distance
  FROM near
  JOIN job_listings AS l ON l.id = near.id
 CROSS JOIN me
 WHERE lower(btrim(l.company_name)) <> lower(btrim(me.company_name))
 ORDER BY near.distance, l.id
 LIMIT %(size)s
