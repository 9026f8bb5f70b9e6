-- Accounts (shortlist.accounts): people, organisations, memberships, sessions, invitations,
-- single-use account links, API keys owned by a user for an organisation, and every search,
-- mark, listing and intake address owned by a user in an organisation.
--
-- Existing tokens become the keys of service accounts: one organisation per company (company
-- tokens) or token name (the others), one service user per token name in it. Nothing a token
-- owned is lost: its rows get that user and organisation, and the token keeps working.

CREATE EXTENSION IF NOT EXISTS citext;

CREATE TYPE org_kind AS ENUM ('employer', 'recruiting', 'both');
CREATE TYPE org_role AS ENUM ('owner', 'admin', 'recruiter', 'employer', 'reviewer');

CREATE TABLE organisations (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                    text NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    kind                    org_kind NOT NULL,
    -- members must sign in with a second factor (TOTP) to act for this organisation
    require_second_factor   boolean NOT NULL DEFAULT false,
    created_at              timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX organisations_name_key ON organisations (lower(btrim(name)));

CREATE TABLE users (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- NULL for a service account (the owner of migrated and CLI-made tokens), which never
    -- signs in
    email               citext UNIQUE CHECK (length(email) <= 320 AND email LIKE '%_@_%'),
    name                text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
    -- Argon2id (pwdlib); NULL: no password (SSO only, or not chosen yet)
    password_hash       text,
    email_verified_at   timestamptz,
    -- base32 TOTP secret; enabled once a first code was checked against it
    totp_secret         text,
    totp_enabled_at     timestamptz,
    -- the last TOTP time step accepted: a code is never accepted twice
    totp_last_step      bigint,
    is_site_admin       boolean NOT NULL DEFAULT false,
    service_org_id      bigint,
    disabled_at         timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    CHECK ((email IS NULL) = (service_org_id IS NOT NULL))
);
CREATE UNIQUE INDEX users_service_key ON users (service_org_id, name)
    WHERE service_org_id IS NOT NULL;

ALTER TABLE users ADD CONSTRAINT users_service_org_fkey
    FOREIGN KEY (service_org_id) REFERENCES organisations (id) ON DELETE RESTRICT;

CREATE TABLE memberships (
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id      bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    role        org_role NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, org_id)
);
CREATE INDEX memberships_org_idx ON memberships (org_id);

-- Verified users of these domains join the organisation on first sign-in with default_role;
-- anyone else needs an invitation.
CREATE TABLE org_email_domains (
    org_id        bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    domain        citext PRIMARY KEY CHECK (domain ~ '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\.[a-z]{2,}$'),
    default_role  org_role NOT NULL DEFAULT 'reviewer' CHECK (default_role <> 'owner'),
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- A signed-in browser. The cookie holds a 256-bit random token; only its sha256 is here.
CREATE TABLE sessions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash    bytea NOT NULL UNIQUE,
    user_id       bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- the organisation the session acts for (NULL: the user belongs to none yet)
    org_id        bigint REFERENCES organisations (id) ON DELETE SET NULL,
    csrf_token    text NOT NULL CHECK (length(csrf_token) >= 32),
    -- how it was made: 'password', 'password+totp', 'oidc', 'invitation', 'setup'
    method        text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    ended_at      timestamptz,
    client_ip     text CHECK (length(client_ip) <= 100),
    user_agent    text CHECK (length(user_agent) <= 300)
);
CREATE INDEX sessions_user_idx ON sessions (user_id) WHERE ended_at IS NULL;

