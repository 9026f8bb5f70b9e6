"""Adapters for the external sources we cannot reach in tests: the talent API (discovery with
filters and paging, per-profile enrichment) and a SERP-style people search."""
