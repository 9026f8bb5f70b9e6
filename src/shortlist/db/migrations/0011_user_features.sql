-- What job seekers and recruiters expect next: work mode on listings, a recruiter's own marks on
-- candidates, and the people a search left out because their recruiter had already handled them.

-- A listing's work mode, from its producer or, when absent, read from its own text: a city
-- "Remote", or "fully remote", "work from home", "hybrid" in the title or description.
CREATE FUNCTION infer_work_mode(city text, title text, description text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN city ~* '\mremote\M' OR title ~* '\mremote\M'
          OR description ~* '\m(fully remote|100% remote|remote[- ]first|remote[- ]only|work from (home|anywhere))'
            THEN 'remote'
        WHEN title ~* '\mhybrid\M' OR description ~* '\mhybrid\M' THEN 'hybrid'
        ELSE 'onsite'
    END;

ALTER TABLE job_listings ADD COLUMN work_mode text
    CHECK (work_mode IN ('remote', 'hybrid', 'onsite'));
UPDATE job_listings SET work_mode = infer_work_mode(city_location, job_title, description);
ALTER TABLE job_listings ALTER COLUMN work_mode SET NOT NULL;

-- Producers may leave it NULL (JSONL/CSV, e-mail, API without the field): inferred here, once,
-- for every producer alike. A changed work mode is a change of the listing (updated_at moves).
CREATE FUNCTION job_listings_work_mode() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.work_mode IS NULL THEN
        NEW.work_mode := infer_work_mode(NEW.city_location, NEW.job_title, NEW.description);
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.work_mode IS DISTINCT FROM OLD.work_mode THEN
        NEW.updated_at := greatest(clock_timestamp(), OLD.updated_at, NEW.updated_at);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER job_listings_work_mode BEFORE INSERT OR UPDATE ON job_listings
    FOR EACH ROW EXECUTE FUNCTION job_listings_work_mode();

-- A recruiter's own mark on a candidate (the shortlist): one per recruiter and person, visible
-- to that recruiter and admins only. Any status may follow any other: a recruiter changes mind.
CREATE TABLE candidate_marks (
    recruiter_token_id  bigint NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    candidate_id        uuid NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    status              text NOT NULL CHECK (status IN ('shortlisted', 'contacted', 'rejected')),
    note                text NOT NULL DEFAULT '' CHECK (length(note) <= 2000),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (recruiter_token_id, candidate_id)
);
CREATE INDEX candidate_marks_recent_idx ON candidate_marks (recruiter_token_id, updated_at DESC);

-- Corpus hits a search did not append because its recruiter had contacted or rejected them:
-- counted on the results page, and shown there on request.
CREATE TABLE search_hidden (
    search_id     uuid NOT NULL REFERENCES searches (id) ON DELETE CASCADE,
    candidate_id  uuid NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    score         real NOT NULL,
    PRIMARY KEY (search_id, candidate_id)
);
