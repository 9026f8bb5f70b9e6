-- Why a job search hit matched (shortlist.listings.why).

-- name: page_with_why
-- The listings %(ids)s with why each matched ({why_columns}).
SELECT {why_columns}
  FROM job_listings AS l
 WHERE l.id = ANY (%(ids)s::uuid[])

-- name: why_columns
-- Listing l's columns as ListingOut.from_row reads them (queries.sql selects the same) and why
-- it matched: the query words found in the title or the description (weights A and C of
-- search_tsv, see migration 0001) and ts_headline's snippet of the description.
-- U+E000 / U+E001 mark the highlighted words (removed from the text first, so they are
-- unambiguous); the caller escapes the snippet and turns them into <mark>.
l.id, l.company_name, l.job_title, l.city_location, l.description,
l.salary_min_ks, l.salary_max_ks, l.currency_code, l.work_mode, l.detail_page_slug,
l.created_at, l.updated_at, l.embedding_status::text AS embedding_status,
l.embedded_at, l.embedding_error, l.source, l.source_url, l.status, l.valid_through,
l.last_seen_at, l.duplicate_of, l.apply_url, l.apply_email, l.remote_countries,
l.visa_sponsorship,
ts_headline('english', translate(l.description, U&'\E000\E001', ''),
            websearch_to_tsquery('english', %(q)s), %(options)s) AS snippet,
ARRAY(SELECT w.word
        FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w (word, ord)
       WHERE ts_filter(l.search_tsv, '{a,c}') @@ plainto_tsquery('english', w.word)
       ORDER BY w.ord) AS matched_terms
