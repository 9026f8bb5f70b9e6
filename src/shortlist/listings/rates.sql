-- Reference exchange rates (shortlist.listings.rates; table of migration 0033).

-- name: store_rates
-- The bundled rates, each only where it is newer than the stored one (a database migrated
-- again never goes back to an older table than `shortlist rates update` gave it).
INSERT INTO exchange_rates AS r (currency_code, per_eur, rate_date, source)
SELECT * FROM unnest(%(codes)s::text[], %(per_eur)s::numeric[], %(dates)s::date[],
                     %(sources)s::text[])
ON CONFLICT (currency_code) DO UPDATE
   SET per_eur = excluded.per_eur, rate_date = excluded.rate_date, source = excluded.source
 WHERE excluded.rate_date > r.rate_date

-- name: replace_rates
-- An update from a file: each currency's rate replaced, whatever its date.
INSERT INTO exchange_rates AS r (currency_code, per_eur, rate_date, source)
SELECT * FROM unnest(%(codes)s::text[], %(per_eur)s::numeric[], %(dates)s::date[],
                     %(sources)s::text[])
ON CONFLICT (currency_code) DO UPDATE
   SET per_eur = excluded.per_eur, rate_date = excluded.rate_date, source = excluded.source

-- name: all_rates
SELECT currency_code, per_eur, rate_date, source FROM exchange_rates ORDER BY currency_code
