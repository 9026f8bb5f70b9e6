-- Webhooks (shortlist.webhooks): an organisation's endpoints, the messages its events make, and
-- one delivery per message and subscribed endpoint — the sender's queue (shortlist.queue).

CREATE TYPE webhook_endpoint_status AS ENUM ('enabled', 'disabled');
CREATE TYPE webhook_delivery_status AS ENUM ('pending', 'delivered', 'failed', 'cancelled');

CREATE TABLE webhook_endpoints (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id              bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    url                 text NOT NULL CHECK (length(url) <= 2000 AND url ~ '^https?://'),
    events              text[] NOT NULL CHECK (cardinality(events) >= 1),
    -- whsec_ + base64 of 32 random bytes: the sender signs with it, so it is kept as it is
    secret              text NOT NULL CHECK (secret LIKE 'whsec\_%'),
    -- the secret before the last rotation: messages are signed with both until it expires
    previous_secret     text CHECK (previous_secret LIKE 'whsec\_%'),
    previous_expires_at timestamptz,
    status              webhook_endpoint_status NOT NULL DEFAULT 'enabled',
    disabled_reason     text CHECK (length(disabled_reason) <= 1000),
    disabled_at         timestamptz,
    -- the first failed attempt since the last delivered one (NULL: not failing)
    failing_since       timestamptz,
    -- a 429/502/504's Retry-After: nothing is sent to the endpoint before then
    paused_until        timestamptz,
    created_by          bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    CHECK ((previous_secret IS NULL) = (previous_expires_at IS NULL)),
    CHECK ((status = 'disabled') = (disabled_at IS NOT NULL))
);
CREATE INDEX webhook_endpoints_org_idx ON webhook_endpoints (org_id);

-- One event, as every endpoint receives it: webhook-id (msg_…) and the body exactly as signed.
-- subject: what the event is about (a listing's id), so an event is made once per subject.
CREATE TABLE webhook_messages (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    msg_id      text NOT NULL UNIQUE CHECK (msg_id ~ '^msg_[A-Za-z0-9_-]+$'),
    org_id      bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    event_type  text NOT NULL CHECK (event_type ~ '^[a-z0-9_]+(\.[a-z0-9_]+)+$'),
    subject     text CHECK (length(subject) <= 200),
    body        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX webhook_messages_subject_key ON webhook_messages (org_id, event_type, subject)
    WHERE subject IS NOT NULL;
CREATE INDEX webhook_messages_created_idx ON webhook_messages (created_at);

CREATE TABLE webhook_deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id       bigint NOT NULL REFERENCES webhook_messages (id) ON DELETE CASCADE,
    endpoint_id      bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    org_id           bigint NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    status           webhook_delivery_status NOT NULL DEFAULT 'pending',
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_attempt_at  timestamptz,
    -- the endpoint's last answer (NULL: none: a timeout, a refused connection)
    last_status      integer,
    last_error       text CHECK (length(last_error) <= 1000),
    delivered_at     timestamptz,
    locked_by        text,
    locked_until     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (message_id, endpoint_id)
);
-- What the sender claims: pending deliveries by when they fall due.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, status);

-- The deliveries' state machine, enforced by the database as well as by the sender's guarded
-- UPDATEs (shortlist/webhooks/queries.sql): pending is left once, for delivered (a 2xx),
-- failed (the schedule ran out, or the endpoint is gone) or cancelled (the endpoint was
-- disabled); nothing comes back.
CREATE FUNCTION webhook_delivery_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = OLD.status OR OLD.status = 'pending' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'webhook delivery % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER webhook_delivery_transition BEFORE UPDATE OF status ON webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION webhook_delivery_transition();

-- A new delivery wakes the sender.
CREATE FUNCTION webhook_deliveries_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_webhooks', '');
    RETURN NULL;
END $$;
CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_notify();

-- Organisation-owned, as migration 0029's tables: a transaction acting for an organisation sees
-- and changes its own rows only; the sender, acting for none, sees every organisation's.
ALTER TABLE webhook_endpoints ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY webhook_endpoints_org ON webhook_endpoints USING (shortlist_org_visible(org_id));
ALTER TABLE webhook_messages ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY webhook_messages_org ON webhook_messages USING (shortlist_org_visible(org_id));
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY webhook_deliveries_org ON webhook_deliveries USING (shortlist_org_visible(org_id));

-- The tenant role of migration 0029 (when it could be made) gets these tables as it got the
-- others (its default privileges cover tables made by the same role; granted again for a
-- migration run by another).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'shortlist_tenant') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE
            ON webhook_endpoints, webhook_messages, webhook_deliveries TO shortlist_tenant;
        GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO shortlist_tenant;
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'webhook tables not granted to shortlist_tenant (no privilege)';
END $$;
