-- What a job seeker needs of a listing (shortlist.listings.eligibility, issue 41): where to
-- apply, which countries a remote job accepts, whether it sponsors a visa; and the reference
-- exchange rates that put every salary in one currency (shortlist.listings.rates).
ALTER TABLE job_listings
    ADD COLUMN apply_url text
        -- http(s), no user or password before the host (shortlist.listings.models.ApplyUrl).
        CHECK (length(apply_url) <= 2000
               AND apply_url ~* '^https?://[^/?#@[:space:]]+([/?#][^[:space:]]*)?$'),
    ADD COLUMN apply_email text
        CHECK (length(apply_email) <= 320 AND apply_email ~ '^[^@[:space:]]+@[^@[:space:]]+$'),
    -- ISO 3166 alpha-2 codes; empty: the listing does not say (not: open to everyone).
    ADD COLUMN remote_countries text[] NOT NULL DEFAULT '{}'
        CHECK (cardinality(remote_countries) <= 300
               AND array_to_string(remote_countries, ',') ~ '^([A-Z]{2}(,[A-Z]{2})*)?$'),
    ADD COLUMN visa_sponsorship text NOT NULL DEFAULT 'unknown'
        CHECK (visa_sponsorship IN ('offered', 'not_offered', 'unknown'));

-- The remote_country filter (search.sql, filter_remote_country): array containment.
CREATE INDEX job_listings_remote_countries_idx ON job_listings USING gin (remote_countries);

-- One row per currency: how many units of it one euro buys (the ECB's reference rates, whose
-- base is the euro; pegged currencies the ECB does not publish, through their anchor), and the
-- date the rate is of. EUR itself is 1.
CREATE TABLE exchange_rates (
    currency_code text PRIMARY KEY CHECK (currency_code ~ '^[A-Z]{3}$'),
    per_eur       numeric NOT NULL CHECK (per_eur > 0),
    rate_date     date NOT NULL,
    source        text NOT NULL CHECK (length(source) BETWEEN 1 AND 200)
);

-- Whether a person living in `country` may take a job (search.sql, filter_remote_country): a
-- remote one that names that country or names none. Inlined by the planner (one expression).
CREATE FUNCTION shortlist_remote_for(work_mode text, remote_countries text[], country text)
    RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN work_mode = 'remote'
           AND (remote_countries = '{}' OR remote_countries @> ARRAY[country]);

-- A yearly figure (thousands) of one currency in another, by the stored rates; NULL when either
-- has no rate.
CREATE FUNCTION shortlist_convert_ks(amount numeric, from_code text, to_code text)
    RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE
    RETURN amount * (SELECT t.per_eur / f.per_eur
                       FROM exchange_rates AS f, exchange_rates AS t
                      WHERE f.currency_code = from_code AND t.currency_code = to_code);
