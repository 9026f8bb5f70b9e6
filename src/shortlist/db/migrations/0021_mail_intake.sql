-- Job posts by e-mail (shortlist.listings.mail): company tokens bound to a company, a secret
-- intake address per company, and every inbound message kept as a row before it is answered.

-- The company a company token posts as (NULL for the other roles). Tokens made before this
-- migration post as their own name, which is what they were created for.
ALTER TABLE api_tokens
    ADD COLUMN company_name text CHECK (length(btrim(company_name)) BETWEEN 1 AND 200);
UPDATE api_tokens SET company_name = btrim(name) WHERE role = 'company';
ALTER TABLE api_tokens
    ADD CONSTRAINT api_tokens_company_bound CHECK ((role = 'company') = (company_name IS NOT NULL));

-- One secret address per company: post-<local_part's secret>@SHORTLIST_MAIL_DOMAIN. Rotating it
-- replaces local_part; the old address is refused at RCPT from then on.
CREATE TABLE mail_intakes (
    company_name   text PRIMARY KEY CHECK (length(btrim(company_name)) BETWEEN 1 AND 200),
    local_part     text NOT NULL UNIQUE CHECK (local_part ~ '^post-[a-z0-9]{16,64}$'),
    -- the company token that asked for (or last rotated) the address: its listings are that
    -- token's to edit, as if posted through the API
    owner_token_id bigint REFERENCES api_tokens (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    rotated_at     timestamptz
);

CREATE TYPE inbound_mail_status AS ENUM ('queued', 'running', 'posted', 'rejected', 'failed');

-- A message as received: committed before the SMTP server answers 250, parsed by a queue.
-- queued -> running (claimed) -> posted (a listing) | rejected (holds no job: reason says why)
-- | failed (the parser crashed or ran out of time on it: reason says so).
CREATE TABLE inbound_mail (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    company_name   text NOT NULL,
    recipient      text NOT NULL CHECK (length(recipient) <= 320),
    -- the envelope sender (MAIL FROM), where the reply goes when the message names no other
    mail_from      text CHECK (length(mail_from) <= 320),
    message_id     text CHECK (length(message_id) <= 1000),
    -- the Message-ID, or without one a sha256 of the raw message: each message once
    dedup_key      text NOT NULL CHECK (length(dedup_key) <= 1000),
    raw            bytea NOT NULL,
    status         inbound_mail_status NOT NULL DEFAULT 'queued',
    reason         text CHECK (length(reason) <= 2000),
    listing_id     uuid REFERENCES job_listings (id) ON DELETE SET NULL,
    owner_token_id bigint REFERENCES api_tokens (id) ON DELETE SET NULL,
    attempts       integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    replied_at     timestamptz,
    received_at    timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    locked_by      text,
    locked_until   timestamptz,
    UNIQUE (company_name, dedup_key),
    CHECK (listing_id IS NULL OR status = 'posted'),
    CHECK (status NOT IN ('rejected', 'failed') OR reason IS NOT NULL)
);
CREATE INDEX inbound_mail_claimable_idx ON inbound_mail (received_at)
    WHERE status IN ('queued', 'running');

-- A message arrived: wakes the parse queue (channel shortlist.db.channels.MAIL).
CREATE FUNCTION inbound_mail_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_mail', '');
    RETURN NULL;
END $$;
CREATE TRIGGER inbound_mail_notify AFTER INSERT ON inbound_mail
    FOR EACH STATEMENT EXECUTE FUNCTION inbound_mail_notify();
