-- Accounts (shortlist.accounts, migration 0029): organisations, users, memberships,
-- invitations, sessions, single-use links, API keys of people.

-- ----------------------------------------------------------------------------------------
-- Organisations and people
-- ----------------------------------------------------------------------------------------

-- name: create_org
INSERT INTO organisations (name, kind) VALUES (btrim(%(name)s), %(kind)s)
ON CONFLICT DO NOTHING
RETURNING id, name, kind::text AS kind, require_second_factor, created_at

-- name: org_by_name
SELECT id, name, kind::text AS kind, require_second_factor, created_at
  FROM organisations WHERE lower(btrim(name)) = lower(btrim(%(name)s))

-- name: org_by_id
SELECT id, name, kind::text AS kind, require_second_factor, created_at
  FROM organisations WHERE id = %(org_id)s

-- name: set_org_second_factor
UPDATE organisations SET require_second_factor = %(required)s WHERE id = %(org_id)s

-- name: user_by_email
SELECT id, email::text AS email, name, password_hash, email_verified_at, totp_secret,
       totp_enabled_at, totp_last_step, is_site_admin, disabled_at
  FROM users WHERE email = %(email)s

-- name: user_by_id
SELECT id, email::text AS email, name, password_hash, email_verified_at, totp_secret,
       totp_enabled_at, totp_last_step, is_site_admin, disabled_at
  FROM users WHERE id = %(user_id)s

-- name: create_user
-- A person (idempotent on the address: an existing account is returned as it is).
INSERT INTO users AS u (email, name, password_hash, email_verified_at, is_site_admin)
VALUES (%(email)s, %(name)s, %(password_hash)s,
        CASE WHEN %(verified)s THEN now() END, %(site_admin)s)
ON CONFLICT (email) DO UPDATE SET email = u.email
RETURNING id, email::text AS email, name, password_hash, email_verified_at, totp_secret,
          totp_enabled_at, totp_last_step, is_site_admin, disabled_at

-- name: set_password
UPDATE users SET password_hash = %(password_hash)s WHERE id = %(user_id)s

-- name: set_name
UPDATE users SET name = %(name)s WHERE id = %(user_id)s AND %(name)s <> ''

-- name: mark_verified
UPDATE users SET email_verified_at = coalesce(email_verified_at, now()) WHERE id = %(user_id)s

-- name: disable_user
-- A disabled person's sessions end and their keys stop at once (the event streams ask).
WITH u AS (
    UPDATE users SET disabled_at = coalesce(disabled_at, now())
     WHERE email = %(email)s
    RETURNING id
), s AS (
    UPDATE sessions SET ended_at = now()
     WHERE user_id IN (SELECT id FROM u) AND ended_at IS NULL
), k AS (
    UPDATE api_tokens SET revoked_at = now()
     WHERE user_id IN (SELECT id FROM u) AND revoked_at IS NULL
), i AS (
    -- the intake addresses of the organisations they alone posted for stop taking mail
    UPDATE mail_intakes SET disabled_at = coalesce(disabled_at, now())
     WHERE user_id IN (SELECT id FROM u)
)
SELECT id FROM u

-- name: list_users
SELECT u.id, u.email::text AS email, u.name, u.is_site_admin, u.disabled_at, u.created_at,
       u.service_org_id IS NOT NULL AS service, u.totp_enabled_at IS NOT NULL AS second_factor,
       coalesce(jsonb_agg(jsonb_build_object('id', o.id, 'name', o.name, 'role', m.role)
                          ORDER BY o.name) FILTER (WHERE o.id IS NOT NULL), '[]') AS organisations
  FROM users AS u
  LEFT JOIN memberships AS m ON m.user_id = u.id
  LEFT JOIN organisations AS o ON o.id = m.org_id
 WHERE (%(org_id)s::bigint IS NULL OR u.id IN (SELECT user_id FROM memberships
                                                 WHERE org_id = %(org_id)s::bigint))
 GROUP BY u.id
 ORDER BY u.service_org_id IS NOT NULL, u.email, u.name, u.id

-- name: add_member
INSERT INTO memberships (user_id, org_id, role) VALUES (%(user_id)s, %(org_id)s, %(role)s)
ON CONFLICT (user_id, org_id) DO UPDATE SET role = excluded.role

-- name: remove_member
DELETE FROM memberships WHERE user_id = %(user_id)s AND org_id = %(org_id)s

-- name: memberships_of
SELECT o.id, o.name, o.kind::text AS kind, o.require_second_factor, m.role::text AS role
  FROM memberships AS m JOIN organisations AS o ON o.id = m.org_id
 WHERE m.user_id = %(user_id)s
 ORDER BY m.created_at, o.id

