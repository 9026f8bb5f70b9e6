-- Webhooks, second round (issue 42): a saved job search delivered to an organisation's
-- webhooks, people alerts under row-level security, and webhook secrets encrypted at rest.

-- A saved job search saved by a member for their organisation with "webhook": true: its new
-- matches are also sent to the organisation's alert.matched endpoints (shortlist.webhooks.
-- publish_job_matches). NULL: e-mail only (a job seeker's own search reaches no employer).
ALTER TABLE saved_searches
    ADD COLUMN webhook_org_id bigint REFERENCES organisations (id) ON DELETE SET NULL;

-- A recruiter's saved people search is the organisation's, as its search is (migration 0029):
-- a transaction acting for an organisation sees and changes its own alerts only, and their
-- matches follow their alert; the periodic checker, acting for none, sees every one.
ALTER TABLE people_alerts ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY people_alerts_org ON people_alerts USING (shortlist_org_visible(org_id));
ALTER TABLE people_alert_matches ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY people_alert_matches_org ON people_alert_matches
    USING (EXISTS (SELECT 1 FROM people_alerts AS a WHERE a.id = alert_id));

-- Webhook secrets are kept encrypted (Fernet, shortlist.webhooks.secrets: "fernet:<token>"):
-- the sender needs each secret itself to sign (HMAC), so it cannot be hashed. The key is
-- SHORTLIST_WEBHOOK_SECRET_KEYS; without one, this row's (generated here as 0022's privacy key
-- is), which keeps a secret out of what the table alone shows (an export, a query result, a
-- log) but not out of a whole-database copy. A secret stored before this migration is still
-- "whsec_…" and is encrypted by the webhooks' upkeep.
CREATE TABLE webhook_secret_key (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    key       bytea NOT NULL CHECK (length(key) = 32)
);
INSERT INTO webhook_secret_key (key)
VALUES (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

ALTER TABLE webhook_endpoints
    DROP CONSTRAINT webhook_endpoints_secret_check,
    DROP CONSTRAINT webhook_endpoints_previous_secret_check,
    ADD CONSTRAINT webhook_endpoints_secret_check
        CHECK (secret LIKE 'whsec\_%' OR secret LIKE 'fernet:%'),
    ADD CONSTRAINT webhook_endpoints_previous_secret_check
        CHECK (previous_secret LIKE 'whsec\_%' OR previous_secret LIKE 'fernet:%');

-- Settled deliveries past SHORTLIST_WEBHOOK_RETENTION_DAYS are purged (shortlist.webhooks.
-- store.purge_settled_deliveries), oldest first.
CREATE INDEX webhook_deliveries_settled_idx ON webhook_deliveries (created_at)
    WHERE status <> 'pending';

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'shortlist_tenant') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON people_alerts, people_alert_matches
            TO shortlist_tenant;
        GRANT SELECT ON webhook_secret_key TO shortlist_tenant;
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'people alert tables not granted to shortlist_tenant (no privilege)';
END $$;
