-- Job listings (seed 000), API tokens, and the embedding columns every embedded corpus shares.
CREATE EXTENSION IF NOT EXISTS vector;

-- array_to_string is only STABLE (it may format any element type); on text[] it is immutable,
-- which generated columns need.
CREATE FUNCTION shortlist_join(text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN array_to_string($1, ', ');

CREATE TYPE embedding_status AS ENUM ('pending', 'embedded', 'failed');
CREATE TYPE token_role AS ENUM ('company', 'recruiter', 'admin');

CREATE TABLE api_tokens (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    role        token_role NOT NULL,
    -- sha256 of the token; the token itself is shown once and never stored.
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

CREATE TABLE job_listings (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    company_name       text NOT NULL CHECK (length(btrim(company_name)) BETWEEN 1 AND 200),
    job_title          text NOT NULL CHECK (length(btrim(job_title)) BETWEEN 1 AND 300),
    city_location      text NOT NULL CHECK (length(btrim(city_location)) BETWEEN 1 AND 200),
    description        text NOT NULL CHECK (length(description) BETWEEN 1 AND 50000),
    salary_min_ks      integer CHECK (salary_min_ks BETWEEN 0 AND 100000),
    salary_max_ks      integer CHECK (salary_max_ks BETWEEN 0 AND 100000),
    currency_code      text NOT NULL DEFAULT 'USD' CHECK (currency_code ~ '^[A-Z]{3}$'),
    detail_page_slug   text NOT NULL UNIQUE,
    source             text NOT NULL DEFAULT 'api'
                       CHECK (source IN ('api', 'import', 'email', 'sample')),
    owner_token_id     bigint REFERENCES api_tokens (id) ON DELETE SET NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),

    -- embedding state (same columns on every embedded corpus; see shortlist.listings.indexer)
    embedding_status   embedding_status NOT NULL DEFAULT 'pending',
    embedding          vector(384),
    embedded_at        timestamptz,
    embedding_error    text,
    embedding_attempts integer NOT NULL DEFAULT 0,
    -- what the vector is computed from; a change of anything else never calls the model again
    content_hash       bytea GENERATED ALWAYS AS (decode(md5(
                           job_title || E'\n' || company_name || E'\n' || city_location
                           || E'\n' || description), 'hex')) STORED,
    embedded_hash      bytea,
    -- lease of the indexer that claimed the row (NULL when unclaimed)
    locked_by          text,
    locked_until       timestamptz,

    search_tsv         tsvector GENERATED ALWAYS AS (
                           setweight(to_tsvector('english', job_title), 'A')
                           || setweight(to_tsvector('english', company_name), 'B')
                           || setweight(to_tsvector('english', city_location), 'B')
                           || setweight(to_tsvector('english', description), 'C')) STORED,

    CONSTRAINT salary_range_ordered CHECK (
        salary_min_ks IS NULL OR salary_max_ks IS NULL OR salary_min_ks <= salary_max_ks),
    CONSTRAINT embedded_has_vector CHECK (
        embedding_status <> 'embedded' OR (embedding IS NOT NULL AND embedded_at IS NOT NULL))
);

-- The indexer's claim condition, as a partial index so a claim touches only claimable rows.
CREATE INDEX job_listings_claimable_idx ON job_listings (created_at)
    WHERE embedding_status = 'pending'
       OR (embedding_status = 'embedded' AND updated_at > embedded_at);
CREATE INDEX job_listings_embedding_hnsw_idx ON job_listings
    USING hnsw (embedding vector_cosine_ops);
CREATE INDEX job_listings_search_tsv_idx ON job_listings USING gin (search_tsv);
CREATE INDEX job_listings_status_idx ON job_listings (embedding_status);

-- updated_at moves on every change of a listing's own fields, never on the indexer's writes.
-- A failed listing that is edited becomes pending again (the seed: "a later update retries").
CREATE FUNCTION job_listings_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.company_name, NEW.job_title, NEW.city_location, NEW.description,
        NEW.salary_min_ks, NEW.salary_max_ks, NEW.currency_code, NEW.detail_page_slug)
       IS DISTINCT FROM
       (OLD.company_name, OLD.job_title, OLD.city_location, OLD.description,
        OLD.salary_min_ks, OLD.salary_max_ks, OLD.currency_code, OLD.detail_page_slug)
    THEN
        NEW.updated_at := greatest(clock_timestamp(), OLD.updated_at);
        IF OLD.embedding_status = 'failed' AND NEW.embedding_status = 'failed' THEN
            NEW.embedding_status := 'pending';
            NEW.embedding_error := NULL;
            NEW.embedding_attempts := 0;
        END IF;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER job_listings_touch BEFORE UPDATE ON job_listings
    FOR EACH ROW EXECUTE FUNCTION job_listings_touch();

-- Producers wake idle indexers; the payload is the table so one listener serves every corpus.
-- (PostgreSQL folds identical notifications of one transaction into one, so bulk imports
-- send one wake-up per transaction, not one per row.)
CREATE FUNCTION notify_embedding_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_embed', TG_TABLE_NAME);
    RETURN NULL;
END $$;

CREATE TRIGGER job_listings_notify_insert AFTER INSERT ON job_listings
    FOR EACH ROW EXECUTE FUNCTION notify_embedding_work();
CREATE TRIGGER job_listings_notify_update AFTER UPDATE ON job_listings
    FOR EACH ROW
    WHEN (NEW.embedding_status = 'pending' AND OLD.embedding_status <> 'pending'
          OR NEW.updated_at > OLD.updated_at)
    EXECUTE FUNCTION notify_embedding_work();
