-- The candidate-search pipeline (shortlist.talent). Every status transition is a guarded
-- UPDATE … WHERE status = … RETURNING: a row only leaves a state it may leave, and a worker only
-- moves a row in the transaction whose settle (shortlist.queue) ends its own lease on it;
-- a statement that takes rows over from whoever held them ends the lease with {lease_ended}
-- (shortlist.queue.lease), never by hand. Migration 0005 enforces the same state
-- machines with triggers, so a transition missing here fails loudly instead of corrupting data.
--
-- Locking order, everywhere: a transaction that writes a search's work locks the searches row
-- first (lock_search, FOR NO KEY UPDATE), then its tiers / stubs / results. One order means no
-- deadlock between workers, retries and appends; and because everything that adds work to a
-- search holds that lock, "is this search done?" (complete_search_if_done) is decided on a
-- snapshot that sees it. The reaper takes single rows with SKIP LOCKED and never waits.

-- ----------------------------------------------------------------------------------------
-- The internal corpus: bulk import and the bundled sample
-- ----------------------------------------------------------------------------------------

-- name: import_candidate
-- `shortlist ingest candidates`: insert, or refresh the fields of the row with that external id.
INSERT INTO candidates (source, full_name, headline, role_title, role_family, skills,
                        years_experience, location, email, summary, profile_url, external_id)
VALUES ('import', %(full_name)s, %(headline)s, %(role_title)s, %(role_family)s, %(skills)s,
        %(years_experience)s, %(location)s, %(email)s, %(summary)s, %(profile_url)s,
        %(external_id)s)
ON CONFLICT (external_id) DO UPDATE SET
    full_name = EXCLUDED.full_name, headline = EXCLUDED.headline,
    role_title = EXCLUDED.role_title, role_family = EXCLUDED.role_family,
    skills = EXCLUDED.skills, years_experience = EXCLUDED.years_experience,
    location = EXCLUDED.location, email = EXCLUDED.email, summary = EXCLUDED.summary,
    profile_url = EXCLUDED.profile_url

-- name: lock_sample_load
-- Transaction-scoped, so it is released by the commit that makes the sample visible: a second
-- process waits here, then sees a non-empty table and loads nothing.
SELECT pg_advisory_xact_lock(hashtext('shortlist.talent.sample'))

-- name: any_candidate
SELECT EXISTS (SELECT 1 FROM candidates) AS present

-- name: insert_sample_candidate
-- Internal profiles have no public URL and no external id.
INSERT INTO candidates (source, full_name, headline, role_title, role_family, skills,
                        years_experience, location, email, summary)
VALUES ('sample', %(full_name)s, %(headline)s, %(role_title)s, %(role_family)s, %(skills)s,
        %(years_experience)s, %(location)s, %(email)s, %(summary)s)

-- ----------------------------------------------------------------------------------------
-- Starting a search
-- ----------------------------------------------------------------------------------------

-- name: insert_search
INSERT INTO searches (owner_token_id, user_id, org_id, query, role, location,
                      min_years_experience, skills,
                      query_embedding, embedding_model_id, target_count, brief, credit_budget)
VALUES (%(owner_token_id)s, %(user_id)s, %(org_id)s, %(query)s, %(role)s, %(location)s, %(min_years)s, %(skills)s,
        %(embedding)s, %(model_id)s, %(target_count)s, %(brief)s, %(credit_budget)s)
RETURNING id

-- name: search_corpus
-- {embedding} and {halfvec}: the active model space's column and index type
-- (shortlist.embedding.spaces); the query vector is of the same model.
-- Hybrid retrieval over the internal corpus: the nearest neighbours by cosine distance (the
-- vector index on half-precision vectors, shortlist.db.vector_index: its expression verbatim)
-- and the best full-text matches (any query word, so a paraphrase still finds a keyword hit),
-- both obeying the brief's pre-filter (corpus_prefilter). Each person found is scored on their
-- own evidence and kept only above min_score (corpus_scored), so a niche brief gets few internal
-- hits instead of "the 15 least-bad people we have".
WITH vector_hits AS (
    SELECT id, row_number() OVER (ORDER BY distance, id) AS hit_rank
      FROM (SELECT c.id, c.{embedding} <=> %(embedding)s AS distance
              FROM candidates c
             WHERE c.{embedding} IS NOT NULL
               AND {corpus_prefilter}
             ORDER BY c.{embedding}::{halfvec} <=> %(embedding)s::vector::halfvec
             LIMIT %(pool_size)s) AS nearest
),
text_hits AS (
    SELECT id, row_number() OVER (ORDER BY text_rank DESC, id) AS hit_rank
      FROM (SELECT c.id, ts_rank_cd(c.search_tsv, q.query) AS text_rank
              FROM candidates c,
                   (SELECT replace(plainto_tsquery('english', %(terms)s)::text, '&', '|')::tsquery
                           AS query) AS q
             WHERE c.search_tsv @@ q.query
               AND c.{embedding} IS NOT NULL
               AND {corpus_prefilter}
             ORDER BY text_rank DESC
             LIMIT %(pool_size)s) AS matching
),
found AS (SELECT id FROM vector_hits UNION SELECT id FROM text_hits),
{corpus_scored}

