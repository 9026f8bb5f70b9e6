"""Job sources: where employers publish their jobs, crawled as a queue.

A source is a row of ``job_sources`` (``greenhouse:TOKEN``, ``lever:SITE`` — a site of Lever's
EU instance is its job site's address, ``https://jobs.eu.lever.co/SITE`` — ``ashby:ORG``, or
the http(s) URL of a careers page or sitemap). The crawl queue (``queue``) claims due sources
on the one queue primitive; a crawl fetches the board through the polite fetcher (``fetch``:
User-Agent, robots.txt, conditional requests, per-host pace shared in PostgreSQL, bounded
pages and redirects, no private addresses) and an adapter per vendor (``greenhouse``,
``lever``, ``ashby``, ``careers``) maps the vendor's postings to :class:`Posting`; ``sync``
applies them as a diff (new / changed / unchanged / gone / expired).
"""
