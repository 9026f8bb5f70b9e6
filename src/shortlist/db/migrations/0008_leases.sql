-- Crash recovery of backfill candidates: a stub whose worker vanished goes back to the queue,
-- and only after several lost workers fails forward (shortlist.talent.reaper). Reset by a
-- recruiter's retry.
ALTER TABLE search_candidates ADD COLUMN lost_workers integer NOT NULL DEFAULT 0;
