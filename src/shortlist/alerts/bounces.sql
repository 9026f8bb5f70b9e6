-- Bounces of alert e-mails (shortlist.alerts.bounces).

-- name: bounced_digest
-- A bounce came back for a digest: when, kept; its subscriber returned.
UPDATE alert_digests AS d
   SET bounced_at = coalesce(d.bounced_at, now())
  FROM saved_searches AS s
 WHERE d.id = %(digest_id)s AND s.id = d.search_id
RETURNING s.subscriber_id
