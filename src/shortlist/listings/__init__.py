"""The job-listings pipeline (seed 000): producers write listings, the embedding indexer
(``shortlist.listings.indexer``) turns them into vectors, search reads them."""
