-- One person, one candidate, whatever id a provider knows them by. A LinkedIn member who changed
-- their public URL keeps the old slug in PDL's record (Person Schema, `profiles[]`: every
-- social profile PDL knows, old LinkedIn URLs included), and Google may still link the old one;
-- a PDL record found without a LinkedIn URL is named by its PDL id. `aliases` holds the person's
-- other ids ("linkedin:<slug>", "pdl:<id>"), beside the one the row is named by:
--   search_candidates.aliases  what discovery knew before anyone was bought (stub dedup)
--   candidates.aliases         what the bought record says (ingest merges into the row of any
--                              of them; an append never gives a search a second row of them)
-- `credits` is what the attempt cost the search: one for a record a paid search page carried
-- (PDL bills search per record returned), the enrichment's credits otherwise; summed over
-- the attempts that became results, it is what the search paid for its results.
ALTER TABLE search_candidates
    ADD COLUMN aliases text[] NOT NULL DEFAULT '{}',
    ADD COLUMN credits integer NOT NULL DEFAULT 0 CHECK (credits >= 0);

ALTER TABLE candidates ADD COLUMN aliases text[] NOT NULL DEFAULT '{}';
CREATE INDEX candidates_aliases_idx ON candidates USING gin (aliases);