-- name: owners_left
-- Owners an organisation would have left without this person.
SELECT count(*) AS n FROM memberships
 WHERE org_id = %(org_id)s AND role = 'owner' AND user_id <> %(user_id)s

-- name: count_people
SELECT count(*) AS n FROM users WHERE service_org_id IS NULL

-- ----------------------------------------------------------------------------------------
-- E-mail domains
-- ----------------------------------------------------------------------------------------

-- name: add_domain
INSERT INTO org_email_domains (org_id, domain, default_role)
VALUES (%(org_id)s, lower(%(domain)s), %(role)s)
ON CONFLICT (domain) DO UPDATE SET default_role = excluded.default_role
 WHERE org_email_domains.org_id = excluded.org_id
RETURNING org_id

-- name: remove_domain
DELETE FROM org_email_domains WHERE org_id = %(org_id)s AND domain = lower(%(domain)s)

-- name: domains_of
SELECT domain::text AS domain, default_role::text AS default_role
  FROM org_email_domains WHERE org_id = %(org_id)s ORDER BY domain

-- name: org_of_domain
SELECT d.org_id, d.default_role::text AS default_role
  FROM org_email_domains AS d WHERE d.domain = lower(%(domain)s)

-- ----------------------------------------------------------------------------------------
-- Invitations
-- ----------------------------------------------------------------------------------------

-- name: create_invitation
INSERT INTO invitations (token_hash, org_id, email, role, invited_by, expires_at)
VALUES (%(token_hash)s, %(org_id)s, %(email)s, %(role)s, %(invited_by)s,
        now() + %(hours)s * interval '1 hour')
RETURNING id, expires_at

-- name: take_invitation
-- Single use: the row is consumed by the statement that reads it (a second acceptance, or
-- one racing this one, finds nothing).
UPDATE invitations SET accepted_at = now()
 WHERE token_hash = %(token_hash)s AND accepted_at IS NULL AND revoked_at IS NULL
   AND expires_at > now() AND email = %(email)s
RETURNING id, org_id, email::text AS email, role::text AS role

-- name: peek_invitation
SELECT id, org_id, email::text AS email, role::text AS role, expires_at, accepted_at, revoked_at
  FROM invitations WHERE token_hash = %(token_hash)s

-- name: invitations_of
SELECT id, email::text AS email, role::text AS role, created_at, expires_at, accepted_at,
       revoked_at
  FROM invitations WHERE org_id = %(org_id)s
 ORDER BY created_at DESC LIMIT 200

-- name: revoke_invitation
UPDATE invitations SET revoked_at = now()
 WHERE id = %(id)s AND org_id = %(org_id)s AND accepted_at IS NULL AND revoked_at IS NULL
RETURNING id

-- ----------------------------------------------------------------------------------------
-- Single-use links (reset, verify)
-- ----------------------------------------------------------------------------------------

-- name: create_link
INSERT INTO account_links (token_hash, user_id, purpose, expires_at)
VALUES (%(token_hash)s, %(user_id)s, %(purpose)s, now() + %(minutes)s * interval '1 minute')

-- name: take_link
UPDATE account_links SET used_at = now()
 WHERE token_hash = %(token_hash)s AND purpose = %(purpose)s AND used_at IS NULL
   AND expires_at > now()
RETURNING user_id

-- ----------------------------------------------------------------------------------------
-- Sessions
-- ----------------------------------------------------------------------------------------

-- name: create_session
INSERT INTO sessions (token_hash, user_id, org_id, csrf_token, method, client_ip, user_agent)
VALUES (%(token_hash)s, %(user_id)s, %(org_id)s, %(csrf_token)s, %(method)s, %(client_ip)s,
        %(user_agent)s)
RETURNING id

-- name: session_lookup
-- A live session (not ended, used within the idle timeout, younger than the absolute one) of
-- a person not disabled, with the organisation it acts for; touched at most every 30 s.
WITH found AS (
    SELECT s.id, s.user_id, s.org_id, s.csrf_token, s.method
      FROM sessions AS s JOIN users AS u ON u.id = s.user_id
     WHERE s.token_hash = %(token_hash)s AND s.ended_at IS NULL AND u.disabled_at IS NULL
       AND s.last_seen_at > now() - %(idle_minutes)s * interval '1 minute'
       AND s.created_at > now() - %(absolute_hours)s * interval '1 hour'
), touched AS (
    UPDATE sessions AS s SET last_seen_at = now()
      FROM found WHERE s.id = found.id AND s.last_seen_at < now() - interval '30 seconds'
)
SELECT f.id AS session_id, f.csrf_token, f.method, u.id AS user_id, u.email::text AS email,
       u.name, u.is_site_admin, u.totp_enabled_at IS NOT NULL AS second_factor,
       o.id AS org_id, o.name AS org_name, o.kind::text AS org_kind,
       o.require_second_factor, m.role::text AS org_role
  FROM found AS f
  JOIN users AS u ON u.id = f.user_id
  LEFT JOIN memberships AS m ON m.user_id = f.user_id AND m.org_id = f.org_id
  LEFT JOIN organisations AS o ON o.id = m.org_id

