-- Bulk-imported job listings carry source 'file' (`shortlist ingest jobs FILE`), the name issue 22
-- gives that producer, no longer 'import'. Candidates keep their own 'import' source (talent).
-- The rewrite leaves claim_lane as it was: a generated column, 'file' is in the bulk lane (1).
ALTER TABLE job_listings DROP CONSTRAINT job_listings_source_check;
UPDATE job_listings SET source = 'file' WHERE source = 'import';
ALTER TABLE job_listings ADD CONSTRAINT job_listings_source_check CHECK (
    source IN ('api', 'file', 'email', 'sample')
    OR source ~ '^(greenhouse|lever|ashby):[A-Za-z0-9._-]+$'
    OR source ~ '^https?://');
