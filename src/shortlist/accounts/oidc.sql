-- Sign-ins through OpenID Connect under way (shortlist.accounts.oidc, migration 0030).

-- name: save_login
-- A new sign-in under way; expired ones are dropped at the same time.
WITH expired AS (
    DELETE FROM oidc_logins WHERE expires_at < now()
)
INSERT INTO oidc_logins (state_hash, browser_hash, nonce, code_verifier, return_to, redirect_uri,
                         expires_at)
VALUES (%(state_hash)s, %(browser_hash)s, %(nonce)s, %(code_verifier)s, %(return_to)s,
        %(redirect_uri)s, now() + make_interval(secs => %(ttl)s))

-- name: take_login
-- The callback takes its sign-in once: only the browser that started it, only before it expires.
DELETE FROM oidc_logins
 WHERE state_hash = %(state_hash)s
   AND browser_hash = %(browser_hash)s
   AND expires_at > now()
RETURNING nonce, code_verifier, return_to, redirect_uri
