-- Job sources and their crawls (shortlist.listings.sources). Migration 0020 has the tables.

-- name: insert_source
-- A new source, due at once; a spec already present is not added twice.
INSERT INTO job_sources (spec, kind, company_name)
VALUES (%(spec)s, %(kind)s, %(company_name)s)
ON CONFLICT (spec) DO NOTHING
RETURNING id

-- name: source_by_spec
SELECT id FROM job_sources WHERE spec = %(spec)s

-- name: list_sources
-- Every source with its last crawl and how many of its listings are open.
SELECT s.id, s.spec, s.kind, s.company_name, s.status, s.next_crawl_at, s.last_crawl_at,
       s.last_success_at, s.last_error, s.last_outcome, s.attempts, s.created_at,
       (SELECT count(*) FROM job_listings AS l
         WHERE l.source_id = s.id AND l.status = 'open') AS listings_open
  FROM job_sources AS s
 WHERE %(id)s::bigint IS NULL OR s.id = %(id)s::bigint
 ORDER BY s.id

-- name: delete_source
-- A removed source's open listings close with it (nobody keeps them true any more).
WITH closed AS (
    UPDATE job_listings
       SET status = 'closed', closed_at = now()
     WHERE source_id = %(id)s AND status = 'open'
)
DELETE FROM job_sources WHERE id = %(id)s RETURNING id

