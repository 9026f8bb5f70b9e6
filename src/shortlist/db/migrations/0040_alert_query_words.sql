-- Alerts (issue 42), the keyword path's own table: a saved query's title words and anchors in a
-- narrow row of their own (shortlist.alerts.reverse). The keyword path reads, for every query
-- whose anchors a title holds, only these few bytes and pg_trgm's word similarity, and fetches
-- a query's vector only when its similarity keeps it a candidate: with the vector in the same
-- row (1.5 kB), every anchor hit read a page.
CREATE TABLE alert_query_words (
    query_id     bigint PRIMARY KEY REFERENCES alert_queries (id) ON DELETE CASCADE,
    title_words  text NOT NULL,
    anchors      text[] NOT NULL
);
INSERT INTO alert_query_words (query_id, title_words, anchors)
SELECT id, title_words, anchors FROM alert_queries;

CREATE INDEX alert_query_words_anchors_idx ON alert_query_words USING gin (anchors);
-- The queries no keyword can find, checked for every listing.
CREATE INDEX alert_query_words_unanchored_idx ON alert_query_words (query_id)
    WHERE cardinality(anchors) = 0;

DROP INDEX alert_queries_anchors_idx;
DROP INDEX alert_queries_unanchored_idx;
ALTER TABLE alert_queries DROP COLUMN anchors, DROP COLUMN title_words;

-- A recruiter's saved people search (POST /api/searches/{id}/alert): new people of the corpus
-- who fit its brief are reported once each (shortlist.alerts.people). No vendor is called.
CREATE TABLE people_alerts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    search_id   uuid NOT NULL UNIQUE REFERENCES searches (id) ON DELETE CASCADE,
    org_id      bigint REFERENCES organisations (id) ON DELETE CASCADE,
    user_id     bigint REFERENCES users (id) ON DELETE SET NULL,
    status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- people embedded after this were not looked at yet
    checked_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE people_alert_matches (
    alert_id      bigint NOT NULL REFERENCES people_alerts (id) ON DELETE CASCADE,
    candidate_id  uuid NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    score         real NOT NULL,
    matched_at    timestamptz NOT NULL DEFAULT now(),
    notified_at   timestamptz,
    PRIMARY KEY (alert_id, candidate_id)
);
CREATE INDEX people_alert_matches_unnotified_idx ON people_alert_matches (alert_id)
    WHERE notified_at IS NULL;
