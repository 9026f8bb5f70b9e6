-- Forgetting people (shortlist.privacy): erasure on request, the suppression list, retention.

-- name: privacy_key
SELECT key FROM privacy_key

-- name: suppressed_among
SELECT digest FROM suppressed_people WHERE digest = ANY (%(digests)s::bytea[])

-- name: suppress
INSERT INTO suppressed_people (digest, kind)
SELECT d, k FROM unnest(%(digests)s::bytea[], %(kinds)s::text[]) AS s (d, k)
ON CONFLICT (digest) DO NOTHING

-- name: erasure_lock
-- An erasure excludes the commit of every ingest (which holds the lock shared): one that
-- committed first is found by the erasure's scan; one that commits after sees the suppression.
SELECT pg_advisory_xact_lock(hashtext('shortlist.privacy.erasure'))

-- name: ingest_lock
-- An ingest about to commit a person: shared with other ingests, excluded by an erasure.
SELECT pg_advisory_xact_lock_shared(hashtext('shortlist.privacy.erasure'))

-- name: people_matching
-- Candidates named by an id, an e-mail address (lower-case), an external id (a LinkedIn one
-- or a provider's), a LinkedIn profile URL or a name (the caller checks a URL's slug and a
-- name's company exactly).
SELECT id, email, profile_url, external_id, full_name, aliases,
       concat_ws(' ', headline, role_title, summary) AS about
  FROM candidates
 WHERE id = %(id)s::uuid
    OR lower(email) = ANY (%(emails)s::text[])
    OR external_id = ANY (%(external_ids)s::text[])
    -- the person's other ids: an older LinkedIn slug, the PDL id (migration 0031)
    OR aliases && %(external_ids)s::text[]
    OR lower(external_id) = ANY (%(linkedin_ids)s::text[])
    OR profile_url ILIKE ANY (%(url_patterns)s::text[])
    OR lower(btrim(full_name)) = ANY (%(names)s::text[])

-- name: stubs_matching
-- Backfill attempts naming one of these people: by their external id, by the profile a
-- discovery or an enrichment left on them (e-mail address, id, LinkedIn URL), or by the name
-- the discovery gave (the caller checks a URL's slug and a name's company exactly).
SELECT id, external_id, display_name, enriched_profile AS profile
  FROM search_candidates
 WHERE external_id = ANY (%(external_ids)s::text[])
    OR lower(external_id) = ANY (%(linkedin_ids)s::text[])
    OR lower(enriched_profile ->> 'email') = ANY (%(emails)s::text[])
    OR enriched_profile ->> 'external_id' = ANY (%(external_ids)s::text[])
    OR enriched_profile ->> 'profile_url' ILIKE ANY (%(url_patterns)s::text[])
    OR lower(btrim(display_name)) = ANY (%(names)s::text[])

-- name: held_matching
-- People a tier holds for a later page, matched as attempts are.
SELECT t.id AS tier_id, h.e ->> 'external_id' AS external_id,
       h.e ->> 'display_name' AS display_name, h.e -> 'profile' AS profile
  FROM search_tiers AS t, jsonb_array_elements(t.held) AS h (e)
 WHERE jsonb_array_length(t.held) > 0
   AND (h.e ->> 'external_id' = ANY (%(external_ids)s::text[])
        OR lower(h.e ->> 'external_id') = ANY (%(linkedin_ids)s::text[])
        OR lower(h.e -> 'profile' ->> 'email') = ANY (%(emails)s::text[])
        OR h.e -> 'profile' ->> 'external_id' = ANY (%(external_ids)s::text[])
        OR h.e -> 'profile' ->> 'profile_url' ILIKE ANY (%(url_patterns)s::text[])
        OR lower(btrim(h.e ->> 'display_name')) = ANY (%(names)s::text[]))

-- name: lock_searches_of
-- The searches holding these people, locked first and in id order (the pipeline's lock order:
-- the search row, then its stubs and results), so an erasure never deadlocks an append.
SELECT s.id
  FROM searches AS s
 WHERE s.id IN (SELECT search_id FROM search_results WHERE candidate_id = ANY (%(ids)s::uuid[])
                UNION
                SELECT search_id FROM search_candidates
                 WHERE candidate_id = ANY (%(ids)s::uuid[])
                    OR id = ANY (%(stub_ids)s::bigint[])
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
       enriched_profile = NULL, aliases = '{}',
       last_error = CASE WHEN last_error IS NULL THEN NULL ELSE 'forgotten on request' END,
       status = CASE WHEN status = 'queued' THEN 'skipped'::candidate_status ELSE status END,
       candidate_id = NULL,
       updated_at = now()
 WHERE candidate_id = ANY (%(ids)s::uuid[]) OR id = ANY (%(stub_ids)s::bigint[])
    OR external_id = ANY (%(external_ids)s::text[])
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
       aliases = '{}', candidate_id = NULL
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
-- parser holding it cannot undo: every finish and give-back moves only a row still 'running'
-- (that parser's own settle ends its lease).
UPDATE inbound_mail
   SET raw = NULL, mail_from = NULL, message_id = NULL, erased_at = now(),
       status = CASE WHEN status IN ('queued', 'running') THEN 'failed' ELSE status END,
       reason = CASE WHEN status IN ('queued', 'running') THEN 'forgotten on request'
                     ELSE reason END,
       updated_at = CASE WHEN status IN ('queued', 'running') THEN now() ELSE updated_at END
 WHERE id = ANY (%(ids)s::bigint[]) AND erased_at IS NULL
   AND (status IN ('posted', 'rejected', 'failed') OR %(on_request)s::boolean)
RETURNING id

-- name: mail_to_scan
-- Messages not yet erased, a batch at a time by id: their decoded parts are searched in Python
-- (a base64 or quoted-printable part hides an address from a search of the raw bytes).
SELECT id, raw FROM inbound_mail
 WHERE erased_at IS NULL AND id > %(after)s
 ORDER BY id
 LIMIT %(limit)s

-- name: lock_mail
-- These messages, locked (a parser finishing one is waited for), with the listing each made.
SELECT id, listing_id FROM inbound_mail
 WHERE id = ANY (%(ids)s::bigint[]) AND erased_at IS NULL
 ORDER BY id
   FOR UPDATE

-- name: listings_to_redact
SELECT id, description FROM job_listings WHERE id = ANY (%(ids)s::uuid[]) ORDER BY id FOR UPDATE

-- name: redact_listing
-- A listing written from a forgotten sender's mail: the page without their address and phone.
UPDATE job_listings SET description = %(description)s, updated_at = now() WHERE id = %(id)s

-- name: searches_naming
-- Searches whose own words (query, role, brief) name one of these people.
SELECT id, query, role, brief FROM searches
 WHERE query ILIKE ANY (%(patterns)s::text[]) OR role ILIKE ANY (%(patterns)s::text[])
    OR brief::text ILIKE ANY (%(patterns)s::text[])
 ORDER BY id
   FOR NO KEY UPDATE

-- name: redact_search
UPDATE searches SET query = %(query)s, role = %(role)s, brief = %(brief)s WHERE id = %(id)s

-- name: notes_naming
-- Recruiters' notes on other people that name one of these people.
SELECT recruiter_token_id, candidate_id, note FROM candidate_marks
 WHERE note ILIKE ANY (%(patterns)s::text[])
   FOR NO KEY UPDATE

-- name: redact_note
UPDATE candidate_marks SET note = %(note)s
 WHERE recruiter_token_id = %(token_id)s AND candidate_id = %(candidate_id)s

-- name: expired_attempts
-- Retention: the backfill attempts and held people of searches finished before the retention
-- period lose who they were (the stubs keep place and status; results keep their profiles,
-- which have their own retention).
WITH old AS (
    SELECT id FROM searches
     WHERE status IN ('complete', 'stale')
       AND coalesce(finished_at, last_progress_at) < now() - make_interval(secs => %(older_than)s)
       AND (EXISTS (SELECT 1 FROM search_candidates AS c
                     WHERE c.search_id = searches.id AND c.external_id NOT LIKE 'forgotten:%%')
            OR EXISTS (SELECT 1 FROM search_tiers AS t
                        WHERE t.search_id = searches.id AND jsonb_array_length(t.held) > 0))
     ORDER BY id
     LIMIT %(limit)s
       FOR NO KEY UPDATE SKIP LOCKED
),
stubs AS (
    UPDATE search_candidates AS c
       SET external_id = 'forgotten:' || c.id, display_name = NULL, enriched_profile = NULL,
           aliases = '{}',
           last_error = CASE WHEN c.last_error IS NULL THEN NULL ELSE 'past retention' END
      FROM old
     WHERE c.search_id = old.id AND c.external_id NOT LIKE 'forgotten:%%'
),
held AS (
    UPDATE search_tiers AS t SET held = '[]'::jsonb
      FROM old
     WHERE t.search_id = old.id AND jsonb_array_length(t.held) > 0
)
SELECT id FROM old

-- name: forget_alert_subscribers
-- A forgotten person's saved searches, matches and digests go with their address (ON DELETE
-- CASCADE); the suppression list keeps it from being saved again.
DELETE FROM alert_subscribers WHERE lower(email::text) = ANY (%(emails)s::text[])

-- name: forget_apply_addresses
-- Listings that name a forgotten person's address as where to apply (an e-mailed post's reply
-- address, migration 0033) lose it; the listing stays.
UPDATE job_listings SET apply_email = NULL WHERE lower(apply_email) = ANY (%(emails)s::text[])
