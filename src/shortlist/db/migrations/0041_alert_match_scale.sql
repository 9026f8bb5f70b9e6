-- Alerts (issue 42) at a million saved searches (shortlist.alerts.reverse): each listing's match
-- read about 6 % of all saved queries (the keyword path: any one anchor trigram of a query in
-- the title) and re-ran the HNSW scan from the start, four times longer each time, while every
-- query it read was within the meaning radius. Now the keyword path's anchors are *pairs* of
-- trigrams from different words, and the meaning path reads the HNSW index once, nearest
-- first, until the radius.

-- A query's anchor keys: sets of its trigrams such that a title sharing more than
-- `similarity` of its n trigrams holds every trigram of one of them. Shared > s·n means at least
-- g + 1 shared, g = floor(s·n); the trigrams are dealt into g groups and each pair within a
-- group is a key: any g + 1 trigrams put two in one group (pigeonhole), so a title as similar
-- holds a key, whichever the groups. The order given only chooses the pairs: consecutive
-- trigrams are paired first (the caller interleaves words and puts the rarest first, so that a
-- pair is rarely in a title that is not a match), the last ones stay alone (no key). With g = 0
-- (a single shared trigram suffices) each trigram is a key. A pair is 'a|b', a < b.
CREATE FUNCTION alert_anchor_keys(trigrams text[], similarity float8) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (
    WITH p AS (
        SELECT cardinality(trigrams) AS n, floor(similarity * cardinality(trigrams))::int AS g
    ),
    t AS (SELECT u.x, u.o - 1 AS i FROM unnest(trigrams) WITH ORDINALITY AS u (x, o)),
    grouped AS (
        -- 2g >= n: n - g groups of two (the first trigrams), the rest alone; else g groups of
        -- consecutive trigrams
        SELECT t.x, t.i,
               CASE WHEN 2 * p.g >= p.n THEN CASE WHEN t.i < 2 * (p.n - p.g) THEN t.i / 2 END
                    ELSE t.i / ceil(p.n::numeric / p.g)::int END AS grp
          FROM t, p
    )
    SELECT CASE WHEN p.g = 0 THEN trigrams
                ELSE coalesce((SELECT array_agg(least(a.x, b.x) || '|' || greatest(a.x, b.x)
                                                ORDER BY a.i, b.i)
                                 FROM grouped AS a
                                 JOIN grouped AS b ON a.grp = b.grp AND a.i < b.i), '{}')
           END
      FROM p
);

-- What a title offers the anchor keys: its trigrams (pg_trgm's) and every pair of them.
CREATE FUNCTION alert_title_keys(title text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (
    SELECT t.t || array(SELECT a || '|' || b FROM unnest(t.t) AS a, unnest(t.t) AS b WHERE a < b)
      FROM (SELECT show_trgm(title) AS t) AS t
);

-- The saved queries within `radius` (cosine distance) of `v`, nearest first, read from the HNSW
-- index until the first one past the radius: one scan, as long as the radius needs (the
-- iterative scan carries on past hnsw.ef_search; the caller sets both). An explicit cursor:
-- PL/pgSQL plans it for its first rows (a FOR loop's query, planned for all of them, sorted
-- the whole table).
CREATE FUNCTION alert_queries_within(v vector, radius float8)
    RETURNS TABLE (query_id bigint, distance float8)
    LANGUAGE plpgsql STABLE SET cursor_tuple_fraction = 0.001
AS $$
DECLARE
    nearest CURSOR FOR
        SELECT q.id, q.embedding <=> v AS d FROM alert_queries AS q ORDER BY q.embedding <=> v;
    r record;
BEGIN
    OPEN nearest;
    LOOP
        FETCH nearest INTO r;
        EXIT WHEN NOT FOUND OR r.d > radius;
        query_id := r.id;
        distance := r.d;
        RETURN NEXT;
    END LOOP;
    CLOSE nearest;
END $$;

ALTER TABLE alert_query_words ADD COLUMN anchor_keys text[];
-- The queries saved so far: their trigrams word by word, interleaved, a word's trigrams
-- without blanks first (the Python side, reverse.anchor_order, ranks by how common each is in
-- titles; any order is exact, this one only picks less selective pairs). 0.7: the keyword
-- similarity (reverse.KEYWORD_SIMILARITY) when this was written.
UPDATE alert_query_words AS w
   SET anchor_keys = alert_anchor_keys(coalesce((
       SELECT array_agg(r.t ORDER BY r.rank, r.word)
         FROM (SELECT d.t, d.word,
                      row_number() OVER (PARTITION BY d.word
                                         ORDER BY length(d.t) - length(replace(d.t, ' ', '')),
                                                  d.t) AS rank
                 FROM (SELECT DISTINCT ON (t) t, x.o AS word
                         FROM regexp_split_to_table(w.title_words, '\s+') WITH ORDINALITY
                                  AS x (word, o),
                              unnest(show_trgm(x.word)) AS t
                        ORDER BY t, x.o) AS d) AS r), '{}'), 0.7);
ALTER TABLE alert_query_words ALTER COLUMN anchor_keys SET NOT NULL;
CREATE INDEX alert_query_words_keys_idx ON alert_query_words USING gin (anchor_keys);

-- Queries without anchors (no title words) need no list of their own: their title similarity
-- is 0, so the meaning path's radius covers them.
DROP INDEX alert_query_words_anchors_idx;
DROP INDEX alert_query_words_unanchored_idx;
ALTER TABLE alert_query_words DROP COLUMN anchors;

-- A matching query's saved searches read from the index alone (an index-only scan): the filters
-- and threshold as columns of it, so a query's ten searches are not ten heap pages. Replaces
-- the index on (query_id, work_mode, salary_min).
CREATE INDEX saved_searches_match_idx ON saved_searches (query_id)
    INCLUDE (min_score, work_mode, salary_min, location, subscriber_id, id)
    WHERE status = 'active';
DROP INDEX saved_searches_query_idx;
