-- Job listings: what producers (API, bulk file, e-mail, sample loader) write and the API
-- reads. Producers never touch the embedding columns: the indexer (indexer.sql) owns those.
-- Every select returns the columns ListingOut.from_row reads, never the vector itself.

-- name: insert_listing
-- external_id: how a producer that may send the same posting twice names it (a company
-- re-posting an e-mail over HTTP); unique per source (migration 0020). The second insert writes
-- nothing and returns no row, and the caller reads the first (listing_of_external_id). Without
-- one (NULL) nothing conflicts.
INSERT INTO job_listings (
    id, company_name, job_title, city_location, description,
    salary_min_ks, salary_max_ks, currency_code, work_mode, detail_page_slug, source,
    owner_token_id, external_id, apply_url, apply_email, remote_countries, visa_sponsorship,
    user_id, org_id)
VALUES (
    %(id)s, %(company_name)s, %(job_title)s, %(city_location)s, %(description)s,
    %(salary_min_ks)s, %(salary_max_ks)s, %(currency_code)s, %(work_mode)s, %(detail_page_slug)s,
    %(source)s, %(owner_token_id)s, %(external_id)s, %(apply_url)s, %(apply_email)s,
    %(remote_countries)s, %(visa_sponsorship)s, %(user_id)s, %(org_id)s)
ON CONFLICT (source, external_id) WHERE external_id IS NOT NULL DO NOTHING
RETURNING id, company_name, job_title, city_location, description,
          salary_min_ks, salary_max_ks, currency_code, work_mode, detail_page_slug,
          created_at, updated_at, embedding_status::text AS embedding_status,
          embedded_at, embedding_error, source, source_url, status, valid_through,
          last_seen_at, duplicate_of, apply_url, apply_email, remote_countries, visa_sponsorship

-- name: listing_of_external_id
SELECT id FROM job_listings WHERE source = %(source)s AND external_id = %(external_id)s

-- name: copy_listings
-- Bulk producers (file, sample). Rows are validated in Python before they get here.
-- claim_seq: the row's place in its batch, so the indexer interleaves concurrent bulk batches
-- (migration 0020).
COPY job_listings (
    id, company_name, job_title, city_location, description,
    salary_min_ks, salary_max_ks, currency_code, work_mode, detail_page_slug, source,
    claim_seq, apply_url, apply_email, remote_countries, visa_sponsorship)
FROM STDIN

-- name: get_listing
SELECT id, company_name, job_title, city_location, description,
       salary_min_ks, salary_max_ks, currency_code, work_mode, detail_page_slug,
       created_at, updated_at, embedding_status::text AS embedding_status,
       embedded_at, embedding_error, source, source_url, status, valid_through,
       last_seen_at, duplicate_of, apply_url, apply_email, remote_countries, visa_sponsorship
  FROM job_listings
 WHERE id = %(id)s

-- name: get_listings_by_ids
SELECT id, company_name, job_title, city_location, description,
       salary_min_ks, salary_max_ks, currency_code, work_mode, detail_page_slug,
       created_at, updated_at, embedding_status::text AS embedding_status,
       embedded_at, embedding_error, source, source_url, status, valid_through,
       last_seen_at, duplicate_of, apply_url, apply_email, remote_countries, visa_sponsorship
  FROM job_listings
 WHERE id = ANY(%(ids)s::uuid[])

-- name: lock_listing
-- Taken before a change so that the ownership check and the write see the same row.
SELECT id, company_name, job_title, city_location, description,
       salary_min_ks, salary_max_ks, currency_code, work_mode, owner_token_id,
       apply_url, apply_email, remote_countries, visa_sponsorship, org_id
  FROM job_listings
 WHERE id = %(id)s
   FOR UPDATE

-- name: update_listing
-- Writes every producer-owned column; the job_listings_touch trigger bumps updated_at (and so
-- queues a re-embed) only if one of them actually changed.
UPDATE job_listings
   SET company_name = %(company_name)s,
       job_title = %(job_title)s,
       city_location = %(city_location)s,
       description = %(description)s,
       salary_min_ks = %(salary_min_ks)s,
       salary_max_ks = %(salary_max_ks)s,
       currency_code = %(currency_code)s,
       work_mode = %(work_mode)s,
       detail_page_slug = %(detail_page_slug)s,
       apply_url = %(apply_url)s,
       apply_email = %(apply_email)s,
       remote_countries = %(remote_countries)s,
       visa_sponsorship = %(visa_sponsorship)s
 WHERE id = %(id)s
RETURNING id, company_name, job_title, city_location, description,
          salary_min_ks, salary_max_ks, currency_code, work_mode, detail_page_slug,
          created_at, updated_at, embedding_status::text AS embedding_status,
          embedded_at, embedding_error, source, source_url, status, valid_through,
          last_seen_at, duplicate_of, apply_url, apply_email, remote_countries, visa_sponsorship

-- name: close_listing
-- A listing taken down (DELETE /api/jobs/{id}, or gone from its source): open -> closed. It
-- leaves search and facets and still answers by id with its status.
UPDATE job_listings
   SET status = 'closed', closed_at = now()
 WHERE id = %(id)s AND status = 'open'
RETURNING id

-- name: lock_sample_load
-- Transaction-scoped, so it is released by the commit that makes the sample visible: a second
-- process waits here, then sees a non-empty table and loads nothing.
SELECT pg_advisory_xact_lock(hashtext('shortlist.listings.sample'))

-- name: any_listing
SELECT EXISTS (SELECT 1 FROM job_listings) AS present

-- name: listings_of_org
-- An organisation's listings, newest first, each naming who posted it (the employer page).
SELECT l.id, l.company_name, l.job_title, l.city_location, l.status, l.source,
       l.embedding_status::text AS embedding_status, l.detail_page_slug, l.created_at,
       l.updated_at, l.duplicate_of, coalesce(u.email::text, u.name) AS posted_by
  FROM job_listings AS l
  LEFT JOIN users AS u ON u.id = l.user_id
 WHERE l.org_id = %(org_id)s
 ORDER BY l.created_at DESC, l.id
 LIMIT %(limit)s
