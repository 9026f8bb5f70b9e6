-- Candidate search that honours the brief (shortlist.talent.constraints).

-- The provider says this person has an e-mail address it does not show on the account's plan
-- (PDL Free/trial plans answer contact fields with true/false): contactable through the
-- provider, so a result, though the corpus holds no address.
ALTER TABLE candidates ADD COLUMN email_on_file boolean NOT NULL DEFAULT false;

-- A result's evidence as judged when it was appended (ranks never change, so neither does what
-- they rest on): role_score, the role probability (shortlist.relevance) that score was derived
-- from; constraints, each of the brief's constraints with its outcome ([{kind, label, outcome,
-- detail, factor}]). NULL on results appended before this migration.
ALTER TABLE search_results
    ADD COLUMN role_score real,
    ADD COLUMN constraints jsonb CHECK (constraints IS NULL OR jsonb_typeof(constraints) = 'array');

-- A location as the corpus pre-filter compares it: lowercase and accent-free ("München" and
-- "munchen" alike), as shortlist.text.fold writes the gazetteer's names. unaccent ships with
-- PostgreSQL (contrib), as pg_trgm; the two-argument form names its dictionary, so the
-- function is immutable whatever the search_path.
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE FUNCTION shortlist_fold(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN lower(public.unaccent('public.unaccent'::regdictionary, $1));
