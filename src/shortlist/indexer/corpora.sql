-- What each embedded corpus embeds: an SQL expression over the table's columns
-- (shortlist.indexer.corpora). Each reads exactly the columns of its table's generated
-- content_hash, so "text changed" <=> "hash changed".

-- name: job_listings_text
job_title || ' at ' || company_name || ', ' || city_location || E'\n' || description

-- name: candidates_text
-- Never the e-mail address.
concat_ws(E'\n',
    full_name,
    nullif(headline, ''),
    nullif(concat_ws(', ', nullif(role_title, ''), nullif(location, '')), ''),
    CASE WHEN cardinality(skills) > 0 THEN 'Skills: ' || shortlist_join(skills) END,
    nullif(summary, ''))
