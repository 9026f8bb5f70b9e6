-- Read replicas (shortlist.db.replicas). WAL positions as byte offsets (bigint), so Python can
-- compare them.

-- name: primary_position
-- How far the primary has written its WAL.
SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS lsn

-- name: replica_position
-- How far a standby has replayed the primary's WAL; a server that is not a standby (a read URL
-- that points at a primary, or a promoted replica) is as far as its own WAL.
SELECT pg_is_in_recovery() AS standby,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
                            ELSE pg_current_wal_lsn() END, '0/0')::bigint AS lsn
