-- A profile enriched but not yet ingested (shortlist.talent.candidates): kept on the stub when
-- the embedder throttles after the enrichment succeeded, so the next claim ingests it instead
-- of asking the provider again (an enrichment takes ~8 s and counts against the provider's
-- rate limit; the embedder's throttle is not the provider's business). Cleared when the worker
-- finishes the stub; a stub the reaper fails forward keeps it, so a retry needs no enrichment.
ALTER TABLE search_candidates ADD COLUMN enriched_profile jsonb;
