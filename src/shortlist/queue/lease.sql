-- Lease bookkeeping shared by every queue table (shortlist.queue.lease). {table} and {key} are
-- identifiers, {key_type} the key column's type; every statement only touches rows the caller
-- still holds (locked_by).

-- name: release
-- Give rows back unchanged: claimable again at once (tables whose claim keeps the status).
UPDATE {table}
   SET locked_by = NULL, locked_until = NULL
 WHERE {key} = ANY (%(keys)s::{key_type}[]) AND locked_by = %(worker_id)s

-- name: release_to_queue
-- Give rows back to the queue (tables whose claim moves queued -> running).
UPDATE {table}
   SET status = 'queued', locked_by = NULL, locked_until = NULL, updated_at = now()
 WHERE {key} = ANY (%(keys)s::{key_type}[]) AND status = 'running'
   AND locked_by = %(worker_id)s

-- name: renew
-- One table's part of a heartbeat: a CTE named {cte}; a beat joins one per leased table into a
-- single statement, so a process renews everything it holds in one round trip.
{cte} AS (
    UPDATE {table}
       SET locked_until = now() + make_interval(secs => {lease})
     WHERE {key} = ANY ({keys}::{key_type}[]) AND locked_by = ANY ({workers}::text[])
    RETURNING 1
)
