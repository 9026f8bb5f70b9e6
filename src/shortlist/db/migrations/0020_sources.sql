-- Job sources (shortlist.listings.sources): ATS boards and careers sites crawled as a queue;
-- listings that remember where they came from and close when their source drops them; and an
-- embedding claim that serves interactive producers before bulk ones.

-- A source to crawl: a row of the crawl queue (claimed FOR UPDATE SKIP LOCKED under a lease,
-- shortlist.listings.sources.queue). active -> failed on a permanent error (a board that does
-- not exist); a failed source is shown, and `sources crawl ID` makes it active again.
CREATE TABLE job_sources (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- greenhouse:TOKEN, lever:SITE, ashby:ORG, or the http(s) URL of a careers page or sitemap
    spec             text NOT NULL UNIQUE CHECK (length(spec) BETWEEN 3 AND 2000),
    kind             text NOT NULL CHECK (kind IN ('greenhouse', 'lever', 'ashby', 'careers')),
    company_name     text CHECK (length(btrim(company_name)) BETWEEN 1 AND 200),
    status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'failed')),
    next_crawl_at    timestamptz NOT NULL DEFAULT now(),
    attempts         integer NOT NULL DEFAULT 0,
    last_crawl_at    timestamptz,
    last_success_at  timestamptz,
    last_error       text,
    -- counts of the last successful crawl: new, changed, unchanged, closed, skipped
    last_outcome     jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    locked_by        text,
    locked_until     timestamptz,
    CONSTRAINT failed_source_has_error CHECK (status <> 'failed' OR last_error IS NOT NULL)
);
CREATE INDEX job_sources_due_idx ON job_sources (next_crawl_at) WHERE status = 'active';

-- A new source wakes idle crawl workers (shortlist.db.channels.SOURCES).
CREATE FUNCTION notify_crawl_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_sources', '');
    RETURN NULL;
END $$;
CREATE TRIGGER job_sources_notify_insert AFTER INSERT ON job_sources
    FOR EACH STATEMENT EXECUTE FUNCTION notify_crawl_work();

-- The validators of the last response of every URL a crawl fetched (for If-None-Match /
-- If-Modified-Since) and the postings that response held, which a 304 says are all still there.
CREATE TABLE crawl_pages (
    source_id      bigint NOT NULL REFERENCES job_sources (id) ON DELETE CASCADE,
    url            text NOT NULL,
    etag           text,
    last_modified  text,
    external_ids   text[] NOT NULL DEFAULT '{}',
    fetched_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, url)
);

-- The pace of each host, shared by every process: the next moment a request may go out.
CREATE TABLE crawl_hosts (
    host           text PRIMARY KEY,
    next_fetch_at  timestamptz NOT NULL
);

-- Listings carry their producer: api, import, email, sample, or the spec of their source.
ALTER TABLE job_listings DROP CONSTRAINT job_listings_source_check;
ALTER TABLE job_listings ADD CONSTRAINT job_listings_source_check CHECK (
    source IN ('api', 'import', 'email', 'sample')
    OR source ~ '^(greenhouse|lever|ashby):[A-Za-z0-9._-]+$'
    OR source ~ '^https?://');

ALTER TABLE job_listings
    ADD COLUMN status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    ADD COLUMN closed_at timestamptz,
    ADD COLUMN source_id bigint REFERENCES job_sources (id) ON DELETE SET NULL,
    ADD COLUMN source_url text CHECK (length(source_url) <= 2000),
    ADD COLUMN external_id text CHECK (length(external_id) BETWEEN 1 AND 500),
    ADD COLUMN valid_through timestamptz,
    -- when the crawler last saw the posting on its source (NULL: not crawled)
    ADD COLUMN last_seen_at timestamptz,
    -- the listing this one repeats (the same job seen through another source), not listed twice
    ADD COLUMN duplicate_of uuid REFERENCES job_listings (id) ON DELETE SET NULL,
    -- The embedding claim's order (indexer/queries.sql): lane 0 is the interactive producers
    -- (a company posting through the API or by e-mail waits for its listing), lane 1 the bulk
    -- ones; within a lane, claim_seq is the row's place in its own batch (the n-th posting of
    -- a crawl, the n-th row of a file), so batches of different sources interleave.
    ADD COLUMN claim_lane smallint GENERATED ALWAYS AS (
        CASE WHEN source IN ('api', 'email') THEN 0 ELSE 1 END) STORED,
    ADD COLUMN claim_seq integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT closed_has_time CHECK (status = 'open' OR closed_at IS NOT NULL);

-- One job, one listing: a posting is known by its source and the id its source gives it.
CREATE UNIQUE INDEX job_listings_external_idx ON job_listings (source, external_id)
    WHERE external_id IS NOT NULL;
-- ... or by its apply URL, when another source lists the same one.
CREATE INDEX job_listings_source_url_idx ON job_listings (source_url) WHERE source_url IS NOT NULL;
CREATE INDEX job_listings_source_open_idx ON job_listings (source_id) WHERE status = 'open';

-- Candidates are all written for a recruiter who waits (backfill) or in bulk with the same
-- weight: one lane, so the shared claim reads the same columns on both corpora.
ALTER TABLE candidates
    ADD COLUMN claim_lane smallint NOT NULL DEFAULT 0,
    ADD COLUMN claim_seq integer NOT NULL DEFAULT 0;

-- The claim condition's partial index, in the claim's order.
DROP INDEX job_listings_claimable_idx;
CREATE INDEX job_listings_claimable_idx ON job_listings (claim_lane, claim_seq, created_at)
    WHERE embedding_status = 'pending'
       OR (embedding_status = 'embedded' AND updated_at > embedded_at);
DROP INDEX candidates_claimable_idx;
CREATE INDEX candidates_claimable_idx ON candidates (claim_lane, claim_seq, created_at)
    WHERE embedding_status = 'pending'
       OR (embedding_status = 'embedded' AND updated_at > embedded_at);
