-- Alerts (issue 42): a saved job search keeps every filter of the search it was saved from that
-- a new job can be held to, as job search holds it (search.sql): the salary floor's currency
-- (the search page always names one: a floor of 90 in EUR is 90,000 euros, converted by
-- exchange_rates to each listing's currency, not 90,000 of whatever the listing is paid in), the
-- country a remote job must be open to, and visa sponsorship offered. Before, an alert saved from
-- a visa=offered search alerted jobs that sponsor no visa. The match index carries them (the
-- matcher reads the saved searches of a query from it alone).
ALTER TABLE saved_searches
    ADD COLUMN salary_currency text CHECK (salary_currency ~ '^[A-Z]{3}$'),
    ADD COLUMN remote_country  text CHECK (remote_country ~ '^[A-Z]{2}$'),
    ADD COLUMN visa            text CHECK (visa = 'offered');
DROP INDEX saved_searches_match_idx;
CREATE INDEX saved_searches_match_idx ON saved_searches (query_id)
    INCLUDE (min_score, work_mode, salary_min, salary_currency, location, remote_country, visa,
             subscriber_id, id)
    WHERE status = 'active';
