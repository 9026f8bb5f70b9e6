-- Alerts (issue 42): the match queue finds a listing's candidate saved queries in its own
-- memory (shortlist.alerts.query_vectors, migration 0048): the meaning path by a matrix product
-- over every saved query's vector, the keyword path by counting shared trigrams. What the
-- presearch read in the database before is no longer read, so it is no longer written either:
-- the GIN anchor keys of every saved query (0041, written on every save), the function pairing
-- them and the one making a title's keys, the range scan over the saved queries' vectors
-- (0041, 0047), and the HNSW indexes on those vectors (0034's on the first space's column, and
-- any a model migration built on a later space's: 194 MB at a million saved searches, kept up
-- on every save). Saved queries keep their vectors and title words.
DROP INDEX alert_query_words_keys_idx;
ALTER TABLE alert_query_words DROP COLUMN anchor_keys;
DROP FUNCTION alert_anchor_keys(text[], float8);
DROP FUNCTION alert_title_keys(text);
DROP FUNCTION alert_queries_within(vector, float8, text, integer);

DO $$
DECLARE
    ix record;
BEGIN
    FOR ix IN SELECT indexname FROM pg_indexes
               WHERE schemaname = current_schema() AND tablename = 'alert_queries'
                 AND indexdef ILIKE '%USING hnsw%'
    LOOP
        EXECUTE format('DROP INDEX %I', ix.indexname);
    END LOOP;
END $$;
