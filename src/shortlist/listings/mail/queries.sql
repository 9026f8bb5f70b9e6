-- The e-mail intake's rows (shortlist.listings.mail.store): intake addresses and inbound mail.

-- name: intake_of_company
-- The intake address of a company, if it has one.
SELECT company_name, local_part, owner_token_id, user_id, org_id
  FROM mail_intakes WHERE company_name = %(company)s

-- name: create_intake
-- A company's first intake address; a concurrent creation keeps the one that won.
INSERT INTO mail_intakes (company_name, local_part, owner_token_id, user_id, org_id)
VALUES (%(company)s, %(local_part)s, %(token_id)s, %(user_id)s, %(org_id)s)
ON CONFLICT (company_name) DO UPDATE SET company_name = EXCLUDED.company_name
RETURNING company_name, local_part, owner_token_id, user_id, org_id

-- name: rotate_intake
-- A new secret address for a company (or its first); the old one is refused from now on.
-- The owner becomes whoever rotated it (a key's owner is filled in by migration 0029's trigger).
INSERT INTO mail_intakes (company_name, local_part, owner_token_id, user_id, org_id)
VALUES (%(company)s, %(local_part)s, %(token_id)s, %(user_id)s, %(org_id)s)
ON CONFLICT (company_name) DO UPDATE
   SET local_part = EXCLUDED.local_part, owner_token_id = EXCLUDED.owner_token_id,
       user_id = EXCLUDED.user_id, org_id = EXCLUDED.org_id,
       rotated_at = now(), disabled_at = NULL
RETURNING company_name, local_part, owner_token_id, user_id, org_id

-- name: intake_of_address
-- Who an intake address belongs to (RCPT TO). An address dies with its owner (migration 0029):
-- disabled by an operator, or its key revoked or expired, or its person disabled, it takes
-- no more mail until a live key of the company rotates it.
SELECT i.company_name, i.local_part, i.owner_token_id, i.user_id, i.org_id
  FROM mail_intakes AS i
 WHERE i.local_part = %(local_part)s AND i.disabled_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM api_tokens AS t
                    WHERE t.id = i.owner_token_id
                      AND (t.revoked_at IS NOT NULL OR t.expires_at <= now()))
   AND NOT EXISTS (SELECT 1 FROM users AS u
                    WHERE u.id = i.user_id AND u.disabled_at IS NOT NULL)

-- name: insert_inbound
-- A message as received, queued for parsing; nothing when this company already has it.
INSERT INTO inbound_mail (company_name, recipient, mail_from, sender_forgotten, message_id,
                          dedup_key, raw, owner_token_id, user_id, org_id)
VALUES (%(company)s, %(recipient)s, %(mail_from)s, %(sender_forgotten)s, %(message_id)s,
        %(dedup_key)s, %(raw)s, %(owner_token_id)s, %(user_id)s, %(org_id)s)
ON CONFLICT (company_name, dedup_key) DO NOTHING
RETURNING id

-- name: claim_inbound
-- Claim queued messages, and running ones whose worker's lease ran out (it crashed): queued |
-- running -> running, one attempt more. The CTE locks only what it claims.
WITH claimable AS (
    SELECT id
      FROM inbound_mail
     WHERE (status = 'queued' OR (status = 'running' AND locked_until < now()))
     ORDER BY received_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE inbound_mail AS m
   SET status = 'running', attempts = m.attempts + 1, locked_by = %(worker_id)s,
       locked_until = now() + make_interval(secs => %(lease)s), updated_at = now()
  FROM claimable
 WHERE m.id = claimable.id
RETURNING m.id, m.company_name, m.mail_from, m.sender_forgotten, m.raw, m.attempts,
          m.owner_token_id, m.user_id, m.org_id

-- name: finish_posted
-- A message became a listing: running -> posted (in the transaction whose settle ends the
-- worker's lease on it).
UPDATE inbound_mail
   SET status = 'posted', listing_id = %(listing_id)s, reason = NULL, updated_at = now()
 WHERE id = %(id)s AND status = 'running'
RETURNING id

-- name: finish_unposted
-- A message that will not become a listing: running -> rejected (no job in it) | failed (the
-- parser crashed or ran out of time), with the reason (and, rejected, what it is instead).
UPDATE inbound_mail
   SET status = %(status)s::inbound_mail_status, reason = %(reason)s,
       rejected_as = %(rejected_as)s, updated_at = now()
 WHERE id = %(id)s AND status = 'running'
   AND %(status)s IN ('rejected', 'failed')
RETURNING id

-- name: mark_replied
-- The sender was answered (once).
UPDATE inbound_mail SET replied_at = now() WHERE id = %(id)s AND replied_at IS NULL

-- name: inbound_by_status
-- Messages per status, every status included (for /status and `shortlist status`).
SELECT s.status::text AS status, count(m.id) AS n
  FROM unnest(enum_range(NULL::inbound_mail_status)) AS s (status)
  LEFT JOIN inbound_mail AS m ON m.status = s.status
 GROUP BY s.status
 ORDER BY s.status

-- name: inbound_failures
-- The latest messages that did not become a listing, newest first.
SELECT id, company_name, status::text AS status, rejected_as, reason, attempts, updated_at
  FROM inbound_mail
 WHERE status IN ('rejected', 'failed')
 ORDER BY updated_at DESC, id DESC
 LIMIT %(limit)s

-- name: disable_intake
-- An operator stops a company's address (shortlist intake disable); rotating gives a new one.
UPDATE mail_intakes SET disabled_at = coalesce(disabled_at, now())
 WHERE lower(company_name) = lower(%(company)s)
RETURNING company_name

-- name: stored_bytes
-- What one intake (company) holds of the last 24 hours' messages, not yet erased.
SELECT coalesce(sum(octet_length(raw)), 0)::bigint AS n
  FROM inbound_mail
 WHERE company_name = %(company)s AND erased_at IS NULL
   AND received_at > now() - interval '24 hours'