-- A single-use invitation: only its sha256 is stored; 72 hours; only `email` may accept it.
CREATE TABLE invitations (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash    bytea NOT NULL UNIQUE,
    org_id        bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    email         citext NOT NULL CHECK (length(email) <= 320),
    role          org_role NOT NULL,
    invited_by    bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    accepted_at   timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX invitations_org_idx ON invitations (org_id, created_at DESC);

-- Single-use links sent by e-mail: a password reset or an address verification.
CREATE TABLE account_links (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash    bytea NOT NULL UNIQUE,
    user_id       bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose       text NOT NULL CHECK (purpose IN ('reset', 'verify', 'setup')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    used_at       timestamptz
);
CREATE INDEX account_links_user_idx ON account_links (user_id, purpose);

-- Failed sign-ins, for the throttle (shortlist.accounts.throttle): keyed by a hash of the
-- address asked for (known or not) and by the client. Rows older than the window are pruned.
CREATE TABLE signin_failures (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_key  bytea NOT NULL,
    client_ip    text NOT NULL,
    at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX signin_failures_account_idx ON signin_failures (account_key, client_ip, at);
CREATE INDEX signin_failures_client_idx ON signin_failures (client_ip, at);

-- The first owner: `shortlist serve` on a database with no person prints a setup link once.
CREATE TABLE setup_links (
    only_row    boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    token_hash  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    used_at     timestamptz
);

-- --- service accounts for tokens ----------------------------------------------------------

-- The service account (user, organisation) a token named p_name with role p_role (bound to
-- p_company) belongs to, made on first use: the organisation is named after the company, or
-- the token's name; its kind follows the roles its tokens have (both when mixed). Admin
-- tokens belong to a site admin.
CREATE FUNCTION service_account_for(p_name text, p_role token_role, p_company text,
                                    OUT user_id bigint, OUT org_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    org_name text := btrim(coalesce(p_company, p_name));
    wanted org_kind := CASE p_role WHEN 'company' THEN 'employer'
                                   WHEN 'recruiter' THEN 'recruiting'
                                   ELSE 'both' END::org_kind;
    member_role org_role := CASE p_role WHEN 'company' THEN 'employer'
                                        WHEN 'recruiter' THEN 'recruiter'
                                        ELSE 'owner' END::org_role;
BEGIN
    INSERT INTO organisations AS o (name, kind) VALUES (org_name, wanted)
    ON CONFLICT (lower(btrim(name)))
    DO UPDATE SET kind = CASE WHEN o.kind = excluded.kind THEN o.kind ELSE 'both' END
    RETURNING o.id INTO org_id;
    INSERT INTO users AS u (name, service_org_id, is_site_admin)
    VALUES (btrim(p_name), org_id, p_role = 'admin')
    ON CONFLICT (service_org_id, name) WHERE service_org_id IS NOT NULL
    DO UPDATE SET is_site_admin = u.is_site_admin OR excluded.is_site_admin
    RETURNING u.id INTO user_id;
    INSERT INTO memberships AS m (user_id, org_id, role)
    VALUES (service_account_for.user_id, service_account_for.org_id, member_role)
    ON CONFLICT ON CONSTRAINT memberships_pkey DO UPDATE
        SET role = CASE WHEN m.role = excluded.role THEN m.role ELSE 'owner' END;
END $$;

-- API keys: every key is a user's for an organisation. A key a person made carries the role
-- it acts with (org_role, never above the member's own); a service account's key its token
-- role (role), as before.
ALTER TABLE api_tokens
    ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE RESTRICT,
    ADD COLUMN org_id bigint REFERENCES organisations (id) ON DELETE RESTRICT,
    ADD COLUMN org_role org_role;

UPDATE api_tokens AS t SET user_id = a.user_id, org_id = a.org_id
  FROM api_tokens AS s
 CROSS JOIN LATERAL service_account_for(s.name, s.role, s.company_name) AS a
 WHERE s.id = t.id;

-- A token inserted without an owner (shortlist token create, older code paths) is a service
-- account's.
CREATE FUNCTION api_tokens_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.user_id IS NULL OR NEW.org_id IS NULL THEN
        SELECT a.user_id, a.org_id INTO NEW.user_id, NEW.org_id
          FROM service_account_for(NEW.name, NEW.role, NEW.company_name) AS a;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER api_tokens_owner BEFORE INSERT ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION api_tokens_owner();

ALTER TABLE api_tokens ALTER COLUMN user_id SET NOT NULL, ALTER COLUMN org_id SET NOT NULL;
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id);

-- --- ownership ----------------------------------------------------------------------------

-- Every owned row names its user and organisation; the token column stays as the key it was
-- made with (NULL: made in a browser session).
ALTER TABLE searches ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE RESTRICT,
                     ADD COLUMN org_id bigint REFERENCES organisations (id) ON DELETE RESTRICT,
                     ALTER COLUMN owner_token_id DROP NOT NULL;
ALTER TABLE candidate_marks
    ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE RESTRICT,
    ADD COLUMN org_id bigint REFERENCES organisations (id) ON DELETE RESTRICT;
ALTER TABLE provider_calls ADD COLUMN user_id bigint, ADD COLUMN org_id bigint;
ALTER TABLE job_listings ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE SET NULL,
                         ADD COLUMN org_id bigint REFERENCES organisations (id) ON DELETE SET NULL;
ALTER TABLE mail_intakes ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE SET NULL,
                         ADD COLUMN org_id bigint REFERENCES organisations (id) ON DELETE SET NULL,
                         ADD COLUMN disabled_at timestamptz;
ALTER TABLE inbound_mail ADD COLUMN user_id bigint, ADD COLUMN org_id bigint;
ALTER TABLE audit_log ADD COLUMN user_id bigint, ADD COLUMN org_id bigint;

UPDATE searches AS x SET user_id = t.user_id, org_id = t.org_id
  FROM api_tokens AS t WHERE t.id = x.owner_token_id;
UPDATE candidate_marks AS x SET user_id = t.user_id, org_id = t.org_id
  FROM api_tokens AS t WHERE t.id = x.recruiter_token_id;
UPDATE provider_calls AS x SET user_id = t.user_id, org_id = t.org_id
  FROM api_tokens AS t WHERE t.id = x.owner_token_id;
UPDATE job_listings AS x SET user_id = t.user_id, org_id = t.org_id
  FROM api_tokens AS t WHERE t.id = x.owner_token_id;
UPDATE mail_intakes AS x SET user_id = t.user_id, org_id = t.org_id
  FROM api_tokens AS t WHERE t.id = x.owner_token_id;
UPDATE inbound_mail AS x SET user_id = t.user_id, org_id = t.org_id
  FROM api_tokens AS t WHERE t.id = x.owner_token_id;
UPDATE audit_log AS x SET user_id = t.user_id, org_id = t.org_id
  FROM api_tokens AS t WHERE t.id = x.token_id;

-- A row written with a token and no owner gets the token's owner (code that names only the
-- token keeps writing owned rows).
CREATE FUNCTION owner_from_token() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    token_id bigint := (to_jsonb(NEW) ->> TG_ARGV[0])::bigint;
BEGIN
    IF token_id IS NOT NULL AND (NEW.user_id IS NULL OR NEW.org_id IS NULL) THEN
        SELECT t.user_id, t.org_id INTO NEW.user_id, NEW.org_id
          FROM api_tokens AS t WHERE t.id = token_id;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER searches_owner BEFORE INSERT ON searches
    FOR EACH ROW EXECUTE FUNCTION owner_from_token('owner_token_id');
CREATE TRIGGER candidate_marks_owner BEFORE INSERT ON candidate_marks
    FOR EACH ROW EXECUTE FUNCTION owner_from_token('recruiter_token_id');
CREATE TRIGGER provider_calls_owner BEFORE INSERT ON provider_calls
    FOR EACH ROW EXECUTE FUNCTION owner_from_token('owner_token_id');
CREATE TRIGGER job_listings_owner BEFORE INSERT ON job_listings
    FOR EACH ROW EXECUTE FUNCTION owner_from_token('owner_token_id');
CREATE TRIGGER mail_intakes_owner BEFORE INSERT OR UPDATE OF owner_token_id ON mail_intakes
    FOR EACH ROW EXECUTE FUNCTION owner_from_token('owner_token_id');
CREATE TRIGGER inbound_mail_owner BEFORE INSERT ON inbound_mail
    FOR EACH ROW EXECUTE FUNCTION owner_from_token('owner_token_id');
CREATE TRIGGER audit_log_owner BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION owner_from_token('token_id');

-- A search and a mark always have an owner from now on (a key's or a session's).
ALTER TABLE searches ADD CONSTRAINT searches_owned
    CHECK (user_id IS NOT NULL AND org_id IS NOT NULL) NOT VALID;
ALTER TABLE searches VALIDATE CONSTRAINT searches_owned;
CREATE INDEX searches_org_idx ON searches (org_id, created_at DESC);
CREATE INDEX searches_user_day_idx ON searches (user_id, created_at);
CREATE INDEX provider_calls_user_idx ON provider_calls (user_id, created_at);
CREATE INDEX provider_calls_org_idx ON provider_calls (org_id, created_at);
CREATE INDEX job_listings_org_idx ON job_listings (org_id) WHERE org_id IS NOT NULL;

-- Marks: one per person marking and candidate, in the organisation it was made for; the
-- token column becomes the key used (NULL from a browser).
ALTER TABLE candidate_marks DROP CONSTRAINT candidate_marks_pkey,
    ALTER COLUMN recruiter_token_id DROP NOT NULL,
    ALTER COLUMN user_id SET NOT NULL, ALTER COLUMN org_id SET NOT NULL,
    ADD PRIMARY KEY (org_id, user_id, candidate_id);
CREATE INDEX candidate_marks_org_idx ON candidate_marks (org_id, updated_at DESC);

-- --- daily caps ---------------------------------------------------------------------------

-- Searches started and credits reserved per user and per organisation per UTC day. A search
-- reserves its count and its credit budget here in one conditional upsert per scope: the
-- row lock orders concurrent reservations, so a cap is never overspent.
CREATE TABLE quota_usage (
    scope      text NOT NULL CHECK (scope IN ('user', 'org')),
    scope_id   bigint NOT NULL,
    day        date NOT NULL,
    searches   integer NOT NULL DEFAULT 0 CHECK (searches >= 0),
    credits    bigint NOT NULL DEFAULT 0 CHECK (credits >= 0),
    PRIMARY KEY (scope, scope_id, day)
);

-- --- row-level security --------------------------------------------------------------------

-- The organisation a transaction acts for: set per request and per claimed queue item with
-- set_config('shortlist.org_id', id, …). Unset (workers between items, the operator's CLI,
-- migrations) or 'all' (a site admin): every row. Set: only that organisation's rows, whatever
-- the statement's own filter says. Tables owned by the application's role are covered too
-- (FORCE ROW LEVEL SECURITY).
CREATE FUNCTION shortlist_org_visible(row_org bigint) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN coalesce(nullif(current_setting('shortlist.org_id', true), ''), 'all') = 'all'
        OR row_org = nullif(current_setting('shortlist.org_id', true), '')::bigint;

ALTER TABLE searches ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY searches_org ON searches USING (shortlist_org_visible(org_id));

ALTER TABLE candidate_marks ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY candidate_marks_org ON candidate_marks USING (shortlist_org_visible(org_id));

ALTER TABLE provider_calls ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY provider_calls_org ON provider_calls USING (shortlist_org_visible(org_id));

ALTER TABLE mail_intakes ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY mail_intakes_org ON mail_intakes USING (shortlist_org_visible(org_id));

ALTER TABLE inbound_mail ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY inbound_mail_org ON inbound_mail USING (shortlist_org_visible(org_id));

-- A search's rows follow their search.
ALTER TABLE search_results ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY search_results_org ON search_results
    USING (EXISTS (SELECT 1 FROM searches AS s WHERE s.id = search_id));
ALTER TABLE search_candidates ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY search_candidates_org ON search_candidates
    USING (EXISTS (SELECT 1 FROM searches AS s WHERE s.id = search_id));
ALTER TABLE search_tiers ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY search_tiers_org ON search_tiers
    USING (EXISTS (SELECT 1 FROM searches AS s WHERE s.id = search_id));
ALTER TABLE search_hidden ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY search_hidden_org ON search_hidden
    USING (EXISTS (SELECT 1 FROM searches AS s WHERE s.id = search_id));

-- Listings are public to read (job search); only their organisation may change them.
ALTER TABLE job_listings ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY job_listings_read ON job_listings FOR SELECT USING (true);
CREATE POLICY job_listings_insert ON job_listings FOR INSERT
    WITH CHECK (org_id IS NULL OR shortlist_org_visible(org_id));
CREATE POLICY job_listings_update ON job_listings FOR UPDATE
    USING (org_id IS NULL OR shortlist_org_visible(org_id));
CREATE POLICY job_listings_delete ON job_listings FOR DELETE
    USING (org_id IS NULL OR shortlist_org_visible(org_id));

-- A superuser (the embedded default connects as one) bypasses every policy, FORCE or not. A
-- transaction acting for an organisation therefore also takes this role (SET LOCAL ROLE, in
-- shortlist.accounts.scope), which has the table privileges and no bypass. Where the
-- migrating user may not create roles (a managed server's owner role, which the policies
-- already bind), it is skipped.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'shortlist_tenant') THEN
        CREATE ROLE shortlist_tenant NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
    GRANT shortlist_tenant TO CURRENT_USER;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO shortlist_tenant;
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO shortlist_tenant;
    ALTER DEFAULT PRIVILEGES IN SCHEMA public
        GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO shortlist_tenant;
    ALTER DEFAULT PRIVILEGES IN SCHEMA public
        GRANT USAGE, SELECT ON SEQUENCES TO shortlist_tenant;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'shortlist_tenant not made (no CREATEROLE): policies bind the owner role';
END $$;

-- An identity an OpenID Provider vouched for, bound to the person it first signed in as: the
-- same (issuer, subject) always signs in the same person, whatever address it later shows.
CREATE TABLE user_identities (
    issuer      text NOT NULL CHECK (length(issuer) <= 500),
    subject     text NOT NULL CHECK (length(subject) <= 500),
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
