-- Candidate corpus and recruiter searches with streaming backfill (seed 001).

-- The candidate corpus: internal profiles plus every profile a backfill ingested.
-- Carries the same embedding columns as job_listings, so the one indexer embeds both.
CREATE TABLE candidates (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- provider-qualified handle ('talent:jdoe'); NULL for profiles entered by hand
    external_id        text UNIQUE,
    source             text NOT NULL DEFAULT 'import'
                       CHECK (source IN ('import', 'sample', 'talent_api', 'serp')),
    full_name          text NOT NULL CHECK (length(btrim(full_name)) BETWEEN 1 AND 200),
    headline           text NOT NULL DEFAULT '' CHECK (length(headline) <= 500),
    role_title         text NOT NULL DEFAULT '' CHECK (length(role_title) <= 200),
    role_family        text NOT NULL DEFAULT '' CHECK (length(role_family) <= 100),
    skills             text[] NOT NULL DEFAULT '{}',
    years_experience   integer CHECK (years_experience BETWEEN 0 AND 80),
    location           text NOT NULL DEFAULT '' CHECK (length(location) <= 200),
    email              text CHECK (length(email) <= 320),
    summary            text NOT NULL DEFAULT '' CHECK (length(summary) <= 20000),
    profile_url        text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),

    embedding_status   embedding_status NOT NULL DEFAULT 'pending',
    embedding          vector(384),
    embedded_at        timestamptz,
    embedding_error    text,
    embedding_attempts integer NOT NULL DEFAULT 0,
    content_hash       bytea GENERATED ALWAYS AS (decode(md5(
                           full_name || E'\n' || headline || E'\n' || role_title || E'\n'
                           || location || E'\n' || shortlist_join(skills) || E'\n'
                           || summary), 'hex')) STORED,
    embedded_hash      bytea,
    locked_by          text,
    locked_until       timestamptz,

    search_tsv         tsvector GENERATED ALWAYS AS (
                           setweight(to_tsvector('english', role_title || ' ' || headline), 'A')
                           || setweight(to_tsvector('english', shortlist_join(skills)), 'A')
                           || setweight(to_tsvector('english', location), 'B')
                           || setweight(to_tsvector('english', summary), 'C')) STORED,

    CONSTRAINT candidate_embedded_has_vector CHECK (
        embedding_status <> 'embedded' OR (embedding IS NOT NULL AND embedded_at IS NOT NULL))
);

CREATE INDEX candidates_claimable_idx ON candidates (created_at)
    WHERE embedding_status = 'pending'
       OR (embedding_status = 'embedded' AND updated_at > embedded_at);
CREATE INDEX candidates_embedding_hnsw_idx ON candidates USING hnsw (embedding vector_cosine_ops);
CREATE INDEX candidates_search_tsv_idx ON candidates USING gin (search_tsv);

CREATE FUNCTION candidates_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.full_name, NEW.headline, NEW.role_title, NEW.role_family, NEW.skills,
        NEW.years_experience, NEW.location, NEW.email, NEW.summary, NEW.profile_url)
       IS DISTINCT FROM
       (OLD.full_name, OLD.headline, OLD.role_title, OLD.role_family, OLD.skills,
        OLD.years_experience, OLD.location, OLD.email, OLD.summary, OLD.profile_url)
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

CREATE TRIGGER candidates_touch BEFORE UPDATE ON candidates
    FOR EACH ROW EXECUTE FUNCTION candidates_touch();
CREATE TRIGGER candidates_notify_insert AFTER INSERT ON candidates
    FOR EACH ROW EXECUTE FUNCTION notify_embedding_work();
CREATE TRIGGER candidates_notify_update AFTER UPDATE ON candidates
    FOR EACH ROW
    WHEN (NEW.embedding_status = 'pending' AND OLD.embedding_status <> 'pending'
          OR NEW.updated_at > OLD.updated_at)
    EXECUTE FUNCTION notify_embedding_work();

-- A recruiter's search. Its id is the unguessable handle the client polls with.
CREATE TYPE search_status AS ENUM ('running', 'complete', 'stale');