-- name: end_session
UPDATE sessions SET ended_at = now() WHERE id = %(session_id)s AND ended_at IS NULL

-- name: end_user_sessions
UPDATE sessions SET ended_at = now()
 WHERE user_id = %(user_id)s AND ended_at IS NULL
   AND (%(keep)s::bigint IS NULL OR id <> %(keep)s::bigint)

-- name: sessions_of
SELECT id, method, created_at, last_seen_at, client_ip, user_agent
  FROM sessions
 WHERE user_id = %(user_id)s AND ended_at IS NULL
   AND last_seen_at > now() - %(idle_minutes)s * interval '1 minute'
   AND created_at > now() - %(absolute_hours)s * interval '1 hour'
 ORDER BY created_at DESC

-- ----------------------------------------------------------------------------------------
-- Sign-in throttle
-- ----------------------------------------------------------------------------------------

-- name: recent_failures
SELECT (SELECT count(*) FROM signin_failures
         WHERE account_key = %(account_key)s AND client_ip = %(client_ip)s
           AND at > now() - interval '15 minutes') AS account,
       (SELECT count(*) FROM signin_failures
         WHERE client_ip = %(client_ip)s AND at > now() - interval '15 minutes') AS client

-- name: record_failure
WITH pruned AS (
    DELETE FROM signin_failures WHERE at < now() - interval '1 hour'
)
INSERT INTO signin_failures (account_key, client_ip) VALUES (%(account_key)s, %(client_ip)s)

-- name: clear_failures
DELETE FROM signin_failures WHERE account_key = %(account_key)s AND client_ip = %(client_ip)s

-- ----------------------------------------------------------------------------------------
-- Second factor
-- ----------------------------------------------------------------------------------------

-- name: set_totp_secret
UPDATE users SET totp_secret = %(secret)s, totp_enabled_at = NULL, totp_last_step = NULL
 WHERE id = %(user_id)s

-- name: enable_totp
UPDATE users SET totp_enabled_at = now(), totp_last_step = %(step)s
 WHERE id = %(user_id)s AND totp_secret IS NOT NULL

-- name: disable_totp
UPDATE users SET totp_secret = NULL, totp_enabled_at = NULL, totp_last_step = NULL
 WHERE id = %(user_id)s

-- name: use_totp_step
-- A code's time step is accepted once: the update matches only a step after the last one.
UPDATE users SET totp_last_step = %(step)s
 WHERE id = %(user_id)s AND (totp_last_step IS NULL OR totp_last_step < %(step)s)
RETURNING id

-- ----------------------------------------------------------------------------------------
-- API keys of people
-- ----------------------------------------------------------------------------------------

-- name: create_key
INSERT INTO api_tokens (name, role, token_hash, company_name, user_id, org_id, org_role,
                        expires_at)
VALUES (%(name)s, %(role)s, %(token_hash)s, %(company)s, %(user_id)s, %(org_id)s,
        %(org_role)s, now() + %(days)s * interval '1 day')
RETURNING id, name, org_role::text AS org_role, created_at, expires_at

-- name: keys_of
SELECT t.id, t.name, t.org_role::text AS org_role, t.role::text AS role, o.name AS org,
       t.created_at, t.expires_at, t.last_used_at, t.revoked_at
  FROM api_tokens AS t JOIN organisations AS o ON o.id = t.org_id
 WHERE t.user_id = %(user_id)s
 ORDER BY t.created_at DESC, t.id DESC

-- name: revoke_key
UPDATE api_tokens SET revoked_at = now()
 WHERE id = %(id)s AND user_id = %(user_id)s AND revoked_at IS NULL
RETURNING id

-- ----------------------------------------------------------------------------------------
-- First owner
-- ----------------------------------------------------------------------------------------

-- name: put_setup_link
-- While no person administers the instance (demo accounts do not): a new set-up link (the one a
-- previous start printed stops working). Once someone does: nothing.
INSERT INTO setup_links AS l (token_hash)
SELECT %(token_hash)s
 WHERE NOT EXISTS (SELECT 1 FROM users WHERE service_org_id IS NULL AND is_site_admin)
