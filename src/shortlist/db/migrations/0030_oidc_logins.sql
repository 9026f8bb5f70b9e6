-- Sign-ins through OpenID Connect under way (shortlist.accounts.oidc): what the callback needs
-- to finish one (the nonce, the PKCE code verifier, the page to return to, the redirect URI the
-- code is redeemed with), kept server-side, found by a hash of the `state` parameter and bound
-- to the browser that started it by a hash of a cookie's value. A row is taken (deleted) by its
-- one callback and is worthless after expires_at; expired rows are removed as new ones are
-- made. No personal data.
CREATE TABLE oidc_logins (
    state_hash    bytea PRIMARY KEY CHECK (length(state_hash) = 32),
    browser_hash  bytea NOT NULL CHECK (length(browser_hash) = 32),
    nonce         text NOT NULL,
    code_verifier text NOT NULL,
    return_to     text NOT NULL,
    redirect_uri  text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);

CREATE INDEX oidc_logins_expires_at ON oidc_logins (expires_at);