CREATE TABLE searches (
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_token_id        bigint NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    query                 text NOT NULL CHECK (length(btrim(query)) BETWEEN 1 AND 1000),
    role                  text CHECK (length(role) <= 200),
    location              text CHECK (length(location) <= 200),
    min_years_experience  integer CHECK (min_years_experience BETWEEN 0 AND 80),
    skills                text[] NOT NULL DEFAULT '{}',
    query_embedding       vector(384),
    status                search_status NOT NULL DEFAULT 'running',
    -- ranks 1..result_count exist in search_results; bumped in the same transaction as the append
    result_count          integer NOT NULL DEFAULT 0 CHECK (result_count >= 0),
    target_count          integer NOT NULL CHECK (target_count > 0),
    backfill_started      boolean NOT NULL DEFAULT false,
    created_at            timestamptz NOT NULL DEFAULT now(),
    last_progress_at      timestamptz NOT NULL DEFAULT now(),
    finished_at           timestamptz
);
CREATE INDEX searches_owner_idx ON searches (owner_token_id, created_at DESC);
CREATE INDEX searches_running_idx ON searches (last_progress_at) WHERE status = 'running';

-- One discovery tier of one search: a queue row of its own, so discovery is durable too.
CREATE TYPE tier_status AS ENUM ('queued', 'running', 'exhausted', 'failed');

CREATE TABLE search_tiers (
    search_id     uuid NOT NULL REFERENCES searches (id) ON DELETE CASCADE,
    tier          text NOT NULL CHECK (tier IN ('strict', 'broad', 'serp')),
    status        tier_status NOT NULL DEFAULT 'queued',
    next_page     integer NOT NULL DEFAULT 1,
    attempts      integer NOT NULL DEFAULT 0,
    found         integer NOT NULL DEFAULT 0,
    last_error    text,
    not_before    timestamptz NOT NULL DEFAULT now(),
    locked_by     text,
    locked_until  timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (search_id, tier)
);
CREATE INDEX search_tiers_claimable_idx ON search_tiers (not_before) WHERE status IN ('queued', 'running');

-- One external person attempted by one search: the stub is written (queued) before enrichment.
CREATE TYPE candidate_status AS ENUM (
    'queued', 'running', 'succeeded', 'failed_no_email', 'failed_transient', 'failed_permanent');

CREATE TABLE search_candidates (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    search_id     uuid NOT NULL REFERENCES searches (id) ON DELETE CASCADE,
    external_id   text NOT NULL,
    tier          text NOT NULL CHECK (tier IN ('strict', 'broad', 'serp')),
    status        candidate_status NOT NULL DEFAULT 'queued',
    display_name  text,
    candidate_id  uuid REFERENCES candidates (id) ON DELETE SET NULL,
    attempts      integer NOT NULL DEFAULT 0,
    last_error    text,
    locked_by     text,
    locked_until  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (search_id, external_id)
);
CREATE INDEX search_candidates_queued_idx ON search_candidates (created_at) WHERE status = 'queued';
CREATE INDEX search_candidates_running_idx ON search_candidates (locked_until) WHERE status = 'running';

-- Append-only result rows: rank is assigned by the server and never changes.
CREATE TABLE search_results (
    search_id            uuid NOT NULL REFERENCES searches (id) ON DELETE CASCADE,
    rank                 integer NOT NULL CHECK (rank > 0),
    candidate_id         uuid NOT NULL REFERENCES candidates (id),
    search_candidate_id  bigint REFERENCES search_candidates (id),
    tier                 text NOT NULL CHECK (tier IN ('internal', 'strict', 'broad', 'serp')),
    score                real NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (search_id, rank),
    UNIQUE (search_id, candidate_id)
);

-- Result rows are never updated or deleted while their search exists.
CREATE FUNCTION search_results_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'search_results is append-only';
END $$;
CREATE TRIGGER search_results_no_update BEFORE UPDATE ON search_results
    FOR EACH ROW EXECUTE FUNCTION search_results_append_only();

-- Wake backfill workers when stubs or tiers are queued; wake result streams on appends.
CREATE FUNCTION notify_backfill_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_backfill', TG_TABLE_NAME);
    RETURN NULL;
END $$;
CREATE TRIGGER search_candidates_notify AFTER INSERT OR UPDATE OF status ON search_candidates
    FOR EACH STATEMENT EXECUTE FUNCTION notify_backfill_work();
CREATE TRIGGER search_tiers_notify AFTER INSERT OR UPDATE OF status ON search_tiers
    FOR EACH STATEMENT EXECUTE FUNCTION notify_backfill_work();

CREATE FUNCTION notify_search_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_search_events', NEW.id::text);
    RETURN NULL;
END $$;
CREATE TRIGGER searches_notify AFTER UPDATE ON searches
    FOR EACH ROW EXECUTE FUNCTION notify_search_event();
