-- A statement that changes nothing wakes nobody. The statement triggers of 0002 fired on every
-- INSERT or UPDATE OF status of search_candidates and search_tiers, rows or none (PostgreSQL
-- runs a statement-level trigger even when no row qualifies). So a backfill worker's claim
-- that found nothing still sent a wake-up when it committed, which woke every backfill worker
-- of every process, whose empty claims woke them again: an idle server spent most of a core
-- claiming nothing, beside the indexer's model on the first start. Now a wake-up is sent
-- when a statement inserted rows or changed some row's status (queued work, a stub that ended
-- and so left room for another page, a lease the reaper handed back).
--
-- Two triggers per table: a trigger with transition tables takes one event.
DROP TRIGGER search_candidates_notify ON search_candidates;
DROP TRIGGER search_tiers_notify ON search_tiers;

CREATE OR REPLACE FUNCTION notify_backfill_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF EXISTS (SELECT 1 FROM new_rows) THEN
            PERFORM pg_notify('shortlist_backfill', TG_TABLE_NAME);
        END IF;
    ELSIF EXISTS (SELECT 1
                    FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
                   WHERE n.status IS DISTINCT FROM o.status) THEN
        PERFORM pg_notify('shortlist_backfill', TG_TABLE_NAME);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER search_candidates_notify_insert AFTER INSERT ON search_candidates
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION notify_backfill_work();
CREATE TRIGGER search_candidates_notify_update AFTER UPDATE ON search_candidates
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION notify_backfill_work();
CREATE TRIGGER search_tiers_notify_insert AFTER INSERT ON search_tiers
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION notify_backfill_work();
CREATE TRIGGER search_tiers_notify_update AFTER UPDATE ON search_tiers
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION notify_backfill_work();
