-- Lease bookkeeping shared by every queue table (shortlist.queue.lease). {table} and {key} are
-- identifiers, {key_type} the key column's type; every statement only touches rows the caller
-- still holds (locked_by).

-- name: settle
-- End the leases this worker still holds, each row with its outcome (shortlist.queue.outcome):
-- o.kind done | give_back | retry | failed, with o.reason and o.delay (seconds) for the last
-- two. What an outcome writes besides the lease is the table's own part, composed in after the
-- lease columns (LeaseTable.outcome). A row whose lease ran out and was claimed by another
-- worker is left alone and not returned; the caller writes nothing more for it.
WITH o AS (
    SELECT *
      FROM unnest(%(keys)s::{key_type}[], %(kinds)s::text[], %(reasons)s::text[],
                  %(delays)s::float8[]) AS o (key, kind, reason, delay)
)
UPDATE {table} AS t
   SET locked_by = NULL,
       locked_until = NULL{outcome}
  FROM o
 WHERE t.{key} = o.key AND t.locked_by = %(worker_id)s
RETURNING t.{key} AS key

-- name: and_outcome
-- Where a table's outcome part (LeaseTable.outcome) joins settle's SET list.
, {outcome}

-- name: requeue
-- The outcome part of tables whose claim moves rows queued -> running: given back, a row still
-- running is queued again. A row some other statement moved on (the reaper, a retry) keeps its
-- state.
status = CASE WHEN t.status = 'running' AND o.kind = 'give_back' THEN 'queued'
              ELSE t.status END,
updated_at = now()

-- name: lease_ended
-- The lease part of a statement that takes rows over whoever held them: the reaper of expired
-- leases, a retry of what such a worker left running, the end of a tier nobody may page on. A
-- worker's own rows never end this way (settle). Composed in as lease_ended.
locked_by = NULL, locked_until = NULL

-- name: renew
-- One table's part of a heartbeat: a CTE named {cte}; a beat joins one per leased table into a
-- single statement, so a process renews everything it holds in one round trip. A row another
-- transaction has locked is skipped, not waited for: it is its holder's own transaction writing
-- it (a handler's result, settle), which ends the lease or is over well within it (a lease is
-- several beats long). Waiting would hold every other renewal behind that transaction, and
-- deadlock with it: a beat locks its rows in its own order, a handler's transaction its rows in
-- another, each then waiting for a row the other has.
{cte} AS (
    UPDATE {table} AS t
       SET locked_until = now() + make_interval(secs => {lease})
      FROM (SELECT {key}
              FROM {table}
             WHERE {key} = ANY ({keys}::{key_type}[]) AND locked_by = ANY ({workers}::text[])
               FOR NO KEY UPDATE SKIP LOCKED) AS held
     WHERE t.{key} = held.{key}
    RETURNING 1
)

-- name: renewed_count
-- How many rows one table's part of a heartbeat renewed.
(SELECT count(*) FROM {cte})

-- name: heartbeat
-- Every lease this process holds renewed in one statement: {renew} the renew CTEs, {counts} the
-- sum of their renewed_count.
WITH {renew} SELECT {counts} AS renewed
