-- Embedding indexer bookkeeping (shortlist.listings.indexer), on both embedded corpora.

-- When the indexer last marked the row failed, so `shortlist status` can list the latest
-- failures (updated_at only moves on edits, never on the indexer's own writes).
ALTER TABLE job_listings ADD COLUMN embedding_failed_at timestamptz;
ALTER TABLE candidates ADD COLUMN embedding_failed_at timestamptz;

-- A failed row always says why: the operator's only clue before `reindex --failed`.
ALTER TABLE job_listings ADD CONSTRAINT failed_has_error
    CHECK (embedding_status <> 'failed' OR embedding_error IS NOT NULL);
ALTER TABLE candidates ADD CONSTRAINT candidate_failed_has_error
    CHECK (embedding_status <> 'failed' OR embedding_error IS NOT NULL);

CREATE INDEX job_listings_failed_idx ON job_listings (embedding_failed_at DESC)
    WHERE embedding_status = 'failed';
CREATE INDEX candidates_failed_idx ON candidates (embedding_failed_at DESC)
    WHERE embedding_status = 'failed';
