"""The job-listings pipeline (seed 000): producers write listings, the embedding indexer
(``shortlist.indexer``) turns them into vectors, search reads them."""