ON CONFLICT (only_row) DO UPDATE SET token_hash = excluded.token_hash, created_at = now()
 WHERE l.used_at IS NULL
RETURNING created_at

-- name: take_setup_link
UPDATE setup_links SET used_at = now()
 WHERE token_hash = %(token_hash)s AND used_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM users WHERE service_org_id IS NULL AND is_site_admin)
RETURNING created_at

-- name: identity_user
SELECT user_id FROM user_identities WHERE issuer = %(issuer)s AND subject = %(subject)s

-- name: bind_identity
INSERT INTO user_identities (issuer, subject, user_id)
VALUES (%(issuer)s, %(subject)s, %(user_id)s)
ON CONFLICT (issuer, subject) DO NOTHING

-- name: pending_invitations_for
-- Invitations an address may accept by proving it (a verified SSO sign-in): all consumed.
UPDATE invitations SET accepted_at = now()
 WHERE email = %(email)s AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()
RETURNING org_id, role::text AS role

-- ----------------------------------------------------------------------------------------
-- Daily caps (shortlist.accounts.quota)
-- ----------------------------------------------------------------------------------------

-- name: quota_rows
-- Today's (UTC) rows of the person and of their organisation, made when missing.
INSERT INTO quota_usage (scope, scope_id, day)
VALUES ('user', %(user_id)s, (now() AT TIME ZONE 'UTC')::date),
       ('org', %(org_id)s, (now() AT TIME ZONE 'UTC')::date)
ON CONFLICT DO NOTHING

-- name: reserve_quota
-- One search and its credit budget, reserved against the person's caps and, pooled, their
-- organisation's, in one statement: both rows are locked first (FOR UPDATE: a concurrent
-- reservation waits, then reads the rows as the other left them), so no cap is overspent.
-- Credits used are the larger of those reserved today and those providers billed today. A
-- cap of NULL is no cap. No row back: a cap is reached (`refused` says which).
WITH today AS (
    SELECT (now() AT TIME ZONE 'UTC')::date AS day
), locked AS (
    SELECT q.scope, q.searches, q.credits
      FROM quota_usage AS q, today
     WHERE q.day = today.day
       AND ((q.scope = 'user' AND q.scope_id = %(user_id)s)
            OR (q.scope = 'org' AND q.scope_id = %(org_id)s))
     ORDER BY q.scope
       FOR UPDATE OF q
), used AS (
    SELECT l.scope, l.searches,
           greatest(l.credits, (SELECT coalesce(sum(p.credits), 0) FROM provider_calls AS p, today
                                 WHERE p.created_at >= today.day::timestamp AT TIME ZONE 'UTC'
                                   AND CASE l.scope WHEN 'user' THEN p.user_id = %(user_id)s
                                                    ELSE p.org_id = %(org_id)s END)) AS credits
      FROM locked AS l
), verdict AS (
    SELECT CASE
             WHEN u.searches >= %(user_searches)s THEN 'SHORTLIST_RECRUITER_DAILY_SEARCHES'
             WHEN o.searches >= %(org_searches)s THEN 'SHORTLIST_ORG_DAILY_SEARCHES'
             WHEN u.credits >= %(user_credits)s THEN 'SHORTLIST_RECRUITER_DAILY_CREDITS'
             WHEN o.credits >= %(org_credits)s THEN 'SHORTLIST_ORG_DAILY_CREDITS'
           END AS refused,
           u.searches AS user_searches, u.credits AS user_credits,
           o.searches AS org_searches, o.credits AS org_credits,
           least(%(budget)s::bigint, %(user_credits)s::bigint - u.credits,
                 %(org_credits)s::bigint - o.credits) AS granted
      FROM used AS u, used AS o
     WHERE u.scope = 'user' AND o.scope = 'org'
), reserved AS (
    UPDATE quota_usage AS q
       SET searches = q.searches + 1, credits = q.credits + coalesce(v.granted, 0)
      FROM verdict AS v, today
     WHERE v.refused IS NULL AND q.day = today.day
       AND ((q.scope = 'user' AND q.scope_id = %(user_id)s)
            OR (q.scope = 'org' AND q.scope_id = %(org_id)s))
    RETURNING q.scope
)
SELECT v.refused, v.granted, v.user_searches, v.user_credits, v.org_searches, v.org_credits,
       extract(epoch FROM (today.day + 1)::timestamp AT TIME ZONE 'UTC' - now()) AS free_in,
       (SELECT count(*) FROM reserved) AS rows
  FROM verdict AS v, today

-- name: anybody
-- Whether any person (not a service account) has an account.
SELECT 1 FROM users WHERE service_org_id IS NULL LIMIT 1
