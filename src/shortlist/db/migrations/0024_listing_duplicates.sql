-- One job, one listing (issue 22): a near-duplicate is linked to the listing it repeats
-- (job_listings.duplicate_of, migration 0020) by the embedding indexer, and is out of search and
-- facets while linked (shortlist.indexer, link_near_duplicates; listings/search.sql).

-- A company's or a city's name as two listings of one job share it: case and runs of white space
-- do not count. The crawl's same_job_elsewhere and the indexer's near-duplicate link compare by it.
CREATE FUNCTION shortlist_name_key(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN lower(btrim(regexp_replace($1, '\s+', ' ', 'g')));

-- A listing that closes hands its duplicates back to search: the oldest open one takes its place
-- and the others repeat that one (a closed duplicate is unlinked), as part of the statement that
-- closes it, whichever closes it (DELETE /api/jobs, a crawl, a removed source). So duplicate_of
-- only ever names an open listing. A deleted listing's duplicates are unlinked by the foreign key
-- (ON DELETE SET NULL).
CREATE FUNCTION job_listings_promote_duplicates() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    heir uuid;
BEGIN
    SELECT id INTO heir
      FROM job_listings
     WHERE duplicate_of = NEW.id AND status = 'open'
     ORDER BY created_at, id
     LIMIT 1;
    UPDATE job_listings
       SET duplicate_of = CASE WHEN status = 'open' AND id <> heir THEN heir END
     WHERE duplicate_of = NEW.id;
    RETURN NULL;
END $$;

CREATE TRIGGER job_listings_promote_duplicates AFTER UPDATE OF status ON job_listings
    FOR EACH ROW WHEN (OLD.status = 'open' AND NEW.status <> 'open')
    EXECUTE FUNCTION job_listings_promote_duplicates();