-- name: claim_due_sources
-- Sources due for a crawl, minus those under a live lease: leased to this worker. `force`
-- claims the given ids whatever their schedule (sources crawl ID / --all), failed ones too.
-- This claim owns expired leases: a crashed crawler's source is claimable once locked_until
-- passes (its crawl had committed nothing, or everything).
WITH due AS (
    SELECT id
      FROM job_sources
     WHERE (locked_until IS NULL OR locked_until < now())
       AND CASE WHEN %(ids)s::bigint[] IS NULL
                THEN status = 'active' AND next_crawl_at <= now()
                ELSE id = ANY (%(ids)s::bigint[]) END
     ORDER BY next_crawl_at, id
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE job_sources AS s
   SET locked_by = %(worker_id)s,
       locked_until = now() + make_interval(secs => %(lease)s)
  FROM due
 WHERE s.id = due.id
RETURNING s.id, s.spec, s.kind, s.company_name, s.attempts

-- name: crawl_succeeded
-- A crawl committed: active | failed -> active, due again after the interval, its outcome
-- recorded (in the transaction that ended the worker's lease on the source).
UPDATE job_sources
   SET status = 'active', attempts = 0, last_error = NULL,
       last_crawl_at = now(), last_success_at = now(), last_outcome = %(outcome)s,
       next_crawl_at = now() + make_interval(secs => %(interval)s)
 WHERE id = %(id)s AND status IN ('active', 'failed')
RETURNING id

-- name: source_outcome
-- What a crawl's outcome writes on its source besides the lease (LeaseTable.outcome,
-- shortlist.queue.lease). retry (a timeout, a 5xx, a 429: the board's own trouble): the source
-- stays as it is and falls due again after o.delay seconds. failed (the board does not exist,
-- 404, or cannot be crawled): active -> failed, shown with its error. Both count an attempt
-- and keep the reason.
status = CASE WHEN o.kind = 'failed' THEN 'failed' ELSE t.status END,
attempts = t.attempts + CASE WHEN o.kind IN ('retry', 'failed') THEN 1 ELSE 0 END,
last_error = CASE WHEN o.kind IN ('retry', 'failed') THEN o.reason ELSE t.last_error END,
last_crawl_at = CASE WHEN o.kind IN ('retry', 'failed') THEN now() ELSE t.last_crawl_at END,
next_crawl_at = CASE WHEN o.kind = 'retry' THEN now() + make_interval(secs => o.delay)
                     ELSE t.next_crawl_at END

-- name: page_memos
-- What the last crawl of a source remembered of each URL.
SELECT url, etag, last_modified, external_ids FROM crawl_pages WHERE source_id = %(id)s

-- name: forget_pages
DELETE FROM crawl_pages WHERE source_id = %(id)s

-- name: store_page
INSERT INTO crawl_pages (source_id, url, etag, last_modified, external_ids)
VALUES (%(id)s, %(url)s, %(etag)s, %(last_modified)s, %(external_ids)s)

-- name: reserve_host_slot
-- The next free request slot of a host, shared by every process: this request's wait (0: go
-- now), and the slot after it reserved for the next caller.
INSERT INTO crawl_hosts AS h (host, next_fetch_at)
VALUES (%(host)s, clock_timestamp() + make_interval(secs => %(delay)s))
ON CONFLICT (host) DO UPDATE
   SET next_fetch_at = greatest(h.next_fetch_at, clock_timestamp())
                       + make_interval(secs => %(delay)s)
RETURNING greatest(extract(epoch FROM h.next_fetch_at - clock_timestamp()) - %(delay)s, 0)
          AS wait

-- name: source_listings
-- Every listing a source's crawls wrote (open or closed), locked for the diff: two crawls of
-- one source (a forced one and a scheduled one) apply one after the other.
SELECT id, external_id, company_name, job_title, city_location, description,
       salary_min_ks, salary_max_ks, currency_code, work_mode, source_url, valid_through,
       status, apply_url, remote_countries, visa_sponsorship
  FROM job_listings
 WHERE source = %(source)s AND external_id IS NOT NULL
   FOR UPDATE

-- name: same_job_elsewhere
-- New postings that are already listed through another source (one job, one listing): the same
-- canonical posting URL, or the same company, title and city (company and city compared as
-- shortlist_name_key has them, migration 0024) created within the window.
SELECT DISTINCT c.n
  FROM unnest(%(urls)s::text[], %(companies)s::text[], %(titles)s::text[], %(cities)s::text[])
       WITH ORDINALITY AS c (url, company, title, city, n)
  JOIN job_listings AS l
    ON l.status = 'open' AND l.source <> %(source)s
   AND ((c.url IS NOT NULL AND l.source_url = c.url)
        OR (shortlist_name_key(l.company_name) = shortlist_name_key(c.company)
            AND lower(regexp_replace(l.job_title, '\W+', ' ', 'g'))
                = lower(regexp_replace(c.title, '\W+', ' ', 'g'))
            AND shortlist_name_key(l.city_location) = shortlist_name_key(c.city)
            AND l.created_at > now() - make_interval(days => %(window_days)s)))

-- name: copy_crawled
-- New postings of a crawl (pending for the indexer, in the bulk lane).
COPY job_listings (
    id, company_name, job_title, city_location, description,
    salary_min_ks, salary_max_ks, currency_code, work_mode, detail_page_slug, source,
    source_id, source_url, external_id, valid_through, last_seen_at, claim_seq,
    apply_url, remote_countries, visa_sponsorship)
FROM STDIN

-- name: update_crawled
-- A changed posting: its fields rewritten (job_listings_touch bumps updated_at, which queues
-- the re-embed, only if the embedded or listed fields changed), seen now, open again.
UPDATE job_listings AS l
   SET company_name = u.company_name, job_title = u.job_title,
       city_location = u.city_location, description = u.description,
       salary_min_ks = u.salary_min_ks, salary_max_ks = u.salary_max_ks,
       currency_code = u.currency_code, work_mode = coalesce(u.work_mode, l.work_mode),
       detail_page_slug = u.slug, source_url = u.source_url, valid_through = u.valid_through,
       source_id = %(source_id)s, last_seen_at = now(), claim_seq = u.seq,
       status = 'open', closed_at = NULL, apply_url = u.apply_url,
       remote_countries = coalesce(string_to_array(nullif(u.remote_countries, ''), ','), '{}'),
       visa_sponsorship = u.visa_sponsorship
  FROM unnest(%(ids)s::uuid[], %(company_names)s::text[], %(job_titles)s::text[],
              %(cities)s::text[], %(descriptions)s::text[], %(mins)s::int[], %(maxs)s::int[],
              %(currencies)s::text[], %(work_modes)s::text[], %(slugs)s::text[],
              %(urls)s::text[], %(valid_throughs)s::timestamptz[], %(seqs)s::int[],
              %(apply_urls)s::text[], %(remote_countries)s::text[], %(visas)s::text[])
       AS u (id, company_name, job_title, city_location, description, salary_min_ks,
             salary_max_ks, currency_code, work_mode, slug, source_url, valid_through, seq,
             apply_url, remote_countries, visa_sponsorship)
 WHERE l.id = u.id

-- name: touch_seen
-- Unchanged postings: only their sighting moves (no new version for the indexer), reopened if
-- they had been closed.
UPDATE job_listings
   SET last_seen_at = now(), source_id = %(source_id)s,
       status = 'open', closed_at = CASE WHEN status = 'open' THEN closed_at END
 WHERE id = ANY (%(ids)s::uuid[])

-- name: close_gone
-- open -> closed: postings gone from their board, and those past their validThrough.
UPDATE job_listings
   SET status = 'closed', closed_at = now()
 WHERE status = 'open'
   AND (id = ANY (%(ids)s::uuid[])
        OR (source = %(source)s AND valid_through IS NOT NULL AND valid_through < now()))
RETURNING id
