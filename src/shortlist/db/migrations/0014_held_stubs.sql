-- A discovery page is paid for once. PDL's Person Search bills one credit per record returned
-- (docs.peopledatalabs.com/support/billing/how-credits-work) and every SerpApi search counts
-- against the plan, so the people a later page brings beyond the search's shortfall wait on
-- the tier (held) instead of the page being asked for again when the search needs more.
--   held           [{"external_id", "display_name", "profile"}], in the provider's order
--   provider_done  the provider said the last page fetched was its last
ALTER TABLE search_tiers
    ADD COLUMN held jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(held) = 'array'),
    ADD COLUMN provider_done boolean NOT NULL DEFAULT false;
