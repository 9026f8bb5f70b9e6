-- Vendor gates shared by every process (shortlist.talent.vendors.limits). One row per gate (a vendor
-- endpoint: 'pdl:search', 'pdl:enrich', 'serpapi'); every statement is a single guarded UPDATE,
-- so the row lock serialises the takers (take_gate_slot reads the clock only once it holds it).
-- A window is a fixed slice of the epoch, window_seconds long: for 60 s, the calendar minute
-- (PDL, https://docs.peopledatalabs.com/docs/usage-limits: per key and per endpoint, a fixed
-- 60-second window; SerpApi's hourly limit: shortlist.talent.vendors.limits).

-- name: ensure_gate
-- The configured requests per window and the window's length (a later start with other
-- settings updates them).
INSERT INTO provider_limits (provider, per_window, window_seconds)
VALUES (%(gate)s, %(per_window)s, %(window_seconds)s)
ON CONFLICT (provider) DO UPDATE
   SET per_window = EXCLUDED.per_window, window_seconds = EXCLUDED.window_seconds
 WHERE provider_limits.per_window <> EXCLUDED.per_window
    OR provider_limits.window_seconds <> EXCLUDED.window_seconds

-- name: take_gate_slot
-- One request's place in the gate's current window, unless the gate is paused after a 429, the
-- vendor said its window is spent (full_until), our window is full (the configured limit, or
-- the vendor's own when its headers said less), or the window is in its last tenth (at most
-- half a second): a request sent then could reach the vendor in its next window.
-- The clock is read once the row is locked: a taker that waited for another's lock must not
-- count itself into the window that was current before it waited (it would put the row's
-- window back, and the new window would start counting again from one).
WITH locked AS (
    SELECT p.window_seconds FROM provider_limits p WHERE p.provider = %(gate)s FOR UPDATE
), now AS (
    SELECT clock_timestamp() AS t, window_seconds AS ws FROM locked
), clock AS (
    SELECT t, to_timestamp(floor(extract(epoch FROM t) / ws) * ws) AS w, ws FROM now
)
UPDATE provider_limits AS p
   SET window_count = CASE WHEN p.window_start = clock.w THEN p.window_count + 1 ELSE 1 END,
       window_start = clock.w
  FROM clock
 WHERE p.provider = %(gate)s
   AND p.paused_until <= clock.t
   AND p.full_until <= clock.t
   AND clock.t < clock.w + make_interval(secs => clock.ws - least(0.5, clock.ws / 10))
   AND p.window_start <= clock.w
   AND (p.window_start <> clock.w
        OR p.window_count < least(p.per_window, coalesce(p.vendor_per_window, p.per_window)))
RETURNING p.window_count

-- name: gate_wait
-- Why take_gate_slot refused: seconds of 429 pause left, and seconds until a slot may free up
-- (the vendor's spent window while it lasts, else the end of our own window).
SELECT greatest(extract(epoch FROM p.paused_until - c.t), 0)::float8 AS paused_s,
       CASE WHEN p.full_until > c.t THEN extract(epoch FROM p.full_until - c.t)::float8
            ELSE p.window_seconds - mod(extract(epoch FROM c.t), p.window_seconds::numeric)::float8
       END AS window_s
  FROM provider_limits p, (SELECT clock_timestamp() AS t) c
 WHERE p.provider = %(gate)s

-- name: pause_gate
-- A 429: nobody calls this endpoint until the pause ends. A shorter pause never cuts a longer.
UPDATE provider_limits
   SET paused_until = greatest(paused_until, clock_timestamp() + make_interval(secs => %(seconds)s))
 WHERE provider = %(gate)s

-- name: gate_spent
-- The vendor's headers said this endpoint's window has nothing left: wait until it resets.
UPDATE provider_limits
   SET full_until = greatest(full_until, clock_timestamp() + make_interval(secs => %(seconds)s))
 WHERE provider = %(gate)s

-- name: seed_gate
-- The vendor counts `used` requests in its current window (SerpApi's Account API,
-- this_hour_searches, after a restart mid-hour): our current window counts at least as many.
WITH clock AS (
    SELECT to_timestamp(floor(extract(epoch FROM clock_timestamp()) / p.window_seconds)
                        * p.window_seconds) AS w
      FROM provider_limits p WHERE p.provider = %(gate)s
)
UPDATE provider_limits AS p
   SET window_count = CASE WHEN p.window_start = clock.w
                           THEN greatest(p.window_count, %(used)s) ELSE %(used)s END,
       window_start = clock.w
  FROM clock
 WHERE p.provider = %(gate)s AND p.window_start <= clock.w

-- name: tighten_gate
-- The vendor's headers said this endpoint's limit per window: never send more than that.
UPDATE provider_limits
   SET vendor_per_window = %(per_window)s
 WHERE provider = %(gate)s AND vendor_per_window IS DISTINCT FROM %(per_window)s

-- name: record_balance
-- The balance the vendor just reported for one kind of credit (the latest report wins).
INSERT INTO provider_balances (vendor, credit_type, remaining, observed_at)
VALUES (%(vendor)s, %(credit_type)s, %(remaining)s, clock_timestamp())
ON CONFLICT (vendor, credit_type) DO UPDATE
   SET remaining = EXCLUDED.remaining, observed_at = EXCLUDED.observed_at

-- name: spend_balance
-- One billed call the vendor reports no balance for (a SerpApi search): the last known balance
-- goes down by what it cost, never below zero.
UPDATE provider_balances
   SET remaining = greatest(remaining - %(credits)s, 0), observed_at = clock_timestamp()
 WHERE vendor = %(vendor)s AND credit_type = %(credit_type)s

-- name: balance
-- The last balance of one kind of credit the vendor reported within the last max_age seconds:
-- an older one is no longer believed (the account may have been topped up since).
SELECT remaining
  FROM provider_balances
 WHERE vendor = %(vendor)s AND credit_type = %(credit_type)s
   AND observed_at > clock_timestamp() - make_interval(secs => %(max_age)s)
