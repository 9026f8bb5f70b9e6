-- Provider rate limits shared by every process (shortlist.sources.limits). One row per
-- provider; every statement is a single guarded UPDATE, so the row lock serialises the takers
-- and READ COMMITTED re-checks the guard after waiting for it.

-- name: ensure_provider
-- The configured requests per minute (a later start with another setting updates it).
INSERT INTO provider_limits (provider, per_minute)
VALUES (%(provider)s, %(per_minute)s)
ON CONFLICT (provider) DO UPDATE SET per_minute = EXCLUDED.per_minute
 WHERE provider_limits.per_minute <> EXCLUDED.per_minute

-- name: take_provider_slot
-- One request's place in the current calendar minute (the vendors count fixed windows), unless
-- the provider is paused after a 429, the window is full (the configured limit, or the vendor's
-- own when its headers said less), or the minute is in its last half second: a request sent
-- then could reach the vendor in the next minute and be counted there.
WITH clock AS (SELECT clock_timestamp() AS t, date_trunc('minute', clock_timestamp()) AS w)
UPDATE provider_limits AS p
   SET window_count = CASE WHEN p.window_start = clock.w THEN p.window_count + 1 ELSE 1 END,
       window_start = clock.w
  FROM clock
 WHERE p.provider = %(provider)s
   AND p.paused_until <= clock.t
   AND clock.t < clock.w + interval '59.5 seconds'
   AND (p.window_start <> clock.w
        OR p.window_count < least(p.per_minute, coalesce(p.vendor_per_minute, p.per_minute)))
RETURNING p.window_count

-- name: provider_wait
-- Why take_provider_slot refused: seconds of 429 pause left, and seconds to the next minute.
SELECT greatest(extract(epoch FROM p.paused_until - clock_timestamp()), 0)::float8 AS paused_s,
       greatest(extract(epoch FROM date_trunc('minute', clock_timestamp()) + interval '1 minute'
                                   - clock_timestamp()), 0)::float8 AS window_s
  FROM provider_limits p
 WHERE p.provider = %(provider)s

-- name: pause_provider
-- A 429: nobody calls the provider until the pause ends. A shorter pause never cuts a longer.
UPDATE provider_limits
   SET paused_until = greatest(paused_until, clock_timestamp() + make_interval(secs => %(seconds)s))
 WHERE provider = %(provider)s

-- name: tighten_provider
-- The vendor's headers said its per-minute limit: never send more than that.
UPDATE provider_limits
   SET vendor_per_minute = %(per_minute)s
 WHERE provider = %(provider)s AND vendor_per_minute IS DISTINCT FROM %(per_minute)s
