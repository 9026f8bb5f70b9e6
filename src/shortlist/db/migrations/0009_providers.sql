-- Real providers (PDL, SerpApi): shared rate limits, the credit ledger, the parsed brief and
-- budget of a search, token paging, and the statuses that stop a backfill at its target.

-- One row per provider: the current calendar minute's count and the pause after a 429, shared
-- by every process (shortlist.sources.limits).
CREATE TABLE provider_limits (
    provider           text PRIMARY KEY,
    per_minute         integer NOT NULL CHECK (per_minute > 0),
    vendor_per_minute  integer CHECK (vendor_per_minute > 0),
    window_start       timestamptz NOT NULL DEFAULT 'epoch',
    window_count       integer NOT NULL DEFAULT 0 CHECK (window_count >= 0),
    paused_until       timestamptz NOT NULL DEFAULT 'epoch'
);

-- Every provider call a backfill made: what it cost, for which search and recruiter.
CREATE TABLE provider_calls (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    search_id       uuid REFERENCES searches (id) ON DELETE SET NULL,
    owner_token_id  bigint REFERENCES api_tokens (id) ON DELETE SET NULL,
    provider        text NOT NULL,
    kind            text NOT NULL,
    tier            text,
    credits         integer NOT NULL CHECK (credits >= 0),
    outcome         text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_calls_search_idx ON provider_calls (search_id);

-- The brief as understood (role, location, min_years_experience, skills), the credits this
-- search may spend (NULL: no budget), and the provider's page token of each tier.
ALTER TABLE searches ADD COLUMN brief jsonb NOT NULL DEFAULT '{}';
ALTER TABLE searches ADD COLUMN credit_budget integer CHECK (credit_budget > 0);
ALTER TABLE searches ADD COLUMN credits_spent integer NOT NULL DEFAULT 0 CHECK (credits_spent >= 0);
ALTER TABLE search_tiers ADD COLUMN cursor text;
-- A stub the recruiter asked for (a retry, "find more"): enriched even past the target.
ALTER TABLE search_candidates ADD COLUMN requested boolean NOT NULL DEFAULT false;
ALTER TABLE search_tiers ADD COLUMN calls integer NOT NULL DEFAULT 0 CHECK (calls >= 0);

-- skipped: not enriched because the search reached its target (or budget) first; a retry
-- ("find more") re-queues it. below_threshold: enriched and scored, but below the relevance
-- floor: not a result, not counted. quota_exhausted: the provider's account has no credits.
ALTER TYPE candidate_status ADD VALUE 'skipped';
ALTER TYPE candidate_status ADD VALUE 'below_threshold';
ALTER TYPE tier_status ADD VALUE 'quota_exhausted';

CREATE OR REPLACE FUNCTION search_candidates_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status
       OR (OLD.status = 'queued' AND NEW.status IN ('running', 'skipped'))
       -- running -> queued: a worker gives a claim back (shutdown, provider paused)
       OR (OLD.status = 'running' AND NEW.status IN ('queued', 'succeeded', 'failed_no_email',
                                                      'failed_transient', 'failed_permanent',
                                                      'below_threshold'))
       -- failed_* / skipped -> queued: a retry from the UI
       OR (OLD.status IN ('failed_no_email', 'failed_transient', 'failed_permanent', 'skipped')
           AND NEW.status = 'queued')
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'search candidate % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;

CREATE OR REPLACE FUNCTION search_tiers_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status
       OR (OLD.status = 'queued' AND NEW.status = 'running')
       OR (OLD.status = 'running' AND NEW.status IN ('queued', 'exhausted', 'failed',
                                                      'quota_exhausted'))
       OR (OLD.status IN ('failed', 'quota_exhausted') AND NEW.status = 'queued')
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'search tier %/% may not go from % to %',
        OLD.search_id, OLD.tier, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
