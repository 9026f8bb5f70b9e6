-- Forgetting people (shortlist.privacy): erasure on request, the suppression list, retention.

-- name: privacy_key
SELECT key FROM privacy_key

-- name: suppressed_among
SELECT digest FROM suppressed_people WHERE digest = ANY (%(digests)s::bytea[])

-- name: suppress
INSERT INTO suppressed_people (digest, kind)
SELECT d, k FROM unnest(%(digests)s::bytea[], %(kinds)s::text[]) AS s (d, k)
ON CONFLICT (digest) DO NOTHING

-- name: people_matching
-- Candidates named by an id, an e-mail address (any case) or a LinkedIn profile (by external
-- id or profile URL; the caller checks the URL's slug exactly).
SELECT id, email, profile_url, external_id
  FROM candidates
 WHERE id = %(id)s::uuid
    OR (%(email)s::text IS NOT NULL AND lower(email) = %(email)s::text)
    OR (%(linkedin)s::text IS NOT NULL
        AND (external_id = %(linkedin)s::text OR profile_url ILIKE %(url_pattern)s::text))

-- name: lock_searches_of
-- The searches holding these people, locked first and in id order (the pipeline's lock order:
-- the search row, then its stubs and results), so an erasure never deadlocks an append.
SELECT s.id
  FROM searches AS s
 WHERE s.id IN (SELECT search_id FROM search_results WHERE candidate_id = ANY (%(ids)s::uuid[])
                UNION
                SELECT search_id FROM search_candidates
                 WHERE candidate_id = ANY (%(ids)s::uuid[])
                    OR external_id = ANY (%(external_ids)s::text[])
                UNION
                SELECT search_id FROM search_tiers
                 WHERE held @? '$[*].external_id'
                   AND EXISTS (SELECT 1 FROM jsonb_array_elements(held) AS e
                                WHERE e ->> 'external_id' = ANY (%(external_ids)s::text[])))
 ORDER BY s.id
   FOR NO KEY UPDATE

-- name: tombstone_results
-- The person leaves every result list; the rank stays, as a tombstone (migration 0022).
UPDATE search_results
   SET candidate_id = NULL, constraints = NULL, forgotten_at = now()
 WHERE candidate_id = ANY (%(ids)s::uuid[])
RETURNING search_id, rank

-- name: scrub_stubs
-- The person's attempts keep their place and status but lose every trace of who it was; one
-- still waiting is skipped (queued → skipped), and nothing ever enriches a 'forgotten:' id.
UPDATE search_candidates
   SET external_id = 'forgotten:' || id,
       display_name = NULL,
       enriched_profile = NULL,
       last_error = CASE WHEN last_error IS NULL THEN NULL ELSE 'forgotten on request' END,
       status = CASE WHEN status = 'queued' THEN 'skipped'::candidate_status ELSE status END,
       candidate_id = NULL,
       updated_at = now()
 WHERE candidate_id = ANY (%(ids)s::uuid[]) OR external_id = ANY (%(external_ids)s::text[])
RETURNING id

-- name: scrub_held
-- People a tier held for a later page: dropped.
UPDATE search_tiers
   SET held = coalesce((SELECT jsonb_agg(e ORDER BY n)
                          FROM jsonb_array_elements(held) WITH ORDINALITY AS h (e, n)
                         WHERE NOT (e ->> 'external_id' = ANY (%(external_ids)s::text[]))),
                       '[]'::jsonb)
 WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(held) AS e
                WHERE e ->> 'external_id' = ANY (%(external_ids)s::text[]))
RETURNING id

-- name: delete_people
-- The profile itself; marks, notes and hidden entries go with it (ON DELETE CASCADE).
DELETE FROM candidates WHERE id = ANY (%(ids)s::uuid[]) RETURNING id

-- name: unmarked_bought_profiles
-- Retention: profiles bought from a provider, not refreshed for the retention period, that no
-- recruiter marked. Oldest first, a batch at a time.
SELECT c.id
  FROM candidates AS c
 WHERE c.source IN ('talent_api', 'serp')
   AND c.updated_at < now() - make_interval(secs => %(older_than)s)
   AND NOT EXISTS (SELECT 1 FROM candidate_marks AS m WHERE m.candidate_id = c.id)
 ORDER BY c.updated_at
 LIMIT %(limit)s
   FOR UPDATE OF c SKIP LOCKED

-- name: scrub_attempt
-- One attempt found to be a forgotten person: it keeps its status, nothing of who it was.
UPDATE search_candidates
   SET external_id = 'forgotten:' || id, display_name = NULL, enriched_profile = NULL,
       candidate_id = NULL
 WHERE id = %(id)s

-- name: mail_of_senders
-- Inbound messages of these addresses (lower-case), whatever their status: sent from one (the
-- envelope sender) or naming one in their raw bytes (escape-encoded, so invalid UTF-8 is
-- searched too, and matched against the patterns of privacy.address_pattern: a whole address,
-- any case). Locked: a parser finishing one is waited for.
SELECT id
  FROM inbound_mail
 WHERE erased_at IS NULL
   AND (lower(btrim(mail_from, '<> ')) = ANY (%(emails)s::text[])
        OR encode(raw, 'escape') ~* ANY (%(patterns)s::text[]))
 ORDER BY id
   FOR UPDATE

-- name: expired_mail
-- Retention: handled messages that arrived before the retention period and whose answer is
-- settled: sent, never due (no envelope sender), or its one attempt, right after the parse,
-- long over. Oldest first, a batch at a time.
SELECT id
  FROM inbound_mail
 WHERE erased_at IS NULL AND status IN ('posted', 'rejected', 'failed')
   AND received_at < now() - make_interval(secs => %(older_than)s)
   AND (replied_at IS NOT NULL OR mail_from IS NULL
        OR updated_at < now() - make_interval(secs => %(reply_settled)s))
 ORDER BY received_at
 LIMIT %(limit)s
   FOR UPDATE SKIP LOCKED

-- name: erase_mail
-- These messages lose their personal data (raw message, envelope sender, Message-ID); the
-- company, dedup key, status, reason, listing and times stay (migration 0026). A handled one
-- keeps its status; one still queued or running (on request only) becomes failed, which a
-- parser holding it cannot undo: every finish and release moves only a row still 'running'.
UPDATE inbound_mail
   SET raw = NULL, mail_from = NULL, message_id = NULL, erased_at = now(),
       status = CASE WHEN status IN ('queued', 'running') THEN 'failed' ELSE status END,
       reason = CASE WHEN status IN ('queued', 'running') THEN 'forgotten on request'
                     ELSE reason END,
       updated_at = CASE WHEN status IN ('queued', 'running') THEN now() ELSE updated_at END,
       locked_by = NULL, locked_until = NULL
 WHERE id = ANY (%(ids)s::bigint[]) AND erased_at IS NULL
   AND (status IN ('posted', 'rejected', 'failed') OR %(on_request)s::boolean)
RETURNING id
