-- Saved searches that alert (issue 42; shortlist.alerts). A job listing that is embedded is
-- queued for the matcher (alert_listing_queue); the matcher finds every saved search it
-- satisfies by reverse search over alert_queries (one row per distinct query text: its keyword
-- anchors in a GIN index, its vector in an HNSW index) and saved_searches (the filters as
-- columns), and writes alert_matches; the digest queue (saved_searches' lease columns) sends
-- them by e-mail, each (subscriber, job) at most once ever.

CREATE TABLE alert_subscribers (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email          citext NOT NULL UNIQUE CHECK (length(email) <= 320 AND email LIKE '%_@_%'),
    user_id        bigint REFERENCES users (id) ON DELETE SET NULL,
    -- suppressed: a hard bounce (or a complaint); nothing is sent to it again
    status         text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suppressed')),
    suppressed_at  timestamptz,
    suppressed_why text CHECK (length(suppressed_why) <= 500),
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'suppressed') = (suppressed_at IS NOT NULL))
);

-- One row per distinct saved query (normalised as job search reads it): identical queries are
-- embedded and indexed once, whoever saved them.
CREATE TABLE alert_queries (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    normalised   text NOT NULL UNIQUE CHECK (length(normalised) BETWEEN 1 AND 2000),
    -- the words compared with a listing's title (search.sql's title_words: the query's words
    -- but seniority and stop words); '' when none
    title_words  text NOT NULL,
    -- Luwak-style presearch (shortlist.alerts.reverse): trigrams of title_words of which a
    -- title must contain at least one for its similarity to reach KEYWORD_SIMILARITY; empty:
    -- no keyword path (the query is found by its vector, or always checked)
    anchors      text[] NOT NULL,
    embedding    vector(384) NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alert_queries_anchors_idx ON alert_queries USING gin (anchors);
CREATE INDEX alert_queries_embedding_idx ON alert_queries USING hnsw (embedding vector_cosine_ops);
-- The queries no keyword can find, checked for every listing.
CREATE INDEX alert_queries_unanchored_idx ON alert_queries (id) WHERE cardinality(anchors) = 0;

CREATE TYPE alert_frequency AS ENUM ('instant', 'daily', 'weekly');

CREATE TABLE saved_searches (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    subscriber_id   bigint NOT NULL REFERENCES alert_subscribers (id) ON DELETE CASCADE,
    query_id        bigint NOT NULL REFERENCES alert_queries (id),
    query           text NOT NULL CHECK (length(query) BETWEEN 1 AND 500),
    -- the filters of job search (search.sql), as columns the matcher reads:
    -- location lower-cased (a substring of the listing's city_location, case aside)
    location        text CHECK (length(location) BETWEEN 1 AND 200 AND location = lower(location)),
    salary_min      integer CHECK (salary_min BETWEEN 0 AND 100000),
    work_mode       text CHECK (work_mode IN ('remote', 'hybrid', 'onsite')),
    min_score       real NOT NULL CHECK (min_score > 0 AND min_score < 1),
    frequency       alert_frequency NOT NULL,
    timezone        text NOT NULL DEFAULT 'UTC' CHECK (length(timezone) <= 64),
    local_hour      smallint NOT NULL DEFAULT 8 CHECK (local_hour BETWEEN 0 AND 23),
    -- pending (double opt-in not confirmed) -> active -> unsubscribed | disabled
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'active', 'unsubscribed', 'disabled')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- when the subscriber consented: the confirmation link followed, or a signed-in save
    consent_at      timestamptz,
    ended_at        timestamptz,
    -- the digest queue: due when it has queued matches and its slot came (NULL: nothing due)
    due_at          timestamptz,
    last_digest_at  timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text CHECK (length(last_error) <= 500),
    locked_by       text,
    locked_until    timestamptz,
    CHECK (status <> 'active' OR consent_at IS NOT NULL)
);
CREATE INDEX saved_searches_query_idx ON saved_searches (query_id, work_mode, salary_min)
    WHERE status = 'active';
CREATE INDEX saved_searches_subscriber_idx ON saved_searches (subscriber_id);
CREATE INDEX saved_searches_due_idx ON saved_searches (due_at)
    WHERE due_at IS NOT NULL AND status = 'active';

-- Each e-mail sent or to be sent: its items are fixed when it is made and its Message-ID
-- kept, so a resend after a crash is the same message (the receiver's dedup sees one).
CREATE TABLE alert_digests (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    search_id   uuid NOT NULL REFERENCES saved_searches (id) ON DELETE CASCADE,
    message_id  text NOT NULL UNIQUE,
    -- pending -> sent | cancelled (unsubscribed first) | failed (refused for good)
    status      text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'sent', 'cancelled', 'failed')),
    attempts    integer NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz,
    bounced_at  timestamptz
);
CREATE UNIQUE INDEX alert_digests_one_pending_idx ON alert_digests (search_id)
    WHERE status = 'pending';

