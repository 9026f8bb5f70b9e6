"""The job-listings pipeline: producers write listings, the embedding indexer
(``shortlist.indexer``) turns them into vectors, search reads them."""
