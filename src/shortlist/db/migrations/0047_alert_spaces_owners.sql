-- Alerts (issue 42), after review: saved queries follow the embedding model, a saved search has
-- an owner, and ending one cancels its webhook deliveries too.

-- The saved queries' vectors live in one column per model space, as the corpora's do
-- (shortlist.indexer.migration adds embedding_m<id> to alert_queries with the corpora's, fills
-- it with the new model, indexes it and switches with them). The meaning path's range scan
-- reads the active space's column: `embedding` (the first space, its float4 HNSW index of
-- 0034) or another space's, through its half-precision HNSW index (shortlist.db.vector_index:
-- the expression `col::halfvec(dim)`), in distance order until past the radius. An explicit
-- cursor as before: PL/pgSQL plans an OPEN for its first rows (cursor_tuple_fraction), a FOR
-- loop's query for all of them.
DROP FUNCTION alert_queries_within(vector, float8);
CREATE FUNCTION alert_queries_within(v vector, radius float8, col text DEFAULT 'embedding',
                                     dim integer DEFAULT 0)
    RETURNS TABLE (query_id bigint, distance float8)
    LANGUAGE plpgsql STABLE SET cursor_tuple_fraction = 0.001
AS $$
DECLARE
    nearest refcursor;
    r record;
BEGIN
    IF col = 'embedding' THEN
        OPEN nearest FOR
            SELECT q.id, q.embedding <=> v AS d FROM alert_queries AS q
             ORDER BY q.embedding <=> v;
    ELSE
        OPEN nearest FOR EXECUTE format(
            'SELECT q.id, (q.%1$I::halfvec(%2$s) <=> $1::halfvec(%2$s))::float8 AS d'
            ' FROM alert_queries AS q ORDER BY q.%1$I::halfvec(%2$s) <=> $1::halfvec(%2$s)',
            col, dim) USING v;
    END IF;
    LOOP
        FETCH nearest INTO r;
        EXIT WHEN NOT FOUND OR r.d > radius;
        query_id := r.id;
        distance := r.d;
        RETURN NEXT;
    END LOOP;
    CLOSE nearest;
END $$;

-- Who saved a search (signed in, or with an API key): their account lists and ends it, whatever
-- address it mails (GET /api/alerts). NULL: saved signed out.
ALTER TABLE saved_searches ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE SET NULL;
UPDATE saved_searches AS s SET user_id = sub.user_id
  FROM alert_subscribers AS sub
 WHERE sub.id = s.subscriber_id AND sub.user_id IS NOT NULL;
CREATE INDEX saved_searches_user_idx ON saved_searches (user_id) WHERE user_id IS NOT NULL;

-- A search an organisation's member saved for its webhooks is the organisation's at once (the
-- member consented for it: consent_at), while its e-mail waits for the address's own consent
-- (the double opt-in link): false until then, and no digest is made for it.
ALTER TABLE saved_searches ADD COLUMN email_confirmed boolean NOT NULL DEFAULT true;

-- The saved search an alert.matched message is about: ending the search cancels its pending
-- deliveries in the same statement (shortlist/alerts/queries.sql, end_search).
ALTER TABLE webhook_messages
    ADD COLUMN saved_search_id uuid REFERENCES saved_searches (id) ON DELETE CASCADE;
UPDATE webhook_messages AS m SET saved_search_id = s.id
  FROM saved_searches AS s
 WHERE m.event_type = 'alert.matched' AND m.subject LIKE 'job:%'
   AND s.id::text = split_part(m.subject, ':', 2);
CREATE INDEX webhook_messages_saved_search_idx ON webhook_messages (saved_search_id)
    WHERE saved_search_id IS NOT NULL;
