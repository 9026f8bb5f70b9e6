-- The state machine of the e-mail intake's queue, enforced by the database as well as by its
-- guarded UPDATEs (shortlist/listings/mail/queries.sql, the lease settle of
-- shortlist/queue/lease.sql, privacy.sql's erasure), as migration 0005 does for the candidate
-- search: a buggy or hand-written UPDATE cannot move a message along an edge the pipeline does
-- not have (e.g. un-post it). job_sources needs none: its two states (active, failed) go both
-- ways, and its CHECK holds it to them.
CREATE FUNCTION inbound_mail_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status
       OR (OLD.status = 'queued' AND NEW.status = 'running')
       -- running -> queued: a parser gives its claim back (shutdown, a transient error)
       OR (OLD.status = 'running' AND NEW.status IN ('queued', 'posted', 'rejected', 'failed'))
       -- queued -> failed: its sender forgotten on request before it was read (privacy.sql)
       OR (OLD.status = 'queued' AND NEW.status = 'failed')
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'inbound message % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER inbound_mail_transition BEFORE UPDATE OF status ON inbound_mail
    FOR EACH ROW EXECUTE FUNCTION inbound_mail_transition();
