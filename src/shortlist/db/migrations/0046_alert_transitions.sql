-- The alert digests' and matches' state machines, enforced by the database as well as by the
-- guarded UPDATEs of shortlist/alerts/queue.sql and queries.sql, as webhook_deliveries' are
-- (0035): a digest leaves pending once, for sent, cancelled (its search ended first) or failed
-- (refused for good); a match leaves queued once, for sent, dropped (its job closed, or found a
-- duplicate, before it went) or cancelled. Nothing comes back.
CREATE FUNCTION alert_digest_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status OR OLD.status = 'pending' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'alert digest % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER alert_digest_transition BEFORE UPDATE OF status ON alert_digests
    FOR EACH ROW EXECUTE FUNCTION alert_digest_transition();

CREATE FUNCTION alert_match_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status OR OLD.status = 'queued' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'alert match % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER alert_match_transition BEFORE UPDATE OF status ON alert_matches
    FOR EACH ROW EXECUTE FUNCTION alert_match_transition();
