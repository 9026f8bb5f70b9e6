-- The backfill pipeline's queue bookkeeping on top of 0002 (shortlist.talent).

-- A single-column key for search_tiers, so the shared lease helper (LeaseTable, one key
-- column) can heartbeat tier claims like any other queue row. (search_id, tier) stays the PK.
ALTER TABLE search_tiers ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY UNIQUE;

-- Every search embeds its query once, at creation; backfilled candidates are scored against it.
ALTER TABLE searches ALTER COLUMN query_embedding SET NOT NULL;
ALTER TABLE searches ADD CONSTRAINT searches_finished_has_time
    CHECK (status <> 'complete' OR finished_at IS NOT NULL);

-- A claimed row always carries its lease, and a failed one always says why (the UI shows it).
ALTER TABLE search_candidates ADD CONSTRAINT search_candidates_running_has_lease
    CHECK (status <> 'running' OR (locked_by IS NOT NULL AND locked_until IS NOT NULL));
ALTER TABLE search_candidates ADD CONSTRAINT search_candidates_failed_has_error
    CHECK (status NOT IN ('failed_no_email', 'failed_transient', 'failed_permanent')
           OR last_error IS NOT NULL);
ALTER TABLE search_tiers ADD CONSTRAINT search_tiers_running_has_lease
    CHECK (status <> 'running' OR (locked_by IS NOT NULL AND locked_until IS NOT NULL));
ALTER TABLE search_tiers ADD CONSTRAINT search_tiers_failed_has_error
    CHECK (status <> 'failed' OR last_error IS NOT NULL);

-- Per-search status counts (the results endpoint, completion checks, the tier claim's "does
-- this search still need people" test) without scanning other searches' stubs.
CREATE INDEX search_candidates_search_status_idx ON search_candidates (search_id, status);

-- The state machines, enforced by the database as well as by the guarded UPDATEs in
-- shortlist/talent/queries.sql: a buggy or hand-written UPDATE cannot move a row along an edge
-- the pipeline does not have (e.g. un-fail a result, or resurrect an exhausted tier).
CREATE FUNCTION search_candidates_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status
       OR (OLD.status = 'queued' AND NEW.status = 'running')
       -- running -> queued: a worker gives a claim back (shutdown, provider paused)
       OR (OLD.status = 'running' AND NEW.status IN ('queued', 'succeeded', 'failed_no_email',
                                                      'failed_transient', 'failed_permanent'))
       -- failed_* -> queued: a retry from the UI
       OR (OLD.status IN ('failed_no_email', 'failed_transient', 'failed_permanent')
           AND NEW.status = 'queued')
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'search candidate % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER search_candidates_transition BEFORE UPDATE OF status ON search_candidates
    FOR EACH ROW EXECUTE FUNCTION search_candidates_transition();

CREATE FUNCTION search_tiers_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status
       OR (OLD.status = 'queued' AND NEW.status = 'running')
       OR (OLD.status = 'running' AND NEW.status IN ('queued', 'exhausted', 'failed'))
       OR (OLD.status = 'failed' AND NEW.status = 'queued')
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'search tier %/% may not go from % to %',
        OLD.search_id, OLD.tier, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER search_tiers_transition BEFORE UPDATE OF status ON search_tiers
    FOR EACH ROW EXECUTE FUNCTION search_tiers_transition();

CREATE FUNCTION searches_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status
       OR (OLD.status = 'running' AND NEW.status IN ('complete', 'stale'))
       OR (OLD.status IN ('complete', 'stale') AND NEW.status = 'running')
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'search % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER searches_transition BEFORE UPDATE OF status ON searches
    FOR EACH ROW EXECUTE FUNCTION searches_transition();

-- result_count only grows: ranks 1..result_count are handed out once and never taken back.
CREATE FUNCTION searches_result_count_grows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.result_count < OLD.result_count THEN
        RAISE EXCEPTION 'search % result_count may not shrink (% -> %)',
            OLD.id, OLD.result_count, NEW.result_count
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER searches_result_count_grows BEFORE UPDATE OF result_count ON searches
    FOR EACH ROW EXECUTE FUNCTION searches_result_count_grows();
