-- Trust (shortlist.auth, shortlist.privacy, shortlist.audit): tokens that expire and are
-- revoked, forgetting a person, a suppression list, the audit of who saw contact details.

-- A token's expiry (NULL: never) and when it was last accepted (touched at most once a minute).
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
ALTER TABLE api_tokens ADD COLUMN last_used_at timestamptz;
CREATE INDEX api_tokens_name_idx ON api_tokens (name);

-- Revoking is `UPDATE … SET revoked_at`: a token row is never deleted, and if someone deletes
-- one by hand the database refuses while work hangs on it, instead of cascading a recruiter's
-- searches, results and marks away.
ALTER TABLE searches DROP CONSTRAINT searches_owner_token_id_fkey,
    ADD CONSTRAINT searches_owner_token_id_fkey
        FOREIGN KEY (owner_token_id) REFERENCES api_tokens (id) ON DELETE RESTRICT;
ALTER TABLE candidate_marks DROP CONSTRAINT candidate_marks_recruiter_token_id_fkey,
    ADD CONSTRAINT candidate_marks_recruiter_token_id_fkey
        FOREIGN KEY (recruiter_token_id) REFERENCES api_tokens (id) ON DELETE RESTRICT;

-- A forgotten person's result rows stay as tombstones (rank, tier, score; no person), so ranks
-- stay 1..result_count with no gap and a paging client never sees a row move.
ALTER TABLE search_results ALTER COLUMN candidate_id DROP NOT NULL;
ALTER TABLE search_results ADD COLUMN forgotten_at timestamptz;
ALTER TABLE search_results ADD CONSTRAINT search_results_tombstone
    CHECK ((candidate_id IS NULL) = (forgotten_at IS NOT NULL));
CREATE INDEX search_results_candidate_idx ON search_results (candidate_id);

-- Append-only still, with one exception: a row may become a tombstone (never the reverse).
CREATE OR REPLACE FUNCTION search_results_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.candidate_id IS NOT NULL AND NEW.candidate_id IS NULL
       AND NEW.forgotten_at IS NOT NULL
       AND (NEW.search_id, NEW.rank, NEW.tier) = (OLD.search_id, OLD.rank, OLD.tier)
       AND NEW.constraints IS NULL
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'search_results is append-only';
END $$;

-- The key of the suppression list's hashes (HMAC-SHA256), generated here from the server's
-- strong random source (gen_random_uuid: 122 random bits each) unless SHORTLIST_PRIVACY_KEY
-- names one. A hash without the key cannot be tested against a guessed address.
CREATE TABLE privacy_key (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    key       bytea NOT NULL CHECK (length(key) >= 16)
);
INSERT INTO privacy_key (key)
VALUES (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

-- People who asked to be forgotten: only keyed hashes of their identifiers (an e-mail address,
-- a LinkedIn profile, a provider's id). Every backfill and ingest consults it before buying or
-- storing anyone.
CREATE TABLE suppressed_people (
    digest      bytea PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('email', 'linkedin', 'external_id')),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Who saw contact details: every read of result pages with e-mail, the CSV, a candidate's
-- detail, and every erasure. No foreign keys: the log outlives tokens, searches and people.
CREATE TABLE audit_log (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             timestamptz NOT NULL DEFAULT now(),
    token_id       bigint,
    token_name     text NOT NULL,
    action         text NOT NULL CHECK (action IN ('results', 'stream', 'export', 'candidate',
                                                   'hidden', 'forget', 'purge')),
    search_id      uuid,
    candidate_ids  uuid[] NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at_idx ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_token_idx ON audit_log (token_id, at DESC);
CREATE INDEX audit_log_candidates_idx ON audit_log USING gin (candidate_ids);

-- Retention: profiles bought from a provider, by last refresh (the purge's scan).
CREATE INDEX candidates_bought_idx ON candidates (updated_at)
    WHERE source IN ('talent_api', 'serp');

-- A stub added or changing status wakes the event streams of its own search only (the
-- backfill channel, which wakes workers, carries no search id).
CREATE FUNCTION notify_search_candidate_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_search_events', NEW.search_id::text);
    RETURN NULL;
END $$;
CREATE TRIGGER search_candidates_notify_search AFTER INSERT OR UPDATE OF status
    ON search_candidates
    FOR EACH ROW EXECUTE FUNCTION notify_search_candidate_event();

-- The daily credit cap sums a recruiter's last day of provider calls.
CREATE INDEX provider_calls_owner_idx ON provider_calls (owner_token_id, created_at);