-- name: corpus_scored
-- The people `found` (a CTE of ids before it) scored on their own evidence
-- (shortlist.relevance: logistic weights w_* of cosine similarity, the idf-weighted share of the
-- query's lexemes in the person's title and skills, and trigram similarity of the query and the
-- title), ordered by it and kept only above min_score, with the fields their constraints are
-- judged on.
scored AS (
    SELECT c.id,
           c.location, c.years_experience, c.skills, c.role_title, c.headline, c.summary,
           (1 / (1 + exp(-(%(w_intercept)s::float8
                           + %(w_cosine)s::float8 * (1 - (c.{embedding} <=> %(embedding)s))
                           + %(w_title_match)s::float8 * {title_match}
                           + %(w_title_similarity)s::float8
                             * word_similarity(%(terms)s, c.role_title)))))::real AS score
      FROM found
      JOIN candidates c ON c.id = found.id
     -- One contactability rule everywhere: nobody without an e-mail is a result (a backfilled
     -- person without one ends failed_no_email; the same person is no internal hit later),
     -- unless the provider holds one it does not show on this plan (email_on_file, 0018).
     WHERE c.email IS NOT NULL OR c.email_on_file
)
SELECT id AS candidate_id, score, location, years_experience, skills, role_title, headline,
       summary
  FROM scored
 WHERE score >= %(min_score)s
 ORDER BY score DESC, id
 LIMIT %(limit)s

