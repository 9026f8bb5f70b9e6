-- Saved searches and their subscribers (shortlist.alerts.store).

-- name: upsert_subscriber
-- The subscriber of an address (one per address, whatever it saved); a signed-in user's save
-- ties it to their account.
INSERT INTO alert_subscribers (email, user_id)
VALUES (%(email)s, %(user_id)s)
ON CONFLICT (email) DO UPDATE
   SET user_id = coalesce(alert_subscribers.user_id, excluded.user_id)
RETURNING id, status

-- name: find_query
SELECT id FROM alert_queries WHERE normalised = %(normalised)s

-- name: title_words
-- A query's title words, as job search compares them with titles (search.sql, candidate_ctes:
-- the words but stop words).
SELECT coalesce((SELECT string_agg(w, ' ')
                   FROM regexp_split_to_table(%(terms)s, '\s+') AS w
                  WHERE to_tsvector('english', w) <> ''), '') AS title_words

-- name: insert_query
-- A distinct query, stored once (a concurrent save of the same text inserts nothing), with its
-- vector in each model space in use ({columns}: the active one's, and during a model migration
-- the one being built; {vectors} their values) and its title words (the keyword path's, whose
-- trigrams the match queue reads: shortlist.alerts.query_vectors).
WITH q AS (
    INSERT INTO alert_queries (normalised, {columns})
    VALUES (%(normalised)s, {vectors})
    ON CONFLICT (normalised) DO NOTHING
    RETURNING id
), w AS (
    INSERT INTO alert_query_words (query_id, title_words)
    SELECT id, %(title_words)s FROM q
)
SELECT id FROM q

-- name: insert_search
-- A saved search of its owner's account (user_id; NULL signed out), active at once when its
-- consent was given in saving (consent_at).
INSERT INTO saved_searches (subscriber_id, query_id, query, location, salary_min,
                            salary_currency, work_mode, remote_country, visa, min_score,
                            frequency, timezone, local_hour, status, consent_at,
                            webhook_org_id, user_id, email_confirmed)
VALUES (%(subscriber_id)s, %(query_id)s, %(query)s, %(location)s, %(salary_min)s,
        %(salary_currency)s, %(work_mode)s, %(remote_country)s, %(visa)s, %(min_score)s,
        %(frequency)s, %(timezone)s, %(hour)s, %(status)s,
        CASE WHEN %(status)s = 'active' THEN now() END, %(webhook_org_id)s, %(user_id)s,
        %(email_confirmed)s)
RETURNING id, status

-- name: confirmations_today
-- Confirmation e-mails an address was sent in the last day (a cap: nobody can use the form to
-- mail a stranger over and over), a webhook search's e-mail waiting for its consent included.
SELECT count(*) AS n
  FROM saved_searches
 WHERE subscriber_id = %(subscriber_id)s AND created_at > now() - interval '1 day'
   AND (consent_at IS NULL OR NOT email_confirmed)

-- name: confirm
-- Double opt-in, pending -> active, while its link is valid; the consent time is kept.
UPDATE saved_searches
   SET status = 'active', consent_at = now()
 WHERE id = %(id)s AND status = 'pending'
   AND created_at > now() - make_interval(secs => %(valid_for)s)
RETURNING id

-- name: confirm_email
-- The address of a search active for an organisation's webhooks consents to its e-mail (the
-- double opt-in link, while valid): its digests start, with what matched meanwhile.
UPDATE saved_searches
   SET email_confirmed = true,
       due_at = CASE WHEN EXISTS (SELECT 1 FROM alert_matches AS m
                                   WHERE m.search_id = saved_searches.id AND m.status = 'queued')
                     THEN alert_next_slot(frequency, timezone, local_hour, last_digest_at) END
 WHERE id = %(id)s AND status = 'active' AND NOT email_confirmed
   AND created_at > now() - make_interval(secs => %(valid_for)s)
RETURNING id

-- name: search_of_token
SELECT s.id, s.status, s.query, s.frequency, s.email_confirmed
  FROM saved_searches AS s
 WHERE s.id = %(id)s