CREATE TABLE alert_matches (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    search_id      uuid NOT NULL REFERENCES saved_searches (id) ON DELETE CASCADE,
    subscriber_id  bigint NOT NULL REFERENCES alert_subscribers (id) ON DELETE CASCADE,
    listing_id     uuid NOT NULL REFERENCES job_listings (id) ON DELETE CASCADE,
    -- the job, whichever listing of it: its company, title and city as two listings of one job
    -- share them (shortlist_name_key); a repost is the same job
    job_key        text NOT NULL,
    company_key    text NOT NULL,
    score          real NOT NULL,
    -- queued -> sent | dropped (closed, or found a duplicate, before it went) | cancelled
    status         text NOT NULL DEFAULT 'queued'
                   CHECK (status IN ('queued', 'sent', 'dropped', 'cancelled')),
    digest_id      bigint REFERENCES alert_digests (id) ON DELETE SET NULL,
    matched_at     timestamptz NOT NULL DEFAULT now(),
    -- each (subscriber, job) once ever
    UNIQUE (subscriber_id, job_key)
);
CREATE INDEX alert_matches_queued_idx ON alert_matches (search_id) WHERE status = 'queued';
CREATE INDEX alert_matches_digest_idx ON alert_matches (digest_id);

-- The matcher's queue: listings whose (new) vector has not been matched yet.
CREATE TABLE alert_listing_queue (
    listing_id    uuid PRIMARY KEY REFERENCES job_listings (id) ON DELETE CASCADE,
    queued_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts      integer NOT NULL DEFAULT 0,
    locked_by     text,
    locked_until  timestamptz
);

-- A listing whose vector was (re)written is queued, and the matcher woken at commit.
CREATE FUNCTION alert_listing_embedded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO alert_listing_queue (listing_id) VALUES (NEW.id)
        ON CONFLICT (listing_id) DO UPDATE SET queued_at = excluded.queued_at;
    PERFORM pg_notify('shortlist_alerts', '');
    RETURN NULL;
END $$;

CREATE TRIGGER alert_listing_embedded AFTER INSERT OR UPDATE OF embedded_at ON job_listings
    FOR EACH ROW
    WHEN (NEW.embedding_status = 'embedded' AND NEW.status = 'open')
    EXECUTE FUNCTION alert_listing_embedded();

-- The edges of a saved search's life; anything else is a bug, refused.
CREATE FUNCTION saved_searches_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status
       OR (OLD.status = 'pending' AND NEW.status IN ('active', 'unsubscribed', 'disabled'))
       OR (OLD.status = 'active' AND NEW.status IN ('unsubscribed', 'disabled'))
       -- shortlist alerts enable: an operator's disable undone
       OR (OLD.status = 'disabled' AND NEW.status = 'active')
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'saved search % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER saved_searches_transition BEFORE UPDATE OF status ON saved_searches
    FOR EACH ROW EXECUTE FUNCTION saved_searches_transition();

-- When a saved search's next digest may go: instant at once; daily at the subscriber's local
-- hour at least 20 hours after the last one, weekly at least 6 days 20 hours after it (so a
-- digest sent late does not make the next one early).
CREATE FUNCTION alert_next_slot(freq alert_frequency, tz text, hour smallint, last timestamptz)
    RETURNS timestamptz LANGUAGE sql STABLE
    RETURN CASE freq
        WHEN 'instant' THEN now()
        ELSE (
            SELECT CASE WHEN slot >= base THEN slot ELSE slot + interval '1 day' END AT TIME ZONE tz
              FROM (SELECT b.base, date_trunc('day', b.base) + make_interval(hours => hour) AS slot
                      FROM (SELECT greatest(now(), coalesce(last, '-infinity')
                                    + CASE freq WHEN 'daily' THEN interval '20 hours'
                                                ELSE interval '6 days 20 hours' END)
                                   AT TIME ZONE tz AS base) AS b) AS s)
    END;

-- A saved search falling due (the matcher gave it matches) wakes the digest sender at commit.
CREATE FUNCTION saved_searches_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_alert_digests', '');
    RETURN NULL;
END $$;
CREATE TRIGGER saved_searches_due AFTER UPDATE OF due_at ON saved_searches
    FOR EACH ROW WHEN (NEW.due_at IS NOT NULL AND OLD.due_at IS NULL)
    EXECUTE FUNCTION saved_searches_due();
