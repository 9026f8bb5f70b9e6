-- Vendor gates per endpoint (shortlist.sources.limits): PDL limits Person Search and Person
-- Enrichment separately, each on a fixed 60 s window, and SerpApi limits per hour (PDL
-- "Usage Limits"; SerpApi "Account API"). A row is one gate ('pdl:search', 'pdl:enrich',
-- 'serpapi') with its own window length; the last known credit balance is kept per vendor.

-- The one 'pdl' gate served both endpoints; its counts mean nothing to the new gates.
DELETE FROM provider_limits WHERE provider = 'pdl';

ALTER TABLE provider_limits RENAME COLUMN per_minute TO per_window;
ALTER TABLE provider_limits RENAME COLUMN vendor_per_minute TO vendor_per_window;
ALTER TABLE provider_limits
    ADD COLUMN window_seconds double precision NOT NULL DEFAULT 60 CHECK (window_seconds > 0);
-- The vendor said its window is spent (x-ratelimit-remaining 0) until this time: callers wait
-- for it, as for a full window of our own (a 429 pause, paused_until, fails them instead).
ALTER TABLE provider_limits ADD COLUMN full_until timestamptz NOT NULL DEFAULT 'epoch';

-- The last balance a vendor reported, per kind of credit (PDL: x-totallimit-remaining of the
-- x-call-credits-type; SerpApi: total_searches_left of the Account API).
CREATE TABLE provider_balances (
    vendor       text NOT NULL,
    credit_type  text NOT NULL,
    remaining    integer NOT NULL,
    observed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vendor, credit_type)
);

-- A tier still waiting for its next page may end quota_exhausted too: once the account that
-- enriches its people is out of credit (the serp tier's people all need an enrichment), it
-- stops at once rather than page on (shortlist.talent.candidates, enrichment_out_of_credit).
CREATE OR REPLACE FUNCTION search_tiers_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status
       OR (OLD.status = 'queued' AND NEW.status IN ('running', 'quota_exhausted'))
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
