-- People alerts (issue 42): a recruiter's digest the relay deferred (4xx, or unreachable) is
-- sent again, its people still unnotified, after a back-off that doubles with each deferral
-- (SHORTLIST_ALERT_RETRY_BASE, as job alerts' digests back off); a refusal for good (5xx)
-- stops the tries until new people come (shortlist.alerts.people). Before, a deferred digest's
-- people stayed unnotified and nothing sent them again.
ALTER TABLE people_alerts
    ADD COLUMN notify_attempts integer NOT NULL DEFAULT 0 CHECK (notify_attempts >= 0),
    ADD COLUMN notify_after    timestamptz;