-- name: corpus_prefilter
-- The brief's place, minimum years and skills as a predicate on the candidates row `c`, for
-- recall only (the verdict per constraint is shortlist.talent.constraints'): location_patterns
-- are the place's names, its region's and country's, folded as shortlist_fold folds the
-- location; people whose place or years are unknown pass.
(cardinality(%(location_patterns)s::text[]) = 0
 OR shortlist_fold(c.location) LIKE ANY (%(location_patterns)s::text[])
 OR btrim(c.location) = '')
AND (%(min_years)s::integer IS NULL OR c.years_experience IS NULL
     OR c.years_experience >= %(min_years)s::integer)
AND (cardinality(%(skills)s::text[]) = 0
     OR EXISTS (SELECT 1 FROM unnest(c.skills) AS s (skill)
                 WHERE lower(s.skill) = ANY (%(skills)s::text[])))

-- name: score_corpus_people
-- search_corpus for the people named in %(ids)s instead of the two nearest lists: the same
-- pre-filter and the same score (a saved people search's new people, shortlist.alerts.people,
-- whoever ranks where in the whole corpus).
WITH found AS (
    SELECT c.id
      FROM candidates c
     WHERE c.id = ANY (%(ids)s::uuid[])
       AND c.{embedding} IS NOT NULL
       AND {corpus_prefilter}
),
{corpus_scored}

-- name: append_internal_hits
-- Ranks 1..k for the corpus hits, written in the transaction that creates the search, so no
-- client can ever see the search without them; each with its role score and constraints.
WITH appended AS (
    INSERT INTO search_results (search_id, rank, candidate_id, tier, score, role_score,
                                constraints)
    SELECT %(search_id)s, h.ord::integer, h.candidate_id, 'internal', h.score, h.role_score,
           h.constraints
      FROM unnest(%(candidate_ids)s::uuid[], %(scores)s::real[], %(role_scores)s::real[],
                  %(constraints)s::jsonb[])
           WITH ORDINALITY AS h (candidate_id, score, role_score, constraints, ord)
    RETURNING rank
)
UPDATE searches
   SET result_count = (SELECT count(*) FROM appended), last_progress_at = now()
 WHERE id = %(search_id)s AND result_count = 0
RETURNING result_count

-- name: start_backfill
-- Only a running search starts its backfill: the tiers are queued for the search the guarded
-- UPDATE moved, so a refused start queues nothing.
WITH started AS (
    UPDATE searches SET backfill_started = true
     WHERE id = %(search_id)s AND status = 'running'
    RETURNING id
), tiers AS (
    INSERT INTO search_tiers (search_id, tier)
    SELECT started.id, t.tier FROM started, unnest(%(tiers)s::text[]) AS t (tier)
    ON CONFLICT (search_id, tier) DO NOTHING
)
SELECT id FROM started

-- name: complete_without_backfill
UPDATE searches SET status = 'complete', finished_at = now()
 WHERE id = %(search_id)s AND status = 'running' AND NOT backfill_started
RETURNING id

-- ----------------------------------------------------------------------------------------
-- The search row: the lock every writer of a search's work takes, and completion
-- ----------------------------------------------------------------------------------------

-- name: lock_search
SELECT status::text AS status, result_count, target_count, org_id
  FROM searches
 WHERE id = %(search_id)s
   FOR NO KEY UPDATE

-- name: touch_search
-- A worker reported on this search: the reaper's "no progress for stale_after" clock restarts.
UPDATE searches SET last_progress_at = now()
 WHERE id = %(search_id)s AND status = 'running'

-- name: search_is_done
-- A predicate on the searches row `s`, spliced into the two statements below: nothing is
-- running, and either the target or the credit budget is reached, or no tier can find anyone
-- else and nobody is queued.
NOT EXISTS (SELECT 1 FROM search_candidates c
             WHERE c.search_id = s.id AND c.status = 'running')
AND (s.result_count >= s.target_count
     OR (s.credit_budget IS NOT NULL AND s.credits_spent >= s.credit_budget)
     OR (NOT EXISTS (SELECT 1 FROM search_tiers t
                      WHERE t.search_id = s.id AND t.status IN ('queued', 'running'))
         AND NOT EXISTS (SELECT 1 FROM search_candidates c
                          WHERE c.search_id = s.id AND c.status = 'queued')))

-- name: complete_search_if_done
-- running → complete once search_is_done holds. Run right after lock_search, in the same
-- transaction: the lock waits out any transaction adding work, and this statement's snapshot
-- then sees that work. Stubs still queued then are not needed (target or budget reached): they
-- end skipped, and a search retry ("find more") re-queues them.
WITH done AS (
    UPDATE searches AS s
       SET status = 'complete', finished_at = now()
     WHERE s.id = %(search_id)s
       AND s.status = 'running'
       AND {search_is_done}
    RETURNING s.id
),
skipped AS (
    -- A profile a discovery left on a skipped stub is let go with it (a retry enriches again).
    UPDATE search_candidates AS c
       SET status = 'skipped', enriched_profile = NULL, updated_at = now()
      FROM done
     WHERE c.search_id = done.id AND c.status = 'queued'
)
SELECT id FROM done

-- ----------------------------------------------------------------------------------------
-- Discovery tiers (queue: search_tiers)
-- ----------------------------------------------------------------------------------------

-- name: claim_tiers
-- Claimable: queued and due, only for running searches that still need people, i.e. whose
-- results plus candidates in flight fall short of the target ("stop paging when enough").
-- records_first (the talent API's search returns whole records: PDL): for a strict or broad
-- tier, a queued web hit not yet enriched is not counted as in flight — a page of records
-- is preferred to buying its enrichment, which then waits (claim_candidates).
-- A running tier whose worker vanished is the reaper's (reap_lost_tiers).
WITH claimable AS (
    SELECT t.id
      FROM search_tiers t
      JOIN searches s ON s.id = t.search_id
     WHERE s.status = 'running'
       AND t.status = 'queued' AND t.not_before <= now()
       AND s.result_count + (SELECT count(*) FROM search_candidates c
                              WHERE c.search_id = s.id
                                AND (c.status = 'running'
                                     OR (c.status = 'queued'
                                         AND (c.enriched_profile IS NOT NULL
                                              OR NOT (%(records_first)s AND t.tier <> 'serp')))))
           < s.target_count
       AND (s.credit_budget IS NULL OR s.credits_spent < s.credit_budget)
       -- The broad tier widens the strict one: it waits for the strict tier's first page (or
       -- its end), so the people strict finds are not bought a second time as the shortfall
       -- of a broad page asked for in parallel (PDL bills every record returned). The serp
       -- tier, the fallback, runs alongside from the start.
       AND (t.tier <> 'broad' OR NOT EXISTS (
             SELECT 1 FROM search_tiers st
              WHERE st.search_id = t.search_id AND st.tier = 'strict'
                AND st.next_page = 1 AND st.status IN ('queued', 'running')))
     ORDER BY t.not_before, t.id
     LIMIT %(limit)s
       FOR UPDATE OF t SKIP LOCKED
)
UPDATE search_tiers AS t
   SET status = 'running',
       attempts = t.attempts + 1,
       locked_by = %(worker_id)s,
       locked_until = now() + make_interval(secs => %(lease)s),
       updated_at = now()
  FROM claimable, searches AS s
 WHERE t.id = claimable.id AND s.id = t.search_id
RETURNING t.id, t.tier, t.next_page, t.cursor, t.held, t.provider_done, t.attempts,
          s.id AS search_id, s.query, s.role,
          s.location, s.min_years_experience, s.skills, s.brief

-- name: known_external_ids
-- Who not to attempt again: everyone this search already attempted, whatever the outcome, by
-- every id they are known by (migration 0031: the stub's aliases, and those the bought record
-- gave its candidate), plus internal hits that came from a provider (a person ingested by an
-- earlier search).
SELECT unnest(array_prepend(external_id, aliases)) AS external_id
  FROM search_candidates WHERE search_id = %(search_id)s
UNION
SELECT unnest(array_prepend(c.external_id, c.aliases))
  FROM search_candidates sc
  JOIN candidates c ON c.id = sc.candidate_id
 WHERE sc.search_id = %(search_id)s
UNION
SELECT unnest(array_prepend(c.external_id, c.aliases))
  FROM search_results r
  JOIN candidates c ON c.id = r.candidate_id
 WHERE r.search_id = %(search_id)s AND c.external_id IS NOT NULL
UNION
-- and people the search's team already contacted or rejected (candidate_marks, 0011, 0029)
SELECT unnest(array_prepend(c.external_id, c.aliases))
  FROM searches s
  JOIN candidate_marks m ON m.org_id = s.org_id
  JOIN candidates c ON c.id = m.candidate_id
 WHERE s.id = %(search_id)s AND m.status IN ('contacted', 'rejected')
   AND c.external_id IS NOT NULL

-- name: attach_records
-- Whole records (a PDL search hit) of people already queued as a bare web hit, before anyone
-- paid to enrich them: the record goes onto that stub, which is then never enriched (the
-- search page paid for it already, one credit a record). Run before insert_stubs, under the
-- search's lock, so the record's own stub is then skipped as someone already attempted.
WITH page AS (
    SELECT s.profile, ARRAY(SELECT jsonb_array_elements_text(s.ids)) AS ids
      FROM unnest(%(profiles)s::jsonb[], %(ids)s::jsonb[]) AS s (profile, ids)
)
UPDATE search_candidates sc
   SET enriched_profile = page.profile,
       aliases = ARRAY(SELECT DISTINCT a FROM unnest(sc.aliases || page.ids) AS a
                        WHERE a <> sc.external_id),
       credits = sc.credits + 1,
       updated_at = now()
  FROM page
 WHERE sc.search_id = %(search_id)s
   AND sc.status = 'queued'
   AND sc.enriched_profile IS NULL
   AND (sc.external_id = ANY (page.ids) OR sc.aliases && page.ids)
RETURNING sc.id

-- name: insert_stubs
-- Written before any enrichment, so every later discovery call sees them as known. A stub none
-- of whose ids (external_id, aliases) the search already knows by any id goes in: the search's
-- lock (held by the caller) makes that check exact; the unique (search_id, external_id) is
-- the last word, and the known set only saves the round trip. `credits`: what the attempt
-- cost so far (1 for a record a paid search page carried).
WITH taken AS (
    SELECT unnest(array_prepend(external_id, aliases)) AS id
      FROM search_candidates WHERE search_id = %(search_id)s
    UNION
    SELECT unnest(array_prepend(c.external_id, c.aliases))
      FROM search_candidates sc JOIN candidates c ON c.id = sc.candidate_id
     WHERE sc.search_id = %(search_id)s
    UNION
    SELECT unnest(array_prepend(c.external_id, c.aliases))
      FROM search_results r JOIN candidates c ON c.id = r.candidate_id
     WHERE r.search_id = %(search_id)s AND c.external_id IS NOT NULL
),
page AS (
    SELECT s.external_id, s.display_name, s.profile, s.credits, s.ord,
           ARRAY(SELECT jsonb_array_elements_text(s.aliases)) AS aliases
      FROM unnest(%(external_ids)s::text[], %(display_names)s::text[], %(profiles)s::jsonb[],
                  %(aliases)s::jsonb[], %(credits)s::integer[])
           WITH ORDINALITY AS s (external_id, display_name, profile, aliases, credits, ord)
)
INSERT INTO search_candidates (search_id, external_id, tier, display_name, enriched_profile,
                               aliases, credits)
SELECT %(search_id)s, p.external_id, %(tier)s, p.display_name, p.profile, p.aliases, p.credits
  FROM page p
 WHERE NOT EXISTS (SELECT 1 FROM taken
                    WHERE taken.id = ANY (array_prepend(p.external_id, p.aliases)))
 ORDER BY p.ord
ON CONFLICT (search_id, external_id) DO NOTHING
RETURNING id

-- name: search_shortfall
-- How many more people the search needs: target - results - candidates in flight. Read after
-- lock_search, in the same transaction, so concurrent tier pages see each other's stubs.
-- records_first: a page of whole records does not count queued web hits not yet enriched
-- (they wait for it, claim_tiers).
SELECT s.target_count - s.result_count
       - (SELECT count(*) FROM search_candidates c
           WHERE c.search_id = s.id
             AND (c.status = 'running'
                  OR (c.status = 'queued'
                      AND (c.enriched_profile IS NOT NULL OR NOT %(records_first)s))))
       AS shortfall
  FROM searches s
 WHERE s.id = %(search_id)s

-- name: records_wanted
-- How many records a paid discovery page should ask for: the shortfall (records_first: web
-- hits not yet enriched not counted, as in search_shortfall), and never more than the
-- search's credit budget has left (a page is billed per record returned).
SELECT least(s.target_count - s.result_count
             - (SELECT count(*) FROM search_candidates c
                 WHERE c.search_id = s.id
                   AND (c.status = 'running'
                        OR (c.status = 'queued'
                            AND (c.enriched_profile IS NOT NULL OR NOT %(records_first)s)))),
             coalesce(s.credit_budget - s.credits_spent, 2147483647)) AS wanted
  FROM searches s
 WHERE s.id = %(search_id)s

-- name: tier_page_done
-- fetched: the provider was asked for next_page (the next claim asks for the one after); else
-- the page was the tier's held people. held: who this page brought beyond the search's
-- shortfall, taken before any new page is asked for. The tier is exhausted once the provider
-- has no more and nobody is held.
UPDATE search_tiers
   SET status = (CASE WHEN %(has_more)s OR jsonb_array_length(%(held)s::jsonb) > 0
                      THEN 'queued' ELSE 'exhausted' END)::tier_status,
       next_page = next_page + (CASE WHEN %(fetched)s THEN 1 ELSE 0 END),
       cursor = (CASE WHEN %(fetched)s THEN %(cursor)s::text ELSE cursor END),
       held = %(held)s::jsonb,
       provider_done = NOT %(has_more)s,
       found = found + %(found)s,
       attempts = 0,
       last_error = NULL,
       not_before = now(),
       updated_at = now()
 WHERE id = %(id)s AND status = 'running'
RETURNING status::text AS status

-- name: tier_outcome
-- What a tier's outcome writes besides its lease (LeaseTable.outcome, shortlist.queue.lease):
-- given back, a running tier is queued again; retried (the provider throttled: 429, paused),
-- queued and not due before the pause ends, with the reason. A tier no longer running (the
-- reaper's, a retry's, out of credit) keeps its state. attempts counts the claims of this page
-- whose worker was lost (reap_lost_tiers): a claim its live worker gave back is not one.
status = CASE WHEN t.status = 'running' AND o.kind IN ('give_back', 'retry') THEN 'queued'
              ELSE t.status END,
not_before = CASE WHEN t.status = 'running' AND o.kind = 'retry'
                  THEN now() + make_interval(secs => o.delay) ELSE t.not_before END,
attempts = CASE WHEN t.status = 'running' AND o.kind = 'retry' THEN 0
                WHEN t.status = 'running' AND o.kind = 'give_back' THEN greatest(t.attempts - 1, 0)
                ELSE t.attempts END,
last_error = CASE WHEN t.status = 'running' AND o.kind = 'retry' THEN o.reason
                  ELSE t.last_error END,
updated_at = now()

-- name: tier_failed
-- status: failed (the provider failed the tier) or quota_exhausted (the account is out of credit).
UPDATE search_tiers
   SET status = %(status)s::tier_status,
       last_error = %(error)s,
       updated_at = now()
 WHERE id = %(id)s AND status = 'running'
RETURNING id

-- name: enrichment_out_of_credit
-- status: queued | running → quota_exhausted for the tiers whose people all need an enrichment
-- (serp: a profile link, no record) once the enrichment account is out of credit: paging on
-- would only queue people nobody can enrich. A running tier's page is then dropped (its claim
-- no longer holds).
UPDATE search_tiers
   SET status = 'quota_exhausted',
       last_error = %(error)s,
       {lease_ended},
       updated_at = now()
 WHERE search_id = %(search_id)s AND tier = 'serp' AND status IN ('queued', 'running')
