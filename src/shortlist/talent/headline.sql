-- The backfill's headline metrics (shortlist.talent.headline): read-only.

-- name: appended_result_facts
-- What one appended backfill result means: is it the search's first from the backfill (no
-- lower rank came from a tier), did it reach the target (ranks are unique, so one append per
-- search does), and how long after the search's creation.
SELECT extract(epoch FROM clock_timestamp() - s.created_at)::float8 AS age_seconds,
       NOT EXISTS (SELECT 1 FROM search_results r
                    WHERE r.search_id = s.id AND r.tier <> 'internal' AND r.rank < %(rank)s)
           AS first_from_backfill,
       %(rank)s = s.target_count AS reached_target
  FROM searches s
 WHERE s.id = %(search_id)s
