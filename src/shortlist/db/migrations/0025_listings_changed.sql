-- Every process keeps the answers of repeated job searches (shortlist.listings.result_cache)
-- until a listing changes: after each statement that inserts, deletes or truncates listings, or
-- updates a column a search reads or shows, one notification on shortlist_listings (NOTIFY
-- sends it at commit, once per transaction however many statements sent it). Not sent by the
-- updates that change no answer: the indexer's claims and lease renewals (locked_by,
-- locked_until, claim_seq, embedding_attempts), nor the vectors of a model space being built
-- (its columns are read only once it is the active one, and a switch empties the caches).
CREATE FUNCTION job_listings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('shortlist_listings', '');
    RETURN NULL;
END $$;

CREATE TRIGGER job_listings_changed AFTER INSERT OR DELETE OR TRUNCATE ON job_listings
    FOR EACH STATEMENT EXECUTE FUNCTION job_listings_changed();

-- A vector of the active space is written with embedded_at (indexer/queries.sql), and every
-- edit sets updated_at; search_tsv follows from the texts it is generated from. No vector
-- column is named: a model migration drops the retired space's column, and a trigger naming a
-- column would keep it from being dropped.
CREATE TRIGGER job_listings_changed_columns
    AFTER UPDATE OF company_name, job_title, city_location, description, salary_min_ks,
                    salary_max_ks, currency_code, work_mode, detail_page_slug, created_at,
                    updated_at, embedding_status, embedded_at, embedding_error,
                    source, source_url, status, valid_through, last_seen_at, duplicate_of
    ON job_listings
    FOR EACH STATEMENT EXECUTE FUNCTION job_listings_changed();