RETURNING id

-- ----------------------------------------------------------------------------------------
-- Candidates (queue: search_candidates)
-- ----------------------------------------------------------------------------------------

-- name: claim_candidates
-- Of running searches only (a stale search waits for its retry). Fair across searches: the
-- stub of the search with the fewest results + enrichments in flight goes first, so a search
-- that just started gets its first results while older ones fill up, instead of queueing
-- behind their whole backfill; within a search, people already paid for first (a PDL search
-- record needs no enrichment: the target fills from them before a paid enrichment starts),
-- then oldest stub first. A running stub whose worker vanished is the reaper's
-- (reap_lost_candidates).
WITH claimable AS (
    SELECT c.id
      FROM search_candidates c
      JOIN searches s ON s.id = c.search_id
     WHERE c.status = 'queued' AND s.status = 'running'
       -- Stop at the target: no enrichment starts once results + enrichments in flight
       -- reach it (the rest end skipped when the search completes).
       AND (c.requested
            OR s.result_count + (SELECT count(*) FROM search_candidates r
                                  WHERE r.search_id = c.search_id AND r.status = 'running')
               < s.target_count)
       -- A spent budget stops paid enrichment; a profile already in hand costs nothing.
       AND (c.enriched_profile IS NOT NULL OR s.credit_budget IS NULL
            OR s.credits_spent < s.credit_budget)
       -- records_first (the talent API's search returns whole records: PDL): a paid
       -- enrichment waits while a strict or broad page is out or due, which may fill the
       -- target with records already paid for; it is bought once none is, if the search
       -- still falls short. A page deferred (a 429, a full rate window) holds nothing, nor
       -- does a broad page waiting behind strict's deferred first one (claim_tiers).
       AND (c.enriched_profile IS NOT NULL OR c.requested OR NOT %(records_first)s
            OR NOT EXISTS (
                SELECT 1 FROM search_tiers t
                 WHERE t.search_id = c.search_id AND t.tier <> 'serp'
                   AND (t.status = 'running'
                        OR (t.status = 'queued' AND t.not_before <= now()
                            AND (t.tier <> 'broad' OR NOT EXISTS (
                                  SELECT 1 FROM search_tiers st
                                   WHERE st.search_id = t.search_id AND st.tier = 'strict'
                                     AND st.next_page = 1
                                     AND st.status IN ('queued', 'running')))))))
     ORDER BY s.result_count + (SELECT count(*) FROM search_candidates r
                                 WHERE r.search_id = c.search_id AND r.status = 'running'),
              c.enriched_profile IS NULL, c.created_at, c.id
     LIMIT %(limit)s
       FOR UPDATE OF c SKIP LOCKED
)
UPDATE search_candidates AS c
   SET status = 'running',
       attempts = c.attempts + 1,
       locked_by = %(worker_id)s,
       locked_until = now() + make_interval(secs => %(lease)s),
       updated_at = now()
  FROM claimable
 WHERE c.id = claimable.id
RETURNING c.id, c.search_id, c.external_id, c.tier, c.attempts, c.enriched_profile

-- name: candidate_text
-- The text the embedding indexer embeds for a candidates row (the placeholder is the
-- indexer's own candidates_text expression), so a profile embedded here is embedded exactly as
-- the indexer would have, and internal and backfilled candidates are scored alike.
SELECT {text} AS text
  FROM (SELECT %(full_name)s::text AS full_name, %(headline)s::text AS headline,
               %(role_title)s::text AS role_title, %(location)s::text AS location,
               %(skills)s::text[] AS skills, %(summary)s::text AS summary) AS candidates

-- name: candidate_by_ids
-- The corpus row of a person known by any of these ids (its own external_id first).
SELECT external_id
  FROM candidates
 WHERE external_id = ANY (%(ids)s::text[]) OR aliases && %(ids)s::text[]
 ORDER BY external_id = %(external_id)s DESC, created_at
 LIMIT 1

-- name: upsert_candidate
-- Ingest into the corpus by external id, vector included: the profile is searchable at once
-- and the indexer has nothing to redo (see mark_candidate_embedded). A row's source is where
-- it first came from; a later ingest refreshes its fields. The caller names the row by the id
-- the person already has in the corpus when any of theirs is there (candidate_by_ids); the
-- aliases gather every id the person was ever known by (migration 0031).
INSERT INTO candidates (external_id, source, full_name, headline, role_title, role_family,
                        skills, years_experience, location, email, email_on_file, summary,
                        profile_url, aliases, {embedding}, embedding_status, embedded_at)
VALUES (%(external_id)s, %(source)s, %(full_name)s, %(headline)s, %(role_title)s,
        %(role_family)s, %(skills)s, %(years_experience)s, %(location)s, %(email)s,
        %(email_on_file)s, %(summary)s, %(profile_url)s,
        ARRAY(SELECT DISTINCT a FROM unnest(%(aliases)s::text[]) AS a WHERE a <> %(external_id)s),
        %(embedding)s, 'embedded', clock_timestamp())
ON CONFLICT (external_id) DO UPDATE
   SET aliases = ARRAY(SELECT DISTINCT a FROM unnest(candidates.aliases || EXCLUDED.aliases) AS a
                        WHERE a <> candidates.external_id),
       full_name = EXCLUDED.full_name,
       headline = EXCLUDED.headline,
       role_title = EXCLUDED.role_title,
       role_family = EXCLUDED.role_family,
       skills = EXCLUDED.skills,
       years_experience = EXCLUDED.years_experience,
       location = EXCLUDED.location,
       email = EXCLUDED.email,
       email_on_file = EXCLUDED.email_on_file,
       summary = EXCLUDED.summary,
       profile_url = EXCLUDED.profile_url,
       {embedding} = EXCLUDED.{embedding},
       embedding_status = 'embedded',
       embedded_at = clock_timestamp(),
       embedding_error = NULL,
       embedding_attempts = 0
RETURNING id

-- name: mark_candidate_embedded
-- Second statement of the ingest: record which text the vector is of (content_hash is a
-- generated column, readable only once the row is written), and make embedded_at no older
-- than the updated_at the touch trigger just stamped, so the indexer's claim
-- (updated_at > embedded_at) skips the row.
UPDATE candidates
   SET {embedded_hash} = content_hash,
       embedded_at = greatest(embedded_at, updated_at)
 WHERE id = %(id)s
RETURNING id

-- name: append_result
-- THE append. One statement: lock the search row, take rank result_count + 1, insert unless
-- this person is already in the results, and bump result_count only if a row went in. The row
-- lock serialises appenders of one search, so ranks are 1..result_count with no gap and no
-- repeat however many workers append at once; (search_id, candidate_id) turns a duplicate into
-- a no-op (no row returned). The score is the person's fit to the whole brief: the role
-- probability (relevance_evidence) times the factors of the constraints judged
-- (shortlist.talent.constraints), both stored beside it. One person is one row, whatever id
-- each provider gave them: a row of another candidate sharing any of this one's ids (its
-- external_id and aliases, migration 0031: two rows ingested side by side by two searches
-- before either knew the other id) makes this append a no-op too.
WITH target AS (
    SELECT id, result_count
      FROM searches
     WHERE id = %(search_id)s
       FOR NO KEY UPDATE
),
me AS (
    SELECT array_remove(array_prepend(external_id, aliases), NULL) AS ids
      FROM candidates WHERE id = %(candidate_id)s
),
appended AS (
    INSERT INTO search_results (search_id, rank, candidate_id, search_candidate_id, tier, score,
                                role_score, constraints)
    SELECT target.id, target.result_count + 1, %(candidate_id)s, %(search_candidate_id)s,
           %(tier)s, %(score)s, %(role_score)s, %(constraints)s
      FROM target
     WHERE NOT EXISTS (
           SELECT 1
             FROM search_results r
             JOIN candidates c ON c.id = r.candidate_id, me
            WHERE r.search_id = target.id
              AND r.candidate_id <> %(candidate_id)s
              AND (c.external_id = ANY (me.ids) OR c.aliases && me.ids))
    ON CONFLICT (search_id, candidate_id) DO NOTHING
    RETURNING rank, score
)
UPDATE searches
   SET result_count = appended.rank, last_progress_at = now()
  FROM appended
 WHERE searches.id = %(search_id)s
RETURNING appended.rank, appended.score

-- name: finish_candidate
-- running → succeeded | failed_*, in the transaction whose settle ends the worker's lease.
UPDATE search_candidates
   SET status = %(status)s::candidate_status,
       candidate_id = coalesce(%(candidate_id)s::uuid, candidate_id),
       last_error = %(error)s,
       enriched_profile = NULL,
       updated_at = now()
 WHERE id = %(id)s AND status = 'running'
RETURNING id

-- name: keep_enriched_profile
-- The enrichment succeeded but the stub goes back to the queue (the embedder throttled): keep
-- the profile for the next claim (migration 0007), in the transaction whose settle gives the
-- worker's lease back.
UPDATE search_candidates
   SET enriched_profile = %(profile)s
 WHERE id = %(id)s AND status = 'running'
RETURNING id

-- ----------------------------------------------------------------------------------------
-- Reaper
-- ----------------------------------------------------------------------------------------

-- name: reap_lost_candidates
-- A running stub whose lease ran out: its worker vanished (killed, crashed, hung), which is not
-- the candidate's fault. Back to the queue, until max_lost workers were lost on it: then it
-- fails forward (failed_transient) with that reason. Not counted (counted = false): leases that
-- ran out in a database outage, whose live workers could neither renew nor give them back.
-- SKIP LOCKED: a row some transaction holds (a late commit, a retry) is left to the next
-- round, so the reaper never waits on a lock.
WITH lost AS (
    SELECT id FROM search_candidates
     WHERE status = 'running' AND locked_until < now()
       FOR UPDATE SKIP LOCKED
)
UPDATE search_candidates AS c
   SET status = (CASE WHEN %(counted)s AND c.lost_workers + 1 >= %(max_lost)s
                      THEN 'failed_transient' ELSE 'queued' END)::candidate_status,
       lost_workers = c.lost_workers + (CASE WHEN %(counted)s THEN 1 ELSE 0 END),
       last_error = CASE WHEN %(counted)s AND c.lost_workers + 1 >= %(max_lost)s
                         THEN 'worker lost ' || (c.lost_workers + 1) || ' times (lease expired)'
                         ELSE c.last_error END,
       {lease_ended},
       updated_at = now()
  FROM lost
 WHERE c.id = lost.id
RETURNING c.id, c.search_id, c.status::text AS status

-- name: reap_lost_tiers
-- A running tier whose lease ran out goes back to the queue, or fails after max_lost lost
-- workers in a row on the same page (a page that kills every worker that tries it): attempts
-- counts this claim too. Not counted (counted = false, as reap_lost_candidates): the claim is
-- taken off attempts.
WITH lost AS (
    SELECT id FROM search_tiers
     WHERE status = 'running' AND locked_until < now()
       FOR UPDATE SKIP LOCKED
)
UPDATE search_tiers AS t
   SET status = (CASE WHEN %(counted)s AND t.attempts >= %(max_lost)s THEN 'failed'
                      ELSE 'queued' END)::tier_status,
       last_error = CASE WHEN %(counted)s AND t.attempts >= %(max_lost)s
                         THEN 'worker lost: lease expired ' || t.attempts || ' times'
                         ELSE t.last_error END,
       attempts = CASE WHEN %(counted)s THEN t.attempts ELSE greatest(t.attempts - 1, 0) END,
       not_before = now(),
       {lease_ended},
       updated_at = now()
  FROM lost
 WHERE t.id = lost.id
RETURNING t.id, t.search_id, t.status::text AS status

-- name: running_searches_without_work
-- Candidates for completion (confirmed one by one by complete_search_if_done under the lock).
SELECT s.id
  FROM searches s
 WHERE s.status = 'running'
   AND {search_is_done}

-- name: mark_stale_searches
-- No progress for stale_after, and no candidate held by a live worker: work under a live lease
-- is progress that has not committed yet.
UPDATE searches AS s
   SET status = 'stale'
 WHERE s.status = 'running'
   AND s.last_progress_at < now() - make_interval(secs => %(stale_after)s)
   AND NOT EXISTS (SELECT 1 FROM search_candidates c
                    WHERE c.search_id = s.id AND c.status = 'running'
                      AND c.locked_until >= now())
RETURNING s.id

-- ----------------------------------------------------------------------------------------
-- Retries (from the UI)
-- ----------------------------------------------------------------------------------------

-- name: retry_candidate
-- failed_* -> queued (a failed row holds no lease: its worker's settle or the reaper ended it).
UPDATE search_candidates
   SET status = 'queued', attempts = 0, lost_workers = 0, last_error = NULL, requested = true,
       updated_at = now()
 WHERE id = %(id)s AND search_id = %(search_id)s
   AND status IN ('failed_no_email', 'failed_transient', 'failed_permanent')
RETURNING id

-- name: candidate_status
SELECT status::text AS status
  FROM search_candidates
 WHERE id = %(id)s AND search_id = %(search_id)s

-- name: requeue_failed_candidates
-- A search retry re-runs what may succeed now: transient failures, stubs left running by a
-- worker that died (lease expired) before the reaper got to them, and ("find more") the stubs
-- skipped at the target, which the recruiter now asks for.
UPDATE search_candidates
   SET status = 'queued', attempts = 0, lost_workers = 0, last_error = NULL, requested = true,
       {lease_ended}, updated_at = now()
 WHERE search_id = %(search_id)s
   AND (status IN ('failed_transient', 'skipped')
        OR (status = 'running' AND locked_until < now()))
RETURNING id

-- name: requeue_failed_tiers
UPDATE search_tiers
   SET status = 'queued', attempts = 0, last_error = NULL, not_before = now(),
       {lease_ended}, updated_at = now()
 WHERE search_id = %(search_id)s
   AND (status IN ('failed', 'quota_exhausted') OR (status = 'running' AND locked_until < now()))
RETURNING tier

-- name: resume_search
-- Its queued work becomes claimable again: wake the backfill workers (the triggers only fire
-- for tier and stub changes, and a stale search's queued rows do not change). %(channel)s is
-- shortlist.db.channels.BACKFILL.
WITH resumed AS (
    UPDATE searches
       SET status = 'running', finished_at = NULL, last_progress_at = now()
     WHERE id = %(search_id)s AND status IN ('complete', 'stale')
    RETURNING id
)
SELECT id, pg_notify(%(channel)s, 'searches') FROM resumed

-- ----------------------------------------------------------------------------------------
-- Reads (the results endpoint and the search summaries)
-- ----------------------------------------------------------------------------------------

-- name: get_search
SELECT id, owner_token_id, user_id, org_id,
       (SELECT coalesce(u.email::text, u.name) FROM users AS u WHERE u.id = searches.user_id)
           AS owner,
       query, role, location, min_years_experience, skills,
       status::text AS status, result_count, target_count, backfill_started, created_at,
       last_progress_at, finished_at, brief, credit_budget, credits_spent
  FROM searches
 WHERE id = %(search_id)s

-- name: list_searches
SELECT id, owner_token_id, user_id, org_id,
       (SELECT coalesce(u.email::text, u.name) FROM users AS u WHERE u.id = searches.user_id)
           AS owner,
       query, role, location, min_years_experience, skills,
       status::text AS status, result_count, target_count, backfill_started, created_at,
       last_progress_at, finished_at, brief, credit_budget, credits_spent
  FROM searches
-- A team's searches: every member's (who started each is `owner`).
 WHERE org_id = %(org_id)s
 ORDER BY created_at DESC, id
 LIMIT %(limit)s

-- name: results_after
-- A forgotten person's row is a tombstone (migration 0022): its rank, tier and score, no person.
SELECT r.rank, r.score, r.role_score, r.constraints, r.tier, r.search_candidate_id,
       CASE WHEN r.forgotten_at IS NOT NULL THEN 'forgotten'
            ELSE coalesce(sc.status::text, 'succeeded') END AS status,
       c.id AS candidate_id, c.full_name, c.headline, c.role_title, c.location, c.skills,
       c.years_experience, c.email, c.email_on_file, c.profile_url, c.summary
  FROM search_results r
  LEFT JOIN candidates c ON c.id = r.candidate_id
  LEFT JOIN search_candidates sc ON sc.id = r.search_candidate_id
 WHERE r.search_id = %(search_id)s AND r.rank > %(after)s
 ORDER BY r.rank
 LIMIT %(limit)s

-- name: candidate_counts
SELECT status::text AS status, count(*) AS n
  FROM search_candidates
 WHERE search_id = %(search_id)s
 GROUP BY status

-- name: open_attempts
-- Every stub that did not (yet) make it into the results, for the UI to show with its state.
SELECT id, external_id, display_name, tier, status::text AS status, last_error
  FROM search_candidates
 WHERE search_id = %(search_id)s AND status <> 'succeeded'
 ORDER BY id
 LIMIT %(limit)s

-- name: tiers_of_search
SELECT tier, status::text AS status, next_page, found, jsonb_array_length(held) AS held,
       attempts, last_error, not_before, updated_at, calls
  FROM search_tiers
 WHERE search_id = %(search_id)s
 ORDER BY array_position(ARRAY['strict', 'broad', 'serp'], tier)

-- ----------------------------------------------------------------------------------------
-- Relevance floor and the credit ledger
-- ----------------------------------------------------------------------------------------

-- name: relevance_evidence
-- What a backfilled person's score is computed from (shortlist.relevance), measured as
-- search_corpus measures it for an internal hit: cosine to the search's query vector, the
-- idf-weighted share of the query's lexemes in the person's title and skills (title_match),
-- and the trigram similarity of the query terms and the title.
SELECT 1 - (s.query_embedding <=> c.{embedding}) AS cosine,
       {title_match} AS title_match,
       word_similarity(%(terms)s, c.role_title) AS title_similarity
  FROM searches s, candidates c
 WHERE s.id = %(search_id)s AND c.id = %(candidate_id)s

-- name: record_provider_calls
-- The ledger rows of one piece of work, the search's running credit total, and the tier's
-- call count, in one statement.
WITH calls AS (
    INSERT INTO provider_calls (search_id, owner_token_id, user_id, org_id, provider, kind,
                                tier, credits, outcome)
    SELECT s.id, s.owner_token_id, s.user_id, s.org_id, c.provider, c.kind, %(tier)s, c.credits, c.outcome
      FROM searches s,
           unnest(%(providers)s::text[], %(kinds)s::text[], %(credits)s::integer[],
                  %(outcomes)s::text[]) AS c (provider, kind, credits, outcome)
     WHERE s.id = %(search_id)s
    RETURNING credits
),
tier AS (
    UPDATE search_tiers
       SET calls = calls + (SELECT count(*) FROM calls)
     WHERE search_id = %(search_id)s AND tier = %(tier)s AND %(discovery)s
),
attempt AS (
    -- an enrichment's credits go to the person it was for (credits_on_results)
    UPDATE search_candidates
       SET credits = credits + (SELECT coalesce(sum(credits), 0) FROM calls)
     WHERE id = %(attempt)s::bigint
)
UPDATE searches
   SET credits_spent = credits_spent + (SELECT coalesce(sum(credits), 0) FROM calls)
 WHERE id = %(search_id)s
RETURNING credits_spent

-- name: credits_by_provider
SELECT provider, sum(credits)::integer AS credits, count(*) FILTER (WHERE kind = 'enrich')
       AS enrichments
  FROM provider_calls
 WHERE search_id = %(search_id)s
 GROUP BY provider
 ORDER BY provider

-- name: credits_on_results
-- What the search paid for the people who became its results: a search record's credit, or
-- the enrichment's (search_candidates.credits, migration 0031).
SELECT coalesce(sum(sc.credits), 0)::integer AS credits
  FROM search_results r
  JOIN search_candidates sc ON sc.id = r.search_candidate_id
 WHERE r.search_id = %(search_id)s

-- name: corpus_skills
-- The skill vocabulary of the corpus (the brief parser's), most common spelling first.
SELECT min(skill) AS skill
  FROM (SELECT unnest(skills) AS skill FROM candidates) AS all_skills
 GROUP BY lower(skill)
HAVING count(*) >= 2
 ORDER BY count(*) DESC, lower(skill)
 LIMIT %(limit)s

-- name: search_model
-- The model space a search's query vector is of (shortlist.embedding.spaces).
SELECT embedding_model_id, query, role, skills FROM searches WHERE id = %(search_id)s

-- name: move_search_to_space
-- A search that outlived a model switch: its query vector again, by the model now active, so
-- the people it still finds are scored in the space they are embedded in.
UPDATE searches
   SET query_embedding = %(embedding)s, embedding_model_id = %(model_id)s
 WHERE id = %(search_id)s
   AND embedding_model_id IS DISTINCT FROM %(model_id)s