-- name: end_search
-- pending | active -> unsubscribed | disabled; its queued matches, its pending digest and its
-- pending webhook deliveries (alert.matched of a search saved for an organisation's webhooks)
-- are cancelled in the same statement, so nothing queued for it is sent after. A delivery
-- whose request is in flight finds it cancelled when it records the answer.
WITH s AS (
    UPDATE saved_searches
       SET status = %(status)s, ended_at = now(), due_at = NULL
     WHERE id = %(id)s AND status IN ('pending', 'active')
    RETURNING id
), m AS (
    UPDATE alert_matches SET status = 'cancelled'
     WHERE search_id IN (SELECT id FROM s) AND status = 'queued'
    RETURNING 1
), d AS (
    UPDATE alert_digests SET status = 'cancelled'
     WHERE search_id IN (SELECT id FROM s) AND status = 'pending'
    RETURNING 1
), w AS (
    UPDATE webhook_deliveries AS wd SET status = 'cancelled', last_error = 'the saved search ended'
      FROM webhook_messages AS wm
     WHERE wm.saved_search_id IN (SELECT id FROM s) AND wd.message_id = wm.id
       AND wd.status = 'pending'
    RETURNING 1
)
SELECT (SELECT count(*) FROM s) AS ended, (SELECT count(*) FROM m) AS cancelled,
       (SELECT count(*) FROM w) AS deliveries_cancelled

-- name: searches_of_user
-- A user's saved searches: those they saved (signed in or with a key, to any address), and
-- those of their own address.
SELECT s.id, s.query, s.location, s.salary_min, s.salary_currency, s.work_mode,
       s.remote_country, s.visa, s.frequency::text AS frequency,
       s.status, s.created_at, s.consent_at, s.webhook_org_id, s.email_confirmed,
       sub.email
  FROM saved_searches AS s
  JOIN alert_subscribers AS sub ON sub.id = s.subscriber_id
 WHERE (s.user_id = %(user_id)s OR sub.user_id = %(user_id)s OR sub.email = %(email)s)
   AND s.status IN ('pending', 'active')
 ORDER BY s.created_at DESC, s.id
 LIMIT 500

-- name: owned_by_user
-- The search, if it is one of the user's (as searches_of_user lists them).
SELECT s.id
  FROM saved_searches AS s
  JOIN alert_subscribers AS sub ON sub.id = s.subscriber_id
 WHERE s.id = %(id)s
   AND (s.user_id = %(user_id)s OR sub.user_id = %(user_id)s OR sub.email = %(email)s)
   AND s.status IN ('pending', 'active')

-- name: all_searches
-- Every saved search, for `shortlist alerts list` (the operator's: addresses shown).
SELECT s.id, s.query, s.location, s.salary_min, s.work_mode, s.frequency::text AS frequency,
       s.status, s.created_at, s.consent_at, s.due_at, s.last_digest_at, s.last_error,
       s.webhook_org_id, sub.email, sub.status AS subscriber_status,
       (SELECT count(*) FROM alert_matches AS m
         WHERE m.search_id = s.id AND m.status = 'queued') AS queued,
       (SELECT count(*) FROM alert_matches AS m
         WHERE m.search_id = s.id AND m.status = 'sent') AS sent
  FROM saved_searches AS s
  JOIN alert_subscribers AS sub ON sub.id = s.subscriber_id
 ORDER BY s.created_at, s.id
 LIMIT %(limit)s

-- name: user_email
SELECT email FROM users WHERE id = %(user_id)s

-- name: purge_unconfirmed
-- Saved searches nobody confirmed in time are removed.
DELETE FROM saved_searches
 WHERE status = 'pending' AND created_at < now() - make_interval(secs => %(valid_for)s)

-- name: cancel_unconfirmed_mail
-- A search active for an organisation's webhooks whose address did not confirm its e-mail while
-- the link was valid (confirm_email) will never be mailed: its queued matches are cancelled, not
-- kept queued for ever (the webhook deliveries are apart and go on). Cancelled, not deleted:
-- each (subscriber, job) is still matched once ever.
UPDATE alert_matches AS m
   SET status = 'cancelled'
  FROM saved_searches AS s
 WHERE m.search_id = s.id AND m.status = 'queued'
   AND s.status = 'active' AND NOT s.email_confirmed
   AND s.created_at <= now() - make_interval(secs => %(valid_for)s)

-- name: purge_lone_subscribers
-- Addresses left with no saved search are removed (with them, nothing of theirs is kept).
DELETE FROM alert_subscribers AS sub
 WHERE sub.status = 'active'
   AND NOT EXISTS (SELECT 1 FROM saved_searches AS s WHERE s.subscriber_id = sub.id)

-- name: make_due
-- `shortlist alerts test`: an active search with queued matches is due now.
UPDATE saved_searches AS s SET due_at = now(), attempts = 0
 WHERE s.id = %(id)s AND s.status = 'active'
   AND EXISTS (SELECT 1 FROM alert_matches AS m WHERE m.search_id = s.id AND m.status = 'queued')
RETURNING s.id
