-- The embedding indexer (shortlist.indexer). One set of statements serves every embedded
-- corpus: {table} is the corpus table (psycopg.sql.Identifier) and {text} the SQL expression
-- that builds the text to embed from that table's columns (corpora.sql); {embedding} and
-- {embedded_hash} are the active model space's columns, {target_embedding} and {target_hash}
-- those of the space being built (shortlist.embedding.spaces; the active ones when none is).
-- Every status transition is a guarded UPDATE … RETURNING: a row only moves while its text is
-- still the text that was embedded, in the transaction whose settle (shortlist.queue) ended this
-- worker's lease on it first (the ids passed are the rows it still held).

-- name: claim
-- The rows wanted (one of the two conditions below), minus rows under a live lease. The CTE
-- locks only what it claims; the lease outlives this transaction, so the model call happens
-- outside any transaction. This claim is the owner of expired leases on corpus tables: a
-- crashed worker's rows are claimable again as soon as locked_until passes. Nothing while the
-- corpus is paused (breaker.sql).
-- Order: interactive producers first (claim_lane 0: API, e-mail), so a company's own post is
-- never behind a bulk backlog; then, within a lane, by each row's place in its own batch
-- (claim_seq), so one huge crawl or file interleaves with the others instead of starving them
-- (migration 0020; read in this order from the partial index {table}_claimable_idx). A batch
-- holds one lane only: interactive rows are embedded in a batch of their own, committed in a
-- fraction of a bulk batch's time (the other rows the CTE locked are left as they were).
-- %(max_lane)s 0: the interactive lane alone (the worker that never waits for a bulk batch in
-- flight, bootstrap.interactive_indexer_workers).
WITH claimable AS (
    SELECT id, claim_lane
      FROM {table}
     WHERE {wanted}
       AND (locked_until IS NULL OR locked_until < now())
       AND claim_lane <= %(max_lane)s
       AND NOT EXISTS (SELECT 1 FROM indexer_pauses WHERE corpus = %(corpus)s)
     ORDER BY claim_lane, claim_seq, created_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE {table} AS t
   SET locked_by = %(worker_id)s,
       locked_until = now() + make_interval(secs => %(lease)s)
  FROM claimable
 WHERE t.id = claimable.id
   AND claimable.claim_lane = (SELECT min(claim_lane) FROM claimable)
RETURNING t.id, {text} AS text, t.content_hash, t.{embedded_hash} AS embedded_hash,
          t.{embedding} IS NOT NULL AS has_vector, t.created_at, t.{target_hash} AS target_hash

-- name: pending
-- What claim takes first: pending or edited rows (the partial index {table}_claimable_idx).
(embedding_status = 'pending' OR (embedding_status = 'embedded' AND updated_at > embedded_at))

-- name: missing_from_build
-- While a model space is being built, what claim takes when nothing is pending: embedded rows
-- the new space does not hold yet, for that space alone (pending and edited rows get both
-- spaces' vectors). Served by the space's partial index {table}_<column>_todo_idx
-- (shortlist.indexer.migration).
({target_hash} IS DISTINCT FROM content_hash
 AND embedding_status = 'embedded' AND updated_at <= embedded_at)

-- name: store_in_target
-- Vectors of the space being built, each for the text it was computed from (a NULL vector: the
-- model rejected this text; the hash records that it was tried). Guarded by the text only: the
-- row's status and lease belong to the active space's work.
UPDATE {table} AS t
   SET {target_embedding} = v.embedding,
       {target_hash} = v.content_hash
  FROM unnest(%(ids)s::uuid[], %(vectors)s::vector[], %(hashes)s::bytea[])
       AS v (id, embedding, content_hash)
 WHERE t.id = v.id
   AND t.content_hash = v.content_hash
RETURNING t.id

-- name: store_embeddings
-- The commit of a batch: vector, the hash of the text it was computed from, and the status
-- flip in ONE statement (of the one transaction that also records the batch's failures). One
-- statement, not a vector write then a flip: every new row version costs an insert into every
-- index, the HNSW one above all, and two statements would write two versions per row.
-- Rows whose text changed since the claim (content_hash moved on) are left alone; they are
-- claimable again and get embedded with their new text. embedded_at is the wall clock, not
-- now(), so it is never older than an updated_at written while the batch was embedding.
UPDATE {table} AS t
   SET {embedding} = v.embedding,
       {embedded_hash} = v.content_hash,
       embedding_status = 'embedded',
       embedded_at = clock_timestamp(),
       embedding_error = NULL,
       embedding_attempts = 0
  FROM unnest(%(ids)s::uuid[], %(vectors)s::vector[], %(hashes)s::bytea[])
       AS v (id, embedding, content_hash)
 WHERE t.id = v.id
   AND t.content_hash = v.content_hash
   AND t.embedding_status IN ('pending', 'embedded')
RETURNING t.id

-- name: confirm_embedded
-- Rows whose embedded text did not change (only e.g. the salary did): the stored vector is
-- still right, so the status flips without calling the model again.
UPDATE {table}
   SET embedding_status = 'embedded',
       embedded_at = clock_timestamp(),
       embedding_error = NULL,
       embedding_attempts = 0
 WHERE id = ANY(%(ids)s::uuid[])
   AND embedding_status IN ('pending', 'embedded')
   AND {embedding} IS NOT NULL
   AND {embedded_hash} = content_hash
RETURNING id

-- name: mark_failed
-- A permanent error for this row's text (the model rejected it, the response was malformed):
-- failed with the reason. Never retried by the claim; an edit of the row or
-- `shortlist reindex --failed` makes it pending again.
UPDATE {table} AS t
   SET embedding_status = 'failed',
       embedding_error = f.error,
       embedding_failed_at = clock_timestamp(),
       embedding_attempts = t.embedding_attempts + 1
  FROM unnest(%(ids)s::uuid[], %(errors)s::text[], %(hashes)s::bytea[])
       AS f (id, error, content_hash)
 WHERE t.id = f.id
   AND t.content_hash = f.content_hash
   AND t.embedding_status IN ('pending', 'embedded')
RETURNING t.id

-- name: link_near_duplicates
-- One job, one listing (job_listings only: Corpus.links_duplicates), in the transaction of
-- store_embeddings: each just-embedded open listing, and each open listing that repeated one of
-- them (whose text has just changed), is linked to the oldest earlier listing of the same company,
-- city and title (shortlist_name_key, migration 0024), whose pay agrees, that is open, nobody's duplicate, and within
-- %(max_distance)s cosine distance of it (config.Settings.duplicate_distance says why that
-- figure); to none when there is none, which lists it again. Only links that change are written.
-- The originals are locked (FOR SHARE) and read again as they are then: one closed (or linked)
-- since this statement's snapshot, or by a transaction not yet committed, is no original (its
-- close promoted the duplicates it could see, not this one), and neither is one this statement
-- links itself, so duplicate_of only ever names an open listing that is nobody's duplicate; a
-- close after the lock waits for this transaction, and then promotes these links.
-- Rows can be embedded out of their order (two workers, an edit, a retry): a listing embedded
-- before an older one it repeats found no original then, so the open, unlinked listings after a
-- just-embedded one (same company and city, within the distance of it, the next 1,000) are
-- judged again too. That costs a 128-row batch ~11 ms more with 100 listings per company and
-- city (15 -> 26 ms of 20,000 listings; the batch's embedding takes ~1 s on the CPU).
WITH later AS (
    SELECT l.id
      FROM job_listings AS n
      CROSS JOIN LATERAL (
           SELECT c.id
             FROM (
                  SELECT c.id, c.{embedding} AS embedding
                    FROM job_listings AS c
                   WHERE shortlist_name_key(c.company_name) = shortlist_name_key(n.company_name)
                     AND shortlist_name_key(c.city_location) = shortlist_name_key(n.city_location)
                     AND shortlist_name_key(c.job_title) = shortlist_name_key(n.job_title)
                     AND (c.salary_min_ks IS NULL OR n.salary_min_ks IS NULL
                          OR (c.salary_min_ks, c.currency_code) = (n.salary_min_ks, n.currency_code))
                     AND (c.salary_max_ks IS NULL OR n.salary_max_ks IS NULL
                          OR (c.salary_max_ks, c.currency_code) = (n.salary_max_ks, n.currency_code))
                     AND c.status = 'open'
                     AND c.duplicate_of IS NULL
                     AND (c.created_at, c.id) > (n.created_at, n.id)
                   ORDER BY c.created_at, c.id
                   LIMIT 1000
                  ) AS c
            WHERE c.embedding <=> n.{embedding} <= %(max_distance)s
      ) AS l
     WHERE n.id = ANY (%(ids)s::uuid[])
       AND n.status = 'open'
       AND n.{embedding} IS NOT NULL
),
-- Whose link is judged: the just-embedded listings, their duplicates, and those after them.
-- (One OR of the three in a WHERE would read the whole table: the union reads three indexes.)
judging AS (
    SELECT unnest(%(ids)s::uuid[]) AS id
     UNION
    SELECT d.id FROM job_listings AS d WHERE d.duplicate_of = ANY (%(ids)s::uuid[])
     UNION
    SELECT id FROM later
),
judged AS MATERIALIZED (
    SELECT l.id, o.id AS original
      FROM judging AS k
      JOIN job_listings AS l ON l.id = k.id
      LEFT JOIN LATERAL (
           SELECT c.id
             FROM (
                  -- Company-restricted, through job_listings_originals_idx, and bounded: the
                  -- newest 1,000 of that company in that city. A 128-row batch took 10 ms with
                  -- ~100 per company and city (of 50,000 listings); with 10,000 of one company
                  -- in one city, 2.4 s unbounded (each compared with every row), 0.09 s so. A
                  -- repost of an older one of those is listed twice.
                  SELECT c.id, c.created_at, c.{embedding} AS embedding
                    FROM job_listings AS c
                   WHERE shortlist_name_key(c.company_name) = shortlist_name_key(l.company_name)
                     AND shortlist_name_key(c.city_location) = shortlist_name_key(l.city_location)
                     -- One description, another title or pay band: another job (two roles
                     -- written from one template). A pay one side does not state is no
                     -- disagreement.
                     AND shortlist_name_key(c.job_title) = shortlist_name_key(l.job_title)
                     AND (c.salary_min_ks IS NULL OR l.salary_min_ks IS NULL
                          OR (c.salary_min_ks, c.currency_code) = (l.salary_min_ks, l.currency_code))
                     AND (c.salary_max_ks IS NULL OR l.salary_max_ks IS NULL
                          OR (c.salary_max_ks, c.currency_code) = (l.salary_max_ks, l.currency_code))
                     AND c.status = 'open'
                     AND c.duplicate_of IS NULL
                     AND (c.created_at, c.id) < (l.created_at, l.id)
                   ORDER BY c.created_at DESC, c.id DESC
                   LIMIT 1000
                  ) AS c
            WHERE c.embedding <=> l.{embedding} <= %(max_distance)s
            ORDER BY c.created_at, c.id
            LIMIT 1
      ) AS o ON true
     WHERE l.status = 'open'
       AND l.{embedding} IS NOT NULL
),
originals AS MATERIALIZED (
    SELECT o.id
      FROM job_listings AS o
     WHERE o.id IN (SELECT original FROM judged)
       AND o.id NOT IN (SELECT id FROM judged WHERE original IS NOT NULL)  -- linked here itself
       AND o.status = 'open'
       AND o.duplicate_of IS NULL
       FOR SHARE
),
links AS (
    SELECT j.id, o.id AS original
      FROM judged AS j
      LEFT JOIN originals AS o ON o.id = j.original
)
UPDATE job_listings AS t
   SET duplicate_of = k.original
  FROM links AS k
 WHERE t.id = k.id
   AND t.status = 'open'  -- rechecked on the row as it is when locked: a close since stands
   AND t.duplicate_of IS DISTINCT FROM k.original
