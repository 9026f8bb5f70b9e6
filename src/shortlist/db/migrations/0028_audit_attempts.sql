-- The audit log covers every response that hands out a profile link or a person's name: a
-- recruiter's shortlist (GET /api/shortlist) and the backfill attempts of a search
-- (attempts[] of GET /api/results and of the event stream: a name and a LinkedIn id each),
-- which are named by their attempt ids (search_candidates.id; no foreign key, as for people).
ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check,
    ADD CONSTRAINT audit_log_action_check CHECK (
        action IN ('results', 'stream', 'export', 'candidate', 'hidden', 'forget', 'purge',
                   'shortlist', 'attempts'));
ALTER TABLE audit_log ADD COLUMN attempt_ids bigint[] NOT NULL DEFAULT '{}';
